"""The search over node counts: the cheapest fleet of the candidate pools that meets the goal, exactly.

Meeting the goal is taken to be monotone in each pool's count (more nodes never make pods wait longer). The search
keeps what its simulations proved in a :class:`~kubedra.plan.frontier.Frontier` and repeats:

1. the cheapest fleet not known to fail (a corner) bounds the answer's cost from below; when it is known to meet,
   it is the answer, and the search stops: every cheaper fleet is known to fail;
2. otherwise it searches the line through that corner along one pool (the pool with the most undecided fleets on
   the line under the cost bound), a k-ary search of ``width`` fleets per round, simulated at once: a failure high
   on the line settles the corner and everything below it at once, a success is a new best;
3. it never simulates a fleet that costs as much as the best meeting fleet found before the round (cost ties go to
   fewer nodes, then to the smaller counts in the pools' order).

Before anything meets, the fleet of every pool at ``max_nodes`` goes in the first round: if it fails, no fleet
meets. ``max_candidates`` caps the fleets evaluated; stopped by it, the search says it is not exact and gives the
best found and the lower bound. Pure: ``evaluate`` runs the simulations and says which met the goal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubedra.plan.frontier import Fleet, Frontier, Status

Evaluate = Callable[[Sequence[Fleet]], Sequence[bool]]
Key = tuple[float, int, Fleet]


@dataclass(frozen=True)
class Outcome:
    """The answer (None: no fleet found meeting the goal), whether it is proven cheapest (or, without an answer,
    proven that none meets), the lower bound on the cheapest meeting fleet's cost (None: no fleet meets), and the
    number of fleets evaluated."""

    answer: Fleet | None
    exact: bool
    lower_bound: float | None
    evaluated: int


@dataclass
class Search:
    costs: tuple[float, ...]  # per node-hour, per pool; never negative
    max_nodes: int
    evaluate: Evaluate
    width: int = 2
    max_candidates: int | None = None
    explored: dict[Fleet, bool] = field(default_factory=dict)
    frontier: Frontier = field(init=False)

    def __post_init__(self) -> None:
        self.frontier = Frontier(len(self.costs), self.max_nodes)

    def cost(self, fleet: Fleet) -> float:
        return sum(count * cost for count, cost in zip(fleet, self.costs, strict=True))

    def key(self, fleet: Fleet) -> Key:
        """The order of preference: cheaper, then fewer nodes, then smaller counts in the pools' order. A fleet
        above another in every count comes after it (prices are never negative)."""
        return self.cost(fleet), sum(fleet), fleet

    def best(self) -> Fleet | None:
        met = [f for f, ok in self.explored.items() if ok]
        return min(met, key=self.key) if met else None

    def _run(self, fleets: Sequence[Fleet]) -> None:
        todo = [f for f in dict.fromkeys(fleets) if f not in self.explored]
        if todo:
            for fleet, met in zip(todo, self.evaluate(todo), strict=True):
                self.explored[fleet] = met
                self.frontier.add(fleet, met)

    def run(self) -> Outcome:
        while True:
            corners = sorted(self.frontier.corners, key=self.key)
            if not corners:  # every fleet is known to fail
                return Outcome(None, True, None, len(self.explored))
            if self.frontier.status(corners[0]) is Status.MEETS:
                return Outcome(corners[0], True, self.cost(corners[0]), len(self.explored))
            left = None if self.max_candidates is None else self.max_candidates - len(self.explored)
            batch = self._batch(corners)[:left]
            if not batch:
                return Outcome(self.best(), False, self.cost(corners[0]), len(self.explored))
            self._run(batch)

    def _batch(self, corners: list[Fleet]) -> list[Fleet]:
        """The top fleet while nothing meets, then the lines of the cheapest undecided corners, ``width`` fleets."""
        best = self.best()
        bound = None if best is None else self.key(best)
        top = (self.max_nodes,) * len(self.costs)
        batch = [top] if best is None and top not in self.explored else []
        for corner in corners:
            if bound is not None and self.key(corner) >= bound:
                break
            batch.extend(f for f in self._line(corner, bound) if f not in batch)
            if len(batch) >= self.width:
                break
        return batch[: max(1, self.width)]

    def _line(self, corner: Fleet, bound: Key | None) -> list[Fleet]:
        """Up to ``width`` undecided fleets on the best line through ``corner``, the highest first."""
        chosen: tuple[int, int, bool] | None = None  # pool, highest undecided count, whether a meeting fleet is above
        for i in sorted(range(len(corner)), key=lambda i: self.costs[i]):
            high, bounded = corner[i] - 1, False
            for n in range(corner[i], self.max_nodes + 1):
                fleet = (*corner[:i], n, *corner[i + 1:])
                if bound is not None and self.key(fleet) >= bound:
                    break
                if self.frontier.status(fleet) is Status.MEETS:
                    bounded = True
                    break
                high = n
            if chosen is None or high - corner[i] > chosen[1] - corner[chosen[0]]:
                chosen = (i, high, bounded)
        assert chosen is not None
        i, high, bounded = chosen
        low, size = corner[i] - 1, high - corner[i] + 1
        if size <= self.width:
            counts = list(range(low + 1, high + 1))
        elif bounded:  # the threshold is inside: spread the points evenly
            counts = [low + j * (size + 1) // (self.width + 1) for j in range(1, self.width + 1)]
        else:  # maybe none meets under the bound: the highest fleet first, whose failure settles the whole line
            counts = [low + -(-j * size // self.width) for j in range(1, self.width + 1)]
        return [(*corner[:i], n, *corner[i + 1:]) for n in sorted(set(counts), reverse=True)]
