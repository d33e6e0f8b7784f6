"""The cluster as data: every object the scheduler reads, indexed once and kept up to date incrementally.

``ClusterState`` is the in-memory stand-in for the API server plus the scheduler's informers: nodes in the order
kube-scheduler's NodeTree lists them when added in inventory order (zones round-robin, see ``cluster.nodetree``; the
order Filter walks and ties break in), slices, classes, taint rules, claims, templates and pods, and the indexes the
scheduler needs (slices per node, devices in use). It is mutated only through its methods, so the indexes never
drift from the objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import msgspec

from kubedra.cluster.devices import DeviceTable
from kubedra.cluster.nodetree import tree_order
from kubedra.cluster.usage import (
    HostPort,
    NodeUsage,
    ScoringRequests,
    Sums,
    host_ports,
    pod_requests,
    scoring_requests,
)
from kubedra.objects.model import (
    DeviceClass,
    DeviceTaintRule,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubedra.objects.quantity import Quantity

# A label selector's requirement as default spreading reads it: (key, operator, values sorted); ``matchLabels`` pairs
# are (key, "In", (value,)).
Requirement = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class SpreadSources:
    """What PodTopologySpread's system-default constraints build their selector from (``helper.DefaultSelector``):
    the Services, as (namespace, selector pairs) for each one with a selector, and the ReplicaSets and StatefulSets
    that exist, (namespace, kind, name) -> their selector's requirements (from files' workloads, and a live cluster's
    own). ``controllers`` None: they were not read (a snapshot's pods alone, a live cluster whose controllers the user
    may not list): a pod's controlling ReplicaSet or StatefulSet then stands for a selector of exactly its own pods, as
    kubedra's workloads make them."""

    services: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    controllers: Mapping[tuple[str, str, str], tuple[Requirement, ...]] | None = None


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(frozen=True)
class SpecDerived:
    """What a record derives from its pod's spec alone (requests as NodeResourcesFit sums them, the scorers' cpu and
    memory, host ports): the replicas of one template share it, so a 100,000-replica Deployment works it out once."""

    requests: dict[str, Quantity]  # shared by the records too (never changed in place, as a record's requests)
    scoring: ScoringRequests
    usage_scoring: ScoringRequests
    host_ports: tuple[HostPort, ...]
    requests_key: tuple[tuple[str, Quantity], ...]

    @classmethod
    def of(cls, pod: Pod, requests: dict[str, Quantity] | None = None) -> SpecDerived:
        asked = pod_requests(pod) if requests is None else requests
        scoring = scoring_requests(pod, incoming=True)
        return cls(asked, scoring, scoring if pod.spec.resources is None else scoring_requests(pod), host_ports(pod),
                   tuple(sorted(asked.items())))


class SpecCache:
    """``SpecDerived`` by pod spec object: pods expanded from one template share their spec object. Held by one
    caller for one build (the spec is kept, so its identity cannot be reused while cached)."""

    def __init__(self) -> None:
        self._by_spec: dict[int, tuple[object, SpecDerived]] = {}

    def derived(self, pod: Pod) -> SpecDerived:
        hit = self._by_spec.get(id(pod.spec))
        if hit is None or hit[0] is not pod.spec:
            hit = self._by_spec[id(pod.spec)] = (pod.spec, SpecDerived.of(pod))
        return hit[1]


@dataclass(slots=True)
class PodRecord:
    """A pod and what the simulation knows about it beyond the object itself."""

    pod: Pod
    requests: dict[str, Quantity]
    arrive_at: float = 0.0
    run_for: float | None = None
    owner: str = ""
    started_at: float | None = None
    # Its place in the run's bind order: a kubelet starts pods in the order they bind, so among pods of one
    # ``started_at`` (one instant) the later bound started later (``start_key``); 0 for a pod assigned in the input.
    start_order: int = 0
    finished_at: float | None = None
    deleted: bool = False  # removed at the end of its run (a Deployment's, ReplicaSet's or StatefulSet's pod)
    end_reason: str = ""  # why it was deleted (at ``finished_at``)
    pending_reason: str = ""
    claim_keys: list[str] = field(default_factory=list)
    extended_claim_key: str = ""
    group: str = ""  # "ns/name" of the PodGroup scheduling it as a gang (GenericWorkload on), else ""

    @property
    def phase(self) -> str:
        """The one answer every report gives: ``Deleted`` once removed, else the pod's phase (``Pending`` unset).

        The simulation report and ``explain`` both read it, so they cannot disagree about how a pod ended.
        """
        return "Deleted" if self.deleted else (self.pod.status.phase or "Pending")

    # Derived once from the pod, whose name, namespace and resource requests never change while it is simulated
    # (a run replaces ``pod`` with updated copies of the same pod): the hot path reads them as plain attributes.
    key: str = field(init=False, repr=False, compare=False)
    scoring: ScoringRequests = field(init=False, repr=False, compare=False)  # cpu/memory as the scorers count them
    usage_scoring: ScoringRequests = field(init=False, repr=False, compare=False)  # ... and as its node sums them
    host_ports: tuple[HostPort, ...] = field(init=False, repr=False, compare=False)  # NodePorts' (mostly none)
    requests_key: tuple[tuple[str, Quantity], ...] = field(init=False, repr=False, compare=False)  # sorted requests

    derived: SpecDerived | None = field(default=None, repr=False, compare=False)  # shared by one template's pods

    def __post_init__(self) -> None:
        self.key = _key(self.pod.metadata.namespace, self.pod.metadata.name)
        derived = self.derived if self.derived is not None else SpecDerived.of(self.pod, self.requests)
        self.scoring, self.usage_scoring = derived.scoring, derived.usage_scoring
        self.host_ports, self.requests_key = derived.host_ports, derived.requests_key
        self.derived = None  # the pod may be replaced later; keep nothing that could go stale


@dataclass
class ClusterState:
    """Objects by key plus the derived indexes; see the module docstring."""

    nodes: dict[str, Node] = field(default_factory=dict)
    usage: dict[str, NodeUsage] = field(default_factory=dict)
    slices: list[ResourceSlice] = field(default_factory=list)
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    templates: dict[str, ResourceClaimTemplate] = field(default_factory=dict)
    pods: dict[str, PodRecord] = field(default_factory=dict)
    # Every published device, what it matches and who holds it (see ``cluster.devices``).
    devices: DeviceTable = field(default_factory=lambda: DeviceTable(()))
    # Pods bound to each node now, by key (what kube-scheduler's NodeInfo.Pods holds, for spreading scores).
    bound: dict[str, dict[str, PodRecord]] = field(default_factory=dict)
    # Called with a node's name after the pods bound to it changed (the scheduler's node sets listen).
    watchers: list[Callable[[str], None]] = field(default_factory=list)
    # Called with the pod, its node and +1 (bound) or -1 (left), before ``watchers`` (the spreading counts listen).
    pod_watchers: list[Callable[[PodRecord, str, int], None]] = field(default_factory=list)
    # Called with the pod and its node as a bound pod starts terminating, before ``watchers``: it keeps its node and
    # devices until it leaves, but PodTopologySpread counts it no more (``countPodsMatchSelector``).
    terminating_watchers: list[Callable[[PodRecord, str], None]] = field(default_factory=list)
    # Services and controllers, for the system-default spreading's selector (set before the scheduler is made).
    spread_sources: SpreadSources = field(default_factory=SpreadSources)
    # Node totals reached before (``usage``'s sums are shared where nodes reach the same ones).
    sums: Sums = field(default_factory=Sums)

    @classmethod
    def build(
        cls,
        *,
        nodes: Iterable[Node],
        slices: Iterable[ResourceSlice],
        classes: Iterable[DeviceClass],
        taint_rules: Iterable[DeviceTaintRule] = (),
        claims: Iterable[ResourceClaim] = (),
        templates: Iterable[ResourceClaimTemplate] = (),
        consumable_capacity: bool = True,
    ) -> ClusterState:
        """``nodes``: in the order the scheduler's cache adds them (kept in NodeTree order). ``consumable_capacity``:
        whether results with a shareID count as shares (the DRAConsumableCapacity gate),
        as the allocator's ``AllocatedState`` counts them."""
        state = cls()
        for node in tree_order(nodes):
            state.nodes[node.metadata.name] = node
            state.usage[node.metadata.name] = NodeUsage()
        state.slices = list(slices)
        state.devices = DeviceTable(state.slices, consumable_capacity=consumable_capacity)
        for device_class in classes:
            state.classes[device_class.metadata.name] = device_class
        state.taint_rules = list(taint_rules)
        for claim in claims:
            state.claims[_key(claim.metadata.namespace, claim.metadata.name)] = claim
        for template in templates:
            state.templates[_key(template.metadata.namespace, template.metadata.name)] = template
        for claim in state.allocated_claims():
            assert claim.status.allocation is not None
            state.devices.mark(claim.status.allocation, +1)
        return state

    # ---------------------------------------------------------------------------------------------- claims

    def put_claim(self, claim: ResourceClaim) -> str:
        """Add or replace a claim; returns its key (``_key``'s, written out: a claim is put several times a pod)."""
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        self.claims[key] = claim
        return key

    def delete_claim(self, key: str) -> None:
        self.claims.pop(key, None)

    def allocated_claims(self) -> Iterator[ResourceClaim]:
        return (c for c in self.claims.values() if c.status.allocation is not None)

    # ---------------------------------------------------------------------------------------------- pods

    def add_pod(self, record: PodRecord) -> None:
        self.pods[record.key] = record

    def bind(self, record: PodRecord, node: str) -> None:
        self.usage[node].add(record.requests, record.usage_scoring, self.sums)
        if record.host_ports:
            self.usage[node].take_ports(record.host_ports, +1)
        self.bound.setdefault(node, {})[record.key] = record
        for pod_watcher in self.pod_watchers:
            pod_watcher(record, node, +1)
        for watcher in self.watchers:
            watcher(node)

    def terminate(self, record: PodRecord, node: str, stamp: str) -> None:
        """The bound pod is being deleted (its ``deletionTimestamp`` is ``stamp``) and stays on ``node`` through its
        grace period; :meth:`unbind` when it is gone."""
        meta = record.pod.metadata
        if meta.deletion_timestamp is not None:
            return
        terminating = msgspec.structs.replace(meta, deletion_timestamp=stamp)
        record.pod = msgspec.structs.replace(record.pod, metadata=terminating)
        for terminating_watcher in self.terminating_watchers:
            terminating_watcher(record, node)
        for watcher in self.watchers:
            watcher(node)

    def unbind(self, record: PodRecord, node: str) -> None:
        self.usage[node].remove(record.requests, record.usage_scoring, self.sums)
        if record.host_ports:
            self.usage[node].take_ports(record.host_ports, -1)
        self.bound.get(node, {}).pop(record.key, None)
        for pod_watcher in self.pod_watchers:
            pod_watcher(record, node, -1)
        for watcher in self.watchers:
            watcher(node)
