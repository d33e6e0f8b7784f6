"""One wave of a rollout simulated: its nodes cordoned and drained, switched to DRA and uncordoned.

``switching`` moves to DRA on top of the nodes switched before: their pods are evicted, the rest kept where the
placement has them (bound as the run before left them: :func:`kubedra.migrate.rollout.mixed`), and the evicted and
waiting pods scheduled again: first while ``switching`` is cordoned (the controllers recreate a pod as soon as it is
evicted; a pod that lands then stays there), then the ones still pending on the switched, uncordoned nodes. Bare
pods evicted are lost.

The recreated pods keep their priority and ``preemptionPolicy``: one that finds no room preempts lower-priority
running pods (kept or landed) as kube-scheduler would, PodDisruptionBudgets weighed only as its preference. A
victim's controller recreates it in the same run (Deployments, ReplicaSets, StatefulSets); a Job's preempted pod is
made again in the next run (the simulator replaces only the pods of Jobs it runs), after its Job's back-off; a bare
pod preempted is lost. A Job's evicted pods are failures to it (``job_failures``; ``failures``: its count before the
wave): they are made again after its back-off, or, past its limit, the Job fails and all its pods are lost. The
LeaderWorkerSet groups, JobSets and RayJobs the evictions restart are made again with them (``group_restarts``,
``ray_restarts``: a RayJob's head is not made again; a retried RayJob's new submitter comes once its new cluster runs,
``ray_waves``); those a run's preemptions restart (``wave_victims``: a preempted pod is deleted as an evicted one is)
in the next run, and a Job, JobSet or RayJob a preemption fails loses its pods there and then.

The wave runs until it settles: while a run's victims leave a pod for the next run to make again (a Job's victim, or
a group's or JobSet's pods deleted with it), another run. A chain of them is bounded: a victim always has a strictly
lower priority than its preemptor, and the pods made again in a run are the last run's victims (with their groups and
JobSets), so each run's victims have a lower priority than the last run's, and the runs after the uncordon that the
chain adds are fewer than the pods' distinct priorities (:func:`runs`). A Job's back-off adds no run: its pod arrives
later within the next run (``delays``). A group or JobSet whose pods have different priorities can break that descent
(its higher pod, made again, preempts again); the bound is then the guard, and the pods still deleted after the
wave's last run are shown waiting (``LATE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from kubedra.migrate.group_restarts import Restarts, jobset_restarts, lws_restarts
from kubedra.migrate.job_failures import JobCount, jobs_in_wave, with_preempted_jobs
from kubedra.migrate.lws_waves import split
from kubedra.migrate.ray_restarts import ray_restarts
from kubedra.migrate.ray_waves import split as ray_split
from kubedra.migrate.rollout import (
    RECREATED_AT,
    Cluster,
    Held,
    Ran,
    WaveOutcome,
    budget_findings,
    kept_arrival,
    mixed,
    pod_key,
    simulated,
)
from kubedra.migrate.wave_victims import Victims
from kubedra.sim.workloads import PodArrival

LATE = "deleted with its group or JobSet after the wave's last run: made again after the wave"


def runs(pods: Iterable[PodArrival]) -> int:
    """The most runs after the uncordon a wave needs (the module's doc says why): the run after the uncordon, and one
    per distinct priority the pods may have (a priority set, else its class's: each pair counts, so never fewer than
    the priorities' values)."""
    return 1 + len({(a.pod.spec.priority, a.pod.spec.priority_class_name) for a in pods})


def _bare(arrival: PodArrival) -> bool:
    return arrival.owner.startswith("Pod/")


class _Wave:
    """The runs of one wave: the pods running (carried bound), those lost and those preempted so far."""

    def __init__(self, cluster: Cluster, features: Any, by_key: dict[str, PodArrival], placement: dict[str, str],
                 *, running: dict[str, Held | None], lost: list[str], victims: Victims) -> None:
        self.cluster, self.features, self.by_key, self.placement = cluster, features, by_key, placement
        self.running, self.lost, self.victims = running, lost, victims
        self.preempted: dict[str, str] = {}
        self.deleted: set[str] = set()  # the pods the last run's victims' controllers deleted, to make again
        self.again = False  # whether a pod waits for the next run to be made again

    def once(self, on: set[str], cordoned: set[str], pending: list[str], delays: Mapping[str, float]) -> Ran:
        """One run: ``on`` switched, ``cordoned`` left out, the running pods bound, ``pending`` arriving after
        their ``delays``."""
        arrivals, known, claims = [], {}, []
        for key, carried in self.running.items():
            kept = kept_arrival(self.by_key[key], self.placement.get(key, ""), carried)
            arrivals.append(kept)
            known[pod_key(kept.pod)] = key
            if carried is not None:
                claims.append(carried)
        made, groups = split(self.cluster.scenario.workloads.leaderworkersets, pending, self.running)
        submitted, rayjobs = ray_split(self.cluster.scenario.workloads.rayjobs, self.victims.retried, pending)
        arrivals.extend(replace(self.by_key[k], arrive_at=RECREATED_AT + delays.get(k, 0.0))
                        for k in pending if k not in made and k not in submitted)
        ran = simulated(mixed(self.cluster, on, arrivals, cordoned, claims, leaderworkersets=groups, rayjobs=rayjobs),
                        self.features, known)
        self.preempted.update(ran.preempted)
        self.lost.extend(k for k in ran.unreplaced if _bare(self.by_key[k]) and k not in self.lost)
        return ran

    def carry(self, ran: Ran) -> list[str]:
        """The pods running after ``ran`` carried as bound, less those its victims' controllers delete or lose
        (``wave_victims``); the others (not lost) to schedule again. A retried RayJob whose new submitter ran no
        longer waits for its cluster (``ray_waves``)."""
        owners = {self.by_key[k].owner for k in ran.held if k in self.by_key}
        self.victims.retried -= {n for n in self.victims.retried if self.cluster.rayjobs[n].submitter in owners}
        self.deleted, lost = self.victims.answer(ran.preempted, ran.held)
        self.lost.extend(k for k in self.by_key if k in lost and k not in self.lost)
        self.running.clear()
        self.running.update({k: ran.held[k] for k in self.by_key
                             if k in ran.held and k not in self.deleted and k not in self.lost})
        # a Job's victim waits for the next run to be made again, as do the pods deleted with their group or JobSet
        self.again = bool(self.deleted) or any(not _bare(self.by_key[k]) and k not in self.lost
                                               for k in ran.unreplaced)
        return [k for k in self.by_key if k not in self.running and k not in self.lost]


def simulate_wave(cluster: Cluster, features: Any, switched: set[str], switching: tuple[str, ...],
                  placement: dict[str, str], *, gone: frozenset[str] = frozenset(),
                  held: dict[str, Held] | None = None, failures: Mapping[str, JobCount] | None = None
                  ) -> WaveOutcome:
    """``switching`` moved to DRA on top of ``switched`` (the module's doc says how); ``gone``: the bare pods earlier
    waves evicted, which no longer exist; ``held``: the running pods as the run before left them; ``failures``: the
    Jobs' counts before the wave."""
    held = held or {}
    going = set(switching)
    by_key = {pod_key(a.pod): a for a in cluster.pods if pod_key(a.pod) not in gone}
    running: dict[str, Held | None] = {}
    again, evicted, lost = [], [], []
    for key, arrival in by_key.items():
        node = placement.get(key)
        if node is not None and node not in going:
            running[key] = held.get(key)
            continue
        if node is not None:
            evicted.append(key)
            if _bare(arrival):
                lost.append(key)
                continue
        again.append(key)
    owners = {k: a.owner for k, a in by_key.items()}
    workloads = cluster.scenario.workloads
    jobs = jobs_in_wave(workloads, owners, evicted, [*again, *running], failures or {})
    restarts = Restarts()
    lws_restarts(by_key, cluster.lws_policies, evicted, placement, restarts)
    jobset_restarts(workloads, owners, evicted, jobs, before=failures or {}, out=restarts)
    ray_restarts(cluster.rayjobs, by_key, evicted, jobs, before=failures or {}, out=restarts)
    job_lost = [*(k for k in jobs.lost if k not in restarts.fresh), *restarts.lost]
    again = [k for k in by_key if (k in again or k in restarts.recreated or k in restarts.fresh)
             and k not in job_lost and k not in lost]
    running = {k: h for k, h in running.items() if k not in job_lost and k not in again}
    lost.extend(job_lost)
    jobs = replace(jobs, counts={**jobs.counts, **restarts.counts},
                   delays={k: d for k, d in jobs.delays.items() if k not in restarts.fresh})
    victims = Victims(workloads, by_key, cluster.lws_policies, jobs, restarts=restarts, evicted=evicted,
                      rayjobs=cluster.rayjobs)
    wave = _Wave(cluster, features, by_key, placement, running=running, lost=lost, victims=victims)

    # The controllers recreate an evicted pod at once, while its node is still cordoned: where the replacement binds
    # during the drain it stays (kube-scheduler never moves a bound pod); only the pods that found no node then
    # land after the switch and the uncordon. A Job's evicted pods are made again after its back-off, its pods
    # preempted after the back-off their Job's failures give (``victims.delays``).
    drain = wave.once(switched, going, again, jobs.delays)
    during = {k for k, (node, _) in drain.status.items() if node}
    result = wave.once(switched | going, set(), wave.carry(drain), victims.delays)
    for _ in range(runs(by_key.values()) - 1):
        pending = wave.carry(result)
        if not wave.again:
            break
        result = wave.once(switched | going, set(), pending, victims.delays)
    else:
        wave.carry(result)
    job_lost += [k for k in victims.lost if k not in job_lost]
    after = {k: node for k, (node, _) in result.status.items()
             if node and k in by_key and k not in lost and k not in wave.deleted}
    waiting = {k: why for k, (node, why) in result.status.items() if not node and k in by_key and k not in lost}
    waiting |= dict.fromkeys(wave.deleted, LATE)
    budgets = budget_findings(cluster, set(placement), during, set(after))
    moved = {k: after[k] for k in evicted if k in after}
    touched = with_preempted_jobs(victims.jobs, victims.counts, victims.preempted, jobs.rules)
    return WaveOutcome(tuple(switching), evicted, lost, after, moved, waiting, budgets, wave.preempted,
                       {k: h for k, h in result.held.items() if k in after}, touched, victims.counts, job_lost,
                       victims.workloads, [k for k in victims.recreated if k not in job_lost], victims.lost_why)
