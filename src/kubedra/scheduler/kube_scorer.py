"""``kube-scheduler``: scoring as kube-scheduler v1.37's default profile does, plugin by plugin with its integer
formulas, normalisation and weights (``apis/config/v1/default_plugins.go``): TaintToleration x3 (PreferNoSchedule taints
not tolerated, normalised in reverse), NodeAffinity x2 (weights of the preferred terms a node matches, normalised),
NodeResourcesFit x1 (LeastAllocated on cpu and memory counting "non-zero" requests), PodTopologySpread x2 (the system
default constraints — hostname maxSkew 3, zone maxSkew 5 — for pods that set no constraint of their own, with the
selector of the Services selecting the pod and of its ReplicaSet or StatefulSet, ``scheduler/spreading.py``; a pod's
explicit ScheduleAnyway constraints otherwise, ``scheduler/podtopologyspread.py``), InterPodAffinity x2 (preferred terms
both ways and the hard-affinity weight, ``scheduler/interpodaffinity.py``), NodeResourcesBalancedAllocation x1 (1.37's
form: the change in balance the pod makes), ImageLocality x1 and DynamicResources x2 (which ranks only
``firstAvailable`` sub-requests: 8 minus the index of each sub-request allocated). Node images are not read by kubedra,
so ImageLocality scores 0 on every node, as it does upstream in a cluster without them. The winner among the best-scored
nodes is ``scheduler/selecthost.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import ScoringRequests
from kubedra.objects.model import AllocationResult, Pod, PreferredSchedulingTerm, ResourceClaim
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.bitsets import mask_of, nth_bit, positions, reclassify
from kubedra.scheduler.dynamicresources import dynamic_resources_scores
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.nodeaffinity import preferred_affinity, preferred_terms
from kubedra.scheduler.noderesources import ResourceKey, balanced_allocation, least_allocated, resource_total
from kubedra.scheduler.normalize import MAX_NODE_SCORE, default_normalize, go_div
from kubedra.scheduler.podtopologyspread import SCHEDULE_ANYWAY, constraints_of, has_constraints
from kubedra.scheduler.podtopologyspread_state import SpreadIndex
from kubedra.scheduler.resource_scores import ResourceScores
from kubedra.scheduler.selecthost import heap_root_of, heap_root_rank
from kubedra.scheduler.spreading import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    SelectorKey,
    SpreadCounts,
    default_spread_scores,
    spread_raw,
)
from kubedra.scheduler.tainttoleration import intolerable_prefer_no_schedule
from kubedra.scheduler.window_groups import (
    RESOURCES,
    Group,
    GroupScores,
    Topology,
    WindowObserver,
    bounded_cache,
    partition_nodes,
    split_groups,
)

# The default profile's score plugins and weights, in its order.
WEIGHTS: dict[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


@dataclass(frozen=True)
class Candidate:
    """One feasible node, in Filter's order, with the allocations Filter made for the pod's claims there (None:
    not computed, which only happens when the pod has no ``firstAvailable`` request and DynamicResources scores 0)."""

    node: str
    allocations: Sequence[AllocationResult] | None = None


@dataclass(frozen=True)
class NodeScores:
    node: str
    plugins: dict[str, int]  # normalised, before weights
    total: int


MAX_CACHED_SCORES = 65536


class KubeScorer:
    """kube-scheduler's default-profile Score and selectHost over a ``ClusterState``; see the module docstring.

    ``choose_window`` (the fast path's) scores groups of nodes, not nodes: the window is cut by the classes of nodes
    alike in allocatable and requests (kept as bitsets over node order like the scheduler's node sets), then by
    each other input a score reads where the pod makes it vary — PreferNoSchedule taints not tolerated, preferred
    node-affinity weight, the pods its default spreading selects on the node (``SpreadCounts``, kept as pods bind and
    leave) and the node's zone. Every node of a group scores the same, so its cost grows with the groups, not the
    nodes; the result is ``choose`` on the window's nodes in walk order (a test holds them equal).
    """

    def __init__(
        self, state: ClusterState, topology_spread: SpreadIndex | None = None, *, keep_ties: bool = True
    ) -> None:
        """``topology_spread``: the explicit constraints' kept counts, where the caller keeps them already."""
        self.state = state
        self.topology_spread = topology_spread if topology_spread is not None else SpreadIndex(state)
        self._allocatable: dict[str, tuple[int, int]] = {}
        self._tied_sets: dict[str, frozenset[str]] = {}
        self._tied_masks: dict[str, int] = {}
        self._keep_ties = keep_ties
        self._names = list(state.nodes)
        self._pos = {name: i for i, name in enumerate(self._names)}
        self._prefer_taints = any(
            t.effect == "PreferNoSchedule" for node in state.nodes.values() for t in node.spec.taints
        )
        self._scores: dict[tuple[ResourceKey, ScoringRequests], int] = {}
        self._class_of: list[ResourceKey] = []
        self._classes: dict[ResourceKey, int] = {}
        for i, name in enumerate(self._names):
            key = self._resource_key(name)
            self._class_of.append(key)
            self._classes[key] = self._classes.get(key, 0) | (1 << i)
        self._per_node: ResourceScores[ResourceKey] = ResourceScores(self._class_of, resource_total)
        topologies: dict[Topology, int] = {}
        for i, node in enumerate(state.nodes.values()):
            labels = node.metadata.labels
            topology = (HOSTNAME_LABEL in labels, ZONE_LABEL in labels, labels.get(ZONE_LABEL, ""))
            topologies[topology] = topologies.get(topology, 0) | (1 << i)
        self._topologies = list(topologies.items())
        self._taint_partitions: dict[bytes, list[tuple[int, int]]] = {}
        self._affinity_partitions: dict[bytes, list[tuple[int, int]]] = {}
        self.spread = SpreadCounts(state, self._pos)
        self.pod_affinity = BoundAffinity(state)
        state.watchers.append(self._touch)
        self.observe: WindowObserver | None = None  # see ``GroupScores``; off in simulations
        self._observed: list[GroupScores] | None = None

    def allocatable(self, name: str) -> tuple[int, int]:
        """Node allocatable cpu (milli) and memory (bytes); 0 when not published."""
        found = self._allocatable.get(name)
        if found is None:
            allocatable = self.state.nodes[name].status.allocatable
            cpu, memory = allocatable.get("cpu"), allocatable.get("memory")
            found = (
                Quantity.parse(cpu).milli_value() if cpu is not None else 0,
                Quantity.parse(memory).value() if memory is not None else 0,
            )
            self._allocatable[name] = found
        return found

    @property
    def tied(self) -> dict[str, frozenset[str]]:
        """Pods (by key) whose last choice was among equally scored nodes, and those nodes: where kube-scheduler's
        parallel Filter order, not its scores, decides which one wins."""
        out = dict(self._tied_sets)
        for key, mask in self._tied_masks.items():
            out[key] = frozenset(self._names[i] for i in positions(mask))
        return out

    def keep_ties(self, keep: bool = True) -> None:
        """From now on, record (or not) ``tied``: a diagnostic for cross-checks with kube-scheduler, which the
        simulation leaves off, as it holds a bitset over the inventory per tied pod until the run ends (memory
        growing as pods x nodes: ~5 GB of a million pods on 100,000 nodes)."""
        self._keep_ties = keep
        if not keep:
            self._tied_sets.clear()
            self._tied_masks.clear()

    def _forget_tie(self, key: str) -> None:
        self._tied_sets.pop(key, None)
        self._tied_masks.pop(key, None)

    def _resource_key(self, name: str) -> ResourceKey:
        return self.allocatable(name), self.state.usage[name].scoring

    def _touch(self, name: str) -> None:
        """A pod was bound to or left ``name``: move the node to its new class."""
        i = self._pos.get(name)
        if i is None:
            return
        reclassify(self._classes, self._class_of, i, self._resource_key(name))
        self._per_node.touched(i)

    def resources(self, key: ResourceKey, wants: ScoringRequests) -> tuple[int, int]:
        """NodeResourcesFit and NodeResourcesBalancedAllocation for a pod asking ``wants`` on a node like ``key``."""
        have, used = key
        fit = least_allocated(
            (used.nonzero_milli_cpu + wants.nonzero_milli_cpu, used.nonzero_memory + wants.nonzero_memory), have
        )
        if wants.milli_cpu == 0 and wants.memory == 0:
            return fit, 0  # BalancedAllocation's PreScore skips a pod that requests nothing
        balanced = balanced_allocation(
            (used.milli_cpu + wants.milli_cpu, used.memory + wants.memory), (used.milli_cpu, used.memory), have
        )
        return fit, balanced

    def score(
        self, record: PodRecord, candidates: Sequence[Candidate], claims: Sequence[ResourceClaim] = ()
    ) -> list[NodeScores]:
        """Every plugin's normalised score and the weighted total, per candidate (in the order given)."""
        pod = record.pod
        names = [c.node for c in candidates]
        nodes = [self.state.nodes[n] for n in names]
        plugins: dict[str, list[int]] = {}
        plugins["TaintToleration"] = default_normalize([intolerable_prefer_no_schedule(n, pod) for n in nodes], True)
        terms = preferred_terms(pod)
        plugins["NodeAffinity"] = (
            default_normalize([preferred_affinity(n, terms) for n in nodes], False) if terms else [0] * len(nodes)
        )
        wants = record.scoring
        resources = [self.resources(self._resource_key(name), wants) for name in names]
        plugins["NodeResourcesFit"] = [fit for fit, _ in resources]
        plugins["PodTopologySpread"] = (self.topology_spread.scores(pod, nodes) if has_constraints(pod)
                                        else default_spread_scores(self.spread, pod, nodes))
        plugins["InterPodAffinity"] = self.pod_affinity.scores(pod, nodes)
        plugins["DynamicResources"] = dynamic_resources_scores(claims, [c.allocations for c in candidates])
        plugins["NodeResourcesBalancedAllocation"] = [balanced for _, balanced in resources]
        plugins["ImageLocality"] = [0] * len(nodes)
        out = []
        for i, name in enumerate(names):
            each = {plugin: scores[i] for plugin, scores in plugins.items()}
            out.append(NodeScores(name, each, sum(WEIGHTS[p] * s for p, s in each.items())))
        return out

    def choose(
        self, record: PodRecord, candidates: Sequence[Candidate], claims: Sequence[ResourceClaim] = ()
    ) -> int:
        """Index of the candidate kube-scheduler's selectHost returns."""
        self._forget_tie(record.key)
        if len(candidates) == 1:
            return 0
        totals = [s.total for s in self.score(record, candidates, claims)]
        best = max(totals)
        tops = [i for i, t in enumerate(totals) if t == best]
        if len(tops) > 1 and self._keep_ties:
            self._tied_sets[record.key] = frozenset(candidates[i].node for i in tops)
        return heap_root_of(tops)

    @staticmethod
    def by_groups(claims: Sequence[ResourceClaim] = ()) -> bool:
        """Whether ``choose_window`` can score this pod: DynamicResources ranks ``firstAvailable`` choices from each
        node's own allocation, which only the node-by-node walk has."""
        return not any(r.exactly is None for c in claims for r in c.spec.devices.requests)

    def choose_window(self, record: PodRecord, window: int, start: int, count: int | None = None) -> int:
        """Inventory position of the node selectHost returns among the nodes of bitset ``window`` (``count`` of them,
        where the caller knows), walked from ``start`` (wrapping) as Filter found them; for pods ``by_groups`` holds
        for."""
        self._forget_tie(record.key)
        if count is None:
            count = window.bit_count()
        pod = record.pod
        terms = preferred_terms(pod)
        # A pod with constraints of its own gets no system default ones (its DoNotSchedule ones do not score).
        explicit = has_constraints(pod)
        owner = self.spread.key_for(pod) if not explicit else None
        scheduled_anyway = explicit and bool(constraints_of(pod, SCHEDULE_ANYWAY))
        inter_pod = self.pod_affinity.active(pod) and not self.pod_affinity.neutral(pod)
        if self.observe is not None:
            self._observed = []
        if not (self._prefer_taints or terms or owner is not None or scheduled_anyway or inter_pod):
            best = self._best_by_resources(window, count, record.scoring)  # only the resource plugins tell nodes apart
        else:
            best = self._best_by_groups(record, window, count, terms, owner, scheduled_anyway=scheduled_anyway,
                                        inter_pod=inter_pod)
        if self.observe is not None and self._observed is not None:
            self.observe(record, window, self._observed, best)
            self._observed = None
        if best & (best - 1) == 0:
            return best.bit_length() - 1
        if self._keep_ties:
            self._tied_masks[record.key] = best
        # Filter's list is the window in walk order: rotate so that bit j is the j-th node walked, pack the tied
        # nodes' bits by rank in that list, find the heap's root rank, map it back to a node. (A window that does not
        # wrap is shifted down alone: the shifts then cost its span, not the cluster's width.)
        n = len(self._names)
        walk, tied = window >> start, best >> start
        if walk << start != window:
            low = (1 << start) - 1
            walk |= (window & low) << (n - start)
            tied |= (best & low) << (n - start)
        rank = heap_root_rank(tied, walk)
        return ((rank if walk & (walk + 1) == 0 else nth_bit(walk, rank)) + start) % n

    def _best_by_groups(
        self, record: PodRecord, window: int, count: int, terms: Sequence[PreferredSchedulingTerm],
        owner: SelectorKey | None, *, scheduled_anyway: bool = False, inter_pod: bool = False,
    ) -> int:
        pod = record.pod
        groups = self._resource_groups(window, count, record.scoring)
        if self._prefer_taints:
            groups = split_groups(groups, self._taint_partition(pod), "taint")
        if terms:
            groups = split_groups(groups, self._affinity_partition(terms), "affinity")
        if owner is not None:
            occupied, counts = self.spread.by_count(owner)
            partition = [(count, mask) for count, mask in counts.items()]
            partition.append((0, window ^ (window & occupied)))  # the window's nodes holding none
            groups = split_groups(groups, partition, "host")
            groups = split_groups(groups, self._topologies, "topology")
        if scheduled_anyway:  # explicit ScheduleAnyway constraints: normalised over the window already
            groups = split_groups(groups, self.topology_spread.score_partition(pod, window, self._names), "explicit")
        if inter_pod:  # InterPodAffinity: normalised over the window already
            groups = split_groups(groups, self.pod_affinity.score_partition(pod, window, self._names), "inter_pod")
        if len(groups) == 1:
            if self._observed is not None:
                self._observed.append(GroupScores(groups[0].nodes, {RESOURCES: groups[0].resources}))
            return groups[0].nodes
        return self._best(groups, pod, count, owner)

    def _best_by_resources(self, window: int, count: int, wants: ScoringRequests) -> int:
        """The window's nodes of the highest NodeResourcesFit + BalancedAllocation (every other plugin scores all
        nodes alike for this pod)."""
        best_total, best = -1, 0
        if len(self._classes) <= count:
            for key, members in self._classes.items():
                inside = members & window
                if inside:
                    total = self._resource_total(key, wants)
                    if self._observed is not None:
                        self._observed.append(GroupScores(inside, {RESOURCES: total}))
                    if total > best_total:
                        best_total, best = total, inside
                    elif total == best_total:
                        best |= inside
            return best
        best = self._per_node.best(window, wants)  # nodes whose usage is their own: kept per node and shape
        if self._observed is not None:
            totals = self._per_node.totals(wants)
            self._observed.extend(GroupScores(1 << i, {RESOURCES: totals[i]}) for i in positions(window))
        return best

    def _resource_total(self, key: ResourceKey, wants: ScoringRequests) -> int:
        cache_key = (key, wants)
        total = self._scores.get(cache_key)
        if total is None:
            total = resource_total(key, wants)
            if len(self._scores) >= MAX_CACHED_SCORES:
                self._scores.clear()
            self._scores[cache_key] = total
        return total

    def _resource_groups(self, window: int, count: int, wants: ScoringRequests) -> list[Group]:
        """The window cut by resource classes: through the classes when they are fewer than the window's nodes (a
        fleet of alike nodes), else through the window's nodes (every node's usage its own, as in a real trace)."""
        if len(self._classes) > count:
            members_of: dict[ResourceKey, list[int]] = {}
            class_of = self._class_of
            for i in positions(window):
                members_of.setdefault(class_of[i], []).append(i)
            classes: Iterable[tuple[ResourceKey, int]] = [(k, mask_of(v)) for k, v in members_of.items()]
        else:
            classes = self._classes.items()
        groups = []
        for key, members in classes:
            inside = members & window
            if inside:
                groups.append(Group(inside, self._resource_total(key, wants)))
        return groups

    def _best(self, groups: list[Group], pod: Pod, count: int, owner: SelectorKey | None) -> int:
        """The nodes of the highest weighted total: the plugins' normalisations over the groups (the same highest
        and lowest as over the nodes), then the weights; ``owner``: the pod's default spreading selector, if any."""
        spreading = owner is not None
        taint_high = max(g.taint for g in groups)
        affinity_high = max(g.affinity for g in groups)
        spread: list[int] = []
        if owner is not None:
            zones = {g.topology[2] for g in groups}
            sums = self.spread.zone_sums(owner, pod)
            host_weight = math.log(count + 2)
            zone_weight = math.log(len(zones) + 2)
            spread = [
                spread_raw(
                    g.host if g.topology[0] else None,
                    sums.get(g.topology[2], 0) if g.topology[1] else None,
                    host_weight,
                    zone_weight,
                )
                for g in groups
            ]
            spread_low, spread_high = min(spread), max(spread)
        best_total = -1
        best = 0
        for i, g in enumerate(groups):
            taint = MAX_NODE_SCORE - go_div(MAX_NODE_SCORE * g.taint, taint_high) if taint_high else MAX_NODE_SCORE
            affinity = go_div(MAX_NODE_SCORE * g.affinity, affinity_high) if affinity_high else g.affinity
            total = WEIGHTS["TaintToleration"] * taint + WEIGHTS["NodeAffinity"] * affinity + g.resources
            normalised = g.explicit
            total += WEIGHTS["PodTopologySpread"] * g.explicit + WEIGHTS["InterPodAffinity"] * g.inter_pod
            if spreading:
                raw = spread[i]
                normalised = (
                    MAX_NODE_SCORE * (spread_high + spread_low - raw) // spread_high if spread_high else MAX_NODE_SCORE
                )
                total += WEIGHTS["PodTopologySpread"] * normalised
            if self._observed is not None:
                scores = {"TaintToleration": WEIGHTS["TaintToleration"] * taint,
                          "NodeAffinity": WEIGHTS["NodeAffinity"] * affinity, RESOURCES: g.resources, "total": total}
                if spreading or normalised:
                    scores["PodTopologySpread"] = WEIGHTS["PodTopologySpread"] * normalised
                if g.inter_pod:
                    scores["InterPodAffinity"] = WEIGHTS["InterPodAffinity"] * g.inter_pod
                self._observed.append(GroupScores(g.nodes, scores))
            if total > best_total:
                best_total, best = total, g.nodes
            elif total == best_total:
                best |= g.nodes
        return best

    def _taint_partition(self, pod: Pod) -> list[tuple[int, int]]:
        """Raw TaintToleration -> bitset of nodes, per set of the pod's tolerations (nodes never change in a run)."""
        key = msgspec.json.encode([t for t in pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")])
        found = self._taint_partitions.get(key)
        if found is None:
            found = partition_nodes(intolerable_prefer_no_schedule(node, pod) for node in self.state.nodes.values())
            bounded_cache(self._taint_partitions)[key] = found
        return found

    def _affinity_partition(self, terms: Sequence[PreferredSchedulingTerm]) -> list[tuple[int, int]]:
        """Raw NodeAffinity -> bitset of nodes, per set of preferred terms."""
        key = msgspec.json.encode(terms)
        found = self._affinity_partitions.get(key)
        if found is None:
            found = partition_nodes(preferred_affinity(node, terms) for node in self.state.nodes.values())
            bounded_cache(self._affinity_partitions)[key] = found
        return found
