"""The search over node counts: the cheapest fleet of the candidate pools that meets the goal, exactly.

Meeting the goal is taken to be monotone in each pool's count (more nodes never make pods wait longer). The search
keeps what its simulations proved in a :class:`~kubedra.plan.frontier.Frontier` and repeats:

1. the cheapest fleet not known to fail (a corner) bounds the answer's cost from below; when it is known to meet,
   it is the answer, and the search stops: every cheaper fleet is known to fail;
2. otherwise it simulates ``width`` undecided fleets at once: the best meeting fleet lowered in its dearest pool
   that can still be lowered (a k-ary search towards a minimal meeting fleet: the bound tightens fastest), then the
   cheapest corner filled up to the cost bound (a failure there settles the corner and all below it), and the line
   through that corner along the pool with the most undecided fleets;
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
        """``width`` undecided fleets cheaper than the best: the top while nothing meets; else the best lowered
        towards a minimal meeting fleet (the bound tightens fastest); else, for the cheapest undecided corners,
        the corner filled up to the bound (its failure settles the most) and the line through it."""
        best = self.best()
        bound = None if best is None else self.key(best)
        top = (self.max_nodes,) * len(self.costs)
        batch = [top] if best is None and top not in self.explored else []
        if best is not None:
            batch.extend(self._lower(best))
        for corner in corners:
            if len(batch) >= self.width or (bound is not None and self.key(corner) >= bound):
                break
            fill = self._fill(corner, bound)
            if fill not in batch:
                batch.append(fill)
            if len(batch) < self.width:  # the line as well: the corner settles in a round or two
                batch.extend(f for f in self._line(corner, bound) if f not in batch)
        return batch[: max(1, self.width)]

    def _with(self, fleet: Fleet, i: int, count: int) -> Fleet:
        return (*fleet[:i], count, *fleet[i + 1:])

    def _lower(self, best: Fleet) -> list[Fleet]:
        """Fleets below ``best`` in its dearest pool that can still be lowered (a pool is minimal when one node
        fewer is known to fail)."""
        for i in sorted(range(len(best)), key=lambda i: -self.costs[i]):
            low = best[i] - 1
            while low >= 0 and not self.frontier.fails_below(self._with(best, i, low)):
                low -= 1
            if low < best[i] - 1:
                counts = self._spread(low, best[i], bounded=True)
                return [self._with(best, i, n) for n in counts]
        return []

    def _fill(self, corner: Fleet, bound: Key | None) -> Fleet:
        """The corner with each pool in turn, cheapest first, raised as high as the bound allows (undecided: above
        a corner nothing is known to fail, and under the bound nothing is known to meet)."""
        fleet = corner
        for i in sorted(range(len(corner)), key=lambda i: self.costs[i]):
            for n in range(self.max_nodes, fleet[i], -1):
                raised = self._with(fleet, i, n)
                if bound is None or self.key(raised) < bound:
                    fleet = raised
                    break
        return fleet

    def _spread(self, low: int, high: int, *, bounded: bool) -> list[int]:
        """Up to ``width`` counts strictly between ``low`` (fails) and ``high``, the highest first: evenly spread
        when ``high`` meets (the threshold is inside), else with ``high - 1`` among them (maybe none meets)."""
        size = high - low - 1
        if size <= self.width:
            counts = list(range(low + 1, high))
        elif bounded:
            counts = [low + j * (size + 1) // (self.width + 1) for j in range(1, self.width + 1)]
        else:
            counts = [low + -(-j * size // self.width) for j in range(1, self.width + 1)]
        return sorted(set(counts), reverse=True)

    def _line(self, corner: Fleet, bound: Key | None) -> list[Fleet]:
        """Up to ``width`` undecided fleets on the best line through ``corner``, the highest first."""
        chosen: tuple[int, int, bool] | None = None  # pool, highest undecided count, whether a meeting fleet is above
        for i in sorted(range(len(corner)), key=lambda i: self.costs[i]):
            high, bounded = corner[i] - 1, False
            for n in range(corner[i], self.max_nodes + 1):
                fleet = self._with(corner, i, n)
                if bound is not None and self.key(fleet) >= bound:
                    break
                if self.frontier.meets_above(fleet):
                    bounded = True
                    break
                high = n
            if chosen is None or high - corner[i] > chosen[1] - corner[chosen[0]]:
                chosen = (i, high, bounded)
        assert chosen is not None
        i, high, bounded = chosen
        return [self._with(corner, i, n) for n in self._spread(corner[i] - 1, high + 1, bounded=bounded)]
