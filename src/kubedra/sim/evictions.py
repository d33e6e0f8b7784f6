"""The simulation's side of preemption: when PostFilter runs, the victims' deletion after their grace period (their
claims released through the usual lifecycle), and the preemptor's ``nominatedNodeName``.

Made only when the scenario's pods have more than one priority (with one, no pod ever has a lower-priority victim),
so runs without priorities pay nothing. Bound pods are counted by priority as they bind and leave, so a pod that
could only preempt pods of its own priority or higher is turned away without looking at any node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kubedra.cluster.state import PodRecord
from kubedra.scheduler.outcome import Unschedulable
from kubedra.scheduler.preemption import (
    NEVER,
    TERMINATING,
    Preemption,
    preempt,
    priority_of,
    resolvable,
    without_victims,
)
from kubedra.scheduler.victims import GROUP_RANK, Victim
from kubedra.sim.budgets import PodDisruptionBudget, current_budgets
from kubedra.sim.replacements import Replacements

if TYPE_CHECKING:
    from kubedra.sim.run import Simulation

DEFAULT_GRACE_SECONDS = 30.0  # terminationGracePeriodSeconds' default


class Evictions:
    def __init__(self, simulation: Simulation, budgets: Sequence[PodDisruptionBudget] = ()) -> None:
        self.sim = simulation
        self.budgets = list(budgets)
        self.bound_priorities: Counter[int] = Counter()
        self.terminating: dict[str, str] = {}  # victim key -> the preemptor's key
        self.last: dict[str, Preemption] = {}  # preemptor key -> its latest PostFilter answer (for ``explain``)
        self.replacements = Replacements(simulation)  # the victims' controllers
        for node_pods in simulation.state.bound.values():
            for record in node_pods.values():
                self.bound_priorities[priority_of(record)] += 1
        simulation.state.pod_watchers.append(self._counted)

    def _counted(self, record: PodRecord, _node: str, delta: int) -> None:
        priority = priority_of(record)
        self.bound_priorities[priority] += delta
        if not self.bound_priorities[priority]:
            del self.bound_priorities[priority]

    def units(self, records: Iterable[PodRecord]) -> list[Victim]:
        """The preemption units of ``records`` (``getCrossNodesVictims``): a member of a PodGroup with
        ``disruptionMode: all`` brings every bound member of its group; members rank as groups, with their
        PodGroup's priority. Without gangs (GenericWorkload off, ``record.group`` unset) each pod is its own."""
        sim = self.sim
        gangs = sim.gangs
        seen: set[str] = set()
        found: list[Victim] = []
        for record in records:
            if not record.group:
                found.append(Victim(pods=(record,), priority=priority_of(record)))
                continue
            group = sim.pod_groups.get(record.group)
            priority = priority_of(record) if group is None else group.spec.priority or 0
            mode = group.spec.disruption_mode if group is not None else None
            if mode is None or mode.all is None or gangs is None:
                found.append(Victim(pods=(record,), priority=priority, rank=GROUP_RANK))
                continue
            if record.group in seen:
                continue
            seen.add(record.group)
            bound = sim.state.bound
            members = tuple(
                m for m in gangs.members.get(record.group, ())
                if m.pod.spec.node_name and m.key in bound.get(m.pod.spec.node_name, {})
            )
            found.append(Victim(pods=members or (record,), priority=priority, rank=GROUP_RANK))
        return found

    def post_filter(self, record: PodRecord, outcome: Unschedulable) -> str:
        """DefaultPreemption for a pod Filter refused: victims found are deleted after their grace period and the pod
        is nominated (""), else PostFilter's message, which kube-scheduler appends to the pod's."""
        priority = priority_of(record)
        if record.pod.spec.preemption_policy == "Never":
            answer = Preemption(message=NEVER)
        elif not self.bound_priorities or min(self.bound_priorities) >= priority:
            answer = Preemption(message=without_victims(record, outcome.reasons, self.sim.node_sizes),
                                unresolvable=sorted({r for r in outcome.reasons if not resolvable(r)}))
        else:
            nominated = record.pod.status.nominated_node_name
            if nominated and any(
                (victim := self.sim.state.pods[k]).pod.spec.node_name == nominated and priority_of(victim) < priority
                for k in self.terminating
            ):
                # A lower-priority pod preempted there (by this pod or another) is still terminating: it waits
                # (PodEligibleToPreemptOthers reads every pod on the nominated node).
                return TERMINATING
            state = self.sim.state
            nominator = self.sim.scheduler.nominator
            budgets = current_budgets(self.budgets, state, self.terminating) if self.budgets else []
            answer = preempt(state, record, outcome.reasons, self.sim.scheduler.fits_on, budgets=budgets,
                             sizes=self.sim.node_sizes, units=self.units,
                             nominated=lambda node: nominator.waiting_on(node, record))
        self.last[record.key] = answer
        if not answer.found:
            if record.pod.status.nominated_node_name:  # no candidates: the nomination is cleared (ModeOverride "")
                self.sim.scheduler.nominate(record, "")
            return answer.message
        self._evict(record, answer)
        return ""

    def _evict(self, record: PodRecord, answer: Preemption) -> None:
        sim = self.sim
        from kubedra.sim.run import Event

        for victim in answer.victims:
            if victim.key in self.terminating or victim.pod.metadata.deletion_timestamp is not None:
                continue  # already being deleted (preempted, or by its controller): upstream's executor sends no
                # second deletion (nor event)
            self.terminating[victim.key] = record.key
            victim.end_reason = f"Preempted by pod {record.key} on node {answer.node}"
            sim.events.append(Event(sim.now, "Preempted", f"Pod {victim.key}", node=answer.node,
                                    message=victim.end_reason))
            grace = victim.pod.spec.termination_grace_period_seconds
            sim.evict_at(sim.now + (DEFAULT_GRACE_SECONDS if grace is None else float(grace)), victim)
            self.replacements.terminating(victim)
        sim.scheduler.nominate(record, answer.node)
        sim.events.append(Event(sim.now, "Nominated", f"Pod {record.key}", node=answer.node,
                                message=f"preempting {len(answer.victims)} pod(s) on {answer.node}"))

    def gone(self, record: PodRecord) -> None:
        self.terminating.pop(record.key, None)
