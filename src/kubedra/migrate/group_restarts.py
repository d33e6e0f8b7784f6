"""The workloads a wave's evictions restart as a whole: LeaderWorkerSet groups and JobSets.

**LeaderWorkerSet** (v0.9.0, ``pkg/controllers/pod_controller.go``): a group's worker StatefulSet is owned by its
leader pod, so a leader evicted takes its workers with it (the garbage collector deletes them, the leader
StatefulSet makes the leader again and the pod controller the workers): the whole group is recreated whatever the
restart policy. A worker evicted (a pod deleted) makes ``handleRestartPolicy`` delete the leader, foreground, under
``RecreateGroupOnPodRestart`` (the webhook's default; ``Default`` is read as ``None``) and under
``RecreateGroupAfterStart`` (or its ``experimental-recreate-group-after-start`` annotation) unless a pod of the group
was pending; under ``None`` only the worker is made again. Every pod of a recreated group is deleted and made again:
the group loses its progress.

**JobSet** (v0.12.0, ``executeFailurePolicy``, read in ``sim.jobset_controllers``): its Jobs are Jobs to the Job
controller (``job_failures``); once one of them fails, the JobSet's failure policy acts. Without one the JobSet fails
(``FailedJobs``) and deletes its Jobs with every pod; with one, the first rule that applies to the failed Job
(``rule_applies``; else ``RestartJobSet``) decides: ``FailJobSet`` fails it, ``RestartJobSet`` restarts it until
``restartsCountTowardsMax`` reaches ``maxRestarts`` (then it fails, ``ReachedMaxRestarts``),
``RestartJobSetAndIgnoreMaxRestarts`` restarts it uncounted. A restart deletes every Job and makes it again: every
pod of the JobSet made again at once (new Jobs: no back-off, their failures counted from zero). Its restarts add up
wave after wave (kept among the Jobs' counts under the JobSet's owner: ``counted`` toward ``maxRestarts``,
``failures`` all of them).

A group's or JobSet's pod preempted during the wave is a deleted pod too: ``wave_victims`` has the same controllers
answer it. A recreated group whose workers wait on their leader (``LeaderReady``, exclusive placement) has them
made after it (``lws_waves``). JobSets queued by Kueue are noted, not moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubedra.migrate.job_failures import JobCount, JobsInWave
from kubedra.objects.builder import Loaded
from kubedra.sim.jobset_controllers import FAILED_MESSAGES, rule_applies
from kubedra.sim.jobsets import PREFIX as JOBSET_PREFIX
from kubedra.sim.leaderworkersets import GROUP_INDEX_KEY, NAME_KEY, WORKER_INDEX_KEY
from kubedra.sim.workloads import DEFAULT_NAMESPACE, PodArrival, Workloads

AFTER_START_KEY = "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start"


@dataclass(frozen=True)
class GroupWave:
    """What a wave did to one LeaderWorkerSet group or JobSet: its pods evicted, those deleted with it, and what
    its controller did (``recreated``, ``restarted`` or ``failed``) and why; ``preempted``: its pods preempted
    during the wave that made it act (``wave_victims``)."""

    evicted: int
    deleted: int
    action: str
    why: str
    preempted: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evicted": self.evicted, "deleted": self.deleted, "action": self.action,
                               "why": self.why}
        if self.preempted:
            out["preempted"] = self.preempted
        return out

    def again(self, preempted: int, deleted: int, action: str, why: str) -> GroupWave:
        """This group or JobSet acting once more in the wave, for ``preempted`` pods of it."""
        return GroupWave(self.evicted, self.deleted + deleted, action, f"{self.why}; then {why}",
                         self.preempted + preempted)


def lws_policies(loaded: Loaded) -> dict[str, str]:
    """Each LeaderWorkerSet's restart policy (``<namespace>/<name>``), as its webhook defaults it."""
    out = {}
    for raw in loaded.raw:
        if raw.data.get("kind") != "LeaderWorkerSet":
            continue
        meta = raw.data.get("metadata") or {}
        lwt = (raw.data.get("spec") or {}).get("leaderWorkerTemplate") or {}
        policy = str(lwt.get("restartPolicy") or "RecreateGroupOnPodRestart")
        policy = "None" if policy == "Default" else policy
        if AFTER_START_KEY in (meta.get("annotations") or {}):
            policy = "RecreateGroupAfterStart"
        out[f"{meta.get('namespace') or DEFAULT_NAMESPACE}/{meta.get('name')}"] = policy
    return out


def lws_group(pod: PodArrival) -> tuple[str, bool] | None:
    """``LeaderWorkerSet/<namespace>/<lws> group <index>`` and whether the pod is its leader; None for other pods."""
    labels = pod.pod.metadata.labels
    if NAME_KEY not in labels or GROUP_INDEX_KEY not in labels:
        return None
    namespace = pod.pod.metadata.namespace or DEFAULT_NAMESPACE
    return f"LeaderWorkerSet/{namespace}/{labels[NAME_KEY]} group {labels[GROUP_INDEX_KEY]}", \
        labels.get(WORKER_INDEX_KEY) == "0"


@dataclass
class Restarts:
    """What the wave's group restarts add: the pods deleted and made again, the pods lost with a failed JobSet, the
    back-offs left out (a restarted JobSet's new Jobs have none), the counts reset or added, and each workload's
    line."""

    recreated: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    fresh: set[str] = field(default_factory=set)  # a restarted JobSet's pods: made again at once, none lost
    counts: dict[str, JobCount] = field(default_factory=dict)
    workloads: dict[str, GroupWave] = field(default_factory=dict)
    lost_why: dict[str, str] = field(default_factory=dict)  # a lost pod -> why, where no failed Job says it
    retried: set[str] = field(default_factory=set)  # RayJobs retried: their new submitter waits for the new cluster


def lws_members(by_key: Mapping[str, PodArrival]) -> dict[str, list[str]]:
    """Each LeaderWorkerSet group's pods."""
    members: dict[str, list[str]] = {}
    for key, arrival in by_key.items():
        found = lws_group(arrival)
        if found is not None:
            members.setdefault(found[0], []).append(key)
    return members


def lws_why(policy: str, *, leader: bool, pending: bool, done: str) -> str | None:
    """Why a group with a pod deleted (``done``: ``evicted``, ``preempted``) is recreated whole; None where its
    worker is made again alone (the module's doc says when)."""
    if leader:
        return f"its leader {done}: the workers' StatefulSet, owned by the leader pod, goes with it"
    if policy == "RecreateGroupOnPodRestart" or (policy == "RecreateGroupAfterStart" and not pending):
        return f"a worker {done}: restartPolicy {policy} deletes the leader"
    return None


def lws_restarts(by_key: Mapping[str, PodArrival], policies: Mapping[str, str], evicted: list[str],
                 placement: Mapping[str, str], out: Restarts) -> None:
    """The LeaderWorkerSet groups ``evicted`` recreates whole (the module's doc says when)."""
    members = lws_members(by_key)
    hit: dict[str, list[str]] = {}
    for key in evicted:
        found = lws_group(by_key[key])
        if found is not None:
            hit.setdefault(found[0], []).append(key)
    for group, keys in sorted(hit.items()):
        lws = group.split(" group ", 1)[0].removeprefix("LeaderWorkerSet/")
        policy = policies.get(lws, "RecreateGroupOnPodRestart")
        leader = any(lws_group(by_key[k]) == (group, True) for k in keys)
        pending = any(k not in placement for k in members[group])
        why = lws_why(policy, leader=leader, pending=pending, done="evicted")
        if why is None:
            continue
        deleted = [k for k in members[group] if k not in keys]
        out.recreated += deleted
        out.workloads[group] = GroupWave(len(keys), len(deleted), "recreated", why)


def jobset_of(workloads: Workloads) -> dict[str, str]:
    """Each JobSet's Job's owner -> the JobSet's (``JobSet/<namespace>/<name>``)."""
    out = {}
    for job in workloads.all_jobs():
        labels = job.spec.template.metadata.labels if job.spec is not None else {}
        name = labels.get(JOBSET_PREFIX + "jobset-name")
        if name:
            out[job.owner] = f"JobSet/{job.namespace}/{name}"
    return out


def failed_job(spec: Any, failed: str) -> tuple[str, str, str]:
    """A JobSet's failed Job as its failure policy's rules read it: (replicated job, reason, message); ``failed``:
    ``<reason>: <message>`` (``JobWave.failed``)."""
    reason, _, message = failed.partition(": ")
    rjob = spec.template.metadata.labels.get(JOBSET_PREFIX + "replicatedjob-name", "") if spec else ""
    return rjob, reason, message


def jobset_action(failure: tuple[int, tuple[dict[str, Any], ...]] | None,
                  failed: Mapping[str, tuple[str, str, str]], count: JobCount) -> tuple[str, str]:
    """``executeFailurePolicy``'s action on the failed Jobs (owner -> (replicated job, reason, message)): restart
    (``RestartJobSet``, ``RestartJobSetAndIgnoreMaxRestarts``) or fail, and the reason."""
    if failure is None:
        return "FailedJobs", FAILED_MESSAGES["FailedJobs"]
    max_restarts, rules = failure
    action = "RestartJobSet"
    for rule in rules:
        if any(rule_applies(rule, rjob, reason, message) for rjob, reason, message in failed.values()):
            action = str(rule.get("action", "RestartJobSet"))
            break
    if action == "FailJobSet":
        return "FailJobSetFailurePolicyAction", FAILED_MESSAGES["FailJobSetFailurePolicyAction"]
    if action == "RestartJobSet" and count.counted >= max_restarts:
        return "ReachedMaxRestarts", FAILED_MESSAGES["ReachedMaxRestarts"]
    return action, f"restart {count.failures + 1} (counted {count.counted + (action == 'RestartJobSet')} of " \
        f"maxRestarts {max_restarts})"


def jobset_restarts(workloads: Workloads, owners: Mapping[str, str], evicted: list[str], jobs: JobsInWave, *,
                    before: Mapping[str, JobCount], out: Restarts) -> None:
    """What each JobSet one of whose Jobs the wave fails does (the module's doc says what)."""
    of = jobset_of(workloads)
    runs = {run.owner: run for run in workloads.jobsets}
    specs = {j.owner: j.spec for j in workloads.all_jobs()}
    failed: dict[str, dict[str, tuple[str, str, str]]] = {}
    for owner, job in jobs.jobs.items():
        if job.failed and owner in of:
            failed.setdefault(of[owner], {})[owner] = failed_job(specs[owner], job.failed)
    for jobset, failures in sorted(failed.items()):
        run = runs.get(jobset)
        count = before.get(jobset, JobCount())
        action, why = jobset_action(run.failure if run is not None else None, failures, count)
        pods = [k for k, owner in owners.items() if of.get(owner) == jobset]
        hit = sum(1 for k in evicted if k in pods)
        if action.startswith("Restart"):
            out.counts[jobset] = JobCount(count.counted + (action == "RestartJobSet"), count.failures + 1)
            out.counts.update({o: JobCount() for o, js in of.items() if js == jobset})
            out.fresh |= set(pods)
            out.recreated += [k for k in pods if k not in evicted]
            out.workloads[jobset] = GroupWave(hit, len(pods) - hit, "restarted", f"{action}: {why}")
        else:
            out.lost += [k for k in pods if k not in jobs.lost]
            out.workloads[jobset] = GroupWave(hit, len(pods) - hit, "failed", f"{action}: {why}")
