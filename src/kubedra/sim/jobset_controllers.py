"""A JobSet's controllers during the run, as v0.12.0's act after each instant (``sim.jobsets`` says what is modelled and
from which source): :class:`JobSetController` (``reconcile`` in ``pkg/controllers/jobset_controller.go``: failure and
success policies, restarts with ``sim.jobset_restarts``, InOrder and ``dependsOn`` stages) and
:class:`ExclusiveJobController` (the pod webhook's exclusive placement: followers admitted, pinned to the leader's
domain, once the leader is bound). ``sim.jobsets`` expands the JobSet before the run; this module acts on what it
made."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.sim.jobset_restarts import RESTART_MESSAGES, PreviousJobs, restarted
from kubedra.sim.jobsets import PREFIX, JobSetRun, is_leader

if TYPE_CHECKING:
    from kubedra.cluster.state import PodRecord
    from kubedra.sim.replacements import JobRules
    from kubedra.sim.run import JobProgress, Simulation
    from kubedra.sim.workloads import JobRun


def job_ready(sim: Simulation, job: JobRun) -> bool:
    """The JobSet controller's ready Job: running (bound) plus succeeded pods reach min(parallelism, completions)."""
    want = job.parallelism if job.completions is None else min(job.parallelism, job.completions)
    pods = sim.state.pods
    have = 0
    for pod in job.pods:
        record = pods.get(f"{pod.metadata.namespace}/{pod.metadata.name}")
        if record is not None and record.started_at is not None and not record.deleted:
            have += 1
    return have >= want


def replicated_job_of(job: JobRun) -> str:
    return job.spec.template.metadata.labels.get(PREFIX + "replicatedjob-name", "") if job.spec is not None else ""


def rule_applies(rule: dict[str, Any], rjob: str, reason: str, message: str) -> bool:
    """``ruleIsApplicable`` (failure_policy.go): the Job's failure reason among ``onJobFailureReasons``, a message
    pattern matching, its replicated job among ``targetReplicatedJobs`` (each unset: any)."""
    reasons = rule.get("onJobFailureReasons") or []
    patterns = rule.get("onJobFailureMessagePatterns") or []
    targets = rule.get("targetReplicatedJobs") or []
    return ((not reasons or reason in reasons) and (not patterns or any(re.search(p, message) for p in patterns))
            and (not targets or rjob in targets))


FAILED_MESSAGES = {"FailedJobs": "jobset failed due to one or more job failures",
                   "ReachedMaxRestarts": "jobset failed due to reaching max number of restarts",
                   "FailJobSetFailurePolicyAction": "applying FailJobSet failure policy action"}


def failed_message(reason: str, first: str) -> str:
    """The Failed condition's ``<reason>: <message>`` (``messageWithFirstFailedJob``, failure_policy.go)."""
    return f"{reason}: {FAILED_MESSAGES[reason]} (first failed job: {first})"


class JobSetController:
    """One JobSet's controller during the run (``pkg/controllers/jobset_controller.go`` ``reconcile``), after each
    instant: a failed Job ends the JobSet as ``executeFailurePolicy`` decides, else enough succeeded Jobs complete it
    (``executeSuccessPolicy``); a finished JobSet's active Jobs are deleted (``deleteJobs``) and no more are made;
    else the next Jobs are made (InOrder, ``dependsOn``: ``reconcileReplicatedJobs``)."""

    def __init__(self, sim: Simulation, run: JobSetRun) -> None:
        self.sim = sim
        self.run = run
        self.made = 0
        self.seen = len(sim.events)
        self.progress: dict[str, JobProgress | None] = {}  # made Jobs by name (None: no pod ever made)
        self.jobs: dict[str, JobRun] = {}
        self.succeeded: set[str] = set()
        self.failed: dict[str, tuple[str, str]] = {}  # name -> (reason, message)
        self.finished = False
        for job in run.first:
            pod = job.pods[0] if job.pods else None
            self._track(job, sim.job_of(f"{job.namespace}/{pod.metadata.name}") if pod is not None else None)
        self.in_order = not run.waits
        # nothing to do during the run: no Jobs to make, the default success policy (the JobSet ends with its last
        # Job), and no Job can fail (kubedra's fail only by deleted pods, so only where preemption can delete them)
        self.idle = (not run.stages and run.success == ("All", ()) and all(n >= 0 for _, n in run.replicas)
                     and sim.evictions is None and run.queue is None)  # Kueue hears when it finishes
        self.on_end: Callable[[], None] | None = None  # told once when it completes or fails (Kueue's quota)
        self.pending = list(zip(run.stages, run.waits or [() for _ in run.stages], strict=True))
        self.current = run.first
        self.restarts = 0  # status.restarts
        self.counted = 0  # status.restartsCountTowardsMax
        self.previous = PreviousJobs(sim, run.restart_strategy == "BlockingRecreate")
        self.unmade: list[JobRun] = []  # Jobs of the current attempt waiting for their previous ones to be gone
        self.unmade_before: list[JobRun] = []  # those ``_recreate`` is making now

    def _track(self, job: JobRun, progress: JobProgress | None) -> None:
        self.jobs[job.name] = job
        self.progress[job.name] = progress

    def step(self) -> bool:
        """One sync; whether the JobSet still needs its controller."""
        if self.idle:
            return False
        self._observe()
        if not self.finished:
            if self.failed:
                self._on_failure()
            elif self.succeeded:
                self._on_success()
        if self.finished:
            return False
        self._recreate()
        self._make()
        return bool(self.pending) or bool(self.unmade) or any(name not in self.succeeded and name not in self.failed
                                         for name in self.jobs)

    def _observe(self) -> None:
        """The Jobs that finished since the last sync: failed where the Job controller said so (a ``Failed`` event
        on the Job), succeeded where none of their pods remains to run."""
        sim = self.sim
        events = sim.events
        dirty: set[str] = set()
        prefix = f"Job {self.run.namespace}/"
        for event in events[self.seen:]:
            if event.object.startswith(prefix) and event.type == "Failed":
                name = event.object[len(prefix):]
                if name in self.jobs and name not in self.failed:
                    reason, _, message = (event.message or "").partition(": ")
                    self.failed[name] = (reason, message)
            elif event.type in ("Finished", "Deleted") and event.object.startswith("Pod "):
                record = sim.state.pods.get(event.object[4:])
                if record is not None and record.owner.startswith("Job/"):
                    dirty.add(record.owner.rsplit("/", 1)[1])
        self.seen = len(events)
        for name in dirty:
            progress = self.progress.get(name)
            if progress is not None and name not in self.failed and not sim.job_active(progress):
                self.succeeded.add(name)

    def _on_failure(self) -> None:
        """``executeFailurePolicy``: without a policy the JobSet fails (``FailedJobs``); with one, the first rule that
        applies to a failed Job (else ``RestartJobSet``) acts: ``FailJobSet`` fails it; ``RestartJobSet`` restarts it
        (``sim.jobset_restarts``) until ``restartsCountTowardsMax`` reaches ``maxRestarts``, then fails it
        (``ReachedMaxRestarts``); ``RestartJobSetAndIgnoreMaxRestarts`` restarts it without counting."""
        first = next(iter(self.failed))
        failure = self.run.failure
        if failure is None:
            self._finish("Failed", failed_message("FailedJobs", first))
            return
        max_restarts, rules = failure
        action = "RestartJobSet"
        for rule in rules:
            hit = next((name for name, (reason, message) in self.failed.items()
                        if rule_applies(rule, replicated_job_of(self.jobs[name]), reason, message)), None)
            if hit is not None:
                action, first = rule.get("action", "RestartJobSet"), hit
                break
        if action == "FailJobSet":
            self._finish("Failed", failed_message("FailJobSetFailurePolicyAction", first))
        elif action == "RestartJobSet" and self.counted >= max_restarts:
            self._finish("Failed", failed_message("ReachedMaxRestarts", first))
        elif action in RESTART_MESSAGES:
            self._restart(action, first)
        else:  # RestartJob*: refused by v0.12.0's webhook (its RestartJob gate is off), so never reached
            from kubedra.sim.run import Event

            self.sim.events.append(Event(self.sim.now, "Pending", self.run.owner.replace("/", " ", 1),
                                         message=f"failurePolicy action {action} after Job {first} failed: not "
                                                 "modelled; the JobSet goes on"))
            self.failed.clear()

    def _restart(self, action: str, first: str) -> None:
        """``failurePolicyRecreateAll``, then ``deleteJobs`` of the previous Jobs: every Job of this attempt deleted
        (its active pods with their grace period) and made again, stage by stage as at the start, each once
        ``PreviousJobs`` lets it (``_start``)."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        self.restarts += 1
        self.counted += action == "RestartJobSet"
        sim.events.append(Event(sim.now, "Restarting", run.owner.replace("/", " ", 1),
                                message=f"{RESTART_MESSAGES[action]} (first failed job: {first}); restart attempt "
                                        f"{self.restarts}"))
        for name, progress in self.progress.items():
            sim.events.append(Event(sim.now, "Deleted", f"Job {run.namespace}/{name}",
                                    message=f"{run.owner}: restart attempt {self.restarts}"))
            if progress is None or name in self.succeeded or name in self.failed or not sim.job_active(progress):
                continue
            progress.done = True
            progress.waiting.clear()
            for record in sim.job_pods(progress):
                self._delete(record, f"Job {run.namespace}/{name} deleted: its JobSet restarts")
        self.previous.add({name: job.owner for name, job in self.jobs.items() if name in self.progress})
        self.progress, self.jobs, self.unmade = {}, {}, []
        self.succeeded.clear()
        self.failed.clear()
        stages = list(zip(run.stages, run.waits or [() for _ in run.stages], strict=True))
        if self.in_order:
            self.current = ()
            self.pending = [(run.first, ()), *stages]
        else:
            self._start(run.first, f"restart attempt {self.restarts}")
            self.pending = stages

    def _delete(self, record: PodRecord, reason: str) -> None:
        from kubedra.sim.evictions import DEFAULT_GRACE_SECONDS

        grace = record.pod.spec.termination_grace_period_seconds
        self.sim.delete(record, reason, DEFAULT_GRACE_SECONDS if grace is None else float(grace))

    def _recreate(self) -> None:
        """The Jobs of this attempt whose previous ones are gone now."""
        if not self.unmade:
            return
        waiting, self.unmade = self.unmade, []
        self.unmade_before = waiting
        self._start(tuple(waiting), f"restart attempt {self.restarts}, the previous Job gone")
        self.unmade_before = []

    def _on_success(self) -> None:
        """``executeSuccessPolicy``: the succeeded Jobs of the targeted replicated jobs (all where none) reach one
        (``Any``) or the targets' summed replicas (``All``): the JobSet completes."""
        operator, targets = self.run.success
        matching = sum(1 for name in self.succeeded
                       if not targets or replicated_job_of(self.jobs[name]) in targets)
        expected = 1 if operator == "Any" else sum(count for rjob, count in self.run.replicas
                                                   if not targets or rjob in targets)
        if matching >= expected:
            self._finish("Completed", "AllJobsCompleted: jobset completed successfully")

    def _finish(self, kind: str, message: str) -> None:
        """The JobSet completed or failed: its active Jobs deleted (foreground: their pods first), no more made."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        self.finished = True
        self.pending, self.unmade = [], []
        sim.events.append(Event(sim.now, kind, run.owner.replace("/", " ", 1), message=message))
        if self.on_end is not None:
            on_end, self.on_end = self.on_end, None
            on_end()
        for name, progress in self.progress.items():
            if progress is None or name in self.succeeded or name in self.failed or not sim.job_active(progress):
                continue
            progress.done = True
            progress.waiting.clear()
            sim.events.append(Event(sim.now, "Deleted", f"Job {run.namespace}/{name}",
                                    message=f"{run.owner}: the JobSet {kind.lower()}"))
            for record in sim.job_pods(progress):
                self._delete(record, f"Job {run.namespace}/{name} deleted: its JobSet {kind.lower()}")

    def _make(self) -> None:
        """The Jobs whose turn has come: InOrder, the next replicated job's once each Job of the one before is ready;
        with ``dependsOn``, each replicated job's once ``dependencyReachedStatus``."""
        sim = self.sim
        if self.in_order:
            while self.pending and all(job_ready(sim, job) for job in self.current):
                self.current = self._start(self.pending.pop(0)[0],
                                           "startupPolicy InOrder, the replicated job before it is ready")
            return
        still = []
        for stage, waits in self.pending:
            if all(self._reached(name, status) for name, status in waits):
                self._start(stage, "dependsOn " + ", ".join(f"{name} {status}" for name, status in waits))
            else:
                still.append((stage, waits))
        self.pending = still

    def _reached(self, rjob: str, status: str) -> bool:
        """``dependencyReachedStatus`` (depends_on.go): ``Complete``: replicas == succeeded Jobs; ``Ready``:
        replicas == ready + succeeded + failed Jobs."""
        replicas = dict(self.run.replicas).get(rjob, 0)
        names = [name for name, job in self.jobs.items() if replicated_job_of(job) == rjob]
        succeeded = sum(1 for name in names if name in self.succeeded)
        if status == "Complete":
            return replicas == succeeded
        failed = sum(1 for name in names if name in self.failed)
        ready = sum(1 for name in names if name not in self.succeeded and name not in self.failed
                    and job_ready(self.sim, self.jobs[name]))
        return replicas == ready + succeeded + failed

    def _start(self, jobs: tuple[JobRun, ...], why: str) -> tuple[JobRun, ...]:
        """The Jobs made now (after a restart: as ``restarted``, those whose previous Job is left kept unmade); the
        Jobs as made."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        out = []
        for given in jobs:  # the JobSet's Jobs as expanded, or (``unmade``) already made for this attempt
            job = restarted(given, self.restarts) if self.restarts and given not in self.unmade_before else given
            out.append(job)
            if self.previous.blocks(job.name):
                self.jobs[job.name] = job
                self.unmade.append(job)
                continue
            sim.events.append(Event(sim.now, "Created", f"Job {job.namespace}/{job.name}",
                                    message=f"JobSet {run.namespace}/{run.name}: {why}"))
            self._track(job, start_job(sim, job))
            self.made += len(job.pods)
        return tuple(out)


def _pinned(record: PodRecord, key: str, value: str) -> None:
    """``setNodeSelector``: the follower's nodeSelector gets the leader's node's value of the topology key."""
    pod = record.pod
    record.pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(
        pod.spec, node_selector={**pod.spec.node_selector, key: value}))


class ExclusiveJobController:
    """One Job of a JobSet with exclusive placement, as v0.12.0's pod webhook admits its pods
    (``pkg/webhooks/pod_webhook.go``): the Job controller makes its first ``parallelism`` pods at once, but only the
    leader (completion index 0) is admitted; ``ValidateCreate`` refuses each follower ("leader pod not yet
    scheduled") until the leader has a node, and the Job controller retries, so after each instant this makes the
    followers once the leader is bound, each with ``nodeSelector {<topology key>: <leader's node's value>}``
    (``setNodeSelector``); the Job's later pods (past ``parallelism``) get the same. A leader's node without the
    label fails ``topologyFromPod``: no follower is ever admitted. A NonIndexed Job has no leader: none of its pods
    is. ``counted``: its pods are already in the run's total (an InOrder stage's)."""

    def __init__(self, sim: Simulation, job: JobRun, records: list[PodRecord], counted: bool = False) -> None:
        from kubedra.sim.replacements import JobRules, job_rules
        from kubedra.sim.run import JobProgress

        assert job.exclusive is not None
        self.sim = sim
        self.job = job
        self.topology_key = job.exclusive
        self.counted = counted
        self.made = 0
        rules = job_rules(job.spec) if job.spec is not None else JobRules()
        self.progress = JobProgress(waiting=list(records[job.parallelism:]), work_queue=job.completions is None,
                                    rules=rules)
        first = records[:job.parallelism]
        self.leader = next((record for record in first if is_leader(record.pod)), None)
        self.held = [record for record in first if record is not self.leader]
        if self.leader is not None:
            sim.add(self.leader)
            sim.track_job(self.leader.key, self.progress)

    def step(self) -> bool:
        """Admit the followers once the leader is bound; whether they still wait."""
        from kubedra.sim.run import Event

        sim, leader = self.sim, self.leader
        if leader is None:
            return False
        record = sim.state.pods.get(leader.key)
        node_name = record.pod.spec.node_name if record is not None else None
        if record is None or record.deleted or self.progress.done:  # its JobSet finished: the Job deleted
            return False
        if record.started_at is None or not node_name:
            return True
        node = sim.state.nodes.get(node_name)
        value = node.metadata.labels.get(self.topology_key) if node is not None else None
        job = self.job
        if value is None:
            sim.events.append(Event(sim.now, "Pending", f"Job {job.namespace}/{job.name}",
                                    message=f"JobSet pod webhook: node does not have topology label: "
                                            f"{self.topology_key}; the followers of {leader.key} are never admitted"))
            return False
        for waiting in self.progress.waiting:
            _pinned(waiting, self.topology_key, value)
        if self.held:
            sim.events.append(Event(sim.now, "Created", f"Job {job.namespace}/{job.name}",
                                    message=f"JobSet exclusive placement: followers admitted once leader "
                                            f"{leader.key} is scheduled, pinned to {self.topology_key}={value}"))
        for follower in self.held:
            _pinned(follower, self.topology_key, value)
            follower.arrive_at = sim.now
            sim.add(follower)
            sim.track_job(follower.key, self.progress)
            if not self.counted:
                self.made += 1
        self.held = []
        return False


def start_job(sim: Simulation, job: JobRun, records: list[PodRecord] | None = None) -> JobProgress | None:
    """A JobSet's Job made now (``records``: its pods' records, made before the run) or during the run (an InOrder
    stage's, whose pods are already counted): with exclusive placement, through :class:`ExclusiveJobController`."""
    from kubedra.sim.run import job_record

    if job.exclusive is None or job.suspended:
        if records is None:
            return sim.start_job(job)
        return sim.add_job(records, job.parallelism, work_queue=job.completions is None, rules=job_rules_of(job))
    during = records is None
    if records is None:
        records = [job_record(pod, sim.now + job.arrive_at, job.run_for, job.owner, sim.gangs_on) for pod in job.pods]
    controller = ExclusiveJobController(sim, job, records, counted=during)
    sim.add_controller(controller)
    return controller.progress


def job_rules_of(job: JobRun) -> JobRules | None:
    from kubedra.sim.replacements import job_rules

    return job_rules(job.spec) if job.spec is not None else None
