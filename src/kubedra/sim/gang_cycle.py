"""The simulation's side of gang scheduling: which members of a PodGroup are queued, when a group may be tried, the
snapshot's assumptions made and undone for ``scheduler.gangs.schedule_group``, and the PodGroup's status.

Only pods with a group come here (``PodRecord.group`` set, GenericWorkload on); every other pod keeps the plain
per-pod path of ``Simulation._drain``. A failed group goes back to the queue as a whole and is tried again at the
next event that frees something (kube-scheduler retries it from the backoff queue, which changes nothing until the
cluster does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import AllocationResult, Condition, ResourceClaim
from kubedra.objects.scheduling import PodGroup
from kubedra.scheduler.claims import allocate_and_reserve
from kubedra.scheduler.gangs import INITIALLY_SCHEDULED, GroupOutcome, member_order, pre_enqueue, schedule_group
from kubedra.scheduler.scheduler import Placement

if TYPE_CHECKING:
    from kubedra.sim.run import Simulation


class GangQueue:
    """Members of each PodGroup waiting to be scheduled, and the cycles that try them."""

    def __init__(self, simulation: Simulation) -> None:
        self.sim = simulation
        self.members: dict[str, list[PodRecord]] = {}  # group key -> every member added
        self.waiting: dict[str, dict[str, None]] = {}  # group key -> queued members (insertion-ordered)
        self._batch: list[str] | None = None
        self._done: set[str] = set()  # members a cycle of this drain took already
        self.last: dict[str, GroupOutcome] = {}  # group key -> its latest cycle (for ``explain``)

    def add(self, record: PodRecord) -> None:
        self.members.setdefault(record.group, []).append(record)

    def bound(self, group: str) -> int:
        return sum(1 for r in self.members.get(group, ()) if r.started_at is not None and r.finished_at is None)

    def cycle(self, record: PodRecord, batch: list[str]) -> int:
        """The member ``record`` came up in this drain's ``batch``: try its group (once per drain); pods bound."""
        if batch is not self._batch:
            self._batch, self._done = batch, set()
        if record.key in self._done:
            return 0
        sim = self.sim
        key = record.group
        waiting = self.waiting.setdefault(key, {})
        waiting[record.key] = None
        group = sim.pod_groups.get(key)
        bound = self.bound(key)
        reason = pre_enqueue(group, key.split("/", 1)[1], len(waiting) + bound)
        taken = [sim.state.pods[k] for k in waiting]
        self._done.update(waiting)
        if reason or group is None:
            for member in taken:  # PreEnqueue holds them: no condition, no event
                member.pending_reason = reason
            return 0
        if any(k in waiting for k in sim._unschedulable):
            sim._unschedulable[:] = [k for k in sim._unschedulable if k not in waiting]
        order = member_order(taken, lambda k: sim._queued[k])
        outcome = schedule_group(sim.scheduler, group, order, bound, self.assume)
        self.last[key] = outcome
        for member, placement in outcome.placements:
            waiting.pop(member.key, None)
            sim._bind(member, placement)
        for member_key, failure in outcome.failures.items():
            if member_key in waiting:
                sim._unschedulable_pod(sim.state.pods[member_key], failure)
        self._status(key, group, outcome)
        return len(outcome.placements)

    def _status(self, key: str, group: PodGroup, outcome: GroupOutcome) -> None:
        """``PodGroupInitiallyScheduled``: True once a cycle succeeds, never back to False."""
        from kubedra.sim.run import Event

        conditions = group.status.conditions
        if any(c.type == INITIALLY_SCHEDULED and c.status == "True" for c in conditions):
            return
        status = "True" if outcome.scheduled else "False"
        condition = Condition(type=INITIALLY_SCHEDULED, status=status, reason=outcome.reason, message=outcome.message)
        if conditions and conditions[0] == condition:
            return
        self.sim.pod_groups[key] = msgspec.structs.replace(
            group, status=msgspec.structs.replace(group.status, conditions=[condition])
        )
        self.sim.events.append(Event(self.sim.now, outcome.reason, f"PodGroup {key}", message=outcome.message))

    def assume(self, record: PodRecord, placement: Placement) -> Callable[[], None]:
        """The member as if bound at ``placement`` (usage, claims, devices), for the members after it; and the undo."""
        state = self.sim.state
        saved: list[tuple[ResourceClaim, AllocationResult | None]] = []
        for claim_key in self.sim._claim_keys(record):
            claim = state.claims[claim_key]
            allocation = placement.allocations.get(claim_key)
            saved.append((claim, allocation))
            state.put_claim(allocate_and_reserve(claim, allocation, record.pod))
            if allocation is not None:
                state.devices.mark(allocation, +1)
        special = placement.special_allocation
        if special is not None:
            state.devices.mark(special, +1)
        pod = record.pod
        record.pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=placement.node))
        state.bind(record, placement.node)

        def undo() -> None:
            state.unbind(record, placement.node)
            record.pod = pod
            if special is not None:
                state.devices.mark(special, -1)
            for claim, allocation in saved:
                state.put_claim(claim)
                if allocation is not None:
                    state.devices.mark(allocation, -1)

        return undo
