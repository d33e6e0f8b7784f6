"""PodTopologySpread's pod counts for its system-default constraints, kept as pods bind and leave.

kube-scheduler's PreScore counts, for the pod being scheduled, the pods on every node that its controller's selector
matches (same namespace, not terminating); done from scratch that is every bound pod for every pod scheduled, which
makes a Deployment's replicas cost quadratic time. Here the counts are kept per controlling ReplicaSet or StatefulSet
(its selector matches exactly its own pods in kubedra's workloads): per node, as bitsets of the nodes holding each
count, and per zone — for each distinct nodeSelector / required node affinity of the pods asking, since the zone
constraint counts only pods on nodes that pass it (``nodeAffinityPolicy: Honor``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Node, Pod
from kubedra.scheduler.nodefit import affinity_reason

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
SPREAD_OWNERS = frozenset({("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")})
MAX_FILTERS = 64  # node filters whose zone sums are kept; beyond that they start over (bounded memory, still exact)

OwnerKey = tuple[str, str, str]  # namespace, kind, name of the controller
FilterKey = bytes  # the pod's nodeSelector and required node affinity, encoded


def controller_of(pod: Pod) -> tuple[str, str] | None:
    """(kind, name) of the ReplicaSet or StatefulSet controlling the pod, whose selector default spreading uses."""
    for ref in pod.metadata.owner_references:
        if ref.controller and (ref.api_version, ref.kind) in SPREAD_OWNERS:
            return ref.kind, ref.name
    return None


def owner_key(pod: Pod) -> OwnerKey | None:
    controller = controller_of(pod)
    return None if controller is None else (pod.metadata.namespace, controller[0], controller[1])


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


class _Filter(msgspec.Struct):
    passes: Callable[[Node], bool]
    verdicts: dict[str, bool]  # node name -> passes, worked out on first use (nodes never change in a run)
    sums: dict[OwnerKey, dict[str, int]]  # owner -> zone -> pods on passing nodes


class SpreadCounts:
    """See the module docstring. Listens to the cluster state's binds and unbinds."""

    def __init__(self, state: ClusterState, positions: Mapping[str, int]) -> None:
        self._nodes = state.nodes
        self._positions = positions
        self._per_node: dict[OwnerKey, dict[str, int]] = {}
        self._by_count: dict[OwnerKey, dict[int, int]] = {}  # owner -> count (> 0) -> bitset of nodes with it
        self._occupied: dict[OwnerKey, int] = {}  # owner -> bitset of nodes with a count above 0
        self._zone_sums: dict[OwnerKey, dict[str, int]] = {}  # unfiltered
        self._filters: dict[FilterKey, _Filter] = {}
        # (pod key, node) -> owner, as counted at bind: mirrors ``ClusterState.bound`` (a pod is there once per node)
        self._counted: dict[tuple[str, str], OwnerKey] = {}
        for node, pods in state.bound.items():
            for record in pods.values():
                self.changed(record, node, +1)
        state.pod_watchers.append(self.changed)

    def changed(self, record: PodRecord, node: str, delta: int) -> None:
        """A pod bound to (+1) or left (-1) ``node``."""
        if delta > 0:
            pod = record.pod
            if pod.metadata.deletion_timestamp is not None or not pod.metadata.owner_references:
                return
            owner = owner_key(pod)
            if owner is None or (record.key, node) in self._counted:
                return
            self._counted[record.key, node] = owner
        else:
            found = self._counted.pop((record.key, node), None)
            if found is None:
                return
            owner = found
        per = self._per_node.setdefault(owner, {})
        old = per.get(node, 0)
        new = old + delta
        if new:
            per[node] = new
        else:
            del per[node]
        self._move_bit(owner, node, old, new)
        zone = zone_of(self._nodes[node])
        sums = self._zone_sums.setdefault(owner, {})
        sums[zone] = sums.get(zone, 0) + delta
        for entry in self._filters.values():
            filtered = entry.sums.get(owner)
            if filtered is not None and self._passes(entry, node):
                filtered[zone] = filtered.get(zone, 0) + delta
        if not per:
            for table in (self._per_node, self._by_count, self._occupied, self._zone_sums):
                table.pop(owner, None)
            for entry in self._filters.values():
                entry.sums.pop(owner, None)

    def _move_bit(self, owner: OwnerKey, node: str, old: int, new: int) -> None:
        """The node's bit from the bitset of count ``old`` to that of ``new``."""
        i = self._positions.get(node)
        if i is None:
            return
        bit = 1 << i
        masks = self._by_count.setdefault(owner, {})
        if old:
            rest = masks[old] & ~bit
            if rest:
                masks[old] = rest
            else:
                del masks[old]
        if new:
            masks[new] = masks.get(new, 0) | bit
            self._occupied[owner] = self._occupied.get(owner, 0) | bit
        else:
            self._occupied[owner] &= ~bit

    def count(self, owner: OwnerKey, node: str) -> int:
        """Pods of ``owner`` on ``node``."""
        per = self._per_node.get(owner)
        return per.get(node, 0) if per else 0

    def by_count(self, owner: OwnerKey) -> tuple[int, Mapping[int, int]]:
        """The bitset of nodes holding some pod of ``owner``, and count -> bitset of the nodes holding that many."""
        return self._occupied.get(owner, 0), self._by_count.get(owner, {})

    def zone_sums(self, owner: OwnerKey, pod: Pod) -> Mapping[str, int]:
        """Zone -> pods of ``owner`` on the nodes of that zone that pass ``pod``'s node filter."""
        key = node_filter_key(pod)
        if key is None:
            return self._zone_sums.get(owner, {})
        entry = self._filters.get(key)
        if entry is None:
            if len(self._filters) >= MAX_FILTERS:
                self._filters.clear()
            entry = self._filters[key] = _Filter(lambda node: affinity_reason(pod, node) is None, {}, {})
        sums = entry.sums.get(owner)
        if sums is None:
            sums = entry.sums[owner] = {}
            for node, count in self._per_node.get(owner, {}).items():
                if self._passes(entry, node):
                    zone = zone_of(self._nodes[node])
                    sums[zone] = sums.get(zone, 0) + count
        return sums

    def _passes(self, entry: _Filter, node: str) -> bool:
        verdict = entry.verdicts.get(node)
        if verdict is None:
            verdict = entry.verdicts[node] = entry.passes(self._nodes[node])
        return verdict
