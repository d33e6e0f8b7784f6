"""The fast path's groups: the nodes of a window alike in every score input, cut input by input, and what
``KubeScorer.choose_window`` reports of them for cross-checks with kube-scheduler's log."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubedra.cluster.state import PodRecord

MAX_CACHED_PARTITIONS = 256
RESOURCES = "NodeResourcesFit+NodeResourcesBalancedAllocation"  # the two resource plugins as the fast path sums them


@dataclass(frozen=True)
class GroupScores:
    """What ``choose_window`` computed for some nodes of a window, for cross-checks with kube-scheduler's log: the
    weighted scores of the plugins it told those nodes apart by (the two resource plugins as one sum, ``RESOURCES``)
    and, where it computed one, the weighted ``"total"``. A plugin it did not compute scores the window's nodes
    alike, by the fast path's premise."""

    nodes: int  # bitset over inventory order
    scores: dict[str, int]


# pod, window (bitset), its groups, the best nodes (bitset): called by ``choose_window`` when set
WindowObserver = Callable[[PodRecord, int, list[GroupScores], int], None]
# A node's topology for default spreading: has the hostname label, has the zone label, its zone ("" without).
Topology = tuple[bool, bool, str]


class Group(msgspec.Struct, gc=False):
    """Nodes of the window alike in every score input: the same scores."""

    nodes: int  # bitset
    resources: int  # NodeResourcesFit + NodeResourcesBalancedAllocation, weighted
    taint: int = 0  # raw TaintToleration
    affinity: int = 0  # raw NodeAffinity
    host: int = 0  # pods of the pod's controller on each of these nodes
    topology: Topology = (True, False, "")
    explicit: int = 0  # PodTopologySpread's normalised score from the pod's own ScheduleAnyway constraints
    inter_pod: int = 0  # InterPodAffinity's normalised score


def split_groups(groups: list[Group], partition: Sequence[tuple[Any, int]], field: str) -> list[Group]:
    """Each group cut by a partition of the nodes (value -> bitset), the value recorded in ``field``."""
    out = []
    for group in groups:
        for value, members in partition:
            inside = group.nodes & members
            if inside:
                out.append(msgspec.structs.replace(group, nodes=inside, **{field: value}))
                if inside == group.nodes:
                    break
    return out


def partition_nodes(values: Iterable[int]) -> list[tuple[int, int]]:
    """Value -> bitset of the nodes (in node order) with that value."""
    members: dict[int, int] = {}
    for i, value in enumerate(values):
        members[value] = members.get(value, 0) | (1 << i)
    return list(members.items())


def bounded_cache(cache: dict[bytes, list[tuple[int, int]]]) -> dict[bytes, list[tuple[int, int]]]:
    if len(cache) >= MAX_CACHED_PARTITIONS:
        cache.clear()
    return cache
