"""Kueue's preemption policies and, within one ClusterQueue (``spec.preemption.withinClusterQueue``), its choice of
victims, as v0.17.0 makes it; ``sim.kueue_reclaim`` runs the same algorithm across a cohort (``reclaimWithinCohort``),
which is what ``sim.kueue`` asks, and ``sim.kueue_victims`` stops the victims.

Pure. Rules from ``pkg/scheduler/preemption``:

- Policy (``SatisfiesPreemptionPolicy``, ``common/preemption_policy.go``): ``Any`` (``reclaimWithinCohort`` only)
  takes every admitted workload; ``LowerPriority`` those of lower priority; ``LowerOrNewerEqualPriority`` also
  those of equal priority created after the preemptor (the ``SchedulerTimestampPreemptionBuffer`` gate is off by
  default); ``Never`` none.
- Candidates (``classifyPreemptionVariant``, ``classical/hierarchical_preemption.go``): the ClusterQueue's admitted
  workloads the policy allows that use a flavor's resource needing preemption, in ``CandidatesOrdering``
  (``common/ordering.go``): already evicted first, then lower priority, then the most recently admitted; Kueue breaks
  a tie by UID, kubedra by the input order.
- Victims (``classicalPreemptions``, ``preemption.go``): candidates removed in that order until the preemptor's
  whole usage fits (``workloadFits``); then ``fillBackWorkloads`` adds back, from the last but one removed to the
  first, each the preemptor still fits without. None where it never fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

NEVER = "Never"
LOWER = "LowerPriority"
LOWER_OR_NEWER = "LowerOrNewerEqualPriority"
ANY = "Any"
POLICIES = (NEVER, LOWER, LOWER_OR_NEWER)

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class Running:
    """An admitted workload as the preemptor sees it: its priority, creation, input order, usage, when it was
    admitted, and whether it is already evicted (quota still held)."""

    key: str
    priority: int
    created_at: float
    order: int
    usage: dict[FlavorResource, int]
    admitted_at: float
    evicted: bool = False


def satisfies(policy: str, priority: int, created_at: float, candidate: Running) -> bool:
    """``SatisfiesPreemptionPolicy``: may a preemptor of ``priority`` created at ``created_at`` take ``candidate``."""
    if policy == ANY:  # reclaimWithinCohort only
        return True
    if policy == LOWER:
        return priority > candidate.priority
    if policy == LOWER_OR_NEWER:
        return priority > candidate.priority or (priority == candidate.priority and created_at < candidate.created_at)
    return False


def ordered(candidates: Sequence[Running]) -> list[Running]:
    """``CandidatesOrdering`` within one ClusterQueue: evicted first, lower priority, admitted more recently."""
    return sorted(candidates, key=lambda c: (not c.evicted, c.priority, -c.admitted_at, c.order))


def victims(policy: str, priority: int, created_at: float, running: Sequence[Running], *,
            needs: set[FlavorResource], fits: Callable[[dict[FlavorResource, int]], bool]) -> list[Running]:
    """The workloads to preempt so that the preemptor fits (``classicalPreemptions``), in the order Kueue lists
    them; empty where it cannot. ``needs``: the flavors' resources needing preemption; ``fits(freed)``: whether the
    preemptor's usage fits once ``freed`` (by flavor and resource) is released."""
    candidates = ordered([c for c in running if satisfies(policy, priority, created_at, c)
                          and any(fr in needs for fr in c.usage)])
    freed: dict[FlavorResource, int] = {}
    targets: list[Running] = []

    def move(candidate: Running, sign: int) -> None:
        for fr, amount in candidate.usage.items():
            freed[fr] = freed.get(fr, 0) + sign * amount

    for candidate in candidates:
        move(candidate, 1)
        targets.append(candidate)
        if fits(freed):
            fill_back(targets, move, lambda: fits(freed))
            return targets
    return []


def fill_back(targets: list[T], move: Callable[[T, int], None], fits: Callable[[], bool]) -> None:
    """``fillBackWorkloads``: every target but the last, latest first, put back (``move(t, -1)``) where the
    preemptor still fits without it; a kept one stays removed (``move(t, 1)`` again). ``targets`` is edited in
    place as Kueue edits its slice (the last target takes a put-back one's place)."""
    for i in range(len(targets) - 2, -1, -1):
        move(targets[i], -1)
        if fits():
            targets[i] = targets[-1]
            targets.pop()
        else:
            move(targets[i], 1)


def preemption_message(preemptor: str, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """``preemptionMessage``: Kueue's wording, the preemptor named instead of its UIDs (kubedra has none)."""
    return (f"Preempted to accommodate a workload ({preemptor}) due to {reason}; preemptor path: {preemptor_path}; "
            f"preemptee path: {preemptee_path}")
