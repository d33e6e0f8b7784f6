"""Kueue in a run: Jobs that name a LocalQueue are held (created suspended, as Kueue's webhook makes them) until their
ClusterQueue admits them (``sim.kueue``); an admitted Job starts then, its pod template given the flavors' node labels
and tolerations (Kueue's Job reconciler, ``podset.Merge``), and its quota is free again when it has no pod left to
run. Admission runs once per instant, after that instant's arrivals and completions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import msgspec

from kubedra.objects.model import Pod
from kubedra.sim.kueue import Admission, Kueue, PodSet, Workload
from kubedra.sim.kueue_objects import KueueSetup, units

if TYPE_CHECKING:
    from kubedra.sim.run import Simulation
    from kubedra.sim.workloads import JobRun

WAKE_KEY = "kueue"


def pod_set(job: JobRun) -> PodSet:
    """A Job's one pod set (``main``): ``min(parallelism, completions)`` pods of its template."""
    from kubedra.cluster.usage import pod_requests

    pod = job.pods[0]
    count = job.parallelism if job.completions is None else min(job.parallelism, job.completions)
    requests = {name: units(name, q) for name, q in pod_requests(pod).items()}
    node_affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    return PodSet("main", count, requests, dict(pod.spec.node_selector), required, tuple(pod.spec.tolerations))


def workload(job: JobRun, order: int) -> Workload:
    priority = (job.pods[0].spec.priority or 0) if job.pods else 0
    assert job.queue is not None
    return Workload(f"Job {job.namespace}/{job.name}", job.namespace, job.queue, priority, job.arrive_at, order,
                    (pod_set(job),) if job.pods else ())


def admitted_pods(pods: tuple[Pod, ...], admission: Admission) -> tuple[Pod, ...]:
    """The pods the admitted Job makes: node selector and tolerations merged in (one pod set)."""
    labels, tolerations = admission.node_selectors[0], admission.tolerations[0]
    if not labels and not tolerations:
        return pods
    out = []
    for pod in pods:
        spec = msgspec.structs.replace(pod.spec, node_selector={**pod.spec.node_selector, **labels},
                                       tolerations=[*pod.spec.tolerations, *tolerations])
        out.append(msgspec.structs.replace(pod, spec=spec))
    return tuple(out)


class KueueController:
    """Holds the queued Jobs of a run and starts them as they are admitted."""

    def __init__(self, sim: Simulation, setup: KueueSetup) -> None:
        self.sim = sim
        self.kueue = Kueue(setup)
        self.jobs: dict[str, JobRun] = {}  # held, by workload key
        self.waiting: list[Workload] = []  # made later than now (start-after), by creation time
        self.made = 0  # pods of admitted Jobs
        self._woken_at: float | None = None
        sim.made_elsewhere = lambda: self.made

    def hold(self, job: JobRun) -> None:
        """A Job naming a LocalQueue: its Workload is created when the Job is."""
        queued = workload(job, len(self.jobs))
        self.jobs[queued.key] = job
        self.waiting.append(queued)
        self._wake(job.arrive_at)

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
        for admission in self.kueue.admit():
            self._start(admission)
        for queued in arrived:
            reason = self.kueue.reasons.get(queued.key)
            if reason:
                self.sim.events.append(Event(now, "Inadmissible", queued.key, message=reason))
        if self.waiting:
            self._wake(min(w.created_at for w in self.waiting))

    def _start(self, admission: Admission) -> None:
        from kubedra.sim.run import Event

        key = admission.workload.key
        job = self.jobs[key]
        flavors = ", ".join(sorted({f"{r}: {f}" for chosen in admission.flavors for r, f in chosen.items()}))
        self.sim.events.append(Event(self.sim.now, "Admitted", key, message=f"ClusterQueue "
                                     f"{admission.cluster_queue}" + (f" ({flavors})" if flavors else "")))
        started = replace(job, arrive_at=0.0, suspended=False, pods=admitted_pods(job.pods, admission))
        self.made += len(started.pods)
        progress = self.sim.start_job(started)
        if not started.pods:
            self._ended(admission)
            return
        progress.on_end = lambda _job: self._ended(admission)

    def _ended(self, admission: Admission) -> None:
        from kubedra.sim.run import Event

        self.kueue.release(admission)
        self.sim.events.append(Event(self.sim.now, "QuotaReleased", admission.workload.key,
                                     message=f"ClusterQueue {admission.cluster_queue}"))
        self._wake(self.sim.now)
