"""Workload-aware preemption: a gang that cannot meet its quorum preempts as a group (``PodGroupEvaluator``,
``framework/preemption/podgrouppreemption.go``), the domain being the whole cluster.

Every bound unit (a pod, or a ``disruptionMode: all`` PodGroup's bound members together) of a lower priority than
the PodGroup's is a potential victim, one already terminating too (``isPreemptionAllowed`` reads priorities only;
the executor sends no second deletion). With all of them removed (their usage, not their devices: DynamicResources
does not simulate a victim's release in 1.37) the group is tried once; if it fits, each member keeps the node it
got, and the units are reprieved one by one, most important first (those a PodDisruptionBudget would count as
violations first): a unit stays if every member still passes Filter on its node with the members before it
assumed. The rest are preempted (``Preempted by podgroup <uid> on node cluster``), the members nominated, and the
group is tried again once the victims are gone. While a lower-priority pod the scheduler preempted (for anyone)
still terminates on a node a member is nominated to, the group waits (``isOngoingPreemption``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.scheduling import PodGroup
from kubedra.scheduler.gangs import schedule_group
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.preemption import NEVER, split_by_budgets
from kubedra.scheduler.victims import Victim, flatten, importance
from kubedra.sim.budgets import current_budgets

if TYPE_CHECKING:
    from kubedra.sim.gang_cycle import GangQueue

NO_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"


@dataclass
class GroupPreemption:
    victims: list[PodRecord] = field(default_factory=list)
    nominated: dict[str, str] = field(default_factory=dict)  # member key -> node
    message: str = ""  # why there are no victims (appended to the group's message)


def preempt_for_group(
    gangs: GangQueue, group: PodGroup, order: list[PodRecord], bound_count: int
) -> GroupPreemption:
    """The victims and nominations for the failing ``group``, or why there are none."""
    sim = gangs.sim
    evictions = sim.evictions
    assert evictions is not None
    if group.spec.preemption_policy == "Never":
        return GroupPreemption(message=NEVER)
    state = sim.state
    priority = group.spec.priority or 0
    if _ongoing(gangs, order, priority):
        return GroupPreemption(message=ONGOING)
    bound = [record for pods in state.bound.values() for record in pods.values()]
    potential = [unit for unit in evictions.units(bound) if unit.priority < priority]
    if not potential:
        return GroupPreemption(message=NO_VICTIMS)
    node_of = {pod.key: pod.pod.spec.node_name or "" for unit in potential for pod in unit.pods}
    _place(state, potential, node_of, bind=False)
    trial = schedule_group(sim.scheduler, group, order, bound_count, gangs.assume, lower_priority_bound=True)
    if not trial.scheduled:
        _place(state, potential, node_of, bind=True)
        return GroupPreemption(message=trial.message)
    assignments = [(record, trial.fitted[record.key]) for record in order if record.key in trial.fitted]
    ranked = sorted(potential, key=importance)
    budgets = current_budgets(evictions.budgets, state, evictions.terminating) if evictions.budgets else []
    violating, fine = split_by_budgets(ranked, budgets) if budgets else ([], ranked)
    victims: list[Victim] = []
    for unit in [*(unit for unit, _ in violating), *fine]:
        _place(state, [unit], node_of, bind=True)
        if not _members_fit(gangs, assignments):
            _place(state, [unit], node_of, bind=False)
            victims.append(unit)
    _place(state, victims, node_of, bind=True)
    victims.sort(key=importance)
    return GroupPreemption(victims=flatten(victims), nominated={record.key: node for record, node in assignments})


def _ongoing(gangs: GangQueue, order: list[PodRecord], priority: int) -> bool:
    """``isOngoingPreemption``: a lower-priority pod the scheduler preempted (by any preemptor) still terminates on a
    node some unscheduled member is nominated to."""
    sim = gangs.sim
    evictions = sim.evictions
    assert evictions is not None
    nominated = {record.pod.status.nominated_node_name for record in order} - {None, ""}
    if not nominated:
        return False
    pods = sim.state.pods
    terminating = [pods[key] for key in evictions.terminating if key in pods]
    return any(unit.priority < priority for unit in evictions.units(
        [p for p in terminating if p.pod.spec.node_name in nominated]))


def _place(state: ClusterState, units: list[Victim], node_of: dict[str, str], *, bind: bool) -> None:
    """The units' pods back on their nodes (``bind``) or off them, in the dry run."""
    for unit in units:
        for pod in unit.pods:
            (state.bind if bind else state.unbind)(pod, node_of[pod.key])


def _members_fit(gangs: GangQueue, assignments: list[tuple[PodRecord, str]]) -> bool:
    """Every member passes Filter on its proposed node, those before it assumed there; all undone after."""
    undo: list[Callable[[], None]] = []
    try:
        for record, node in assignments:
            placed = gangs.sim.scheduler.place_on(record, node)
            if not isinstance(placed, Placement):
                return False
            undo.append(gangs.assume(record, placed))
        return True
    finally:
        for revert in reversed(undo):
            revert()
