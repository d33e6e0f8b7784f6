"""The CronJob controller in simulated time, as kube-controller-manager v1.37.2's ``ControllerV2.syncCronJob`` acts.

**Clock.** Schedules are wall-clock times; simulated time is seconds from 0. A CronJob maps simulated time 0 to the
instant in its ``kubedra.io/simulation-start`` annotation (RFC 3339, default ``2026-01-01T00:00:00Z``, a Thursday).
It is created at its own ``kubedra.io/start-after`` (default 0): that is its ``creationTimestamp``, the time its
schedule counts from (the first Job is at the first scheduled time after it). Schedules are read in
``spec.timeZone``, else in UTC (the controller's local zone, as in kube-controller-manager's image).

**Horizon.** A CronJob schedules Jobs until its own ``kubedra.io/run-for`` after its creation (a scheduled time at
that instant still runs); without it, until the rest of the workload is known to end (the last arrival plus its
run time among the other workloads); when nothing else bounds the run, one day after its creation. After the horizon
it is as if suspended: Jobs already made run to their end. A CronJob may schedule at most 10,000 Jobs in a run.

**Syncs.** The controller syncs the CronJob when it is created, at each time it asks to be woken (the next scheduled
time; kubedra leaves out the 100 ms the controller adds) and when one of its Jobs finishes (the Job informer's
update). Each sync finds the most recent unmet scheduled time (``mostRecentScheduleTime``: since the last scheduled
time, or since ``startingDeadlineSeconds`` ago) and, unless it is too late (older than the deadline), already
made, or ``concurrencyPolicy: Forbid`` with a Job still active, makes its Job ``<cronjob>-<minutes since the
epoch>``; ``Replace`` first deletes the active Jobs (their pods leave after their grace period). A Job skipped by
``Forbid`` is made when the active one finishes, if its time is still the most recent and within the deadline, as
the controller does. ``spec.suspend`` makes no Job. The Jobs run as any Job does (parallelism, completions, the
template's ``kubedra.io/run-for``); the template's ``kubedra.io/start-after`` delays their pods after the Job is made.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from kubedra.sim.cron import Schedule
from kubedra.sim.evictions import DEFAULT_GRACE_SECONDS
from kubedra.sim.workloads import CronJobRun, JobRun

if TYPE_CHECKING:
    from kubedra.sim.run import JobProgress, Simulation


def most_recent(schedule: Schedule, earliest: int, now: float) -> tuple[int | None, bool, bool]:
    """``mostRecentScheduleTime``: the latest scheduled time after ``earliest`` and not after ``now`` (None: none),
    whether any was missed, and whether the schedule is one the controller refuses (less than a second between
    two times, or none at all)."""
    t1 = schedule.next(earliest)
    if t1 is None:
        return None, False, True
    if now < t1:
        return None, False, False
    t2 = schedule.next(t1)
    if t2 is None:
        return None, False, True
    if now < t2:
        return t1, False, False
    between = t2 - t1
    if between < 1:
        return None, False, True
    missed = int(now - t1) // between + 1
    found: int | None = None
    t = schedule.next(t1 + (missed - 2) * between)
    while t is not None and t <= now:
        found = t
        t = schedule.next(t)
    return found, missed > 0, False


class CronController:
    """One CronJob's controller state: its last scheduled time, its active Jobs, the wakes it asked for."""

    def __init__(self, sim: Simulation, run: CronJobRun) -> None:
        self.sim = sim
        self.run = run
        self.last: int | None = None  # status.lastScheduleTime
        self.active: list[tuple[JobRun, JobProgress]] = []  # status.active
        self.wakes: set[float] = set()
        self.made = 0  # pods added (the run's progress total grows by them)

    @property
    def key(self) -> str:
        return self.run.owner

    def _earliest(self, now: float, deadline: bool) -> int:
        earliest = self.last if self.last is not None else self.run.origin + int(self.run.created_at // 1)
        if deadline and self.run.deadline is not None:
            earliest = max(earliest, int((now - self.run.deadline) // 1))
        return earliest

    def wake_at(self, time: float) -> None:
        """Ask for a sync at simulated ``time`` (once per instant)."""
        if time not in self.wakes:
            self.wakes.add(time)
            self.sim.wake_cron(time, self.key)

    def job_finished(self, job: JobProgress) -> None:
        """The Job informer's update: a Job of this CronJob is no longer active; sync now."""
        if any(progress is job for _, progress in self.active):
            self.wake_at(self.sim.now)

    def sync(self) -> None:
        """``syncCronJob`` at the current instant."""
        sim, run = self.sim, self.run
        self.wakes.discard(sim.now)
        self.active = [(job, progress) for job, progress in self.active if sim.job_active(progress)]
        if run.suspended or run.until is None or sim.now > run.until:
            return
        now = run.origin + sim.now
        scheduled, _, refused = most_recent(run.schedule, self._earliest(now, True), now)
        if refused:
            return  # the controller's InvalidSchedule: it never syncs this CronJob again
        if scheduled is not None and scheduled != self.last:
            self._due(scheduled, now)
        wake = self._next_wake(now)
        if wake is not None and sim.now < wake - run.origin <= run.until:
            self.wake_at(wake - run.origin)

    def _due(self, scheduled: int, now: float) -> None:
        run, sim = self.run, self.sim
        from kubedra.sim.run import Event

        if run.deadline is not None and scheduled + run.deadline < now:
            when = dt.datetime.fromtimestamp(scheduled, dt.UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
            sim.events.append(Event(sim.now, "MissSchedule", f"CronJob {run.namespace}/{run.name}",
                                    message=f"Missed scheduled time to start a job: {when}"))
            return
        if run.policy == "Forbid" and self.active:
            sim.events.append(Event(sim.now, "JobAlreadyActive", f"CronJob {run.namespace}/{run.name}",
                                    message="Not starting job because prior execution is running and concurrency "
                                            "policy is Forbid"))
            return
        if run.policy == "Replace":
            for job, progress in self.active:
                self._delete(job, progress)
            self.active = []
        job = run.make_job(scheduled)
        zone = ZoneInfo(run.time_zone) if run.time_zone != "UTC" else dt.UTC
        stamp = dt.datetime.fromtimestamp(scheduled, zone).isoformat().replace("+00:00", "Z")
        sim.events.append(Event(sim.now, "Created", f"Job {job.namespace}/{job.name}",
                                message=f"CronJob {run.namespace}/{run.name} scheduled it for {stamp}"))
        progress = sim.start_job(job, self.key)
        self.made += len(job.pods)
        self.active.append((job, progress))
        self.last = scheduled

    def _delete(self, job: JobRun, progress: JobProgress) -> None:
        """``concurrencyPolicy: Replace``: the running Job deleted (background propagation: its pods follow)."""
        sim, run = self.sim, self.run
        from kubedra.sim.run import Event

        progress.done = True
        progress.waiting.clear()
        sim.events.append(Event(sim.now, "Deleted", f"Job {job.namespace}/{job.name}",
                                message=f"CronJob {run.namespace}/{run.name}: concurrencyPolicy Replace"))
        for record in sim.job_pods(progress):
            grace = record.pod.spec.termination_grace_period_seconds
            sim.delete(record, f"Job {job.namespace}/{job.name} deleted by its CronJob (concurrencyPolicy Replace)",
                       DEFAULT_GRACE_SECONDS if grace is None else float(grace))

    def _next_wake(self, now: float) -> int | None:
        """``nextScheduleTimeDuration``: the next scheduled time after the most recent one (or after now)."""
        earliest = self._earliest(now, False)
        scheduled, missed, refused = most_recent(self.run.schedule, earliest, now)
        if refused:
            base: float = now
        elif scheduled is None:
            base = now if missed else earliest
        else:
            base = scheduled
        return self.run.schedule.next(base)
