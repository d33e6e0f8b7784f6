"""What the search knows about the fleet space ``{0..max_nodes}^pools``, given that meeting the goal is monotone.

A fleet that fails makes every componentwise-smaller fleet fail; a fleet that meets makes every larger one meet. So
the known failures are kept as their maximal elements and the known successes as their minimal elements, and the
fleets not known to fail are exactly those at or above one of the *corners*: the minimal fleets not below any known
failure. Prices are never negative, so the cheapest fleet not known to fail is a corner: its cost is a lower bound
on the answer's, and when that corner is known to meet it is the answer.
"""

from __future__ import annotations

from enum import Enum

Fleet = tuple[int, ...]


class Status(Enum):
    """What monotonicity says of a fleet, simulated or not."""

    FAILS = "fails"
    MEETS = "meets"
    UNKNOWN = "unknown"


def below(a: Fleet, b: Fleet) -> bool:
    """``a <= b`` in every pool's count."""
    return all(x <= y for x, y in zip(a, b, strict=True))


class Frontier:
    """Known failures (maximal), known successes (minimal) and the corners of what is not known to fail."""

    def __init__(self, pools: int, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.fails: list[Fleet] = []
        self.meets: list[Fleet] = []
        self.corners: list[Fleet] = [(0,) * pools]

    def fails_below(self, fleet: Fleet) -> bool:
        """Known to fail: at or below a known failure."""
        return any(below(fleet, f) for f in self.fails)

    def meets_above(self, fleet: Fleet) -> bool:
        """Known to meet: at or above a known success."""
        return any(below(m, fleet) for m in self.meets)

    def status(self, fleet: Fleet) -> Status:
        if self.fails_below(fleet):
            return Status.FAILS
        if self.meets_above(fleet):
            return Status.MEETS
        return Status.UNKNOWN

    def add(self, fleet: Fleet, met: bool) -> None:
        """Record one simulated fleet; a result monotonicity already implied changes nothing."""
        if self.status(fleet) is not Status.UNKNOWN:
            return
        if met:
            self.meets = [m for m in self.meets if not below(fleet, m)] + [fleet]
            return
        self.fails = [f for f in self.fails if not below(f, fleet)] + [fleet]
        self._raise_corners(fleet)

    def _raise_corners(self, failed: Fleet) -> None:
        """A corner below the new failure is replaced by the fleets one above it in a single pool (the only ways to
        leave the failure's downset); those not minimal are dropped. Counts above max_nodes are outside the space."""
        kept = [c for c in self.corners if not below(c, failed)]
        raised: list[Fleet] = []
        for corner in self.corners:
            if not below(corner, failed):
                continue
            for i, count in enumerate(failed):
                if count + 1 <= self.max_nodes:
                    raised.append((*corner[:i], count + 1, *corner[i + 1:]))
        for fleet in dict.fromkeys(raised):
            if not any(below(other, fleet) for other in kept):
                kept = [c for c in kept if not below(fleet, c)] + [fleet]
        self.corners = kept
