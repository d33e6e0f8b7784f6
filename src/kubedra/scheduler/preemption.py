"""DefaultPreemption, the PostFilter of kube-scheduler v1.37.2's default profile (``framework/preemption``).

For a pod that fits nowhere: the candidate nodes are those whose Filter status is ``Unschedulable`` — NodeResourcesFit's
``Insufficient <resource>`` and ``Too many pods``; node rules (selector, affinity, taints, node name) and every
DynamicResources failure are ``UnschedulableAndUnresolvable``, so **no preemption frees devices in 1.37** (KEP-5690 is
planned for 1.38). On each candidate every lower-priority pod is removed (one already terminating, another preemptor's
victim, too: a later preemptor may take it again, and no second deletion follows), the pods nominated there with at
least the pod's priority counted as Filter counts them; if the pod then fits, victims are reprieved
one by one, most important first (higher priority, then the earlier start; those a PodDisruptionBudget would count as
violations before the others), keeping each whose return still lets the pod fit. Victims' devices stay held in that
dry run: the DynamicResources plugin does not simulate their release. Among the nodes with victims,
``pickOneNodeForPreemption`` chooses: the fewest budget violations, the lowest highest victim priority, the lowest sum
of priorities, the fewest victims, the latest start of the highest-priority victims (the simulated time each bound,
then the bind order: a kubelet starts pods in the order they bind; upstream compares ``status.startTime``, whole
seconds, and breaks an exact tie by Go's map order, at random), then the first node.
The caller deletes the victims and nominates the node; the pod binds once they are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import ZERO, NodeUsage
from kubedra.objects.model import Node
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.interpodaffinity import ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON, has_pod_affinity
from kubedra.scheduler.nodefit import PORTS_REASON, is_extended_resource, reasons_of, resources_reason
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, MISSING_LABEL_REASON, has_constraints
from kubedra.scheduler.victims import UnitsOf, Victim, flatten, importance, pod_units, start_key

RESOLVABLE = ("Insufficient ", "Too many pods", PORTS_REASON, ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON,
              CONSTRAINTS_REASON)
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
DRA_NOT_FREED = "DRA devices are not freed by preemption in 1.37"
_INT32_OFFSET = 2**31  # upstream adds MaxInt32+1 to each priority so the sum of negative priorities orders right

FitsOn = Callable[[PodRecord, str], str | None]
"""Filter's reason for the pod on the node in the current (dry-run) state; None where it fits."""


def priority_of(record: PodRecord) -> int:
    return record.pod.spec.priority or 0


def resolvable(reason: str) -> bool:
    """A Filter reason preemption may resolve (``Unschedulable``, not ``UnschedulableAndUnresolvable``)."""
    return reason.startswith(RESOLVABLE) and reason != MISSING_LABEL_REASON


NEVER_SERVED_BY_DRA = ("cpu", "memory", "ephemeral-storage")


def beyond_allocatable(record: PodRecord, node: Node, reason: str) -> bool:
    """NodeResourcesFit's ``Unresolvable``: the pod asks more of a resource than the node has at all, so no eviction
    can make room (v1.37.2 ``fitsRequest``; the node's whole status is then UnschedulableAndUnresolvable). Read for
    the resource the reason names and the ones DRA never serves; a node publishing no allocatable has room for any
    cpu and memory, as Filter reads it."""
    allocatable = node.status.allocatable
    named = [r.removeprefix("Insufficient ") for r in reasons_of(reason) if r.startswith("Insufficient ")]
    for name in {*NEVER_SERVED_BY_DRA, *named}:
        want = record.requests.get(name)
        if want is None or want <= ZERO:
            continue
        have = allocatable.get(name)
        if have is None:
            if is_extended_resource(name) or (allocatable and name in NEVER_SERVED_BY_DRA):
                return True
            continue
        if want > Quantity.parse(have):
            return True
    return False


MAX_SIZE_SHAPES = 4096


class NodeSizes:
    """The nodes too small for a pod at all, per request shape and Filter reason (``beyond_allocatable``): nodes'
    allocatable never changes in a run, so each shape is worked out over the nodes once, and PostFilter's summary for
    a pod that fits nowhere stays O(reasons) where no node is too small (the usual case)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._too_small: dict[tuple[object, str], frozenset[str]] = {}

    def too_small(self, record: PodRecord, reason: str) -> frozenset[str]:
        key = (record.requests_key, reason)
        found = self._too_small.get(key)
        if found is None:
            found = frozenset(
                name for name, node in self.state.nodes.items() if beyond_allocatable(record, node, reason)
            ) if resolvable(reason) else frozenset()
            if len(self._too_small) >= MAX_SIZE_SHAPES:
                self._too_small.clear()
            self._too_small[key] = found
        return found

    def split(self, record: PodRecord, reason: str, nodes: Sequence[str]) -> tuple[int, list[str]]:
        """(how many of ``nodes`` evicting cannot help on, the nodes where it may), for one Filter reason."""
        if not resolvable(reason):
            return len(nodes), []
        small = self.too_small(record, reason)
        if not small:
            return 0, list(nodes)
        helped = [node for node in nodes if node not in small]
        return len(nodes) - len(helped), helped


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as PostFilter reads it: the pods it covers and the disruptions it allows now."""

    namespace: str
    covers: Callable[[dict[str, str]], bool]  # the budget's selector over a pod's labels
    allowed: int


def split_by_budgets(
    victims: Sequence[Victim], budgets: Sequence[Budget]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """``FilterVictimsWithPDBViolation``: in order, each pod takes one of the allowed disruptions of every budget
    covering it; a pod that takes one more than a budget allows violates it, and a unit with any violating pod is
    violating as a whole (its count of violating pods kept). (violating with counts, non-violating)"""
    left = [b.allowed for b in budgets]
    violating: list[tuple[Victim, int]] = []
    fine: list[Victim] = []
    for victim in victims:
        broken = 0
        for pod in victim.pods:
            meta = pod.pod.metadata
            hit = False
            for i, budget in enumerate(budgets):
                if budget.namespace == (meta.namespace or "default") and budget.covers(meta.labels):
                    left[i] -= 1
                    hit = hit or left[i] < 0
            broken += hit
        if broken:
            violating.append((victim, broken))
        else:
            fine.append(victim)
    return violating, fine


@dataclass
class Preemption:
    """PostFilter's answer: the nominated node and its victims, or why none (``message`` in upstream's words)."""

    node: str = ""
    victims: list[PodRecord] = field(default_factory=list)
    message: str = ""
    unresolvable: list[str] = field(default_factory=list)  # the nodes' reasons preemption cannot help with

    @property
    def found(self) -> bool:
        return bool(self.node)


def preempt(
    state: ClusterState,
    record: PodRecord,
    reasons: dict[str, list[str]],
    fits_on: FitsOn,
    *,
    budgets: Sequence[Budget] = (),
    sizes: NodeSizes,
    units: UnitsOf = pod_units,
    nominated: Callable[[str], Sequence[PodRecord]] = lambda _node: (),
) -> Preemption:
    """DefaultPreemption for ``record`` given Filter's ``reasons`` (reason -> nodes) and the PodDisruptionBudgets.

    Without victims, ``message`` is PostFilter's summary as kube-scheduler appends it to the pod's FitError: each
    node's status (``Preemption is not helpful for scheduling`` where Filter's failure is unresolvable, ``No
    preemption victims found for incoming pod`` where no lower-priority pod runs, else the Filter failure that remains
    with every such pod gone). ``units`` groups a node's pods into victims (``disruptionMode: all`` PodGroups whole,
    their pods on other nodes included). ``nominated`` gives the pods nominated on a node with at least this pod's
    priority: the dry run counts them there as Filter does (``RunFilterPluginsWithNominatedPods``)."""
    if record.pod.spec.preemption_policy == "Never":
        return Preemption(message=NEVER)
    priority = priority_of(record)
    unresolvable = sorted({reason for reason in reasons if not resolvable(reason)})
    statuses: dict[str, int] = {}
    not_helpful = 0
    candidates: list[str] = []
    for reason, nodes in reasons.items():
        hopeless, helped = sizes.split(record, reason, nodes)
        not_helpful += hopeless
        candidates.extend(helped)
    if not_helpful:
        statuses[NOT_HELPFUL] = not_helpful
    found: list[tuple[str, list[PodRecord], int]] = []
    # InterPodAffinity may refuse the node too: then only the whole Filter tells the victims (once per attempt).
    # So may PodTopologySpread's explicit constraints.
    by_filter = bool(candidates) and (has_pod_affinity(record.pod) or has_constraints(record.pod) or any(
        has_pod_affinity(r.pod) for pods in state.bound.values() for r in pods.values()))
    for node in sorted(candidates):
        # Every lower-priority pod, a victim already terminating included (upstream's SelectVictimsOnNode skips none;
        # its executor sends no second deletion for a pod being deleted): a later preemptor may take the same one.
        lower = [unit for unit in units(state.bound.get(node, {}).values()) if unit.priority < priority]
        if not lower:
            statuses[NO_VICTIMS] = statuses.get(NO_VICTIMS, 0) + 1
            continue
        ordered = sorted(lower, key=importance)
        violating, fine = split_by_budgets(ordered, budgets) if budgets else ([], ordered)
        victims, failure, violations = _victims_on(state, record, node, (violating, fine), fits_on,
                                                    by_filter=by_filter, nominated=nominated(node))
        if victims:
            found.append((node, flatten(victims), violations))
        else:
            statuses[failure] = statuses.get(failure, 0) + 1
    if not found:
        return Preemption(message=summary(statuses, sum(statuses.values())), unresolvable=unresolvable)
    node, pods, _ = min(found, key=_pick_order)
    return Preemption(node=node, victims=pods)


def summary(statuses: dict[str, int], total: int) -> str:
    """``0/N nodes are available: <count> <status>, ...`` sorted, as the FitError's."""
    counts: dict[str, int] = {}
    for status, count in statuses.items():
        for reason in reasons_of(status):
            counts[reason] = counts.get(reason, 0) + count
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} nodes are available: {', '.join(parts)}."


def without_victims(record: PodRecord, reasons: dict[str, list[str]], sizes: NodeSizes) -> str:
    """PostFilter's summary where no pod has a lower priority than this one (no node offers a victim)."""
    statuses: dict[str, int] = {}
    for reason, nodes in reasons.items():
        hopeless, helped = sizes.split(record, reason, nodes)
        for status, count in ((NOT_HELPFUL, hopeless), (NO_VICTIMS, len(helped))):
            if count:
                statuses[status] = statuses.get(status, 0) + count
    return summary(statuses, sum(statuses.values()))


def _victims_on(
    state: ClusterState,
    record: PodRecord,
    node: str,
    parts: tuple[Sequence[tuple[Victim, int]], Sequence[Victim]],
    fits_on: FitsOn,
    *,
    by_filter: bool = False,
    nominated: Sequence[PodRecord] = (),
) -> tuple[list[Victim], str, int]:
    """``SelectVictimsOnNode`` over the lower-priority units, most important first within each part: ([], Filter's
    reason, 0) when the pod does not fit even with all of them gone; else the victims and how many of their pods
    violate a budget (units that would are reprieved first). Only a unit's pods on ``node`` count for the fit (upstream
    mutates only that node); its pods elsewhere go with it. The ``nominated`` pods count as if bound there (Filter's
    first pass with them, the harder of its two for resources; ``fits_on`` adds them itself)."""
    violating, fine = parts
    lower = [*(unit for unit, _ in violating), *fine]
    counts = [count for _, count in violating]
    if by_filter or record.pod.spec.resource_claims or record.host_ports or any(
        is_extended_resource(n) for n in record.requests
    ):
        return _victims_by_filter(state, record, node, lower, fits_on, counts=counts)
    # Only NodeResourcesFit can still refuse (the checks before it passed on a candidate): count on a scratch copy.
    target = state.nodes[node]
    usage = state.usage[node]
    scratch = NodeUsage(requested=dict(usage.requested), pods=usage.pods)
    for pod in nominated:
        scratch.add(pod.requests)
    here = [[pod for pod in unit.pods if pod.pod.spec.node_name == node] for unit in lower]
    for pods in here:
        for pod in pods:
            scratch.remove(pod.requests)
    failure = resources_reason(record.requests, target, scratch)
    if failure is not None:
        return [], failure, 0
    victims: list[Victim] = []
    violations = 0
    for i, unit in enumerate(lower):
        for pod in here[i]:
            scratch.add(pod.requests)
        if resources_reason(record.requests, target, scratch) is not None:
            for pod in here[i]:
                scratch.remove(pod.requests)
            victims.append(unit)
            violations += counts[i] if i < len(counts) else 0
    return victims, "", violations


def _victims_by_filter(
    state: ClusterState,
    record: PodRecord,
    node: str,
    lower: Sequence[Victim],
    fits_on: FitsOn,
    *,
    counts: Sequence[int],
) -> tuple[list[Victim], str, int]:
    """The same with the whole Filter (claims, extended resources) on the state with the victims' pods on ``node``
    unbound."""
    here = [[pod for pod in unit.pods if pod.pod.spec.node_name == node] for unit in lower]
    for pods in here:
        for pod in pods:
            state.unbind(pod, node)
    victims: list[int] = []
    violations = 0
    try:
        failure = fits_on(record, node)
        if failure is not None:
            for pods in here:
                for pod in pods:
                    state.bind(pod, node)
            return [], failure, 0
        for i in range(len(lower)):
            for pod in here[i]:
                state.bind(pod, node)
            if fits_on(record, node) is not None:
                for pod in here[i]:
                    state.unbind(pod, node)
                victims.append(i)
                violations += counts[i] if i < len(counts) else 0
    finally:
        for i in victims:
            for pod in here[i]:
                state.bind(pod, node)
    return [lower[i] for i in victims], "", violations


def _pick_order(candidate: tuple[str, list[PodRecord], int]) -> tuple[int, int, int, int, float, int]:
    """``pickOneNodeForPreemption``'s criteria as one sort key (the fewest budget violations first); the start time
    is ``start_key``'s (the later bound of one instant is the later start)."""
    _, victims, violations = candidate
    highest = max(priority_of(v) for v in victims)
    total = sum(priority_of(v) + _INT32_OFFSET for v in victims)
    started, order = min(start_key(v) for v in victims if priority_of(v) == highest)
    return violations, highest, total, len(victims), -started, -order
