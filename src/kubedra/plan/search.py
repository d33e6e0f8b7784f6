"""The search over node counts: the cheapest fleet of the candidate pools that meets the goal.

Meeting the goal is taken to be monotone in each pool's count (more nodes never make pods wait longer). Each round
simulates a batch of candidates at once (``width`` points per open interval), so the rounds parallelise:

1. each pool alone, by a k-ary search between 0 and ``max_nodes`` for the smallest count that meets the goal;
2. when no pool alone does (workloads needing several models), all pools at one count, searched the same way, then
   each pool in turn lowered as far as the goal allows with the others fixed.

The answer is the cheapest fleet explored that meets the goal (cost = sum of count x the pool's cost per node-hour),
ties to fewer nodes. Pure: ``evaluate`` runs the simulations and says which met the goal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Fleet = tuple[int, ...]
Evaluate = Callable[[Sequence[Fleet]], Sequence[bool]]


@dataclass
class Search:
    costs: tuple[float, ...]  # per node-hour, per pool
    max_nodes: int
    evaluate: Evaluate
    width: int = 2
    explored: dict[Fleet, bool] = field(default_factory=dict)

    def _run(self, fleets: Sequence[Fleet]) -> None:
        todo = [f for f in dict.fromkeys(fleets) if f not in self.explored]
        if todo:
            for fleet, met in zip(todo, self.evaluate(todo), strict=True):
                self.explored[fleet] = met

    def cost(self, fleet: Fleet) -> float:
        return sum(count * cost for count, cost in zip(fleet, self.costs, strict=True))

    def _points(self, lo: int, hi: int) -> list[int]:
        inside = hi - lo - 1
        if inside <= 0:
            return []
        step = max(1, (hi - lo) // (self.width + 1))
        return sorted({min(hi - 1, lo + step * j) for j in range(1, self.width + 1)})

    def smallest(self, make: Sequence[Callable[[int], Fleet]]) -> list[int | None]:
        """For each line ``make[i](n)`` of fleets, the smallest n in 0..max_nodes meeting the goal (None: not even
        at max_nodes); the lines' searches share each round's batch."""
        self._run([m(self.max_nodes) for m in make])
        bounds: list[tuple[int, int] | None] = [
            (-1, self.max_nodes) if self.explored[m(self.max_nodes)] else None for m in make
        ]
        while True:
            batch = [m(n) for m, b in zip(make, bounds, strict=True) if b is not None for n in self._points(*b)]
            if not batch:
                break
            self._run(batch)
            for i, (m, b) in enumerate(zip(make, bounds, strict=True)):
                if b is None:
                    continue
                lo, hi = b
                for n in self._points(lo, hi):
                    if self.explored[m(n)]:
                        hi = min(hi, n)
                    else:
                        lo = max(lo, n)
                bounds[i] = (lo, hi)
        return [b[1] if b is not None else None for b in bounds]

    def run(self) -> Fleet | None:
        pools = len(self.costs)

        def alone(i: int) -> Callable[[int], Fleet]:
            return lambda n: tuple(n if j == i else 0 for j in range(pools))

        found = self.smallest([alone(i) for i in range(pools)])
        if all(n is None for n in found) and pools > 1:
            (together,) = self.smallest([lambda n: (n,) * pools])
            if together is not None:
                fleet = list((together,) * pools)
                for i in sorted(range(pools), key=lambda i: -self.costs[i]):
                    def lowered(n: int, i: int = i) -> Fleet:
                        return tuple(n if j == i else fleet[j] for j in range(pools))

                    (fleet[i],) = [n if n is not None else fleet[i] for n in self.smallest([lowered])]
        return self.best()

    def best(self) -> Fleet | None:
        met = [f for f, ok in self.explored.items() if ok]
        return min(met, key=lambda f: (self.cost(f), sum(f), f)) if met else None
