"""Preemption victims as units (v1.37.2 ``framework/preemption/types.go``): what one eviction decision takes.

A pod is its own unit, unless it belongs to a PodGroup whose ``disruptionMode`` is ``all``: then every scheduled pod
of that group, on any node, is one unit, kept or evicted together (``getCrossNodesVictims``). With GenericWorkload
on, a member's unit has its PodGroup's priority and ranks above a plain pod of the same priority; among groups the
larger is the more important (``MoreImportantVictim``). With the gate off every pod is a plain unit, ordered by
priority then start time, as before the Workload API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kubedra.cluster.state import PodRecord

POD_RANK = 1
GROUP_RANK = 2  # a pod joined to a PodGroup (either mode) with GenericWorkload on: ``PodGroupKeyType``


@dataclass(frozen=True)
class Victim:
    pods: tuple[PodRecord, ...]
    priority: int
    rank: int = POD_RANK

    @property
    def earliest_start(self) -> tuple[float, int]:
        return min(start_key(p) for p in self.pods)

    @property
    def is_group(self) -> bool:
        return self.rank == GROUP_RANK


def start_key(record: PodRecord) -> tuple[float, int]:
    """When the pod started (``GetPodStartTime``), as an order: the simulated time it bound, then its place in the
    bind order (a kubelet gives pods bound in one instant start times in that order); not started, the latest."""
    if record.started_at is None:
        return float("inf"), 0
    return record.started_at, record.start_order


UnitsOf = Callable[[Iterable[PodRecord]], list[Victim]]
"""The units the given pods belong to (deduplicated, in the pods' order); a unit may hold pods not given."""


def pod_units(records: Iterable[PodRecord]) -> list[Victim]:
    """Every pod its own unit, with its own priority (GenericWorkload off)."""
    return [Victim(pods=(record,), priority=record.pod.spec.priority or 0) for record in records]


def importance(victim: Victim) -> tuple[int, int, int, tuple[float, int]]:
    """``MoreImportantVictim`` as a sort key (most important first): higher priority, group over pod, the larger
    unit, then the earlier start."""
    return -victim.priority, -victim.rank, -len(victim.pods), victim.earliest_start


def flatten(victims: Sequence[Victim]) -> list[PodRecord]:
    return [pod for victim in victims for pod in victim.pods]
