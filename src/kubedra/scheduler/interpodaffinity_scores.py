"""InterPodAffinity's PreScore map kept for one incoming pod shape as pods bind and leave, and the nodes of each
weight per topology key, so that a replica's Score costs the few weights its domains hold, not the nodes.

The map (topology key -> value -> summed weight) is additive over the bound pods (``interpodaffinity.add_scores``),
so a bind adds its pod's part and an unbind takes it back: exactly ``topology_scores`` over the pods bound now.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubedra.objects.model import Pod
from kubedra.scheduler.interpodaffinity import add_scores, normalize

TopologyScores = dict[str, dict[str, int]]


class KeptScores:
    """``scores``: the map for ``pod``; per key, weight -> bitset of the nodes whose domain has it (made on first
    ``partition``, from ``pairs``: each node label pair's nodes, which never change in a run)."""

    def __init__(self, pod: Pod, scores: TopologyScores) -> None:
        self.pod = pod
        self.scores = scores
        self._weights: dict[str, dict[int, int]] | None = None
        self._pairs: Mapping[tuple[str, str], int] = {}

    def moved(self, other: Pod, labels: Mapping[str, str], sign: int) -> None:
        """``other`` bound (``sign`` 1) to, or gone (-1) from, a node labelled ``labels``."""
        delta: TopologyScores = {}
        add_scores(delta, self.pod, other, labels, sign)
        for key, values in delta.items():
            kept = self.scores.setdefault(key, {})
            for value, change in values.items():
                if not change:
                    continue
                old = kept.get(value, 0)
                kept[value] = new = old + change
                if self._weights is not None:
                    self._move(key, value, old, new)

    def _move(self, key: str, value: str, old: int, new: int) -> None:
        assert self._weights is not None
        bits = self._pairs.get((key, value), 0)
        by_weight = self._weights.setdefault(key, {})
        if old:
            left = by_weight[old] & ~bits
            if left:
                by_weight[old] = left
            else:
                del by_weight[old]
        if new:
            by_weight[new] = by_weight.get(new, 0) | bits

    def partition(self, window: int, pairs: Mapping[tuple[str, str], int]) -> list[tuple[int, int]]:
        """Score and NormalizeScore over the nodes of bitset ``window`` as (normalised score, bitset of its nodes)."""
        if self._weights is None:
            self._pairs, self._weights = pairs, {}
            for key, values in self.scores.items():
                for value, weight in values.items():
                    if weight:
                        self._move(key, value, 0, weight)
        groups: list[tuple[int, int]] = [(0, window)]
        for by_weight in self._weights.values():
            cut: list[tuple[int, int]] = []
            for raw, members in groups:
                rest = members  # without the key, or a domain of weight 0: nothing added
                for weight, bits in by_weight.items():
                    inside = members & bits
                    if inside:
                        cut.append((raw + weight, inside))
                        rest &= ~inside
                if rest:
                    cut.append((raw, rest))
            groups = cut
        return list(zip(normalize([raw for raw, _ in groups]), (members for _, members in groups), strict=True))
