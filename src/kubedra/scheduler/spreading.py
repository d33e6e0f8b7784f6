"""PodTopologySpread's system-default constraints: their pod counts, kept as pods bind and leave, and their Score.

The constraints' selector is ``helper.DefaultSelector``'s: the selectors of the Services in the pod's namespace that
select it, merged, and the selector of its controlling ReplicaSet or StatefulSet where that object exists, ANDed (a
ReplicationController's label map is merged into the Services' labels instead, its values winning); an empty one
gives the pod no default spreading. kube-scheduler's PreScore then counts, on every node, the pods the selector
matches (same namespace, not terminating); done from scratch that is every bound pod for every pod scheduled, which
makes a Deployment's replicas cost quadratic time.
Here the counts are kept per distinct selector (the pods of one workload share one), a selector registered when a
pod first asks for it (its bound pods counted then, found through an index of bound pods by controller and label)
and every bound pod counted into each registered selector it matches as it binds: per node, as bitsets of the
nodes holding each count, and per zone — for each distinct nodeSelector / required node affinity of the pods
asking, since the zone constraint counts only pods on nodes that pass it (``nodeAffinityPolicy: Honor``).

Where the controllers were not read (``SpreadSources.controllers`` None: a snapshot's pods alone, or a live cluster
whose ReplicaSets and StatefulSets the user may not list), a pod's controlling ReplicaSet or StatefulSet stands for a
selector of exactly its own pods, as kubedra's workloads make them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord, Requirement
from kubedra.objects.model import Node, OwnerReference, Pod
from kubedra.scheduler.nodefit import affinity_reason
from kubedra.scheduler.normalize import MAX_NODE_SCORE, go_round

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
# PodTopologySpread's systemDefaultConstraints: (topology key, maxSkew), both ScheduleAnyway.
SYSTEM_DEFAULT_SPREAD = ((HOSTNAME_LABEL, 3), (ZONE_LABEL, 5))
REPLICATION_CONTROLLER = "ReplicationController"
SPREAD_OWNERS = frozenset({("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"), ("v1", REPLICATION_CONTROLLER)})
MAX_FILTERS = 64  # node filters whose zone sums are kept; beyond that they start over (bounded memory, still exact)

# The default selector: namespace, requirements (sorted, no duplicates), and the controller (kind, name) standing
# for the selector of its own pods where controllers were not read (else None).
SelectorKey = tuple[str, tuple[Requirement, ...], tuple[str, str] | None]
FilterKey = bytes  # the pod's nodeSelector and required node affinity, encoded
# What the bound-pod index is keyed by: ("owner", ns, kind, name), ("label", ns, key, value) or ("ns", ns).
Anchor = tuple[str, ...]


def controller_ref(pod: Pod) -> OwnerReference | None:
    """``metav1.GetControllerOf``: the first owner reference with ``controller: true``."""
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref
    return None


def controller_of(pod: Pod) -> tuple[str, str] | None:
    """(kind, name) of the ReplicaSet, StatefulSet or ReplicationController controlling the pod, whose selector
    default spreading uses."""
    ref = controller_ref(pod)
    if ref is not None and (ref.api_version, ref.kind) in SPREAD_OWNERS:
        return ref.kind, ref.name
    return None


def default_selector(
    pod: Pod,
    services: Mapping[str, list[tuple[tuple[str, str], ...]]],
    controllers: Mapping[tuple[str, str, str], tuple[Requirement, ...]] | None,
) -> SelectorKey | None:
    """``helper.DefaultSelector`` for ``pod``: ``services`` by namespace, ``controllers`` as ``SpreadSources``'; None
    where it is empty (no default spreading)."""
    namespace, labels = pod.metadata.namespace, pod.metadata.labels
    requirements: set[Requirement] = set()
    for pairs in services.get(namespace, ()):
        if all(labels.get(k) == v for k, v in pairs):
            requirements.update((k, "In", (v,)) for k, v in pairs)
    owner = controller_of(pod)
    if owner is not None and controllers is not None:
        found = controllers.get((namespace, owner[0], owner[1]), ())
        if owner[0] == REPLICATION_CONTROLLER:  # labels.Merge: the controller's value for a key replaces a Service's
            keys = {key for key, _, _ in found}
            requirements = {r for r in requirements if r[0] not in keys}
        requirements.update(found)
        owner = None
    if not requirements and owner is None:
        return None
    return namespace, tuple(sorted(requirements)), owner


def _holds(requirement: Requirement, labels: Mapping[str, str]) -> bool:
    key, operator, values = requirement
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False


def selects(key: SelectorKey, pod: Pod) -> bool:
    """Whether default spreading with selector ``key`` counts ``pod`` (``countPodsMatchSelector``)."""
    namespace, requirements, owner = key
    meta = pod.metadata
    if meta.namespace != namespace or meta.deletion_timestamp is not None:
        return False
    if owner is not None and controller_of(pod) != owner:
        return False
    labels = meta.labels
    return all(_holds(r, labels) for r in requirements)


def _anchor(key: SelectorKey) -> Anchor:
    """Where the bound pods ``key`` may match are indexed: its controller's, else one label pair it requires."""
    namespace, requirements, owner = key
    if owner is not None:
        return ("owner", namespace, *owner)
    for k, operator, values in requirements:
        if operator == "In" and len(values) == 1:
            return ("label", namespace, k, values[0])
    return ("ns", namespace)


def _anchors_of(pod: Pod) -> tuple[Anchor, ...]:
    namespace = pod.metadata.namespace
    out: list[Anchor] = [("ns", namespace)]
    owner = controller_of(pod)
    if owner is not None:
        out.append(("owner", namespace, *owner))
    out.extend(("label", namespace, k, v) for k, v in pod.metadata.labels.items())
    return tuple(out)


def node_filter_key(pod: Pod) -> FilterKey | None:
    """What the zone count's node filter depends on; None when the pod has neither nodeSelector nor required
    node affinity (every node passes)."""
    affinity = pod.spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if (
        affinity and affinity.node_affinity
    ) else None
    if not pod.spec.node_selector and required is None:
        return None
    return msgspec.json.encode((sorted(pod.spec.node_selector.items()), required))


def zone_of(node: Node) -> str:
    return node.metadata.labels.get(ZONE_LABEL, "")


MAX_ALIKE = 4096  # kinds of bound pod remembered (``SpreadCounts._alike_of``); beyond that it starts over


class _Alike(msgspec.Struct, gc=False):
    labels: Mapping[str, str]
    owners: Sequence[OwnerReference]
    anchors: tuple[Anchor, ...]
    keys: tuple[SelectorKey, ...]


class _Filter(msgspec.Struct):
    passes: Callable[[Node], bool]
    verdicts: dict[str, bool]  # node name -> passes, worked out on first use (nodes never change in a run)
    sums: dict[SelectorKey, dict[str, int]]  # selector -> zone -> pods on passing nodes


class SpreadCounts:
    """See the module docstring. Listens to the cluster state's binds and unbinds."""

    def __init__(self, state: ClusterState, positions: Mapping[str, int]) -> None:
        self._state = state
        self._nodes = state.nodes
        self._positions = positions
        self._services: dict[str, list[tuple[tuple[str, str], ...]]] | None = None  # by namespace, on first use
        self._keyed: dict[Anchor, list[SelectorKey]] = {}  # the registered selectors, by anchor
        self._keys: set[SelectorKey] = set()
        # bound pods (not terminating) by anchor: (pod key, node) -> record
        self._members: dict[Anchor, dict[tuple[str, str], PodRecord]] = {}
        self._per_node: dict[SelectorKey, dict[str, int]] = {}
        self._by_count: dict[SelectorKey, dict[int, int]] = {}  # selector -> count (> 0) -> bitset of nodes with it
        self._occupied: dict[SelectorKey, int] = {}  # selector -> bitset of nodes with a count above 0
        self._zone_sums: dict[SelectorKey, dict[str, int]] = {}  # unfiltered
        self._filters: dict[FilterKey, _Filter] = {}
        # (pod key, node) -> its anchors and the selectors it is counted in: mirrors ``ClusterState.bound`` (a pod
        # is there once per node)
        self._counted: dict[tuple[str, str], tuple[tuple[Anchor, ...], tuple[SelectorKey, ...]]] = {}
        self._anchor_sets: dict[tuple[Anchor, ...], tuple[Anchor, ...]] = {}  # one kept per set: a template's pods'
        # What a bound pod's labels, owner references and namespace say (its anchors, and the registered selectors
        # that select it), by the identity of those objects: a workload's pods carry equal ones, often the same.
        self._alike: dict[tuple[int, int, str], _Alike] = {}
        for node, pods in state.bound.items():
            for record in pods.values():
                self.changed(record, node, +1)
        state.pod_watchers.append(self.changed)
        state.terminating_watchers.append(lambda record, node: self.changed(record, node, -1))

    def key_for(self, pod: Pod) -> SelectorKey | None:
        """The pod's default selector (None: no default spreading), its counts kept from now on."""
        if self._services is None:
            self._services = {}
            for namespace, pairs in self._state.spread_sources.services:
                self._services.setdefault(namespace, []).append(pairs)
        key = default_selector(pod, self._services, self._state.spread_sources.controllers)
        if key is not None and key not in self._keys:
            self._keys.add(key)
            anchor = _anchor(key)
            self._keyed.setdefault(anchor, []).append(key)
            self._alike.clear()  # the selectors each kind of pod is counted in change
            for (pod_key, node), record in self._members.get(anchor, {}).items():
                if selects(key, record.pod):
                    anchors, keys = self._counted[pod_key, node]
                    self._counted[pod_key, node] = (anchors, (*keys, key))
                    self._add(key, node, +1)
        return key

    def changed(self, record: PodRecord, node: str, delta: int) -> None:
        """A pod bound to (+1) or left (-1) ``node``."""
        at = (record.key, node)
        if delta > 0:
            pod = record.pod
            if pod.metadata.deletion_timestamp is not None or at in self._counted:
                return
            anchors, keys = self._alike_of(pod)
            self._counted[at] = (anchors, keys)
            members = self._members
            for anchor in anchors:
                holding = members.get(anchor)
                if holding is None:
                    holding = {}
                    members[anchor] = holding
                holding[at] = record
            for key in keys:
                self._add(key, node, +1)
            return
        found = self._counted.pop(at, None)
        if found is None:
            return
        anchors, keys = found
        for anchor in anchors:
            left = self._members[anchor]
            del left[at]
            if not left:
                del self._members[anchor]
        for key in keys:
            self._add(key, node, -1)

    def _alike_of(self, pod: Pod) -> tuple[tuple[Anchor, ...], tuple[SelectorKey, ...]]:
        """A pod's anchors and the registered selectors that select it (``selects``, in ``_keyed``'s order), worked
        out once per kind of pod: they read only its namespace, labels and owner references, here by identity."""
        meta = pod.metadata
        labels, owners = meta.labels, meta.owner_references
        alike_key = (id(labels), id(owners), meta.namespace)
        found = self._alike.get(alike_key)
        if found is None or found.labels is not labels or found.owners is not owners:
            anchors = self._anchor_sets.setdefault(made := _anchors_of(pod), made)
            keys = tuple(key for anchor in anchors for key in self._keyed.get(anchor, ()) if selects(key, pod))
            if len(self._alike) >= MAX_ALIKE:
                self._alike.clear()
            found = self._alike[alike_key] = _Alike(labels, owners, anchors, keys)  # holds both: ids stay unique
        return found.anchors, found.keys

    def _add(self, key: SelectorKey, node: str, delta: int) -> None:
        per = self._per_node.setdefault(key, {})
        old = per.get(node, 0)
        new = old + delta
        if new:
            per[node] = new
        else:
            del per[node]
        self._move_bit(key, node, old, new)
        zone = zone_of(self._nodes[node])
        sums = self._zone_sums.setdefault(key, {})
        sums[zone] = sums.get(zone, 0) + delta
        for entry in self._filters.values():
            filtered = entry.sums.get(key)
            if filtered is not None and self._passes(entry, node):
                filtered[zone] = filtered.get(zone, 0) + delta
        if not per:
            for table in (self._per_node, self._by_count, self._occupied, self._zone_sums):
                table.pop(key, None)
            for entry in self._filters.values():
                entry.sums.pop(key, None)

    def _move_bit(self, key: SelectorKey, node: str, old: int, new: int) -> None:
        """The node's bit from the bitset of count ``old`` to that of ``new``."""
        i = self._positions.get(node)
        if i is None:
            return
        bit = 1 << i
        masks = self._by_count.setdefault(key, {})
        # The bit is in the mask of ``old`` (and in ``_occupied``) exactly when ``old`` > 0: an XOR clears it, with
        # no full-width ``~bit``.
        if old:
            rest = masks[old] ^ bit
            if rest:
                masks[old] = rest
            else:
                del masks[old]
        if new:
            masks[new] = masks.get(new, 0) | bit
            if not old:
                self._occupied[key] = self._occupied.get(key, 0) | bit
        else:
            self._occupied[key] ^= bit

    def count(self, key: SelectorKey, node: str) -> int:
        """Pods ``key`` selects on ``node``."""
        per = self._per_node.get(key)
        return per.get(node, 0) if per else 0

    def by_count(self, key: SelectorKey) -> tuple[int, Mapping[int, int]]:
        """The bitset of nodes holding some pod ``key`` selects, and count -> bitset of the nodes holding that many."""
        return self._occupied.get(key, 0), self._by_count.get(key, {})

    def zone_sums(self, key: SelectorKey, pod: Pod) -> Mapping[str, int]:
        """Zone -> pods ``key`` selects on the nodes of that zone that pass ``pod``'s node filter."""
        filter_key = node_filter_key(pod)
        if filter_key is None:
            return self._zone_sums.get(key, {})
        entry = self._filters.get(filter_key)
        if entry is None:
            if len(self._filters) >= MAX_FILTERS:
                self._filters.clear()
            entry = self._filters[filter_key] = _Filter(lambda node: affinity_reason(pod, node) is None, {}, {})
        sums = entry.sums.get(key)
        if sums is None:
            sums = entry.sums[key] = {}
            for node, count in self._per_node.get(key, {}).items():
                if self._passes(entry, node):
                    zone = zone_of(self._nodes[node])
                    sums[zone] = sums.get(zone, 0) + count
        return sums

    def _passes(self, entry: _Filter, node: str) -> bool:
        verdict = entry.verdicts.get(node)
        if verdict is None:
            verdict = entry.verdicts[node] = entry.passes(self._nodes[node])
        return verdict



def spread_raw(host_count: int | None, zone_count: int | None, host_weight: float, zone_weight: float) -> int:
    """PodTopologySpread's raw Score on one node, the float sums in upstream's order; None: the node lacks that
    constraint's label (the constraint is skipped)."""
    total = 0.0
    if host_count is not None:
        total += float(host_count) * host_weight + float(SYSTEM_DEFAULT_SPREAD[0][1] - 1)
    if zone_count is not None:
        total += float(zone_count) * zone_weight + float(SYSTEM_DEFAULT_SPREAD[1][1] - 1)
    return go_round(total)


def spread_normalize(scores: list[int]) -> list[int]:
    """PodTopologySpread's NormalizeScore: fewer matching pods score higher, 100 x (max + min - s) / max."""
    if not scores:
        return []
    lowest, highest = min(scores), max(scores)
    if highest == 0:
        return [MAX_NODE_SCORE] * len(scores)
    return [MAX_NODE_SCORE * (highest + lowest - s) // highest for s in scores]


def default_spread_scores(counts: SpreadCounts, pod: Pod, nodes: Sequence[Node]) -> list[int]:
    """Score and NormalizeScore of the system-default constraints on each of ``nodes`` (the feasible ones), node by
    node from the kept ``counts``; every node 0 where the pod has no default selector (PreScore skips)."""
    owner = counts.key_for(pod)
    if owner is None or not nodes:
        return [0] * len(nodes)
    zones = {zone_of(n) for n in nodes}
    sums = counts.zone_sums(owner, pod)
    host_weight, zone_weight = math.log(len(nodes) + 2), math.log(len(zones) + 2)
    raw = []
    for node in nodes:
        labels = node.metadata.labels
        raw.append(spread_raw(
            counts.count(owner, node.metadata.name) if HOSTNAME_LABEL in labels else None,
            sums.get(labels[ZONE_LABEL], 0) if ZONE_LABEL in labels else None,
            host_weight,
            zone_weight,
        ))
    return spread_normalize(raw)
