"""What a victim's controller does when preemption deletes the pod, as kube-controller-manager v1.37.2's do.

The scheduler deletes a victim with its grace period: the pod is *terminating* (``deletionTimestamp`` set) at once
and *gone* when the period is over. Each controller answers at one of the two moments:

* **ReplicaSet** (and so a Deployment): ``FilterActivePods`` leaves terminating pods out, so ``manageReplicas``
  creates a new pod (``generateName: <replicaset>-``, the same template, new claims from its templates) as soon as
  the victim is terminating.
* **StatefulSet**: a pod's identity is its name; the controller waits until the terminating pod is gone, then
  creates one of the same name (same ordinal).
* **Job** (``job_controller.go``): without ``podFailurePolicy`` or ``podReplacementPolicy: Failed``, a terminating
  pod that has not succeeded counts as failed (``isPodFailed``) and its replacement is made while it terminates,
  after the Job's pod-failure back-off (``DefaultJobPodFailureBackOff`` 10 s, doubled per failure since the last
  success, capped at ``MaxJobPodFailureBackOff`` 10 min, counted from the deletion). Once failures exceed
  ``backoffLimit`` (default 6) the Job fails (``BackoffLimitExceeded``) and makes no more pods. With
  ``podReplacementPolicy: Failed`` (the default where ``podFailurePolicy`` is set) the replacement waits until the
  victim is gone; a ``podFailurePolicy`` rule on the ``DisruptionTarget`` condition (the scheduler sets it on every
  victim) decides whether it counts (``Ignore``: not counted; ``FailJob``: the Job fails; ``Count``/no rule:
  counted; every failed pod, ignored or not, lengthens the back-off). Rules on exit codes are not matched (the
  simulator runs no containers). ``backoffLimitPerIndex``'s own limits are not modelled (its Job's backoffLimit then
  defaults to MaxInt32, as the API server defaults it).
* **DaemonSet**: a node's terminating daemon pod still counts as its pod (``getNodesToDaemonPods`` leaves out
  only deleted pods that are terminal), so the controller creates the node's new pod (``<daemonset>-``, the same
  spec, pinned to the node) once the victim is gone.

A bare pod has no controller and is not replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from kubedra.cluster.gpuslices import name_suffix, stable_uid
from kubedra.cluster.state import PodRecord
from kubedra.objects.model import ObjectMeta, PodStatus
from kubedra.sim.manifests import JobSpec

if TYPE_CHECKING:
    from kubedra.sim.run import JobProgress, Simulation

JOB_BACKOFF_SECONDS = 10.0  # DefaultJobPodFailureBackOff
JOB_MAX_BACKOFF_SECONDS = 600.0  # MaxJobPodFailureBackOff
DEFAULT_BACKOFF_LIMIT = 6
MAX_INT32 = 2**31 - 1
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
REPLACING = ", replacing the preempted "  # a replacement's Created event: "<controller> created pod <name>, replacing
# the preempted <victim key>" (``kubedra migrate plan`` reads which victim a replacement stands for from it)


@dataclass
class JobRules:
    """The parts of a Job's spec that decide what a deleted pod costs it."""

    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    replace_terminating: bool = True  # podReplacementPolicy TerminatingOrFailed (the default without a policy)
    disruption_action: str = "Count"  # the first podFailurePolicy rule matching DisruptionTarget (Count: none)


def job_backoff(failures: int) -> float:
    """``getRemainingTimeForFailuresCount`` at the last failure: 10 s doubled per failure since the last success
    after the first, at most 10 min."""
    return min(JOB_BACKOFF_SECONDS * 2 ** (failures - 1), JOB_MAX_BACKOFF_SECONDS) if failures > 0 else 0.0


def job_rules(spec: JobSpec) -> JobRules:
    """``JobSpec``'s backoffLimit, podReplacementPolicy and podFailurePolicy (kept as given: read here only). An
    unset backoffLimit defaults to 6, or to MaxInt32 where backoffLimitPerIndex is set (``SetDefaults_Job``)."""
    if isinstance(spec.backoff_limit, int):
        limit = spec.backoff_limit
    else:
        limit = MAX_INT32 if isinstance(spec.backoff_limit_per_index, int) else DEFAULT_BACKOFF_LIMIT
    policy = spec.pod_failure_policy if isinstance(spec.pod_failure_policy, dict) else None
    replacement = spec.pod_replacement_policy or ("Failed" if policy is not None else "TerminatingOrFailed")
    action = "Count"
    for rule in (policy or {}).get("rules", []):
        conditions = rule.get("onPodConditions") or []
        if any(c.get("type") == "DisruptionTarget" and c.get("status", "True") == "True" for c in conditions):
            action = str(rule.get("action", "Count"))
            break
    return JobRules(limit, replacement != "Failed", action)


class Replacements:
    """Called by the run when a victim starts terminating and when it is gone; adds the controllers' new pods."""

    def __init__(self, simulation: Simulation) -> None:
        self.sim = simulation
        self.made = 0  # replacement pods added (the run's progress total grows by them)
        self._created: dict[int, str] = {}  # a replacement not yet arrived -> its Created event's message

    def terminating(self, victim: PodRecord) -> None:
        kind = victim.owner.split("/", 1)[0]
        if kind in ("Deployment", "ReplicaSet"):
            self._replace(victim, self._generated_name(victim), 0.0)
        elif kind == "Job":
            job = self.sim.job_of(victim.key)
            if job is not None and job.rules.replace_terminating:
                self._job_failure(victim, job)

    def gone(self, victim: PodRecord, job: JobProgress | None) -> None:
        kind = victim.owner.split("/", 1)[0]
        if kind == "StatefulSet":
            self._replace(victim, victim.pod.metadata.name, 0.0)
        elif kind == "DaemonSet":
            self._replace(victim, self._generated_name(victim), 0.0)
        elif kind == "Job" and job is not None and not job.rules.replace_terminating:
            self._job_failure(victim, job)

    def _job_failure(self, victim: PodRecord, job: JobProgress) -> None:
        """The Job controller's sync after a pod failed: count it, fail the Job past its limit, else replace the pod
        after the back-off."""
        action = job.rules.disruption_action
        if job.done:
            return
        if action == "FailJob":
            self._job_failed(victim, job, "PodFailurePolicy", "Pod matched a FailJob rule of the podFailurePolicy")
            return
        job.failed_since_success += 1  # the back-off counts every failed pod, ignored ones too (newBackoffRecord)
        if action != "Ignore":  # the Job's failed count leaves them out (nonIgnoredFailedPodsCount)
            job.failed += 1
            if job.failed > job.rules.backoff_limit:
                self._job_failed(victim, job, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
                return
        delay = job_backoff(job.failed_since_success)
        index = victim.pod.metadata.annotations.get(COMPLETION_INDEX)
        name = self._generated_name(victim, f"{self._job_name(victim)}-{index}-" if index is not None else None)
        self._replace(victim, name, delay, job)

    def _job_failed(self, victim: PodRecord, job: JobProgress, reason: str, message: str) -> None:
        """The Job is finished as failed: no more pods, and its active ones deleted (``deleteActivePods``)."""
        from kubedra.sim.evictions import DEFAULT_GRACE_SECONDS
        from kubedra.sim.run import Event

        job.done = True
        job.waiting.clear()
        name = victim.owner.split("/", 1)[1]
        self.sim.events.append(Event(self.sim.now, "Failed", f"Job {name}", message=f"{reason}: {message}"))
        for record in self.sim.job_pods(job):
            if record is victim:
                continue
            if record.arrive_at > self.sim.now:  # its back-off not over: never made
                self.made -= 1
                self._created.pop(id(record), None)
            grace = record.pod.spec.termination_grace_period_seconds
            self.sim.delete(record, f"Job {name} failed: {reason}",
                            DEFAULT_GRACE_SECONDS if grace is None else float(grace))
        self.sim.job_ended(job)

    @staticmethod
    def _job_name(victim: PodRecord) -> str:
        return victim.owner.rsplit("/", 1)[1]

    def _generated_name(self, victim: PodRecord, prefix: str | None = None) -> str:
        """``generateName``: the controller's prefix (``<replicaset>-``, ``<job>-``) and five characters, drawn
        from the victim and an attempt count so runs repeat, free in the namespace."""
        pod = victim.pod
        if prefix is None:
            owners = [r.name for r in pod.metadata.owner_references if r.controller]
            prefix = f"{owners[0] if owners else self._job_name(victim)}-"
        namespace, pods = pod.metadata.namespace, self.sim.state.pods
        attempt = 0
        while True:
            name = prefix + name_suffix("replacement", victim.key, str(attempt))
            if f"{namespace}/{name}" not in pods:
                return name
            attempt += 1

    def _replace(self, victim: PodRecord, name: str, delay: float, job: JobProgress | None = None) -> None:
        """A new pod from the victim's template at ``now + delay``: same spec and labels, no node, no claims yet."""
        sim, old = self.sim, victim.pod
        meta = msgspec.structs.replace(old.metadata, name=name, uid=stable_uid("Pod", old.metadata.namespace, name,
                                                                              str(sim.now)))
        meta = msgspec.structs.replace(meta, labels=dict(meta.labels), annotations=dict(meta.annotations))
        spec = msgspec.structs.replace(old.spec, node_name="")
        pod = msgspec.structs.replace(old, metadata=meta, spec=spec, status=PodStatus(phase="Pending"))
        record = PodRecord(pod=pod, requests=victim.requests, arrive_at=sim.now + delay, run_for=victim.run_for,
                           owner=victim.owner, group=victim.group)
        sim.add(record, replacing=True)
        if job is not None:
            sim.track_job(record.key, job)
        self.made += 1
        controller = _controller(victim, victim.owner.split("/", 1)[0], meta)
        self._created[id(record)] = f"{controller} created pod {name}{REPLACING}{victim.key}"

    def arrived(self, record: PodRecord) -> None:
        """A replacement's ``Created`` event, at its arrival (a Job's comes after its back-off)."""
        if self._created:
            message = self._created.pop(id(record), None)
            if message is not None:
                from kubedra.sim.run import Event

                self.sim.events.append(Event(self.sim.now, "Created", f"Pod {record.key}", message=message))


def _controller(victim: PodRecord, kind: str, meta: ObjectMeta) -> str:
    """Which controller made the pod, as its events name it: ``ReplicaSet ns/web-7d9f`` for a Deployment's."""
    refs = [r for r in meta.owner_references if r.controller]
    name = refs[0].name if refs else victim.owner.rsplit("/", 1)[1]
    kind = refs[0].kind if refs else kind
    return f"{kind} {meta.namespace}/{name}"
