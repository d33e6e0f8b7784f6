"""CronJobs through a rollout: the Job each would make next, tried on the cluster as each wave leaves it.

A CronJob has no pod running at a plan's start unless one of its Jobs runs (a live cluster's running Jobs are read
as Jobs and moved in the waves like any). What a team asks of it is whether its next Job still runs while nodes
switch. So before the first wave and after each one, its next Job's pods (``parallelism`` of them, as its
``jobTemplate`` makes them) are scheduled on the cluster as the wave left it, every running pod kept where it is:
they land, or land by preempting lower-priority pods as kube-scheduler would (said, never carried into the next
wave: the probe changes nothing), or wait with the scheduler's reason. Each CronJob is tried alone, as its Jobs seldom
start in the same minute as another's; a suspended one makes no Job and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubedra.migrate.rollout import RECREATED_AT, Cluster, Held, kept_arrival, mixed, pod_key, simulated
from kubedra.sim.workloads import PodArrival

if TYPE_CHECKING:
    from kubedra.migrate.waves import Plan


@dataclass(frozen=True)
class CronProbe:
    """A CronJob's next Job tried on one state of the rollout: where its pods land, which wait and why, and how many
    running pods they preempt to land."""

    pods: int
    placed: dict[str, str]  # pod name -> node
    waiting: dict[str, str]  # pod name -> why
    preempts: int

    def line(self, name: str) -> str:
        """The probe in words, as the table prints it."""
        pods = f"{self.pods} pod{'s' if self.pods != 1 else ''}"
        if not self.waiting:
            nodes = ", ".join(sorted(set(self.placed.values())))
            how = f", preempting {self.preempts} running pod{'s' if self.preempts != 1 else ''}" \
                if self.preempts else ""
            return f"CronJob {name}: its next Job fits ({pods} on {nodes}{how})"
        why = sorted(set(self.waiting.values()))[0]
        return (f"CronJob {name}: its next Job would wait ({len(self.waiting)} of {pods} pending: {why})")

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fits": not self.waiting, "pods": self.pods, "placed": dict(sorted(self.placed.items()))}
        if self.waiting:
            out["waiting"] = dict(sorted(self.waiting.items()))
        if self.preempts:
            out["preempts"] = self.preempts
        return out


def probe(cluster: Cluster, features: Any, switched: set[str], placement: Mapping[str, str],
          held: Mapping[str, Held]) -> dict[str, CronProbe]:
    """Each CronJob's next Job on ``switched`` (on DRA) with the pods of ``placement`` running there (``held``:
    as the last run left them), by ``CronJob/<namespace>/<name>``."""
    by_key = {pod_key(a.pod): a for a in cluster.pods}
    keys = [k for k in placement if k in by_key]
    kept = [kept_arrival(by_key[k], placement[k], held.get(k)) for k in keys]
    known = {pod_key(a.pod): k for a, k in zip(kept, keys, strict=True)}
    claims = [h for k, h in held.items() if k in placement]
    out: dict[str, CronProbe] = {}
    for cron in cluster.scenario.workloads.cronjobs:
        if cron.suspended:
            continue
        job = cron.sample()
        pods = [PodArrival(p, RECREATED_AT, None, job.owner) for p in job.pods[: job.parallelism]]
        ran = simulated(mixed(cluster, switched, [*kept, *pods], None, claims), features, known)
        placed, waiting = {}, {}
        for arrival in pods:
            node, why = ran.status.get(pod_key(arrival.pod), ("", "not created"))
            if node:
                placed[arrival.pod.metadata.name] = node
            else:
                waiting[arrival.pod.metadata.name] = why
        out[cron.owner.removeprefix("CronJob/")] = CronProbe(len(pods), placed, waiting, len(ran.preempted))
    return out


def for_plan(cluster: Cluster, features: Any, plan: Plan) -> list[dict[str, CronProbe]]:
    """The probes of ``plan``: before its first wave, then after each."""
    if not any(not c.suspended for c in cluster.scenario.workloads.cronjobs):
        return []
    out = [probe(cluster, features, set(), plan.start, plan.held)]
    switched: set[str] = set()
    for wave in plan.waves:
        switched |= set(wave.switching)
        out.append(probe(cluster, features, switched, wave.placement, wave.held))
    return out
