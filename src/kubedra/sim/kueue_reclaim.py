"""Kueue's classical preemption with cohorts (``classicalPreemptions``, ``pkg/scheduler/preemption/preemption.go`` and
``classical/``, v0.17.0): victims within the ClusterQueue (``withinClusterQueue``) and, reclaiming the nominal quota
it lent, in the other ClusterQueues of its cohort (``reclaimWithinCohort``). ``borrowWithinCohort`` is not modelled
(taken as ``Never``, noted).

Pure: it reads and, while it simulates removals, briefly changes ``Kueue.used`` (Kueue's snapshot
``RemoveWorkload``/``AddWorkload``), restored before it returns.

- Candidates (``NewCandidateIterator``): the ClusterQueue's own admitted workloads its ``withinClusterQueue`` policy
  allows; in a cohort with ``reclaimWithinCohort`` not ``Never``, those of each other member above its nominal quota in
  a resource needing preemption that the policy allows (``Any``: every one): "hierarchical" where the preemptor fits
  in its own ClusterQueue's nominal quota (``QuantitiesFitInQuota``), else "priority" candidates, which it may only
  take while it would not borrow (``ReclaimWithoutBorrowing``). Each list in ``CandidatesOrdering`` (already evicted
  first, lower priority, more recently admitted; kubedra breaks a tie by the input order), then: evicted
  hierarchical, evicted priority, evicted own, the other hierarchical, priority, own.
- Attempts (with borrowing or not): only with borrowing where no other ClusterQueue's candidate exists or the
  ClusterQueue is at or above its nominal quota in a resource needing preemption; without first where there is no
  hierarchical one; else with borrowing first. A candidate of another ClusterQueue is skipped while that ClusterQueue
  is (after the removals so far) within its nominal quota. Candidates are removed until the preemptor fits
  (``workloadFits``: within what it may take, and without borrowing where the attempt allows none), then those not
  needed are added back (``fillBackWorkloads``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubedra.sim.kueue_preemption import NEVER, Running, fill_back, satisfies

if TYPE_CHECKING:
    from kubedra.sim.kueue import Kueue, Workload
    from kubedra.sim.kueue_objects import ClusterQueue

FR = tuple[str, str]
OWN, HIERARCHY, PRIORITY = 0, 1, 2
IN_CLUSTER_QUEUE = "prioritization in the ClusterQueue"
IN_COHORT = "reclamation within the cohort"


@dataclass(frozen=True)
class Candidate:
    running: Running
    queue: str  # its ClusterQueue
    variant: int  # OWN, HIERARCHY or PRIORITY

    @property
    def reason(self) -> str:
        return IN_CLUSTER_QUEUE if self.variant == OWN else IN_COHORT


def nominal(cq: ClusterQueue, fr: FR) -> int:
    flavor, resource = fr
    for group in cq.groups:
        if flavor in group.quotas and resource in group.quotas[flavor]:
            return group.quotas[flavor][resource]
    return 0


def _within_nominal(kueue: Kueue, cq: ClusterQueue, needs: Iterable[FR]) -> bool:
    used = kueue.used[cq.name]
    return all(used.get(fr, 0) <= nominal(cq, fr) for fr in needs)


def _running(kueue: Kueue, name: str) -> list[Running]:
    return [Running(a.workload.key, a.workload.priority, a.workload.created_at, a.workload.order, a.usage, at,
                    a.workload.key in kueue.evicted) for a, at in kueue.running[name].values()]


def _ordered(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.running.priority, -c.running.admitted_at, c.running.order))


def candidates(kueue: Kueue, cq: ClusterQueue, workload: Workload, usage: dict[FR, int],
               needs: set[FR]) -> list[Candidate]:
    """Every candidate in the order Kueue tries them."""
    def allowed(policy: str, running: Running) -> bool:
        return any(fr in needs for fr in running.usage) and satisfies(policy, workload.priority, workload.created_at,
                                                                      running)

    own = [] if cq.preemption == NEVER else [Candidate(r, cq.name, OWN) for r in _running(kueue, cq.name)
                                             if allowed(cq.preemption, r)]
    others: list[Candidate] = []
    if cq.cohort is not None and cq.reclaim != NEVER:
        used = kueue.used[cq.name]
        variant = HIERARCHY if all(used.get(fr, 0) + v <= nominal(cq, fr) for fr, v in usage.items()) else PRIORITY
        for member in kueue.setup.cluster_queues.values():
            if member.cohort != cq.cohort or member.name == cq.name or _within_nominal(kueue, member, needs):
                continue
            others.extend(Candidate(r, member.name, variant) for r in _running(kueue, member.name)
                          if allowed(cq.reclaim, r))
    lists = [_ordered([c for c in others if c.variant == HIERARCHY]),
             _ordered([c for c in others if c.variant == PRIORITY]), _ordered(own)]
    return [c for evicted in (True, False) for group in lists for c in group if c.running.evicted == evicted]


def targets(kueue: Kueue, cq: ClusterQueue, workload: Workload, usage: dict[FR, int],
            needs: set[FR]) -> list[Candidate]:
    """The workloads to preempt so that ``usage`` fits (``classicalPreemptions``); empty where it cannot."""
    every = candidates(kueue, cq, workload, usage, needs)
    used = kueue.used[cq.name]
    if not any(c.variant != OWN for c in every) or any(used.get(fr, 0) >= nominal(cq, fr) for fr in needs):
        attempts = [True]
    elif not any(c.variant == HIERARCHY for c in every):
        attempts = [False, True]
    else:
        attempts = [True, False]

    def move(candidate: Candidate, sign: int) -> None:
        queue_used = kueue.used[candidate.queue]
        for fr, amount in candidate.running.usage.items():
            queue_used[fr] = queue_used.get(fr, 0) - sign * amount

    def fits(borrowing: bool) -> bool:
        return all((borrowing or used.get(fr, 0) + v <= nominal(cq, fr)) and v <= kueue.available(cq.name, fr)
                   for fr, v in usage.items())

    for borrowing in attempts:
        removed: list[Candidate] = []
        for candidate in every:
            if candidate.variant != OWN and ((borrowing and candidate.variant == PRIORITY) or _within_nominal(
                    kueue, kueue.setup.cluster_queues[candidate.queue], needs)):
                continue
            move(candidate, 1)
            removed.append(candidate)
            if fits(borrowing):
                fill_back(removed, move, lambda: fits(borrowing))  # noqa: B023 - called before the loop moves on
                for chosen in removed:
                    move(chosen, -1)
                return removed
        for chosen in removed:
            move(chosen, -1)
    return []


def path(kueue: Kueue, name: str) -> str:
    """``buildCQPath``: ``/<cohort>/<ClusterQueue>``, ``/<ClusterQueue>`` without a cohort."""
    cohort = kueue.setup.cluster_queues[name].cohort
    return f"/{cohort}/{name}" if cohort else f"/{name}"
