"""One wave of a rollout simulated: its nodes cordoned and drained, switched to DRA and uncordoned.

``switching`` moves to DRA on top of the nodes switched before: their pods are evicted, the rest kept where the
placement has them (bound as the run before left them: :func:`kubedra.migrate.rollout.mixed`), and the evicted and
waiting pods scheduled again: first while ``switching`` is cordoned (the controllers recreate a pod as soon as it is
evicted; a pod that lands then stays there), then the ones still pending on the switched, uncordoned nodes. Bare
pods evicted are lost.

The recreated pods keep their priority and ``preemptionPolicy``: one that finds no room preempts lower-priority
running pods (kept or landed) as kube-scheduler would, PodDisruptionBudgets weighed only as its preference. A
victim's controller recreates it in the same run (Deployments, ReplicaSets, StatefulSets); a Job's preempted pod is
made again in the next run (the simulator replaces only the pods of Jobs it runs), after its Job's back-off
(``job_failures.preemption_delays``); a bare pod preempted is lost. A Job's evicted pods are failures to it
(``job_failures``; ``failures``: its count before the wave): they are made again after its back-off, or, past its
limit, the Job fails and all its pods are lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubedra.migrate.group_restarts import Restarts, jobset_restarts, lws_restarts
from kubedra.migrate.job_failures import (
    JobCount,
    jobs_in_wave,
    preemption_delays,
    with_preempted,
    with_preempted_jobs,
)
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
from kubedra.sim.workloads import PodArrival

MAX_ROUNDS = 3  # runs after the uncordon: more only while a Job's preempted pod waits for its controller's new pod


def _bare(arrival: PodArrival) -> bool:
    return arrival.owner.startswith("Pod/")


class _Wave:
    """The runs of one wave: the pods running (carried bound), those lost and those preempted so far."""

    def __init__(self, cluster: Cluster, features: Any, by_key: dict[str, PodArrival], placement: dict[str, str],
                 *, running: dict[str, Held | None], lost: list[str]) -> None:
        self.cluster, self.features, self.by_key, self.placement = cluster, features, by_key, placement
        self.running, self.lost = running, lost
        self.preempted: dict[str, str] = {}

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
        arrivals.extend(replace(self.by_key[k], arrive_at=RECREATED_AT + delays.get(k, 0.0)) for k in pending)
        ran = simulated(mixed(self.cluster, on, arrivals, cordoned, claims), self.features, known)
        self.preempted.update(ran.preempted)
        self.lost.extend(k for k in ran.unreplaced if _bare(self.by_key[k]) and k not in self.lost)
        return ran

    def carry(self, ran: Ran) -> list[str]:
        """The pods running after ``ran`` carried as bound; the others (not lost) to schedule again."""
        self.running.clear()
        self.running.update({k: ran.held[k] for k in self.by_key if k in ran.held})
        return [k for k in self.by_key if k not in ran.held and k not in self.lost]

    def unreplaced(self, ran: Ran) -> bool:
        """Whether a controller's victim in ``ran`` waits for the next run to be made again (a Job's)."""
        return any(not _bare(self.by_key[k]) for k in ran.unreplaced)


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
    job_lost = [*(k for k in jobs.lost if k not in restarts.fresh), *restarts.lost]
    again = [k for k in by_key if (k in again or k in restarts.recreated or k in restarts.fresh)
             and k not in job_lost and k not in lost]
    running = {k: h for k, h in running.items() if k not in job_lost and k not in again}
    lost.extend(job_lost)
    jobs = replace(jobs, counts={**jobs.counts, **restarts.counts},
                   delays={k: d for k, d in jobs.delays.items() if k not in restarts.fresh})
    wave = _Wave(cluster, features, by_key, placement, running=running, lost=lost)

    def backoff() -> dict[str, float]:
        """The Job pods preempted so far wait their Job's back-off before their replacements are made."""
        return preemption_delays(jobs.rules, jobs.counts, {k: owners[k] for k in wave.preempted if k in owners})

    # The controllers recreate an evicted pod at once, while its node is still cordoned: where the replacement binds
    # during the drain it stays (kube-scheduler never moves a bound pod); only the pods that found no node then
    # land after the switch and the uncordon. A Job's evicted pods are made again after its back-off.
    drain = wave.once(switched, going, again, jobs.delays)
    during = {k for k, (node, _) in drain.status.items() if node}
    result = wave.once(switched | going, set(), wave.carry(drain), backoff())
    for _ in range(MAX_ROUNDS - 1):
        if not wave.unreplaced(result):
            break
        result = wave.once(switched | going, set(), wave.carry(result), backoff())
    after = {k: node for k, (node, _) in result.status.items() if node and k in by_key}
    waiting = {k: why for k, (node, why) in result.status.items() if not node and k in by_key and k not in lost}
    budgets = budget_findings(cluster, set(placement), during, set(after))
    moved = {k: after[k] for k in evicted if k in after}
    by_owner = Counter(owners[k] for k in wave.preempted if k in owners)
    counts = with_preempted(jobs.rules, jobs.counts, by_owner)
    touched = with_preempted_jobs(jobs.jobs, counts, by_owner, jobs.rules)
    return WaveOutcome(tuple(switching), evicted, lost, after, moved, waiting, budgets, wave.preempted,
                       {k: h for k, h in result.held.items() if k in after}, touched, counts, job_lost,
                       restarts.workloads, [k for k in restarts.recreated if k not in job_lost])
