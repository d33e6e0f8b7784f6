"""The resource plugins' totals per node for one request shape, kept between pods and bucketed by value.

On a fleet whose nodes each carry their own usage (a replayed trace), every pod's window holds hundreds of nodes
that no class groups, and computing NodeResourcesFit + BalancedAllocation for each of them on every pod is most of
Score. Pods ask for few distinct shapes (the openb trace: 103 over 10,771 pods), and a bind changes one node: so per
shape the totals are kept per node and as buckets (total -> bitset of nodes), and a read recomputes only the nodes
touched since that shape was last read. The best nodes of a window are then the highest bucket meeting it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from kubedra.cluster.usage import ScoringRequests

MAX_SHAPES = 128  # request shapes remembered; beyond that the memory starts over (bounded, still correct)
# The touch log is dropped when it holds this many touches per node (shapes read less often are built again):
# bringing a shape up to date costs at most a build, and on a trace most shapes are read a few hundred pods apart.
LOG_NODES = 16

Key = TypeVar("Key")


class _Shape:
    __slots__ = ("buckets", "seen", "totals")

    def __init__(self, totals: list[int], buckets: dict[int, int], seen: int) -> None:
        self.totals = totals
        self.buckets = buckets
        self.seen = seen  # position in the touch log up to which the totals are current


class ResourceScores(Generic[Key]):
    """``best(window, wants)``: the nodes of bitset ``window`` with the highest ``total(key of node, wants)``.

    ``keys`` is the caller's list of each node's score input, updated in place; ``touched(i)`` must be called when
    node ``i``'s entry changes."""

    def __init__(self, keys: Sequence[Key], total: Callable[[Key, ScoringRequests], int]) -> None:
        self._keys = keys
        self._total = total
        self._shapes: dict[ScoringRequests, _Shape] = {}
        self._log: list[int] = []
        self._base = 0  # touches before the log's start (the log is dropped when it outgrows the nodes)

    def touched(self, i: int) -> None:
        log = self._log
        if len(log) >= LOG_NODES * len(self._keys) + 64:
            self._base += len(log)
            log.clear()
        log.append(i)

    def best(self, window: int, wants: ScoringRequests) -> int:
        shape = self._shapes.get(wants)
        now = self._base + len(self._log)
        if shape is None or shape.seen < self._base:
            shape = self._build(wants, now)
        elif shape.seen < now:
            self._update(shape, wants, now)
        buckets = shape.buckets
        for value in sorted(buckets, reverse=True):
            inside = buckets[value] & window
            if inside:
                return inside
        return 0

    def totals(self, wants: ScoringRequests) -> Sequence[int]:
        """Every node's total for ``wants`` as of the last ``best`` for it (read by cross-checks)."""
        return self._shapes[wants].totals

    def _build(self, wants: ScoringRequests, now: int) -> _Shape:
        total = self._total
        totals = [total(key, wants) for key in self._keys]
        buckets: dict[int, int] = {}
        for i, value in enumerate(totals):
            buckets[value] = buckets.get(value, 0) | (1 << i)
        if len(self._shapes) >= MAX_SHAPES:
            self._shapes.clear()
        shape = self._shapes[wants] = _Shape(totals, buckets, now)
        return shape

    def _update(self, shape: _Shape, wants: ScoringRequests, now: int) -> None:
        total, keys, totals, buckets = self._total, self._keys, shape.totals, shape.buckets
        for i in set(self._log[shape.seen - self._base:]):
            value = total(keys[i], wants)
            old = totals[i]
            if value == old:
                continue
            bit = 1 << i
            rest = buckets[old] ^ bit  # node i is in its old bucket: XOR clears it
            if rest:
                buckets[old] = rest
            else:
                del buckets[old]
            buckets[value] = buckets.get(value, 0) | bit
            totals[i] = value
        shape.seen = now
