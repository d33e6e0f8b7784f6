"""Kueue in a run: Jobs and JobSets that name a LocalQueue are held (created suspended, as Kueue's webhooks make
them) until their ClusterQueue admits them (``sim.kueue``); an admitted Job starts then, its pod template given the
flavors' node labels and tolerations (Kueue's Job reconciler, ``podset.Merge``), and its quota is free again when it
has no pod left to run. An admitted JobSet is resumed with each replicated job's template given its pod set's
(``RunWithPodSetsInfo``): its Jobs are made then, and its quota is free again when it completes or fails (Kueue's
``Finished``: its Completed or Failed condition). Admission runs once per instant, after that instant's arrivals and
completions.

An admitted RayJob (``sim.kueue_rayjobs``) is resumed with each pod set's node selector and tolerations in its
cluster's head and workers and its submitter; its cluster's pods are made then, its submitter Job once the cluster is
ready (``sim.rayjobs``), and its quota is free again when it finishes (its submitter Job ended, or its deadline, counted
from the admission, failed it).

Preemption within a ClusterQueue (``sim.kueue_preemption``): a victim Job, JobSet, RayJob or group of plain pods is
stopped as Kueue's jobframework stops its kind (``sim.kueue_victims``): a Job, JobSet or RayJob suspended, its pods
deleted with their grace period, its quota released at once and its Workload requeued under its creation time; plain
pods deleted, their quota released once the last has left, their Workload gone with them. The preemptor is admitted
in the next admission pass that finds the quota free (its pods wait in the scheduler's queue for the victims' to
leave)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import msgspec

from kubedra.objects.model import Pod, Toleration
from kubedra.sim.jobsets import JobSetRun
from kubedra.sim.kueue import Admission, Kueue, PodSet, Workload
from kubedra.sim.kueue_objects import KueueSetup, units
from kubedra.sim.kueue_pods import GATE, QueuedPods
from kubedra.sim.kueue_rayjobs import admitted_rayjob, rayjob_workload
from kubedra.sim.kueue_victims import (
    requeued,
    requeued_jobset,
    requeued_rayjob,
    stop_job,
    stop_jobset,
    stop_pods,
    stop_rayjob,
)
from kubedra.sim.rayjobs import RayJobController, RayJobRun

if TYPE_CHECKING:
    from kubedra.cluster.state import PodRecord
    from kubedra.sim.jobset_controllers import JobSetController
    from kubedra.sim.run import JobProgress, Simulation
    from kubedra.sim.workloads import JobRun

WAKE_KEY = "kueue"


def pod_set(job: JobRun, name: str = "main", replicas: int = 1) -> PodSet:
    """A Job's pod set: ``min(parallelism, completions)`` pods of its template (``replicas`` such Jobs: a replicated
    job's, as Kueue's JobSet integration counts them, ``podsCount``)."""
    from kubedra.cluster.usage import pod_requests

    pod = job.pods[0]
    count = job.parallelism if job.completions is None else min(job.parallelism, job.completions)
    requests = {r: units(r, q) for r, q in pod_requests(pod).items()}
    node_affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    return PodSet(name, count * replicas, requests, dict(pod.spec.node_selector), required,
                  tuple(pod.spec.tolerations))


def workload(job: JobRun, order: int) -> Workload:
    priority = (job.pods[0].spec.priority or 0) if job.pods else 0
    assert job.queue is not None
    return Workload(f"Job {job.namespace}/{job.name}", job.namespace, job.queue, priority, job.arrive_at, order,
                    (pod_set(job),) if job.pods else ())


def jobset_workload(run: JobSetRun, order: int) -> Workload:
    """A JobSet's Workload (Kueue's ``jobset`` integration): one pod set per replicated job, named after it, of
    ``replicas x min(parallelism, completions)`` pods; its priority the first template's with a priorityClassName."""
    from kubedra.sim.jobset_controllers import replicated_job_of

    jobs = [job for stage in (run.first, *run.stages) for job in stage if job.pods]
    pod_sets = []
    for name, replicas in run.replicas:
        job = next((j for j in jobs if replicated_job_of(j) == name), None)
        if job is not None and replicas > 0:
            pod_sets.append(pod_set(job, name, replicas))
    classed = [job.pods[0].spec.priority or 0 for job in jobs if job.pods[0].spec.priority_class_name]
    assert run.queue is not None
    return Workload(f"JobSet {run.namespace}/{run.name}", run.namespace, run.queue, classed[0] if classed else 0,
                    run.created_at, order, tuple(pod_sets))


def merged(pods: tuple[Pod, ...], labels: dict[str, str], tolerations: tuple[Toleration, ...]) -> tuple[Pod, ...]:
    """The pods with a pod set's node selector and tolerations merged in (``podset.Merge``)."""
    if not labels and not tolerations:
        return pods
    out = []
    for pod in pods:
        spec = msgspec.structs.replace(pod.spec, node_selector={**pod.spec.node_selector, **labels},
                                       tolerations=[*pod.spec.tolerations, *tolerations])
        out.append(msgspec.structs.replace(pod, spec=spec))
    return tuple(out)


def admitted_pods(pods: tuple[Pod, ...], admission: Admission) -> tuple[Pod, ...]:
    """The pods the admitted Job makes: node selector and tolerations merged in (one pod set)."""
    return merged(pods, admission.node_selectors[0], admission.tolerations[0])


def admitted_jobset(run: JobSetRun, admission: Admission) -> JobSetRun:
    """The JobSet as resumed (``RunWithPodSetsInfo``): each replicated job's template given its pod set's node
    selector and tolerations; its first Jobs made now."""
    from kubedra.sim.jobset_controllers import replicated_job_of

    given = {ps.name: (labels, tolerations) for ps, labels, tolerations
             in zip(admission.workload.pod_sets, admission.node_selectors, admission.tolerations, strict=True)}

    def job(one: JobRun, now: bool) -> JobRun:
        labels, tolerations = given.get(replicated_job_of(one), ({}, ()))
        return replace(one, arrive_at=0.0 if now else one.arrive_at, pods=merged(one.pods, labels, tolerations))

    return replace(run, first=tuple(job(j, True) for j in run.first),
                   stages=tuple(tuple(job(j, False) for j in stage) for stage in run.stages))


class KueueController:
    """Holds the queued Jobs of a run and starts them as they are admitted."""

    def __init__(self, sim: Simulation, setup: KueueSetup) -> None:
        self.sim = sim
        self.kueue = Kueue(setup)
        self.jobs: dict[str, JobRun | JobSetRun | RayJobRun | QueuedPods] = {}  # held, by workload key
        self.waiting: list[Workload] = []  # made later than now (start-after), by creation time
        self.made = 0  # pods of admitted Jobs
        # admitted Jobs, JobSets and plain pods as started, by workload key: the preemption victims
        self.admitted: dict[str, tuple[JobRun, JobProgress]] = {}
        self.admitted_jobsets: dict[str, tuple[JobSetRun, JobSetController]] = {}
        self.admitted_pods: dict[str, QueuedPods] = {}
        self.admitted_rayjobs: dict[str, tuple[RayJobRun, RayJobController]] = {}
        self.evictions = 0  # preempted Jobs and JobSets so far: their new pods' names
        self._woken_at: float | None = None
        sim.made_elsewhere = lambda: self.made

    def hold(self, job: JobRun) -> None:
        """A Job naming a LocalQueue: its Workload is created when the Job is."""
        self._hold(workload(job, len(self.jobs)), job, job.arrive_at)

    def hold_jobset(self, run: JobSetRun) -> None:
        """A JobSet naming a LocalQueue (made suspended by Kueue's webhook): one Workload for all its Jobs."""
        self._hold(jobset_workload(run, len(self.jobs)), run, run.created_at)

    def hold_rayjob(self, run: RayJobRun) -> None:
        """A RayJob naming a LocalQueue (made suspended by Kueue's webhook): no cluster, no submitter until admitted."""
        self._hold(rayjob_workload(run, len(self.jobs)), run, run.created_at)

    def hold_pods(self, queued: QueuedPods) -> None:
        """Plain pods naming a LocalQueue (``sim.kueue_pods``), made gated by Kueue's webhook: their Workload is made
        with the pod, or a group's once all its pods exist."""
        self._hold(queued.workload, queued, queued.workload.created_at)

    def _hold(self, queued: Workload, owner: JobRun | JobSetRun | RayJobRun | QueuedPods, created_at: float) -> None:
        self.jobs[queued.key] = owner
        self.waiting.append(queued)
        self._wake(created_at)

    def _wake(self, time: float) -> None:
        if self._woken_at == time:
            return
        self._woken_at = time
        self.sim.wake(time, WAKE_KEY, self.cycle)

    def cycle(self) -> None:
        """Workloads created by now join their queues; every admission the queues then make starts its Job."""
        from kubedra.sim.run import Event

        now = self.sim.now
        self._woken_at = None
        arrived = [w for w in self.waiting if w.created_at <= now]
        self.waiting = [w for w in self.waiting if w.created_at > now]
        for queued in arrived:
            self.kueue.submit(queued)
            cq = self.kueue.cluster_queue_of(queued)
            self.sim.events.append(Event(now, "Queued", queued.key, message=f"LocalQueue {queued.queue}"
                                         + (f" (ClusterQueue {cq})" if cq else "")))
        for admission in self.kueue.admit(now):
            self._start(admission)
        for victim, message in self.kueue.preempted:
            self._preempted(victim, message)
        for queued in arrived:
            reason = self.kueue.reasons.get(queued.key)
            if reason:
                self.sim.events.append(Event(now, "Inadmissible", queued.key, message=reason))
        if self.waiting:
            self._wake(min(w.created_at for w in self.waiting))

    def _start(self, admission: Admission) -> None:
        from kubedra.sim.run import Event

        key = admission.workload.key
        job = self.jobs.pop(key)
        flavors = ", ".join(sorted({f"{r}: {f}" for chosen in admission.flavors for r, f in chosen.items()}))
        self.sim.events.append(Event(self.sim.now, "Admitted", key, message=f"ClusterQueue "
                                     f"{admission.cluster_queue}" + (f" ({flavors})" if flavors else "")))
        if isinstance(job, JobSetRun):
            self._start_jobset(admission, job)
            return
        if isinstance(job, RayJobRun):
            self._start_rayjob(admission, job)
            return
        if isinstance(job, QueuedPods):
            self._start_pods(admission, job)
            return
        started = replace(job, arrive_at=0.0, suspended=False, pods=admitted_pods(job.pods, admission))
        self.made += len(started.pods)
        progress = self.sim.start_job(started)
        if not started.pods:
            self._ended(admission)
            return
        self.admitted[key] = job, progress
        progress.on_end = lambda _job: self._ended(admission)

    def _preempted(self, victim: Admission, message: str) -> None:
        """The victim evicted (``Preempted``) and its owner stopped (``sim.kueue_victims``): a Job's or JobSet's
        quota released and its Workload requeued now, plain pods' once they have left; the next admission pass runs
        then."""
        from kubedra.sim.run import Event

        sim, key = self.sim, victim.workload.key
        sim.events.append(Event(sim.now, "Preempted", key, message=message))
        if key in self.admitted_pods:
            sim.events.append(Event(sim.now, "Stopped", key, message=f"Kueue deleted the pods: {message}"))
            stop_pods(sim, self.admitted_pods.pop(key).keys, f"{key} stopped by Kueue (Preempted)",
                      lambda: self._ended(victim))
            return
        kind = key.split(" ", 1)[0]
        sim.events.append(Event(sim.now, "Suspended", key, message=f"Kueue stopped the {kind}: {message}"))
        reason = f"{key} suspended by Kueue (Preempted)"
        if key in self.admitted_jobsets:
            run, controller = self.admitted_jobsets.pop(key)
            stop_jobset(sim, controller, reason)
            self.jobs[key] = requeued_jobset(run, self.evictions)
        elif key in self.admitted_rayjobs:
            held, ray = self.admitted_rayjobs.pop(key)
            stop_rayjob(sim, ray, reason)
            self.jobs[key] = requeued_rayjob(held, self.evictions)
        else:
            job, progress = self.admitted.pop(key)
            stop_job(sim, progress, reason)
            self.jobs[key] = requeued(sim, job, self.evictions)
        self.evictions += 1
        self.kueue.release(victim)
        sim.events.append(Event(sim.now, "QuotaReleased", key, message=f"ClusterQueue {victim.cluster_queue}"))
        self.kueue.requeue(victim.workload)
        sim.events.append(Event(sim.now, "Requeued", key, message=f"Preempted: {message}"))
        self._wake(sim.now)

    def _start_jobset(self, admission: Admission, held: JobSetRun) -> None:
        """Its first Jobs made now, the rest by its controller; its quota freed when it completes or fails."""
        from kubedra.sim.jobset_controllers import start_job

        run = admitted_jobset(held, admission)
        for job in run.first:
            self.made += len(job.pods)
            start_job(self.sim, job)
        controller = self.sim.add_jobset(run)
        self.admitted_jobsets[admission.workload.key] = held, controller
        controller.on_end = lambda: self._ended(admission)

    def _start_rayjob(self, admission: Admission, run: RayJobRun) -> None:
        """Its cluster's pods made now, its submitter Job by its controller; its quota freed when it finishes."""
        from kubedra.sim.run import job_record

        pods, started = admitted_rayjob(run, admission, self.sim.now)
        for pod in pods:
            ref = pod.metadata.owner_references[0]
            self.sim.add(job_record(pod, self.sim.now, None, f"RayCluster/{run.namespace}/{ref.name}",
                                    self.sim.gangs_on))
        self.made += len(pods)
        controller = RayJobController(self.sim, started)
        self.admitted_rayjobs[admission.workload.key] = run, controller
        if started.submitter is not None:  # the other modes' Ray job ends where kubedra does not look: never freed
            controller.on_end = lambda: self._ended(admission)
        self.sim.add_controller(controller)

    def _start_pods(self, admission: Admission, queued: QueuedPods) -> None:
        """Each pod given its pod set's node labels and tolerations and ungated (``Run``); the quota freed when a
        single pod ends; a group's pod's share when it succeeds (``ReclaimablePods``), the rest when every pod has
        (``Finished``); a serving group's never."""
        sets = [ps.name for ps in admission.workload.pod_sets]
        given = {ps.name: (labels, tolerations) for ps, labels, tolerations
                 in zip(admission.workload.pod_sets, admission.node_selectors, admission.tolerations, strict=True)}
        succeeded: set[str] = set()

        def ended(record: PodRecord) -> None:
            if not queued.group:
                self._ended(admission)
                return
            if record.pod.status.phase != "Succeeded" or queued.serving:
                return
            succeeded.add(record.key)
            self.kueue.reclaim(admission, sets.index(queued.roles[queued.keys.index(record.key)]))
            if len(succeeded) == len(queued.keys):
                self._ended(admission)
            else:
                self._wake(self.sim.now)

        self.admitted_pods[admission.workload.key] = queued
        for key, role in zip(queued.keys, queued.roles, strict=True):
            record = self.sim.state.pods[key]
            self.sim.remove_gate(record, GATE, merged((record.pod,), *given[role])[0])
            self.sim.pod_watchers[key] = ended

    def _ended(self, admission: Admission) -> None:
        from kubedra.sim.run import Event

        key = admission.workload.key
        self.admitted.pop(key, None)
        self.admitted_jobsets.pop(key, None)
        self.admitted_pods.pop(key, None)
        self.admitted_rayjobs.pop(key, None)
        self.kueue.release(admission)
        self.sim.events.append(Event(self.sim.now, "QuotaReleased", key,
                                     message=f"ClusterQueue {admission.cluster_queue}"))
        self._wake(self.sim.now)
