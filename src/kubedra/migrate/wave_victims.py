"""What the controllers do, beyond making the pod again, when preemption deletes a LeaderWorkerSet's, JobSet's or
Job's pod during a wave.

kube-scheduler deletes its victim as the drain's eviction does, and sets ``DisruptionTarget`` on it as the eviction
API does: a deleted pod is a deleted pod, and each controller answers it as it answers an eviction
(``group_restarts``, ``job_failures``):

* **LeaderWorkerSet** (v0.9.0, ``handleRestartPolicy``): a leader preempted takes its workers with it; a worker
  preempted has the leader deleted under ``RecreateGroupOnPodRestart`` and, unless another pod of the group is
  pending after the run, under ``RecreateGroupAfterStart``; under ``None`` the StatefulSet makes it again alone.
  A group recreated has every pod deleted and made again.
* **Job**: a failed pod, counted as the first ``podFailurePolicy`` rule on ``DisruptionTarget`` says; its
  replacement comes after the back-off its Job's failures give. Past ``backoffLimit`` (or on a ``FailJob`` rule) the
  Job fails and deletes every pod it has (lost).
* **JobSet** (v0.12.0, ``executeFailurePolicy``): a Job of it failing so restarts the JobSet (every pod deleted and
  made again at once: new Jobs, counted from zero) or fails it (every pod lost), as an eviction's failure does.
* **RayJob** (ray-operator v1.5.0, ``ray_restarts``' rules): a worker preempted is made again; its head is not
  (``reconcilePods``), and the RayJob fails, retried within ``spec.backoffLimit`` (every pod deleted and made again,
  its new submitter once the new cluster runs: ``ray_waves``) or Failed (head and submitter lost); its submitter's
  pod is a failure to its Job, whose failing fails the RayJob (``SubmissionFailed``) the same way.

The simulator replaces a StatefulSet's victim within its run, not a Job's (``rollout.simulated``); each run's
victims are answered after it, and the pods deleted are made again in the wave's next run (``drain``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from kubedra.migrate.group_restarts import (
    GroupWave,
    Restarts,
    failed_job,
    jobset_action,
    jobset_of,
    lws_group,
    lws_members,
    lws_why,
)
from kubedra.migrate.job_failures import JobCount, JobsInWave, JobWave, failure, with_preempted_jobs
from kubedra.migrate.ray_restarts import RayJobPods, ray_restarts
from kubedra.sim.replacements import job_backoff
from kubedra.sim.workloads import PodArrival, Workloads


class Victims:
    """The controllers' answers to a wave's preemptions, run after run: the Jobs' and JobSets' counts, the
    workloads that restart or fail, and the pods they delete or lose."""

    def __init__(self, workloads: Workloads, by_key: Mapping[str, PodArrival], policies: Mapping[str, str],
                 jobs: JobsInWave, *, restarts: Restarts, evicted: Collection[str],
                 rayjobs: Mapping[str, RayJobPods]) -> None:
        self.by_key, self.policies, self.evicted, self.rayjobs = by_key, policies, evicted, rayjobs
        self.owners = {k: a.owner for k, a in by_key.items()}
        self.members = lws_members(by_key)
        self.of = jobset_of(workloads)
        self.runs = {run.owner: run for run in workloads.jobsets}
        self.specs = {j.owner: j.spec for j in workloads.all_jobs()}
        self.rules = jobs.rules
        self.counts = dict(jobs.counts)  # every Job's and JobSet's count: the evictions', then each preemption added
        self.jobs = dict(jobs.jobs)  # what the wave did to each Job: the evictions', then the preemptions' failures
        self.preempted: Counter[str] = Counter()  # Job owner -> its pods preempted in the wave
        self.delays: dict[str, float] = {}  # a Job's victim -> its replacement's back-off
        self.workloads = dict(restarts.workloads)
        self.recreated = list(restarts.recreated)
        self.lost: list[str] = []  # pods lost with a Job, JobSet or RayJob a preemption failed
        self.lost_why = dict(restarts.lost_why)  # a lost pod -> why, where no failed Job says it
        self.gone = {*restarts.lost, *(k for k in jobs.lost if k not in restarts.fresh)}  # lost so far in the wave
        self.retried = set(restarts.retried)  # RayJobs retried whose new submitter has not run yet (``ray_waves``)

    def answer(self, preempted: Iterable[str], running: Collection[str]) -> tuple[set[str], set[str]]:
        """One run's victims (``preempted``; ``running``: the pods running after it) answered: the pods deleted to
        be made again at once, and the pods lost."""
        victims = sorted(preempted)
        fresh: set[str] = set()
        lost: set[str] = set()
        failed = self._jobs(victims)
        for owner in failed:
            if owner not in self.of:  # a plain Job failed: every pod it has deleted
                lost |= {k for k, o in self.owners.items() if o == owner}
        by_jobset: dict[str, dict[str, tuple[str, str, str]]] = {}
        for owner, why in failed.items():
            if owner in self.of:
                by_jobset.setdefault(self.of[owner], {})[owner] = failed_job(self.specs.get(owner), why)
        for jobset, failures in sorted(by_jobset.items()):
            pods = [k for k, o in self.owners.items() if self.of.get(o) == jobset]
            if self._jobset(jobset, failures, pods, victims):
                fresh |= set(pods)
            else:
                lost |= set(pods)
        fresh |= self._groups(victims, running)
        ray = self._rayjobs(victims, lost)
        lost = (lost - ray.fresh) | set(ray.lost)
        fresh |= ray.fresh
        self.gone |= lost
        self.lost += [k for k in self.by_key if k in lost and k not in self.lost]
        for key in fresh:
            self.delays.pop(key, None)
        return fresh - lost, lost

    def _jobs(self, victims: list[str]) -> dict[str, str]:
        """The victims' Jobs' counts and back-offs; -> the Jobs they fail, and why."""
        failed: dict[str, str] = {}
        by_owner = Counter(self.owners[k] for k in victims if self.owners.get(k) in self.rules)
        for owner, n in sorted(by_owner.items()):
            rule = self.rules[owner]
            self.preempted[owner] += n
            now = self.counts[owner] = self.counts.get(owner, JobCount()).plus(rule, n)
            why = failure(rule, now)
            if why:
                was = self.jobs.get(owner)
                failed[owner] = why
                self.jobs[owner] = JobWave(was.evicted if was is not None else 0, now.counted, rule.backoff_limit,
                                           0.0, why, preempted=self.preempted[owner])
        for key in victims:
            owner = self.owners.get(key, "")
            if owner in by_owner and owner not in failed:
                self.delays[key] = job_backoff(self.counts[owner].failures)
        return failed

    def _rayjobs(self, victims: list[str], lost: set[str]) -> Restarts:
        """The RayJobs whose pods the victims are, answered by ``ray_restarts`` (``lost``: the pods a Job the victims
        failed loses, a RayJob's submitter among them); -> its answer, counts and lines taken in."""
        out = Restarts()
        by_key = {k: a for k, a in self.by_key.items() if k not in self.gone and k not in lost}
        by_key.update({k: self.by_key[k] for k in victims if k in lost})  # a failed submitter's pod: hit, not gone
        hit = {self.owners.get(k) for k in victims}  # a submitter Job the run did not touch says nothing now
        now = with_preempted_jobs(self.jobs, self.counts, self.preempted, self.rules)
        jobs = JobsInWave(self.rules, self.counts, {o: w for o, w in now.items() if o in hit}, [*self.gone, *lost],
                          {})
        ray_restarts(self.rayjobs, by_key, victims, jobs, before=self.counts, out=out, done="preempted")
        self.counts.update(out.counts)
        self.retried |= out.retried
        self.lost_why.update(out.lost_why)
        for name, line in out.workloads.items():
            was = self.workloads.get(name)
            self.workloads[name] = GroupWave(0, line.deleted, line.action, line.why, line.evicted) if was is None \
                else was.again(line.evicted, line.deleted, line.action, line.why)
        self.recreated += [k for k in out.recreated if k not in self.evicted and k not in self.recreated]
        return out

    def _jobset(self, jobset: str, failures: Mapping[str, tuple[str, str, str]], pods: list[str],
                victims: list[str]) -> bool:
        """The JobSet's failure policy on its Jobs failed: restarted (True) or failed."""
        run = self.runs.get(jobset)
        count = self.counts.get(jobset, JobCount())
        action, why = jobset_action(run.failure if run is not None else None, failures, count)
        restart = action.startswith("Restart")
        if restart:
            self.counts[jobset] = JobCount(count.counted + (action == "RestartJobSet"), count.failures + 1)
            self.counts.update({o: JobCount() for o, js in self.of.items() if js == jobset})
        hit = [k for k in pods if k in victims]
        self._record(jobset, hit, [k for k in pods if k not in hit], "restarted" if restart else "failed",
                     f"{action}: {why}", recreated=restart)
        return restart

    def _groups(self, victims: list[str], running: Collection[str]) -> set[str]:
        """The LeaderWorkerSet groups the victims recreate whole; -> their pods."""
        hit: dict[str, list[str]] = {}
        for key in victims:
            found = lws_group(self.by_key[key]) if key in self.by_key else None
            if found is not None:
                hit.setdefault(found[0], []).append(key)
        out: set[str] = set()
        for group, keys in sorted(hit.items()):
            lws = group.split(" group ", 1)[0].removeprefix("LeaderWorkerSet/")
            members = self.members[group]
            leader = any(lws_group(self.by_key[k]) == (group, True) for k in keys)
            pending = any(k not in running and k not in keys for k in members)
            why = lws_why(self.policies.get(lws, "RecreateGroupOnPodRestart"), leader=leader, pending=pending,
                          done="preempted")
            if why is not None:
                out |= set(members)
                self._record(group, keys, [k for k in members if k not in keys], "recreated", why, recreated=True)
        return out

    def _record(self, name: str, hit: list[str], deleted: list[str], action: str, why: str, *,
                recreated: bool) -> None:
        """The workload's line, its earlier one in the wave carried on; its deleted pods among those recreated."""
        was = self.workloads.get(name)
        self.workloads[name] = GroupWave(0, len(deleted), action, why, len(hit)) if was is None \
            else was.again(len(hit), len(deleted), action, why)
        if recreated:
            self.recreated += [k for k in deleted if k not in self.evicted and k not in self.recreated]
