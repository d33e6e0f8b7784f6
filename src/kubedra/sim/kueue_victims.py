"""How Kueue v0.17.0 stops the owner of a Workload it preempted (the jobframework reconciler's ``stopJob`` on an
``Evicted`` Workload, ``pkg/controller/jobframework/reconciler.go``), by kind, and when its quota is released
(``!job.IsActive()``: the Workload's quota reservation cleared and, preempted, it is requeued).

- Job (``Suspend``): the Job suspended; the Job controller deletes its pods, each leaving after its grace period. Its
  ``status.active`` counts no terminating pod: the quota is released at once. Re-admitted, it makes pods again for the
  completions not yet reached (``requeued``).
- JobSet (``Suspend``, ``pkg/controller/jobs/jobset``): the JobSet suspended; its controller (sigs.k8s.io/jobset
  v0.11.1, ``suspendJobs``) suspends its active Jobs, whose pods the Job controller deletes. ``IsActive``: a replicated
  job with an active Job; none once the pods are terminating: the quota is released at once. Re-admitted, its Jobs are
  resumed; kubedra makes them anew (``requeued_jobset``: every Job's pods, renamed), not counting the pods that
  succeeded before the eviction.
- Plain pods (``Stop``, ``pkg/controller/jobs/pod/pod_controller.go``): every pod of the Workload not yet ended is
  deleted (a ``TerminationTarget`` condition first), leaving after its grace period. ``IsActive``: a Running pod not
  yet past its grace period (``FastQuotaReleaseInPodIntegration`` is off by default): the quota is released when the
  last one has left. The deleted pods are gone for good, and with them (the garbage collector: the pods are its
  owners) the Workload: it is never admitted again.
- RayJob (``Suspend``, ``pkg/controller/jobs/rayjob``): the RayJob suspended; ray-operator (v1.5.0,
  ``Suspending``) deletes its RayCluster and its submitter Job (background propagation: their pods deleted with their
  grace period) and, both objects gone, marks it ``Suspended``: ``IsActive`` is false then, and kubedra releases its
  quota at once (the operator's next sync, a few seconds on, is not counted). Re-admitted, it makes a new cluster
  (``requeued_rayjob``: its pods renamed), its submitter Job once the cluster is ready, and its
  ``activeDeadlineSeconds`` counts from the new admission (the suspension cleared its start time).

Pure of I/O: these act on the simulation ``sim.kueue_controller`` hands them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import msgspec

from kubedra.objects.model import Pod
from kubedra.sim.jobsets import JobSetRun
from kubedra.sim.rayjobs import RayJobRun

if TYPE_CHECKING:
    from kubedra.cluster.state import PodRecord
    from kubedra.sim.jobset_controllers import JobSetController
    from kubedra.sim.rayjobs import RayJobController
    from kubedra.sim.run import JobProgress, Simulation
    from kubedra.sim.workloads import JobRun


def _delete(sim: Simulation, record: PodRecord, reason: str) -> None:
    from kubedra.sim.evictions import DEFAULT_GRACE_SECONDS

    grace = record.pod.spec.termination_grace_period_seconds
    sim.delete(record, reason, DEFAULT_GRACE_SECONDS if grace is None else float(grace))


def stop_job(sim: Simulation, progress: JobProgress, reason: str) -> None:
    """The Job suspended: no more pods made, its pods deleted with their grace period."""
    progress.on_end = None
    progress.done = True
    progress.waiting.clear()
    for record in sim.job_pods(progress):
        _delete(sim, record, reason)


def stop_jobset(sim: Simulation, controller: JobSetController, reason: str) -> None:
    """The JobSet suspended: its controller makes no more Jobs, its active Jobs are suspended (their pods deleted
    with their grace period), and it is not told when it ends (its quota is released now)."""
    controller.finished = True
    controller.on_end = None
    controller.pending, controller.unmade = [], []
    for name, progress in controller.progress.items():
        if progress is None or name in controller.succeeded or name in controller.failed \
                or not sim.job_active(progress):
            continue
        stop_job(sim, progress, reason)


def stop_rayjob(sim: Simulation, controller: RayJobController, reason: str) -> None:
    """The RayJob suspended: its controller stops (no submitter made, its deadline ignored, not told when it ends),
    its submitter Job's pods and its cluster's deleted with their grace period."""
    controller.failed = True
    controller.on_end = None
    if controller.job is not None:
        stop_job(sim, controller.job, reason)
    for key in controller.run.cluster:
        record = sim.state.pods.get(key)
        if record is not None and not record.deleted and record.finished_at is None:
            _delete(sim, record, reason)


def stop_pods(sim: Simulation, keys: tuple[str, ...], reason: str, gone: Callable[[], None]) -> None:
    """The Workload's pods not yet ended deleted with their grace period; ``gone`` told once the last has left (at
    once where none is running)."""
    leaving: set[str] = set()

    def left(record: PodRecord) -> None:
        leaving.discard(record.key)
        if not leaving:
            gone()

    for key in keys:
        record = sim.state.pods.get(key)
        if record is None or record.deleted or record.finished_at is not None:
            continue
        sim.pod_watchers.pop(key, None)
        _delete(sim, record, reason)
        if not record.deleted and record.finished_at is None:
            leaving.add(key)
            sim.pod_watchers[key] = left
    if not leaving:
        gone()


def _renamed(job: JobRun, eviction: int, pods: tuple[Pod, ...] | None = None) -> JobRun:
    """The Job with its pods (``pods``: those left of them) under new names, made when it is resumed."""
    from kubedra.cluster.gpuslices import name_suffix, stable_uid
    from kubedra.sim.jobset_restarts import SUFFIX

    out = []
    for index, pod in enumerate(job.pods if pods is None else pods):
        name = pod.metadata.name[:-SUFFIX] + name_suffix("kueue-requeue", job.owner, str(eviction), str(index))
        meta = msgspec.structs.replace(pod.metadata, name=name, uid=stable_uid("Pod", job.namespace, name))
        out.append(msgspec.structs.replace(pod, metadata=meta))
    return replace(job, pods=tuple(out))


def requeued(sim: Simulation, job: JobRun, eviction: int) -> JobRun:
    """The suspended Job as it is resumed later: pods, under new names, for the completions its succeeded pods have
    not reached (a work queue Job: its parallelism again)."""
    done = sum(1 for pod in job.pods if (record := sim.state.pods.get(f"{job.namespace}/{pod.metadata.name}"))
               is not None and record.pod.status.phase == "Succeeded")
    left = job.pods[:len(job.pods) - done] if job.completions is not None else job.pods
    renamed = _renamed(job, eviction, left)
    return replace(renamed, completions=None if job.completions is None else len(renamed.pods), arrive_at=0.0,
                   suspended=True)


def requeued_jobset(run: JobSetRun, eviction: int) -> JobSetRun:
    """The suspended JobSet as it is resumed later: every Job again, its pods under new names."""
    return replace(run, first=tuple(_renamed(job, eviction) for job in run.first),
                   stages=tuple(tuple(_renamed(job, eviction) for job in stage) for stage in run.stages))


def requeued_rayjob(run: RayJobRun, eviction: int) -> RayJobRun:
    """The suspended RayJob as it is resumed later: a new cluster (its pods under new names) and submitter Job."""
    from kubedra.cluster.gpuslices import name_suffix, stable_uid
    from kubedra.sim.jobset_restarts import SUFFIX

    pods = []
    for index, pod in enumerate(run.pods):
        name = pod.metadata.name[:-SUFFIX] + name_suffix("kueue-requeue", f"RayJob/{run.namespace}/{run.name}",
                                                         str(eviction), str(index))
        pods.append(msgspec.structs.replace(pod, metadata=msgspec.structs.replace(
            pod.metadata, name=name, uid=stable_uid("Pod", run.namespace, name))))
    return replace(run, pods=tuple(pods), cluster=tuple(f"{run.namespace}/{p.metadata.name}" for p in pods),
                   submitter=None if run.submitter is None else _renamed(run.submitter, eviction))
