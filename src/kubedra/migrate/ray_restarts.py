"""A wave's evictions as KubeRay ray-operator v1.5.0 answers them for a running RayJob (the version
:mod:`kubedra.sim.rayjobs` models; ``RayClusterStatusConditions`` on, its default there).

At the snapshot a RayJob runs: its RayCluster's head and workers and, in ``K8sJobMode``, its submitter Job's pod
(``Cluster.pods``). A wave evicts some of them:

* **A worker** (``raycluster_controller.go``, ``reconcilePods``): the group has fewer pods than
  ``GetWorkerGroupDesiredReplicas``; the controller makes the missing ones (``diff > 0``). The RayJob keeps running.
* **The submitter's pod**: a failed pod to its Job (``job_failures``; ``createNewK8sJob`` gives the Job
  ``backoffLimit`` 2), made again after the back-off; the new pod runs ``BuildJobSubmitCommand``'s ``ray job status``,
  finds the Ray job submitted and follows its logs (``common/job.go``): the RayJob keeps running. Past the Job's
  limit it fails, and ``checkSubmitterAndUpdateStatusIfNeeded`` fails the RayJob (``SubmissionFailed``).
* **The head**: ``reconcilePods`` finds 0 head pods in a cluster a RayJob made (``ray.io/originated-from-crd``) and
  ``RayClusterProvisioned`` and returns ("skipping head creation to let RayJob controller handle the failure")
  before it reconciles the workers: the head is not made again, nor is a worker evicted then or later. The Ray job
  dies with its head (its GCS; without GCS fault tolerance nothing restores it, and with it there is no head to
  restore into). In ``SidecarMode`` ``checkSubmitterAndUpdateStatusIfNeeded`` fails the RayJob at once (``AppFailed``:
  "Ray head pod not found."); in ``K8sJobMode`` the submitter's ``ray job logs --follow`` loses the dashboard and
  its retries' ``ray job status`` find none, so its Job fails (the Ray CLI exiting non-zero: inferred, not read in
  the controller) and the RayJob with it (``SubmissionFailed``); in ``HTTPMode``/``InteractiveMode`` ``GetJobInfo``
  fails and the controller requeues: the RayJob stays Running, its Ray job gone (``stalled``).

A RayJob failed goes through ``checkBackoffLimitAndUpdateStatusIfNeeded``: while its failures (``status.failed``,
counted wave after wave) are at most ``spec.backoffLimit`` (0 unless set) it is ``Retrying``: its RayCluster and
submitter Job are deleted and made again (every pod made again: a new cluster, a new submitter Job counted from
zero; the plan keeps each pod's key). Otherwise it is ``Failed``: its head and submitter are lost, the workers keep
running (nobody deletes the headless cluster) unless ``shutdownAfterJobFinishes`` deletes the cluster
(``handleShutdownAfterJobFinishes``, after ``ttlSecondsAfterFinished``: lost in the wave).

A pod preempted during a wave's runs is answered by the same rules (``wave_victims`` calls :func:`ray_restarts`); a
retried RayJob's new submitter Job comes once its new cluster runs (``ray_waves``).

A RayJob Failed in an earlier wave or run (its failures past ``spec.backoffLimit``) is terminal: its cluster, headed
(its submitter Job failed), makes an evicted worker again, not its head (``reconcilePods``); it is neither counted
nor retried again.

**Not modelled.** Ray's own task retries on a lost worker; ``submitterConfig.backoffLimit`` (2 is taken); RayJobs
queued by Kueue (noted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubedra.migrate.group_restarts import GroupWave, Restarts
from kubedra.migrate.job_failures import JobCount, JobsInWave
from kubedra.objects.builder import Loaded
from kubedra.sim.workloads import DEFAULT_NAMESPACE, PodArrival, Workloads

HEAD_GONE = {
    "K8sJobMode": "SubmissionFailed: its submitter loses the dashboard with the head and its Job fails",
    "SidecarMode": "AppFailed: Ray head pod not found. (checkSubmitterAndUpdateStatusIfNeeded)",
}


@dataclass(frozen=True)
class RayJobPods:
    """A running RayJob as a wave reads it: its head's and workers' keys, its submitter Job's owner (``K8sJobMode``)
    and what decides its retries."""

    name: str  # ``RayJob/<namespace>/<name>``
    mode: str
    head: str
    workers: tuple[str, ...]
    submitter: str | None
    backoff_limit: int
    shutdown: bool


def running_rayjobs(loaded: Loaded, workloads: Workloads) -> tuple[dict[str, RayJobPods], list[PodArrival]]:
    """The RayJobs running at the snapshot (not queued by Kueue) and their submitter Jobs' pods, running too."""
    specs = {}
    for raw in loaded.raw:
        if raw.data.get("kind") == "RayJob":
            meta = raw.data.get("metadata") or {}
            specs[f"{meta.get('namespace') or DEFAULT_NAMESPACE}/{meta.get('name')}"] = raw.data.get("spec") or {}
    out: dict[str, RayJobPods] = {}
    pods: list[PodArrival] = []
    for run in workloads.rayjobs:
        if run.queue is not None or not run.cluster:
            continue
        spec = specs.get(f"{run.namespace}/{run.name}", {})
        submitter = run.submitter
        if submitter is not None:
            pods.extend(PodArrival(p, 0.0, None, submitter.owner) for p in submitter.pods[:1])
        name = f"RayJob/{run.namespace}/{run.name}"
        out[name] = RayJobPods(name, str(spec.get("submissionMode") or "K8sJobMode"), run.cluster[0],
                               run.cluster[1:], submitter.owner if submitter is not None else None,
                               int(spec.get("backoffLimit") or 0), run.shutdown)
    return out, pods


def _running_why(job: RayJobPods, workers: int, jobs: JobsInWave, done: str) -> str:
    """Why a RayJob whose workers or submitter were evicted (or preempted: ``done``) keeps running."""
    parts = []
    if workers:
        parts.append(f"{workers} worker{'s' if workers != 1 else ''} {done}: reconcilePods makes the missing "
                     "workers again")
    submitter = jobs.jobs.get(job.submitter or "")
    if submitter is not None:
        parts.append(f"its submitter {done}: its Job makes the pod again after a {submitter.backoff:g} s back-off "
                     f"(failures {submitter.counted} of backoffLimit {submitter.limit}); the new pod's ray job "
                     "status finds the Ray job and follows its logs (BuildJobSubmitCommand)")
    return "; ".join(parts) + "; the Ray job keeps running"


def _lost(out: Restarts, keys: list[str], why: str, jobs: JobsInWave) -> None:
    for key in keys:
        if key not in out.lost and key not in jobs.lost:
            out.lost.append(key)
            out.lost_why.setdefault(key, why)


def ray_restarts(rayjobs: Mapping[str, RayJobPods], by_key: Mapping[str, PodArrival], evicted: list[str],
                 jobs: JobsInWave, *, before: Mapping[str, JobCount], out: Restarts, done: str = "evicted") -> None:
    """What each RayJob the wave evicts pods of does (the module's doc says what); ``by_key``: the pods not lost.
    ``wave_victims`` calls it for a run's preemptions (``done``: "preempted"): a deleted pod is a deleted pod."""
    for name, job in sorted(rayjobs.items()):
        submitted = [k for k, a in by_key.items() if job.submitter is not None and a.owner == job.submitter]
        cluster = [k for k in (job.head, *job.workers) if k in by_key]
        pods = [*cluster, *submitted]
        hit = [k for k in evicted if k in pods]
        workers = [k for k in hit if k in job.workers]
        if not hit:
            continue
        if job.head not in by_key:  # lost already: reconcilePods returns before the workers
            _lost(out, workers, "its RayJob's head is gone: not made again", jobs)
            out.workloads[name] = GroupWave(len(hit), 0, "lost", "its head is gone already: reconcilePods makes no "
                                            "head for a RayJob's provisioned cluster and returns before its "
                                            f"workers: the {done} ones are not made again")
            continue
        head = job.head in hit
        count = before.get(name, JobCount())
        if count.counted > job.backoff_limit:  # Failed already, its cluster headed: terminal, never retried again
            if head:
                _lost(out, [job.head, *workers], "its RayJob's head is gone: not made again", jobs)
            out.workloads[name] = GroupWave(len(hit), 0, "lost" if head else "running", (
                f"Failed already; its head {done}: reconcilePods makes no head for its provisioned cluster and "
                f"returns before its workers" if head else f"Failed already; {len(workers)} worker"
                f"{'s' if len(workers) != 1 else ''} {done}: its RayCluster, headed, makes the missing workers "
                "again (reconcilePods)"))
            continue
        submitter = jobs.jobs.get(job.submitter or "")
        if head and job.mode not in HEAD_GONE:
            _lost(out, [job.head, *workers], "its RayJob's head is gone: not made again", jobs)
            out.workloads[name] = GroupWave(len(hit), 0, "stalled", f"its head {done}: reconcilePods does not make "
                                            f"it again; in {job.mode} GetJobInfo fails and the RayJob stays "
                                            "Running, its Ray job gone with the head")
            continue
        if head:
            reason = f"{HEAD_GONE[job.mode]} (its head {done}: reconcilePods does not make it again)"
        elif submitter is not None and submitter.failed:
            reason = f"SubmissionFailed: Job submission has failed ({submitter.failed})"
        else:
            out.workloads[name] = GroupWave(len(hit), 0, "running", _running_why(job, len(workers), jobs, done))
            continue
        failed = count.counted + 1
        out.counts[name] = JobCount(failed, failed)
        tally = f"failure {failed} of backoffLimit {job.backoff_limit}"
        if failed <= job.backoff_limit:
            out.fresh |= set(pods)
            out.retried.add(name)
            out.recreated += [k for k in pods if k not in evicted]
            if job.submitter is not None:
                out.counts[job.submitter] = JobCount()
            out.workloads[name] = GroupWave(len(hit), len(pods) - len(hit), "restarted", f"{reason}; {tally}: "
                                            "Retrying deletes its RayCluster and submitter Job and makes them again")
            continue
        gone = [job.head, *workers] if head else []
        gone += [k for k in submitted if head or (submitter is not None and submitter.failed)]
        if job.shutdown:
            gone += [k for k in cluster if k not in gone]
        _lost(out, gone, "its RayJob failed", jobs)
        shutdown = "; shutdownAfterJobFinishes deletes its RayCluster" if job.shutdown else \
            ("; its workers keep running, headless" if head else "; its RayCluster keeps running")
        out.workloads[name] = GroupWave(len(hit), len([k for k in gone if k not in hit]), "failed",
                                        f"{reason}; {tally}: Failed{shutdown}")
