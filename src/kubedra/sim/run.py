"""The run loop: pods arrive, get their claims, are scheduled, run, finish and free their devices — in simulated time.

Events are processed in time order (ties in the order they were created). After every batch of events at one instant
the scheduling queue is drained once, as kube-scheduler's active queue would be; pods that do not fit wait in the
unschedulable pool until a pod finishes (the cluster event that can make room), exactly once per such event.
Nothing here reads a clock: time is the events' own.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.allocator import Allocator
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import (
    AllocationResult,
    Pod,
    PodExtendedResourceClaimStatus,
    PodResourceClaimStatus,
    ResourceClaim,
)
from kubedra.objects.scheduling import PodGroup
from kubedra.scheduler.claims import (
    allocate_and_reserve,
    claim_from_template,
    generated_name,
    key_of,
    orphaned_claim,
    pod_owner_keys,
    random_suffix,
    release,
    template_not_found,
)
from kubedra.scheduler.extended import claim_name_base
from kubedra.scheduler.gangs import GroupOutcome
from kubedra.scheduler.outcome import Failed, Placement, Unschedulable
from kubedra.scheduler.preemption import NEVER, NodeSizes, Preemption, without_victims
from kubedra.scheduler.queueing_hints import ON_ANY_DELETE, bind_hinted_plugins, delete_hinted_plugins
from kubedra.scheduler.scheduler import Scheduler
from kubedra.sim.durations import deletion_stamp
from kubedra.sim.evictions import Evictions
from kubedra.sim.gang_cycle import GangQueue
from kubedra.sim.gates import GATED_MESSAGE, GATED_REASON, ungate_after
from kubedra.sim.queue import SchedulingQueue
from kubedra.sim.replacements import JobRules, job_rules

if TYPE_CHECKING:
    from kubedra.sim.cronjobs import CronController
    from kubedra.sim.fragmentation import Sampler  # imports this module's Event (through sim.gpus)
    from kubedra.sim.gpus import Inventory
    from kubedra.sim.jobset_controllers import ExclusiveJobController, JobSetController
    from kubedra.sim.jobsets import JobSetRun
    from kubedra.sim.leaderworkersets import LeaderWorkerController
    from kubedra.sim.pytorchjobs import PyTorchJobController
    from kubedra.sim.rayjobs import RayJobController
    from kubedra.sim.workloads import CronJobRun, JobRun

ARRIVE = 0
FINISH = 1
EVICT = 2  # a preemption victim's grace period is over
UNGATE = 3  # a gated pod's scheduling gates are removed (``sim.gates``)
CRON = 4  # a CronJob's controller syncs it (``sim.cronjobs``); the key is the CronJob's
WAKE = 5  # a controller asked to run at this instant (Kueue's admission, ``sim.kueue_controller``); the key names it
DELETED_AT_END = ("Deployment/", "ReplicaSet/", "StatefulSet/", "DaemonSet/")
TERMINAL_PHASES = ("Succeeded", "Failed")
PROGRESS_EVERY = 64  # pods bound between progress reports inside one instant


class Event(msgspec.Struct, frozen=True, gc=False):
    """One line of the timeline: what happened to which pod or claim, and when (seconds from the start).

    A struct the garbage collector does not track (only strings and a float): a run makes several per pod."""

    time: float
    # Created | Scheduled | Pending | Failed | Finished | Allocated | Deallocated | Deleted, a JobSet's Restarting,
    # the controller's FailedResourceClaimCreation; preemption's Preempted (a victim) and Nominated (the preemptor);
    # a PodGroup's condition reason when it changes (Scheduled | Unschedulable | SchedulerError, object "PodGroup
    # ns/name")
    type: str
    object: str  # "Pod ns/name" or "ResourceClaim ns/name"
    node: str = ""
    message: str = ""
    devices: tuple[str, ...] = ()  # Allocated/Deallocated: "driver/pool/device" held (admin access holds none)


@dataclass
class SimulationResult:
    """What one run produced: the report and ``explain`` both read it, so they answer the same."""

    state: ClusterState
    events: list[Event]
    order: list[str]  # pod keys in arrival order
    end_time: float
    allocator: Allocator | None = None  # the run's allocator, over the final allocated state (for ``explain``)
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)  # with the status the run left them in
    group_cycles: dict[str, GroupOutcome] = field(default_factory=dict)  # each group's latest pod-group cycle
    preemptions: dict[str, Preemption] = field(default_factory=dict)  # each refused pod's latest PostFilter answer
    fragmentation_series: list[dict[str, Any]] = field(default_factory=list)  # ``Sampler``'s points, in time order
    fragmentation_end: dict[str, Any] | None = None  # the last point's figures, taken at the end (else None)
    inventory: Inventory | None = None  # the sampler's GPU inventory of ``state`` (its slices and nodes are fixed
    # when the state is built), for the report not to build it again; None: not sampled


@dataclass
class JobProgress:
    """A Job's pods not yet created; the next one starts when a running pod of the Job succeeds."""

    waiting: list[PodRecord]
    work_queue: bool  # completions unset: the first success ends the Job
    done: bool = False
    rules: JobRules = field(default_factory=JobRules)  # what a deleted pod costs it (``sim.replacements``)
    failed: int = 0  # pods counted as failed (status.failed)
    failed_since_success: int = 0  # the back-off's count
    cron: str | None = None  # the CronJob that made the Job ("CronJob/ns/name"), told when it finishes
    on_end: Callable[[JobProgress], None] | None = None  # told once when the Job has no pod left to run (Kueue)


@dataclass
class Simulation:
    """Drives a ``Scheduler`` over arrivals; call ``run`` once."""

    state: ClusterState
    scheduler: Scheduler
    rng: random.Random
    allocator: Allocator | None = None  # handed to the result, so explanations see the run's own allocated state
    on_release: Callable[[ResourceClaim], None] | None = None
    on_allocate: Callable[[ResourceClaim], None] | None = None
    events: list[Event] = field(default_factory=list)
    # Events by instant: a heap of the instants that have any, and each instant's (kind, pod key) in the order they
    # were made (the tie order). Pods arrive and finish in batches at one instant, so a heap entry serves many.
    _instants: list[float] = field(default_factory=list)
    _at: dict[float, list[tuple[int, str]]] = field(default_factory=dict)
    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    _order: list[str] = field(default_factory=list)
    _jobs: dict[str, JobProgress] = field(default_factory=dict)
    _now: float = 0.0
    _deallocated: bool = False  # a claim was deallocated in the current instant (DynamicResources' claim hint)
    _binds: int = 0  # pods bound so far (each bound pod's ``start_order``)
    _version: int = 0  # bumped where the cluster changes under the pending pods (bindings, pods leaving, nominations)
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)  # PodGroups by key, their status kept current
    _gangs: GangQueue | None = None  # made when the first pod of a group is added (GenericWorkload on)
    evictions: Evictions | None = None  # DefaultPreemption; made where pods have more than one priority
    workload_claims: bool = False  # DRAWorkloadResourceClaims: PodGroups' claims shared by their pods
    _on_bound: Callable[[int], None] | None = None  # progress within an instant: pods bound in it so far
    _node_sizes: NodeSizes | None = None
    # The claims present before the run began, by controlling pod (``namespace/uid``): a live cluster's snapshot can
    # hold a claim the controller made whose pod's status does not name it yet. Made at the first arrival.
    _owned_before: dict[str, list[ResourceClaim]] | None = None
    sampler: Sampler | None = None  # fragmentation over time; None: not sampled
    _crons: dict[str, CronController] = field(default_factory=dict)  # by "CronJob/ns/name"
    gangs_on: bool = False  # GenericWorkload: pods made during the run join their PodGroups
    # InOrder JobSets with Jobs still to make, LeaderWorkerSets with workers still to make
    _in_order: list[JobSetController | LeaderWorkerController | RayJobController | PyTorchJobController
                    | ExclusiveJobController] = field(
        default_factory=list)
    _jobsets_made: int = 0  # pods of the Jobs InOrder JobSets made so far
    _wakers: dict[str, Callable[[], None]] = field(default_factory=dict)  # WAKE events' callbacks, by key
    made_elsewhere: Callable[[], int] | None = None  # pods a controller made during the run (Kueue's admitted Jobs)
    pod_watchers: dict[str, Callable[[PodRecord], None]] = field(default_factory=dict)  # told once a pod ends (Kueue)

    @property
    def node_sizes(self) -> NodeSizes:
        """PostFilter's nodes too small for a pod at all, worked out per request shape as pending pods ask."""
        if self._node_sizes is None:
            self._node_sizes = NodeSizes(self.state)
        return self._node_sizes

    @property
    def gangs(self) -> GangQueue | None:
        """The members of each PodGroup (None until the first member is added)."""
        return self._gangs

    @property
    def now(self) -> float:
        """The simulated time of the instant processed last (for live observers such as ``simulate --serve``)."""
        return self._now

    def fragmentation_now(self) -> dict[str, Any]:
        """The report's fragmentation of the state as it is now (for live observers; empty figures unsampled)."""
        from kubedra.sim.fragmentation import Sampler

        if self.sampler is None:
            self.sampler = Sampler(self.state, None, float("inf"))
        pods = self.state.pods
        return self.sampler.now(self._now, (pods[key] for key in self._order))

    @property
    def next_time(self) -> float | None:
        """When the next event happens; None once the run is over."""
        return self._instants[0] if self._instants else None

    def add(self, record: PodRecord, replacing: bool = False) -> None:
        """A pod that arrives at ``record.arrive_at``; ``replacing``: a controller's new pod for a deleted one, which
        takes the old one's place where it has the same name (a StatefulSet's)."""
        if record.group:
            if self._gangs is None:
                self._gangs = GangQueue(self)
            self._gangs.add(record)
        if not (replacing and record.key in self.state.pods):
            self._order.append(record.key)
        self.state.add_pod(record)
        self._push(record.arrive_at, ARRIVE, record.key)

    def _push(self, time: float, kind: int, key: str) -> None:
        events = self._at.get(time)
        if events is None:
            self._at[time] = [(kind, key)]
            heapq.heappush(self._instants, time)
        else:
            events.append((kind, key))

    def add_job(
        self, records: Sequence[PodRecord], parallelism: int, work_queue: bool, rules: JobRules | None = None
    ) -> JobProgress:
        """A Job: ``parallelism`` pods arrive together, each later one when a running one succeeds."""
        progress = JobProgress(waiting=list(records[parallelism:]), work_queue=work_queue, rules=rules or JobRules())
        for record in records[:parallelism]:
            self.add(record)
            self._jobs[record.key] = progress
        return progress

    def add_cronjob(self, run: CronJobRun) -> None:
        """A CronJob: its controller syncs it first when it is created."""
        from kubedra.sim.cronjobs import CronController

        controller = CronController(self, run)
        self._crons[controller.key] = controller
        controller.wake_at(run.created_at)

    def add_jobset(self, run: JobSetRun) -> JobSetController:
        """An InOrder JobSet (``sim.jobsets``): its first replicated job's Jobs are among the Jobs already added; the
        rest are made, one replicated job at a time, as the ones before become ready."""
        from kubedra.sim.jobset_controllers import JobSetController

        controller = JobSetController(self, run)
        self._in_order.append(controller)
        return controller

    def add_controller(self, controller: LeaderWorkerController | RayJobController | PyTorchJobController
                       | ExclusiveJobController) -> None:
        """A controller that makes pods during the run (``sim.leaderworkersets``), stepped after each instant as
        the InOrder JobSets' are."""
        self._in_order.append(controller)

    def _jobset_steps(self) -> None:
        """The InOrder JobSets' controllers after an instant: each makes its next Jobs once the last are ready."""
        still = []
        stepping, self._in_order = self._in_order, []  # a step may add a controller (an exclusive JobSet's Job)
        for controller in stepping:
            before = controller.made
            if controller.step():
                still.append(controller)
            self._jobsets_made += controller.made - before
        self._in_order = still + self._in_order

    def wake(self, time: float, key: str, callback: Callable[[], None]) -> None:
        """``callback`` runs at ``time`` once the events already made for that instant have been processed (events
        made while it is processed join it in order), e.g. after every Job that finishes then has released its quota."""
        self._wakers[key] = callback
        self._push(time, WAKE, key)

    def wake_cron(self, time: float, key: str) -> None:
        """A sync of the CronJob ``key`` at ``time`` (its controller asks once per instant)."""
        self._push(time, CRON, key)

    def start_job(self, job: JobRun, cron: str | None = None) -> JobProgress:
        """A Job made now (a CronJob's): its pods arrive after the template's ``start-after``; a suspended Job makes
        none and stays active."""
        records = [job_record(pod, self._now + job.arrive_at, job.run_for, job.owner, self.gangs_on)
                   for pod in job.pods]
        if job.suspended:
            progress = JobProgress(waiting=records, work_queue=job.completions is None)
        else:
            rules = job_rules(job.spec) if job.spec is not None else None
            progress = self.add_job(records, job.parallelism, work_queue=job.completions is None, rules=rules)
        progress.cron = cron
        return progress

    def job_active(self, job: JobProgress) -> bool:
        """Whether a Job has pods still to run: ones made and not finished, or ones not yet made."""
        return any(progress is job for progress in self._jobs.values()) or (bool(job.waiting) and not job.done)

    def job_ended(self, job: JobProgress) -> None:
        """A Job may have finished (its pod succeeded, or it failed): its CronJob's controller hears of it."""
        if (job.cron is None and job.on_end is None) or self.job_active(job):
            return
        if job.cron is not None:
            self._crons[job.cron].job_finished(job)
        if job.on_end is not None:
            on_end, job.on_end = job.on_end, None
            on_end(job)

    def job_of(self, key: str) -> JobProgress | None:
        """The Job a running or pending pod belongs to."""
        return self._jobs.get(key)

    def track_job(self, key: str, job: JobProgress) -> None:
        """A pod the Job controller made to replace a failed one."""
        self._jobs[key] = job

    def run(self, progress: Callable[[int, int], None] | None = None) -> SimulationResult:
        """Process every event; ``progress(scheduled, total)`` before the first, every ``PROGRESS_EVERY`` pods bound
        (replicas that arrive together are one instant, perhaps minutes long) and after each instant; ``total``
        fixed up front (every pod added plus every Job pod not yet created) and grown by the pods controllers make for
        preemption victims, so ``scheduled`` never exceeds it."""
        waiting = {id(job): len(job.waiting) for job in self._jobs.values()}
        total = len(self._order) + sum(waiting.values())
        done = 0
        if progress is not None:
            progress(0, total)
            self._on_bound = lambda in_instant: progress(done + in_instant, total + self._replaced())
        pods = self.state.pods
        while True:
            if not self._instants:  # events ran out: groups backing off that the last ones may let in, if any
                if (retry := self._stale_retry()) is None:
                    break
                done = self._flush_until(retry + 1.0, progress, done, total)
                continue
            done = self._flush_until(self._instants[0], progress, done, total)
            self._now = now = self._instants[0]
            self._deallocated = False
            gone = []  # assigned pods that left their nodes at this instant
            events = self._at[now]
            i = 0
            while i < len(events):  # events made at this instant while it is processed join it (a Job's next pod)
                kind, key = events[i]
                i += 1
                record = pods.get(key)  # a StatefulSet's replacement for a victim takes its key in the event
                if self._event(kind, key) and record is not None:
                    gone.append(record.pod)
            heapq.heappop(self._instants)
            del self._at[now]  # what binding schedules for this instant (run-for 0) is the next instant
            if gone or self._deallocated:
                self._version += 1
                self.queue.pod_left(gone, self._deallocated, lambda key: pods[key].pod, now)
            if self.queue.next_flush() == now:  # a flush at this instant: its pods tried with the others
                self.queue.flush(now, None)
            if self._gangs is not None and self._gangs.next_retry() == now:  # likewise a group's back-off ending
                self._gangs.retry(now, None)
            done += self._drain()
            self._after_drain(progress, done, total)
        self._on_bound = None
        if self.sampler is not None:
            self.sampler.sample(self._now, (pods[key] for key in self._order), last=True)
        return SimulationResult(
            self.state, self.events, self._order, self._now, self.allocator, self.pod_groups,
            self._gangs.last if self._gangs is not None else {},
            self.evictions.last if self.evictions is not None else {},
            self.sampler.points if self.sampler is not None else [],
            self.sampler.last_at(self._now) if self.sampler is not None and self.sampler.fit is not None else None,
            self.sampler.inventory if self.sampler is not None else None,
        )

    def _after_drain(self, progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
        if self._in_order:
            self._jobset_steps()
        if self.sampler is not None:
            self.sampler.sample(self._now, (self.state.pods[key] for key in self._order))
        if progress is not None:
            progress(done, total + self._replaced())

    def _flush_until(self, until: float, progress: Callable[[int, int], None] | None, done: int, total: int) -> int:
        """The scheduler's flushes of the unschedulable pool, and of the backoff queue for failed pod groups, before
        the next event at ``until``: where the cluster changed since a flushed pod's (group's) attempt, the tick is an
        instant of its own; else the pods keep failing as they did, their queue timestamps moving with the ticks.
        Returns ``done`` plus the pods bound at the ticks."""
        while True:
            tick = self.queue.next_flush()
            retry = self._gangs.next_retry() if self._gangs is not None else None
            if retry is not None and retry < until and (tick is None or retry < tick):
                assert self._gangs is not None
                tick, moved = retry, self._gangs.retry(retry, self._version)
            elif tick is not None and tick < until:
                moved = self.queue.flush(tick, self._version)
            else:
                break
            if moved:
                self._now = tick
                done += self._drain()
                self._after_drain(progress, done, total)
        return done

    def _stale_retry(self) -> float | None:
        """The next group back-off's end where some group backing off was tried against an older state; else None."""
        return self._gangs.next_retry() if self._gangs is not None and self._gangs.stale(self._version) else None

    def _event(self, kind: int, key: str) -> bool:
        """One event; whether it freed room (a pod finished or a victim left)."""
        pods = self.state.pods
        if kind == ARRIVE:
            self._arrival(key)
        elif kind == FINISH:
            if self._finishes(pods[key]):
                self._finish(pods[key])
                return True
        elif kind == UNGATE:
            self._ungate(pods[key])
        elif kind == CRON:
            self._crons[key].sync()
        elif kind == WAKE:
            self._wakers[key]()
        else:
            return self._evict(pods[key])
        return False

    def _finishes(self, record: PodRecord) -> bool:
        """Whether a FINISH event at this instant is the end of ``record``'s run: not for a pod deleted before (a
        preemption victim), nor for the pod a StatefulSet made again under the victim's name."""
        if record.deleted or record.finished_at is not None or record.started_at is None:
            return False
        return record.run_for is not None and record.started_at + record.run_for == self._now

    def _replaced(self) -> int:
        """Pods controllers made for preemption victims and CronJobs so far (not known up front)."""
        made = sum(cron.made for cron in self._crons.values()) + self._jobsets_made
        if self.made_elsewhere is not None:
            made += self.made_elsewhere()
        return made + (self.evictions.replacements.made if self.evictions is not None else 0)

    # ------------------------------------------------------------------------------------------ lifecycle

    def _arrival(self, key: str) -> None:
        """An ARRIVE event; a controller's replacement for a victim gets its ``Created`` event first."""
        record = self.state.pods.get(key)
        if record is None or record.deleted:  # never made: its controller gave up first (``delete``)
            return
        if self.evictions is not None:
            self.evictions.replacements.arrived(record)
        self._arrive(record)

    def _arrive(self, record: PodRecord) -> None:
        pod = record.pod
        if pod.status.phase in TERMINAL_PHASES:
            # Finished before the simulation began (a snapshot of a live cluster): it holds nothing and is never
            # scheduled, as kube-scheduler ignores terminal pods.
            record.started_at = record.finished_at = self._now
            return
        statuses = list(pod.status.resource_claim_statuses)
        if record.group and self._gangs is not None and self.workload_claims:
            self._gangs.resolve_claims(record, statuses)  # claims of its PodGroup (KEP-5729) resolve to the group's
        generated = {s.name for s in statuses if s.resource_claim_name} if statuses else set()
        for pod_claim in pod.spec.resource_claims:
            if not pod_claim.resource_claim_template_name or pod_claim.name in generated:
                continue  # the claim controller made this pod's claim already
            adopted = self._adopt(pod, pod_claim.name)
            if adopted is not None:
                statuses.append(PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=adopted))
                continue
            template = self.state.templates.get(key_of(pod.metadata.namespace, pod_claim.resource_claim_template_name))
            if template is None:  # the scheduler reports the pod as waiting for its claim; the controller says why
                self.events.append(Event(self._now, "FailedResourceClaimCreation", f"Pod {record.key}",
                                         message=template_not_found(pod_claim.name,
                                                                    pod_claim.resource_claim_template_name)))
                continue
            claim = claim_from_template(pod, pod_claim, template, self.rng)
            key = self.state.put_claim(claim)
            statuses.append(PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=claim.metadata.name))
            self.events.append(Event(self._now, "Created", f"ResourceClaim {key}",
                                     message=f"from template {pod_claim.resource_claim_template_name}"))
        if not pod.spec.node_name:  # the common case, one copy: claims' statuses written and Pending
            status = msgspec.structs.replace(pod.status, resource_claim_statuses=statuses, phase="Pending")
            record.pod = msgspec.structs.replace(pod, status=status)
            if pod.spec.scheduling_gates:  # SchedulingGates' PreEnqueue: out of the queue until they are removed
                record.pending_reason = GATED_MESSAGE
                self.events.append(Event(self._now, GATED_REASON, f"Pod {record.key}", message=", ".join(
                    gate.name for gate in pod.spec.scheduling_gates)))
                after = ungate_after(pod)
                if after is not None:
                    self._push(self._now + after, UNGATE, record.key)
                return
            self._enqueue(record.key)
            return
        if statuses:
            status = msgspec.structs.replace(pod.status, resource_claim_statuses=statuses)
            record.pod = msgspec.structs.replace(pod, status=status)
        if self._bound_already(record):
            # Assigned before the simulation began: kube-scheduler never sees assigned pods; it runs where it is.
            self._bind(record, Placement(record.pod.spec.node_name, {}), scheduled=False)
            extended = record.pod.status.extended_resource_claim_status
            if extended is not None:
                record.extended_claim_key = key_of(record.pod.metadata.namespace, extended.resource_claim_name)
                record.claim_keys.append(record.extended_claim_key)
            return
        record.pod = msgspec.structs.replace(
            record.pod, status=msgspec.structs.replace(record.pod.status, phase="Pending")
        )
        self._enqueue(record.key)

    def _ungate(self, record: PodRecord) -> None:
        """The pod's scheduling gates are removed (a controller's update): it enters the scheduling queue."""
        if record.deleted or not record.pod.spec.scheduling_gates:
            return
        spec = msgspec.structs.replace(record.pod.spec, scheduling_gates=[])
        record.pod = msgspec.structs.replace(record.pod, spec=spec)
        record.pending_reason = ""
        self.events.append(Event(self._now, "Ungated", f"Pod {record.key}", message="scheduling gates removed"))
        self._enqueue(record.key)

    def remove_gate(self, record: PodRecord, gate: str, pod: Pod) -> None:
        """A controller's update of the pod (``pod``: Kueue's admission merges its flavors in) that removes the gate
        ``gate``: it enters the scheduling queue where no other gate is left."""
        gates = [g for g in pod.spec.scheduling_gates if g.name != gate]
        record.pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, scheduling_gates=gates))
        if gates or record.deleted or record.finished_at is not None:
            return
        record.pending_reason = ""
        self.events.append(Event(self._now, "Ungated", f"Pod {record.key}", message=f"{gate} removed"))
        self._enqueue(record.key)

    def _adopt(self, pod: Pod, pod_claim: str) -> str | None:
        """The name of a claim the controller made for ``pod_claim`` before the run began and had not yet recorded in
        the pod's status (``findPodResourceClaim``, looked up before a claim is made from the template)."""
        if self._owned_before is None:
            self._owned_before = {}
            for existing in self.state.claims.values():
                for owner in pod_owner_keys(existing):
                    self._owned_before.setdefault(owner, []).append(existing)
        if not pod.metadata.uid or not self._owned_before:
            return None
        owned = self._owned_before.get(f"{pod.metadata.namespace}/{pod.metadata.uid}", [])
        claim = orphaned_claim(pod_claim, owned)
        if claim is None or key_of(claim.metadata.namespace, claim.metadata.name) not in self.state.claims:
            return None
        return claim.metadata.name

    def _bound_already(self, record: PodRecord) -> bool:
        """``spec.nodeName`` names a node and every claim of the pod is allocated (what a live cluster's bound pods
        look like). A pod written with ``nodeName`` but unallocated claims still goes through a scheduling cycle
        restricted to that node, which allocates them there."""
        node = record.pod.spec.node_name
        if not node or node not in self.state.nodes:
            return False
        keys = self._claim_keys(record)
        if len(keys) < len(record.pod.spec.resource_claims):
            return False
        for key in keys:
            claim = self.state.claims.get(key)
            if claim is None or claim.status.allocation is None:
                return False
        return True

    def _enqueue(self, key: str) -> None:
        self.queue.enqueue(key, self._now)

    def _queue_order(self, key: str) -> tuple[int, float, int]:
        """kube-scheduler's activeQ order: higher priority first, then the earlier queue timestamp.

        A pod that failed keeps the time of its failed attempt, so a pod waiting since earlier goes before one that
        arrives at the instant a device is freed.
        """
        at, seq = self.queue.queued[key]
        return -(self.state.pods[key].pod.spec.priority or 0), at, seq

    def _drain(self) -> int:
        """One scheduling attempt for each pod in the active queue; then, while pods were moved back to the backoff
        queue (which kube-scheduler pops once the active queue is empty) or by bindings, an attempt for each."""
        scheduled = self._attempt(self.queue.take_active(self._queue_order))
        while self.queue.requeued:
            scheduled += self._attempt(self.queue.take_requeued(self._queue_order, self._now))
        return scheduled

    def _attempt(self, active: list[str]) -> int:
        scheduled = 0
        for key in active:
            record = self.state.pods[key]
            if record.deleted:
                continue
            if record.group:  # a PodGroup's member: its group is tried as a unit (see ``gang_cycle``)
                assert self._gangs is not None
                scheduled += self._gangs.cycle(record, active)
                continue
            outcome = self.scheduler.schedule(record)
            if isinstance(outcome, Placement):
                self._bind(record, outcome)
                scheduled += 1
                if self._on_bound is not None and scheduled % PROGRESS_EVERY == 0:
                    self._on_bound(scheduled)
            else:
                if isinstance(outcome, Unschedulable) and outcome.reasons:
                    outcome = self._post_filter(record, outcome)
                self._unschedulable_pod(record, outcome)
        return scheduled

    def _post_filter(self, record: PodRecord, outcome: Unschedulable) -> Unschedulable:
        """DefaultPreemption (``sim.evictions``); its message joins the pod's as kube-scheduler's FitError writes it
        (``... preemption: 0/N nodes are available: ...``). Where every pod has one priority no pod can be a victim."""
        if self.evictions is not None:
            self._version += 1  # a nomination: the preemptor's room on its node is taken for lower priorities
            message = self.evictions.post_filter(record, outcome)
        elif record.pod.spec.preemption_policy == "Never":
            message = NEVER
        else:
            message = without_victims(record, outcome.reasons, self.node_sizes)
        return Unschedulable(f"{outcome.message} preemption: {message}", outcome.reasons) if message else outcome

    def evict_at(self, time: float, record: PodRecord) -> None:
        """A bound pod being deleted (a preemption victim, one its controller deletes) leaves at ``time``, the end
        of its grace period; terminating meanwhile (``ClusterState.terminate``)."""
        node = record.pod.spec.node_name
        if node:
            self.state.terminate(record, node, deletion_stamp(self._now))
        self._push(time, EVICT, record.key)

    def _evict(self, record: PodRecord) -> bool:
        """The victim is gone: it held its node and devices until now; its claims go through the usual release."""
        if self.evictions is not None:
            self.evictions.gone(record)
        if record.deleted or record.finished_at is not None:
            return False
        job = self._jobs.get(record.key)
        node = record.pod.spec.node_name
        record.finished_at = self._now
        record.deleted = True
        record.end_reason = record.end_reason or "Preempted by the scheduler"  # set when the victim was chosen
        self.state.unbind(record, node)
        self.events.append(Event(self._now, "Deleted", f"Pod {record.key}", node=node, message=record.end_reason))
        self._release_claims(record, node)
        if record.group and self._gangs is not None:
            self._gangs.member_gone(record)
        self._jobs.pop(record.key, None)
        if self.evictions is not None:
            self.evictions.replacements.gone(record, job)
        if (watcher := self.pod_watchers.pop(record.key, None)) is not None:
            watcher(record)
        return True

    def delete(self, record: PodRecord, reason: str, grace: float) -> None:
        """Its controller deletes the pod: a bound one leaves after ``grace`` as a victim does, one on no node at once
        (no kubelet stops it), its generated claims with it."""
        if record.deleted or record.finished_at is not None:
            return
        record.end_reason = reason
        self._jobs.pop(record.key, None)
        if record.pod.spec.node_name and record.started_at is not None:
            self.evict_at(self._now + grace, record)
            return
        if record.arrive_at > self._now:  # not made yet (a Job's replacement in its back-off): never made
            self._order.remove(record.key)
            del self.state.pods[record.key]
            return
        record.deleted, record.finished_at = True, self._now
        if record.arrive_at <= self._now:
            self.events.append(Event(self._now, "Deleted", f"Pod {record.key}", message=reason))
            record.claim_keys = list(self._claim_keys(record))
            self._release_claims(record, "")
        if record.group and self._gangs is not None:
            self._gangs.member_gone(record)

    def job_pods(self, job: JobProgress) -> list[PodRecord]:
        """The pods of a Job made so far and not finished (their keys are still tracked)."""
        return [self.state.pods[key] for key, progress in self._jobs.items() if progress is job]

    def _unschedulable_pod(self, record: PodRecord, outcome: Unschedulable | Failed) -> None:
        """The failure handler: the reason recorded (an event when it changed), the pod back to the queue."""
        key = record.key
        message = outcome.message
        if isinstance(outcome, Failed):
            message = f"error: {message}"
        if message != record.pending_reason:
            kind = "Failed" if isinstance(outcome, Failed) else "Pending"
            self.events.append(Event(self._now, kind, f"Pod {key}", message=message))
        record.pending_reason = message
        hinted: frozenset[str] = frozenset()  # a group's member is tried again by its group's cycle
        on_delete = ON_ANY_DELETE
        if isinstance(outcome, Unschedulable) and not record.group:
            hinted = bind_hinted_plugins(outcome.reasons)
            on_delete = delete_hinted_plugins(outcome.reasons)
        self.queue.failed(key, self._now, hinted, on_delete, self._version)

    def _bind(self, record: PodRecord, placement: Placement, *, scheduled: bool = True) -> None:
        """The pod bound to ``placement``'s node (claims allocated, ``Running``) and started: one ``scheduled`` takes
        the next place in the bind order (``start_order``); one assigned in the input keeps 0, its start among the
        input's unknown (a tie)."""
        pod = record.pod
        keys = list(self._claim_keys(record))
        for key in keys:
            claim = self.state.claims[key]
            allocation = placement.allocations.get(key)
            if record.group and self._gangs is not None and key in self._gangs.claim_groups:
                updated = self._gangs.reserve(key, claim, allocation)
            else:
                updated = allocate_and_reserve(claim, allocation, pod)
            self.state.put_claim(updated)
            if allocation is not None:
                self._allocated(key, allocation, updated, placement.node)
        status = pod.status
        if placement.special_claim is not None and placement.special_allocation is not None:
            base = claim_name_base(pod.metadata.name)
            meta = msgspec.structs.replace(placement.special_claim.metadata, name=base + random_suffix(self.rng))
            special = msgspec.structs.replace(placement.special_claim, metadata=meta)
            special = allocate_and_reserve(special, placement.special_allocation, pod)
            record.extended_claim_key = self.state.put_claim(special)
            self._allocated(record.extended_claim_key, placement.special_allocation, special, placement.node)
            keys.append(record.extended_claim_key)
            status = msgspec.structs.replace(
                status,
                extended_resource_claim_status=PodExtendedResourceClaimStatus(
                    resource_claim_name=special.metadata.name, request_mappings=placement.mappings
                ),
            )
        record.claim_keys = keys
        spec = msgspec.structs.replace(pod.spec, node_name=placement.node)
        status = msgspec.structs.replace(status, phase="Running")
        record.pod = msgspec.structs.replace(pod, spec=spec, status=status)
        record.started_at = self._now
        if scheduled:
            self._binds += 1
            record.start_order = self._binds
        record.pending_reason = ""
        self._version += 1
        self.state.bind(record, placement.node)
        if self.queue.hinted:
            self.queue.bound(record.pod, lambda key: self.state.pods[key].pod)
        self.events.append(Event(self._now, "Scheduled", f"Pod {record.key}", node=placement.node,
                                 message=f"Successfully assigned {record.key} to {placement.node}"))
        if record.run_for is not None:
            self._push(self._now + record.run_for, FINISH, record.key)

    def _claim_keys(self, record: PodRecord) -> Sequence[str]:
        pod = record.pod
        statuses = pod.status.resource_claim_statuses
        keys = []
        for pod_claim in pod.spec.resource_claims:
            name = pod_claim.resource_claim_name or generated_name(statuses, pod_claim.name)
            if name:
                keys.append(key_of(pod.metadata.namespace, name))
        return keys

    def _allocated(self, key: str, allocation: AllocationResult, claim: ResourceClaim, node: str) -> None:
        """``claim`` (at ``key``) now holds ``allocation`` on ``node``."""
        held = self.state.devices.mark(allocation, +1)
        if self.on_allocate is not None:
            self.on_allocate(claim)
        self.events.append(Event(self._now, "Allocated", f"ResourceClaim {key}", node=node,
                                 message=", ".join([r.device for r in allocation.devices.results]), devices=held))

    def _finish(self, record: PodRecord) -> None:
        """The end of ``run-for``: a Job's or bare pod succeeds and stays; a long-running controller's pod (whose
        containers would restart forever) ends only by deletion, as when its workload is scaled down."""
        pod = record.pod
        node = pod.spec.node_name
        record.finished_at = self._now
        self.state.unbind(record, node)
        if record.owner.startswith(DELETED_AT_END):
            record.deleted = True
            record.end_reason = f"run-for elapsed: {record.owner.split('/', 1)[0]} pods end by deletion"
            self.events.append(Event(self._now, "Deleted", f"Pod {record.key}", node=node, message=record.end_reason))
        else:
            status = msgspec.structs.replace(pod.status, phase="Succeeded")
            record.pod = msgspec.structs.replace(pod, status=status)
            self.events.append(Event(self._now, "Finished", f"Pod {record.key}", node=node))
        self._release_claims(record, node)
        if record.group and self._gangs is not None:
            self._gangs.member_gone(record)
        if (watcher := self.pod_watchers.pop(record.key, None)) is not None:
            watcher(record)
        job = self._jobs.pop(record.key, None)
        if job is not None:
            job.failed_since_success = 0
            job.done = job.done or job.work_queue
            if job.waiting and not job.done:
                successor = job.waiting.pop(0)
                successor.arrive_at = self._now
                self.add(successor)
                self._jobs[successor.key] = job
            self.job_ended(job)

    def _release_claims(self, record: PodRecord, node: str) -> None:
        gangs = self._gangs if record.group else None
        for key in record.claim_keys:
            claim = self.state.claims.get(key)
            if claim is None or (gangs is not None and key in gangs.claim_groups):
                continue
            outcome = release(claim, record.pod)
            if outcome.deallocated is not None:
                self._deallocated = True  # DynamicResources' hint for the claim's update: Queue
                held = self.state.devices.mark(outcome.deallocated, -1)
                if self.on_release is not None:
                    self.on_release(claim)
                self.events.append(Event(self._now, "Deallocated", f"ResourceClaim {key}", node=node, devices=held))
            if outcome.claim is None:
                self.state.delete_claim(key)
                self.events.append(Event(self._now, "Deleted", f"ResourceClaim {key}",
                                         message="generated claim of a finished pod"))
            else:
                self.state.put_claim(outcome.claim)


def job_record(pod: Pod, arrive_at: float, run_for: float | None, owner: str, gangs: bool = False) -> PodRecord:
    """The run's record of a workload's pod (a PodGroup member's group key set where gangs are on)."""
    from kubedra.cluster.usage import pod_requests
    from kubedra.sim.groups import group_key

    record = PodRecord(pod=pod, requests=pod_requests(pod), arrive_at=arrive_at, run_for=run_for, owner=owner)
    if gangs and pod.spec.scheduling_group is not None:
        record.group = group_key(pod)
    return record
