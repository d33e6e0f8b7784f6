"""LeaderWorkerSet groups whose workers wait on their leader, through a rollout's runs.

A group with ``startupPolicy: LeaderReady`` or exclusive placement (``leaderworkerset.sigs.k8s.io/exclusive-topology``)
has its worker StatefulSet made by the LWS pod controller only once the leader is ready (``LeaderReady``) or
scheduled (exclusive placement), the workers then pinned to the leader's topology domain (``sim.leaderworkersets``).
At the rollout's start every group runs, its workers included: they are pods of the plan like any other (owned by
the worker StatefulSet ``StatefulSet/<namespace>/<leader>``). In each run, a worker that must be made (the cluster
before any switch, or its group recreated by a wave) is not an arrival: it is handed to the pod controller with its
group, so that it comes after its leader runs, pinned where exclusive placement says; a worker whose leader keeps
running and that has no pin to take arrives as any recreated pod does (its StatefulSet makes it again at once).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from kubedra.sim.leaderworkersets import LeaderGroup, LeaderWorkerSetRun
from kubedra.sim.workloads import DEFAULT_NAMESPACE, PodArrival


def _key(namespace: str, name: str) -> str:
    return f"{namespace or DEFAULT_NAMESPACE}/{name}"


def worker_arrivals(runs: Iterable[LeaderWorkerSetRun]) -> list[PodArrival]:
    """Every waiting group's workers, running from the start as the controller made them (unpinned: the pin comes
    with a worker made in a run)."""
    return [PodArrival(pod, 0.0, None, f"StatefulSet/{run.namespace}/{group.leader}")
            for run in runs for group in run.groups for pod in group.workers]


def split(runs: Iterable[LeaderWorkerSetRun], pending: Collection[str], running: Mapping[str, object]
          ) -> tuple[set[str], list[LeaderWorkerSetRun]]:
    """Of the ``pending`` pod keys (to schedule in a run; ``running``: those kept bound), the workers the pod
    controller makes in the run, and the groups it makes them for: a worker whose leader is made in this run too, or
    any of an exclusive placement's (pinned to its leader's domain, the leader kept or not)."""
    held: set[str] = set()
    out: list[LeaderWorkerSetRun] = []
    for run in runs:
        groups = []
        for group in run.groups:
            leader = _key(run.namespace, group.leader)
            waits = leader in pending or leader not in running
            workers = tuple(p for p in group.workers if _key(run.namespace, p.metadata.name) in pending)
            if workers and (waits or run.exclusive is not None):
                held.update(_key(run.namespace, p.metadata.name) for p in workers)
                groups.append(LeaderGroup(group.leader, workers, None))
        if groups:
            out.append(replace(run, groups=tuple(groups)))
    return held, out


def unmade(runs: Iterable[LeaderWorkerSetRun]) -> dict[str, str]:
    """Each worker a run was to make -> why it is not there unless made: its worker StatefulSet waits on the leader."""
    out = {}
    for run in runs:
        when = "ready (startupPolicy LeaderReady)" if run.startup_policy == "LeaderReady" else \
            "scheduled (exclusive placement)"
        why = f"not made yet: LeaderWorkerSet {run.namespace}/{run.name} makes a group's workers once its leader is " \
            + when
        out.update({_key(run.namespace, p.metadata.name): why for group in run.groups for p in group.workers})
    return out
