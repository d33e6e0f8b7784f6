"""The pod-group cycle of kube-scheduler v1.37.2 (``schedule_one_podgroup.go``, plugin ``GangScheduling``).

A PodGroup's members wait in PreEnqueue, silently, while the PodGroup is missing or fewer than ``minCount`` of them
exist. A complete group is tried as a unit against one snapshot: its queued members in order (higher priority first,
then the earlier first attempt), each scheduled as a single pod would be with the members before it assumed; after
each, ``scheduled + remaining >= minCount`` must still hold. If the quorum cannot be met every assumption is reverted
and every member is unschedulable; otherwise every member that fitted binds. All members must carry the PodGroup's
priority. Assuming and reverting are the caller's (the simulation owns the cluster state); this module decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubedra.cluster.state import PodRecord
from kubedra.objects.scheduling import PodGroup
from kubedra.scheduler.outcome import Failed, Placement, Unschedulable
from kubedra.scheduler.scheduler import Scheduler

WAITING_FOR_GROUP = 'waiting for pod\'s pod group "{name}" to appear in scheduling queue'
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
GROUP_UNSCHEDULABLE = "pod group is unschedulable"
PRIORITY_MISMATCH = (
    "all pods in a single pod group should have the same priority as the pod group's priority, got {pod} and {group}"
)
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
NO_GROUP_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"

Assume = Callable[[PodRecord, Placement], Callable[[], None]]
"""Applies a placement to the snapshot and returns what undoes it."""


def pre_enqueue(group: PodGroup | None, name: str, members_present: int) -> str:
    """GangScheduling's PreEnqueue: "" lets the pod into the queue, else why it waits (UnschedulableAndUnresolvable,
    reported nowhere: no condition, no event)."""
    if group is None:
        return WAITING_FOR_GROUP.format(name=name)
    if group.is_gang and members_present < group.min_count:
        return WAITING_FOR_MIN_COUNT
    return ""


def quorum_message(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


@dataclass
class GroupOutcome:
    """One pod-group cycle: the placements that bind (empty unless the group succeeded) and each other member's
    reason, and the PodGroup's condition (reason ``Scheduled``, ``Unschedulable`` or ``SchedulerError``)."""

    placements: list[tuple[PodRecord, Placement]] = field(default_factory=list)
    failures: dict[str, Unschedulable | Failed] = field(default_factory=dict)  # pod key -> why not
    reason: str = "Scheduled"
    message: str = ""
    tried: list[str] = field(default_factory=list)  # pod keys in the order the cycle took them
    fitted: dict[str, str] = field(default_factory=dict)  # pod key -> the node it was assumed on in this cycle

    @property
    def scheduled(self) -> bool:
        return self.reason == "Scheduled"


def member_order(members: Sequence[PodRecord], queued_at: Callable[[str], tuple[float, int]]) -> list[PodRecord]:
    """``podGroupInfoForPod``'s sort: higher priority first, then the earlier initial attempt."""
    return sorted(members, key=lambda r: (-(r.pod.spec.priority or 0), queued_at(r.key)))


def schedule_group(
    scheduler: Scheduler,
    group: PodGroup,
    members: Sequence[PodRecord],
    already_scheduled: int,
    assume: Assume,
    *,
    lower_priority_bound: bool = False,
) -> GroupOutcome:
    """One pod-group cycle over ``members`` (in cycle order); ``already_scheduled``: members bound before.

    A group that cannot meet its quorum then goes through workload-aware preemption. kubedra does not search for a
    group's victims: where no bound pod has a lower priority than the group (``lower_priority_bound`` False) there
    are none, and the messages say so as kube-scheduler's do; otherwise they carry the quorum alone."""
    outcome = GroupOutcome(tried=[r.key for r in members])
    mismatch = _priority_mismatch(group, members)
    if mismatch:
        outcome.reason, outcome.message = "SchedulerError", mismatch
        outcome.failures = {r.key: Failed(mismatch) for r in members}
        return outcome
    min_count = group.min_count
    undo: list[Callable[[], None]] = []
    placed: list[tuple[PodRecord, Placement]] = []
    scheduled = already_scheduled
    stopped_at = len(members)
    try:
        for i, record in enumerate(members):
            result = scheduler.schedule(record)
            if isinstance(result, Placement):
                undo.append(assume(record, result))
                placed.append((record, result))
                outcome.fitted[record.key] = result.node
                scheduled += 1
            elif isinstance(result, Failed):
                outcome.reason, outcome.message = "SchedulerError", result.message
                outcome.failures = {r.key: result for r in members}
                return outcome
            else:
                outcome.failures[record.key] = result
            remaining = len(members) - i - 1
            if scheduled + remaining < min_count:
                stopped_at = i + 1
                break
    finally:
        for revert in reversed(undo):
            revert()
    if scheduled >= min_count:
        outcome.placements = placed
        return outcome
    condition = quorum_message(min_count, scheduled, len(members) - stopped_at)
    if not lower_priority_bound:
        condition = f"{condition}, {NO_GROUP_VICTIMS}"
    outcome.reason, outcome.message = "Unschedulable", condition
    message = f"{GROUP_UNSCHEDULABLE}, {condition}"
    for record in members:  # a member that fitted is held back with the group; one never tried gets its status
        if record.key not in outcome.failures:
            outcome.failures[record.key] = Unschedulable(message if record.key in outcome.fitted else condition)
    return outcome


def with_preemption_message(outcome: GroupOutcome, message: str) -> None:
    """Workload-aware preemption found no victims: its reason joins the group's messages (``AppendReason``)."""
    condition = outcome.message
    outcome.message = f"{condition}, pod group preemption: {message}"
    for key, failure in outcome.failures.items():
        if isinstance(failure, Unschedulable) and failure.message.endswith(condition):
            outcome.failures[key] = Unschedulable(f"{failure.message}, pod group preemption: {message}")


def _priority_mismatch(group: PodGroup, members: Sequence[PodRecord]) -> str:
    """The SchedulerError of a member whose priority is not the PodGroup's, or ""."""
    group_priority = group.spec.priority or 0
    for record in members:
        priority = record.pod.spec.priority or 0
        if priority != group_priority:
            return PRIORITY_MISMATCH.format(pod=priority, group=group_priority)
    return ""
