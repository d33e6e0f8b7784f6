"""What a wave's evictions cost the Jobs whose pods it evicts, counted as kube-controller-manager v1.37.2's Job
controller counts them (``pkg/controller/job``).

The drain evicts a Job's pod: it is deleted before it succeeded, a failed pod to its Job (``isPodFailed``), which
makes its replacement only after the pod-failure back-off: 10 s, doubled per failure since the Job's last success, at
most 10 min (``sim.replacements.job_backoff``; every failed pod counts, ``newBackoffRecord``). A Job's pods run until
the rollout is over, so its failures add up wave after wave. The first ``podFailurePolicy`` rule on the
``DisruptionTarget`` condition (``sim.replacements.job_rules``) says what an eviction costs: ``Ignore`` leaves it out
of the failed count, ``FailJob`` fails the Job at once, ``Count`` (or no rule) counts it. Once the count passes
``backoffLimit`` (6 unless set) the Job fails (``BackoffLimitExceeded``): it makes no more pods and deletes the ones
it has. A Job's pod preempted during the wave is a failure too (the scheduler sets ``DisruptionTarget`` on it as the
eviction API does): its replacement, too, comes only after the back-off its Job's failures give, the preemptions so
far in the wave counted; past the limit it fails the Job in the wave (``wave_victims`` answers each run's victims),
and it counts for the waves after it. ``backoffLimitPerIndex``'s per-index limits are not modelled (such a Job's
``backoffLimit`` defaults to MaxInt32: it does not fail here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubedra.sim.replacements import JobRules, job_backoff, job_rules
from kubedra.sim.workloads import Workloads


@dataclass(frozen=True)
class JobCount:
    """A Job's failures so far: those counted toward ``backoffLimit``, and all of them (its back-off)."""

    counted: int = 0
    failures: int = 0

    def plus(self, rule: JobRules, failed: int) -> JobCount:
        """With ``failed`` more pods failed: all lengthen the back-off, those the rule does not ignore count."""
        return JobCount(self.counted + (0 if rule.disruption_action == "Ignore" else failed), self.failures + failed)


@dataclass(frozen=True)
class JobWave:
    """One Job in one wave: pods evicted, its failures counted so far, how long its replacements wait, and why it
    failed ("" where it did not)."""

    evicted: int
    counted: int
    limit: int
    backoff: float
    failed: str = ""
    preempted: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evicted": self.evicted, "failures": self.counted, "backoffLimit": self.limit,
                               "backoffSeconds": self.backoff}
        if self.preempted:
            out["preempted"] = self.preempted
        if self.failed:
            out["failed"] = self.failed
        return out


def rules_by_owner(workloads: Workloads) -> dict[str, JobRules]:
    """Each Job's rules, by the owner its pods carry in the plan (``Job/<namespace>/<name>``); RayJobs' submitter
    Jobs too."""
    submitters = [run.submitter for run in workloads.rayjobs if run.submitter is not None]
    return {job.owner: job_rules(job.spec) if job.spec is not None else JobRules()
            for job in [*workloads.all_jobs(), *submitters]}


def failure(rule: JobRules, now: JobCount) -> str:
    """Why a Job with pods failed on DisruptionTarget and ``now`` counted fails ("" where it does not)."""
    if rule.disruption_action == "FailJob":
        return "PodFailurePolicy: Pod matched a FailJob rule of the podFailurePolicy"
    if now.counted > rule.backoff_limit:
        return "BackoffLimitExceeded: Job has reached the specified backoff limit"
    return ""


def job_costs(rules: Mapping[str, JobRules], evicted: Counter[str], before: Mapping[str, JobCount]
              ) -> tuple[dict[str, JobCount], dict[str, JobWave]]:
    """The Jobs' counts after a wave that evicts ``evicted`` (pods per owner; owners that are no Job are left out),
    and what the wave does to each Job it touches."""
    after = dict(before)
    touched: dict[str, JobWave] = {}
    for owner, n in sorted(evicted.items()):
        rule = rules.get(owner)
        if rule is None:
            continue
        now = after[owner] = before.get(owner, JobCount()).plus(rule, n)
        failed = failure(rule, now)
        touched[owner] = JobWave(n, now.counted, rule.backoff_limit, 0.0 if failed else job_backoff(now.failures),
                                 failed)
    return after, touched


def with_preempted_jobs(jobs: Mapping[str, JobWave], counts: Mapping[str, JobCount], preempted: Counter[str],
                        rules: Mapping[str, JobRules]) -> dict[str, JobWave]:
    """The wave's Jobs (``jobs``: what its evictions did) with the ones whose pods it preempted: their pods
    preempted, their count (``counts``: the preemptions added) and the back-off their replacements waited."""
    out = dict(jobs)
    for owner, n in sorted(preempted.items()):
        rule = rules.get(owner)
        if rule is None:
            continue
        now = counts[owner]
        was = out.get(owner)
        if was is not None and was.failed:
            continue
        out[owner] = JobWave(was.evicted if was is not None else 0, now.counted, rule.backoff_limit,
                             job_backoff(now.failures), preempted=n)
    return out


@dataclass(frozen=True)
class JobsInWave:
    """What a wave's evictions do to the Jobs: each Job's rules and counts after it, what it did to each Job it
    touched, the pods lost with a failed Job (``deleteActivePods``: all it has), and how long each evicted pod's
    replacement waits (the back-off)."""

    rules: dict[str, JobRules]
    counts: dict[str, JobCount]
    jobs: dict[str, JobWave]
    lost: list[str]
    delays: dict[str, float]


def jobs_in_wave(workloads: Workloads, owners: Mapping[str, str], evicted: list[str], pods: list[str],
                 before: Mapping[str, JobCount]) -> JobsInWave:
    """``evicted``'s cost to the Jobs (``owners``: each pod's owner) with ``before`` counted; ``pods``: every pod
    the wave has not lost, whose failed Jobs' pods are lost."""
    rules = rules_by_owner(workloads)
    counts, jobs = job_costs(rules, Counter(owners[k] for k in evicted), before)
    failed = {owner for owner, job in jobs.items() if job.failed}
    lost = [k for k in pods if owners[k] in failed]
    delays = {k: jobs[owners[k]].backoff for k in evicted if owners[k] in jobs and owners[k] not in failed}
    return JobsInWave(rules, counts, jobs, lost, delays)
