"""The simulation's side of gang scheduling: which members of a PodGroup are queued, when a group may be tried, the
snapshot's assumptions made and undone for ``scheduler.gangs.schedule_group``, and the PodGroup's status.

Only pods with a group come here (``PodRecord.group`` set, GenericWorkload on); every other pod keeps the plain
per-pod path of ``Simulation._drain``. A failed group goes back to the backoff queue as a whole, out of the
unschedulable pool, and is tried again once its back-off is over, whatever happened meanwhile (``sim.gang_backoff``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import AllocationResult, Condition, PodResourceClaimStatus, ResourceClaim
from kubedra.objects.scheduling import PodGroup, PodGroupResourceClaimStatus
from kubedra.scheduler.claims import allocate_and_reserve, key_of
from kubedra.scheduler.gangs import (
    INITIALLY_SCHEDULED,
    GroupOutcome,
    member_order,
    pre_enqueue,
    schedule_group,
    with_preemption_message,
)
from kubedra.scheduler.group_claims import claim_for_group, matching_claim, release_for_group, reserve_for_group
from kubedra.scheduler.outcome import Placement
from kubedra.sim.evictions import DEFAULT_GRACE_SECONDS
from kubedra.sim.gang_backoff import GangBackoff
from kubedra.sim.group_preemption import GroupPreemption, preempt_for_group

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
        self.claim_groups: dict[str, str] = {}  # claim key -> the PodGroup it was made for or is reserved for
        self._made: dict[tuple[str, str], str] = {}  # (group key, group claim name) -> the claim's name
        self.backoff = GangBackoff()

    def next_retry(self) -> float | None:
        """When the next group's back-off ends (the backoff queue's flush that moves it); None: none backing off."""
        return self.backoff.next_retry()

    def stale(self, version: int) -> bool:
        return self.backoff.stale(version)

    def retry(self, tick: float, version: int | None) -> bool:
        """The backoff queue's flush at ``tick`` (``GangBackoff.retry``): whether it moved a group's members to the
        active queue."""
        sim = self.sim
        moved = False
        for key in self.backoff.retry(tick, version):
            for member in self.waiting.get(key, {}):
                if not sim.state.pods[member].deleted:
                    sim.queue.active.append(member)
                    moved = True
        return moved

    def add(self, record: PodRecord) -> None:
        self.members.setdefault(record.group, []).append(record)

    # ---------------------------------------------------------------------------- PodGroup claims (KEP-5729)

    def resolve_claims(self, record: PodRecord, statuses: list[PodResourceClaimStatus]) -> None:
        """The member's pod claims that match its PodGroup's: the group's one claim (made on first need) instead of
        one per pod, recorded in the pod's and the PodGroup's ``resourceClaimStatuses``."""
        sim = self.sim
        group = sim.pod_groups.get(record.group)
        if group is None or not group.spec.resource_claims:
            return
        namespace = group.metadata.namespace
        for pod_claim in record.pod.spec.resource_claims:
            group_claim = matching_claim(pod_claim, group)
            if group_claim is None:
                continue
            if group_claim.resource_claim_name:
                self.claim_groups[key_of(namespace, group_claim.resource_claim_name)] = record.group
                continue
            name = self._made.get((record.group, group_claim.name))
            if name is None:
                template_name = group_claim.resource_claim_template_name or ""
                template = sim.state.templates.get(key_of(namespace, template_name))
                if template is None:
                    continue  # the pod waits for its claim, as for a missing template of its own
                claim = claim_for_group(group, group_claim, template, sim.rng)
                key = sim.state.put_claim(claim)
                name = self._made[(record.group, group_claim.name)] = claim.metadata.name
                self.claim_groups[key] = record.group
                self._record_status(record.group, group_claim.name, name)
                from kubedra.sim.run import Event

                sim.events.append(Event(sim.now, "Created", f"ResourceClaim {key}",
                                        message=f"from template {template_name} for PodGroup {record.group}"))
            statuses.append(PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=name))

    def _record_status(self, key: str, claim_name: str, made: str) -> None:
        group = self.sim.pod_groups[key]
        entry = PodGroupResourceClaimStatus(name=claim_name, resource_claim_name=made)
        self.sim.pod_groups[key] = msgspec.structs.replace(group, status=msgspec.structs.replace(
            group.status, resource_claim_statuses=[*group.status.resource_claim_statuses, entry]))

    def reserve(self, claim_key: str, claim: ResourceClaim, allocation: AllocationResult | None) -> ResourceClaim:
        return reserve_for_group(claim, allocation, self.sim.pod_groups[self.claim_groups[claim_key]])

    def member_gone(self, record: PodRecord) -> None:
        """A member ended: once none of the group's members is left, its claims are deallocated."""
        if any(r.finished_at is None for r in self.members.get(record.group, ())):
            return
        sim = self.sim
        from kubedra.sim.run import Event

        for claim_key, group in self.claim_groups.items():
            claim = sim.state.claims.get(claim_key)
            if group != record.group or claim is None or claim.status.allocation is None:
                continue
            held = sim.state.devices.mark(claim.status.allocation, -1)
            sim.state.put_claim(release_for_group(claim))
            sim.events.append(Event(sim.now, "Deallocated", f"ResourceClaim {claim_key}", devices=held))

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
        if self.backoff.backing_off(key):  # a member made meanwhile joins the group in the backoff queue
            self._done.add(record.key)
            return 0
        group = sim.pod_groups.get(key)
        bound = self.bound(key)
        reason = pre_enqueue(group, key.split("/", 1)[1], len(waiting) + bound)
        taken = [sim.state.pods[k] for k in waiting]
        self._done.update(waiting)
        if reason or group is None:
            for member in taken:  # PreEnqueue holds them: no condition, no event
                member.pending_reason = reason
            return 0
        for k in waiting:
            sim.queue.unschedulable.pop(k, None)
        order = member_order(taken, lambda k: sim.queue.queued[k])
        priorities = sim.evictions.bound_priorities if sim.evictions is not None else None
        lower = bool(priorities) and min(priorities or (0,)) < (group.spec.priority or 0)
        outcome = schedule_group(sim.scheduler, group, order, bound, self.assume, lower_priority_bound=lower)
        if outcome.reason == "Unschedulable" and lower:  # some bound pod has a lower priority: preempt as a group
            answer = preempt_for_group(self, group, order, bound)
            if answer.victims:
                self._preempt(key, group, answer)
            else:
                with_preemption_message(outcome, answer.message)
        self.last[key] = outcome
        for member, placement in outcome.placements:
            waiting.pop(member.key, None)
            sim._bind(member, placement)
        self._requeue(key, waiting, outcome)
        self._status(key, group, outcome)
        return len(outcome.placements)

    def _requeue(self, key: str, waiting: dict[str, None], outcome: GroupOutcome) -> None:
        """The members the cycle did not bind back to the queue: a failed group, not its pods, waits in the backoff
        queue, where no event moves it (``AddAttemptedPodGroupIfNeeded``)."""
        sim = self.sim
        for member_key, failure in outcome.failures.items():
            if member_key in waiting:
                sim._unschedulable_pod(sim.state.pods[member_key], failure)
        if outcome.scheduled:
            self.backoff.succeeded(key)
            return
        for member_key in waiting:
            sim.queue.hold(member_key)
        self.backoff.failed(key, sim.now, len(waiting), sim._version, error=outcome.reason == "SchedulerError")

    def _preempt(self, key: str, group: PodGroup, answer: GroupPreemption) -> None:
        """The victims leave after their grace period; the members are nominated on their proposed nodes."""
        sim = self.sim
        evictions = sim.evictions
        assert evictions is not None
        from kubedra.sim.run import Event

        for victim in answer.victims:
            if victim.key in evictions.terminating or victim.pod.metadata.deletion_timestamp is not None:
                continue  # already being deleted (preempted, or by its controller): upstream's executor sends no
                # second deletion (nor event)
            evictions.terminating[victim.key] = key
            victim.end_reason = f"Preempted by podgroup {group.metadata.uid} on node cluster"
            sim.events.append(Event(sim.now, "Preempted", f"Pod {victim.key}", node=victim.pod.spec.node_name,
                                    message=victim.end_reason))
            grace = victim.pod.spec.termination_grace_period_seconds
            sim.evict_at(sim.now + (DEFAULT_GRACE_SECONDS if grace is None else float(grace)), victim)
        for member_key, node in answer.nominated.items():
            sim.scheduler.nominate(sim.state.pods[member_key], node)
        sim.events.append(Event(sim.now, "Nominated", f"PodGroup {key}",
                                message=f"found a placement for podgroup, preempting {len(answer.victims)} victims"))

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
            if claim_key in self.claim_groups:
                state.put_claim(self.reserve(claim_key, claim, allocation))
            else:
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
