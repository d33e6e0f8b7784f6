"""Metric families computed from a ``ClusterState``, kept up to date incrementally between scrapes.

Pure: a cluster state in, families (rows of label values and a value) and their text exposition out. Work is
redone only for what changed since the last ``update``: a claim's rows when the claim (or whether a pod wants it)
changed, a pod's when the pod changed; a node's free devices when an allocation touched a device of its pools, the
node itself changed, or a slice or taint rule of one of its pools changed (every node for a pool not bound to one
node); one class's free devices on every node when that class changed. Objects compare by identity first, then by
value, so both the simulator (which replaces changed objects) and the live source (which decodes only the objects a
watch event changed) profit.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from typing import Any

import msgspec

from kubedra.allocator import AllocatedState, Allocator, Features
from kubedra.cel import CompileCache
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.metrics.available import availability
from kubedra.metrics.families import (
    CLAIM_ALLOCATED,
    CLAIM_COUNTS,
    CLAIM_DEVICE,
    CLAIM_FAMILIES,
    CLAIM_INFO,
    CLAIM_PENDING,
    CLAIM_RESERVED_FOR,
    CLAIM_STATUS_ALLOCATED,
    CLASS_INFO,
    FAMILIES,
    NODE_AVAILABLE,
    NODE_CAPACITY,
    POD_CLAIM,
    SLICE_DEVICES,
    SLICE_INFO,
    Family,
    FamilySpec,
    Rows,
    header,
    sample_line,
)
from kubedra.objects.model import (
    AllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceTaintRule,
    Node,
    Pod,
    ResourceClaim,
    ResourceSlice,
)

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
TERMINAL = ("Succeeded", "Failed", "Deleted")


@dataclass
class _Chunk:
    """The rows of one object and their text, with what they were computed from."""

    source: object
    rows: Rows
    text: dict[FamilySpec, str]
    extra: Any = None  # what else was derived from the source (a pod's claim keys, a claim's owner and counts)


def _chunk(source: object, rows: Rows, extra: Any = None) -> _Chunk:
    text = {spec: "".join(sample_line(spec, lv, v) for lv, v in r) for spec, r in rows.items()}
    return _Chunk(source, rows, text, extra)


def _same(a: object, b: object) -> bool:
    return a is b or a == b


def _same_items(a: list[Any] | dict[str, Any], b: list[Any] | dict[str, Any]) -> bool:
    """Element by element, identity first: the simulator's slices and classes never change, so no deep compare."""
    if len(a) != len(b):
        return False
    left, right = (list(a.values()), list(b.values())) if isinstance(a, dict) and isinstance(b, dict) else (a, b)
    if isinstance(a, dict) and isinstance(b, dict) and list(a) != list(b):
        return False
    return all(map(operator.is_, left, right)) or left == right


def claim_classes(claim: ResourceClaim) -> list[str]:
    """The device classes the claim's requests (and firstAvailable subrequests) name, in order, once each."""
    names: dict[str, None] = {}
    for request in claim.spec.devices.requests:
        if request.exactly is not None:
            names[request.exactly.device_class_name] = None
        for sub in request.first_available:
            names[sub.device_class_name] = None
    return list(names)


def claim_source(claim: ResourceClaim) -> str:
    """kube-controller-manager's ``source`` label."""
    annotations = claim.metadata.annotations
    if annotations.get(EXTENDED_CLAIM_ANNOTATION) == "true":
        return "extended_resource"
    if annotations.get(POD_CLAIM_NAME_ANNOTATION):
        return "resource_claim_template"
    return ""


def admin_access(claim: ResourceClaim) -> str:
    """kube-controller-manager's ``admin_access`` label (subrequests never have admin access)."""
    exact = (r.exactly for r in claim.spec.devices.requests)
    return "true" if any(e is not None and e.admin_access for e in exact) else "false"


def pod_claims(pod: Pod) -> list[tuple[str, str]]:
    """(pod claim name, ResourceClaim name or "") for each claim of the pod, the extended-resource claim last."""
    made = {s.name: s.resource_claim_name or "" for s in pod.status.resource_claim_statuses}
    found = [(c.name, c.resource_claim_name or made.get(c.name, "")) for c in pod.spec.resource_claims]
    extended = pod.status.extended_resource_claim_status
    if extended is not None:
        found.append(("", extended.resource_claim_name))
    return found


def _owner_pod(claim: ResourceClaim) -> str:
    for owner in claim.metadata.owner_references:
        if owner.controller and owner.api_version == "v1" and owner.kind == "Pod":
            return owner.name
    return ""


def _claim_rows(claim: ResourceClaim, wanted: bool) -> Rows:
    ns, name = claim.metadata.namespace, claim.metadata.name
    allocation = claim.status.allocation
    allocated = 1.0 if allocation is not None else 0.0
    classes = claim_classes(claim)
    rows: Rows = {
        CLAIM_ALLOCATED: [((ns, name, c), allocated) for c in classes],
        CLAIM_PENDING: [((ns, name, c), 1.0 if wanted and allocation is None else 0.0) for c in classes],
        CLAIM_INFO: [((ns, name, claim.metadata.uid, claim_source(claim)), 1.0)],
        CLAIM_STATUS_ALLOCATED: [((ns, name), allocated)],
        CLAIM_RESERVED_FOR: [((ns, name, r.resource, r.name), 1.0) for r in claim.status.reserved_for],
        CLAIM_DEVICE: [],
    }
    if allocation is not None:
        rows[CLAIM_DEVICE] = [
            ((ns, name, r.request, r.driver, r.pool, r.device, r.share_id or ""), 1.0)
            for r in allocation.devices.results
        ]
    return rows


def _join_chunks(source: object, parts: Iterable[_Chunk], specs: tuple[FamilySpec, ...]) -> _Chunk:
    """One chunk of several, rows and text concatenated in order (a node's classes)."""
    listed = list(parts)
    rows: Rows = {spec: [row for p in listed for row in p.rows[spec]] for spec in specs}
    text = {spec: "".join(p.text[spec] for p in listed) for spec in specs}
    return _Chunk(source, rows, text)


def _slice_rows(s: ResourceSlice) -> Rows:
    node, pool = s.spec.node_name or "", s.spec.pool
    return {
        SLICE_INFO: [((s.metadata.name, s.spec.driver, pool.name, node, str(pool.generation)), 1.0)],
        SLICE_DEVICES: [((s.metadata.name, s.spec.driver, pool.name, node), float(len(s.spec.devices)))],
    }


def _class_rows(c: DeviceClass) -> Rows:
    return {CLASS_INFO: [((c.metadata.name, c.spec.extended_resource_name or ""), 1.0)]}


def _by_name(objects: Iterable[ResourceSlice | DeviceTaintRule]) -> dict[str, Any]:
    return {o.metadata.name: o for o in objects}


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[Any]:
    """The objects, old and new versions both, of each name added, removed or changed in value."""
    found: list[Any] = []
    for name in old.keys() | new.keys():
        before, after = old.get(name), new.get(name)
        if before is after or (before is not None and after is not None and before == after):
            continue
        found.extend(o for o in (before, after) if o is not None)
    return found


class _Seen:
    """The keys and values of a dict as last seen, to find what changed by identity (C-level comparisons)."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.values: list[object] = []

    def changes(self, keys: list[str], values: list[object]) -> set[str]:
        """Keys added, removed, or whose value is another object than last time; remembers the new contents."""
        if keys == self.keys:
            changed = {keys[i] for i in compress(range(len(values)), map(operator.is_not, self.values, values))}
        else:
            old = dict(zip(self.keys, self.values, strict=True))
            changed = {k for k, v in zip(keys, values, strict=True) if old.get(k, _MISSING) is not v}
            changed |= old.keys() - set(keys)
        self.keys, self.values = keys, values
        return changed


@dataclass(frozen=True)
class Changed:
    """The keys of the claims, pods and nodes added, replaced or removed since the last ``update``."""

    claims: frozenset[str] = frozenset()
    pods: frozenset[str] = frozenset()
    nodes: frozenset[str] = frozenset()


_MISSING = object()
_GROUPS: dict[str, tuple[FamilySpec, ...]] = {
    "claims": CLAIM_FAMILIES,
    "nodes": (NODE_AVAILABLE, NODE_CAPACITY),
    "slices": (SLICE_INFO, SLICE_DEVICES),
    "classes": (CLASS_INFO,),
    "pods": (POD_CLAIM,),
}
_GROUP_OF = {spec: group for group, specs in _GROUPS.items() for spec in specs}
BLOCK = 256


class _Blocks:
    """The text of one group of chunks (claims, pods, nodes...) for each of its families, joined in blocks of
    ``BLOCK`` chunks. A scrape after one object changed re-joins that object's block and then the blocks: reading
    every small text of 20,000 scattered objects again is what a scrape of a large cluster would spend its time on
    (memory, not CPU). Which chunks changed is found by identity, as ``_Seen`` does."""

    def __init__(self, specs: tuple[FamilySpec, ...]) -> None:
        self.specs = specs
        self.keys: list[Any] = []
        self.chunks: list[_Chunk] = []
        self.blocks: dict[FamilySpec, list[str]] = {spec: [] for spec in specs}

    def sync(self, group: dict[Any, _Chunk]) -> None:
        keys, chunks = list(group), list(group.values())
        if keys != self.keys:
            todo: Iterable[int] = range(0, len(chunks), BLOCK)
            self.blocks = {spec: [""] * ((len(chunks) + BLOCK - 1) // BLOCK) for spec in self.specs}
        else:
            changed = compress(range(len(chunks)), map(operator.is_not, self.chunks, chunks))
            todo = sorted({i - i % BLOCK for i in changed})
        self.keys, self.chunks = keys, chunks
        for start in todo:
            part = chunks[start: start + BLOCK]
            for spec in self.specs:
                self.blocks[spec][start // BLOCK] = "".join([c.text[spec] for c in part])


class DraMetrics:
    """The families of one cluster, updated in place; see the module docstring."""

    def __init__(self, features: Features | None = None) -> None:
        self.features = features if features is not None else Features.for_release()
        self._slices: list[ResourceSlice] | None = None  # the inventory the allocator was built from
        self._classes: dict[str, DeviceClass] = {}
        self._rules: list[DeviceTaintRule] = []
        self._cel = CompileCache(self.features.cel_options())
        self._allocator: Allocator | None = None
        self._allocations: dict[str, AllocationResult] = {}
        self._holders: dict[tuple[str, str, str, str | None], dict[str, DeviceRequestAllocationResult]] = {}
        self._pool_nodes: dict[tuple[str, str], set[str]] = {}
        self._everywhere: set[tuple[str, str]] = set()
        self._claims: dict[str, _Chunk] = {}
        self._pods: dict[str, _Chunk] = {}
        self._nodes: dict[str, _Chunk] = {}
        self._node_classes: dict[str, dict[str, _Chunk]] = {}  # node -> class -> its rows (absent: no series)
        self._slice_text: dict[int, _Chunk] = {}  # id(slice) -> its static rows (the chunk keeps the slice alive)
        self._class_text: dict[int, _Chunk] = {}
        self._counts: list[tuple[tuple[str, ...], float]] = []
        self._count_of: dict[tuple[str, str, str], int] = {}
        self._facts: dict[str, tuple[str, tuple[str, str, str]]] = {}  # claim -> (owner pod key, count labels)
        self._owned: dict[str, set[str]] = {}  # pod key -> the claims it owns
        self._refs: dict[str, int] = {}  # claim key -> live pods that reference it
        self._live: set[str] = set()  # pods that have not finished
        self._blocks = {group: _Blocks(specs) for group, specs in _GROUPS.items()}
        self._seen_claims, self._seen_pods, self._seen_deleted, self._seen_nodes = _Seen(), _Seen(), _Seen(), _Seen()

    # ------------------------------------------------------------------------------------------ update

    def update(self, state: ClusterState, changed: Changed | None = None) -> None:
        """Bring every family in step with ``state``. Which claims, pods and nodes changed is found by comparing
        with the last state (identity first), unless ``changed`` says (the live source knows from its events)."""
        first = self._allocator is None
        inventory_nodes, changed_classes = self._update_inventory(state)
        if changed is not None and not first:
            claims, pods, nodes = set(changed.claims), set(changed.pods), set(changed.nodes)
        else:
            claims = self._seen_claims.changes(list(state.claims), list(state.claims.values()))
            records = list(state.pods.values())
            pods = self._seen_pods.changes(list(state.pods), [r.pod for r in records])
            pods |= self._seen_deleted.changes(list(state.pods), [bool(r.deleted) for r in records])
            nodes = self._seen_nodes.changes(list(state.nodes), list(state.nodes.values()))
        dirty = self._update_allocations(state, set(state.claims) if first else claims)
        self._update_nodes(state, set(state.nodes) if first else dirty | nodes | inventory_nodes, changed_classes)
        affected = self._update_pods(state, pods)
        self._update_claims(state, claims, affected)

    def _update_inventory(self, state: ClusterState) -> tuple[set[str], set[str]]:
        """Follow changes of slices, classes and taint rules: the nodes whose free devices they may change, and the
        classes to recompute on every node. The allocator is built again over the new inventory (cheap: it
        prepares devices on first use) around the same allocated state."""
        slices, classes, rules = state.slices, state.classes, state.taint_rules
        first = self._slices is None
        old_slices = self._slices or []
        if not first and _same_items(old_slices, slices) and _same_items(self._classes, classes) and _same_items(
            self._rules, rules
        ):
            return set(), set()
        changed_slices = _changed(_by_name(old_slices), _by_name(slices))
        changed_classes = _changed(self._classes, classes)
        changed_rules = _changed(_by_name(self._rules), _by_name(rules))
        pools = {(s.spec.driver, s.spec.pool.name) for s in changed_slices}
        old_pool_nodes, old_everywhere = self._pool_nodes, self._everywhere
        self._slices, self._classes, self._rules = list(slices), dict(classes), list(rules)
        self._pool_nodes, self._everywhere = {}, set()
        for s in slices:
            pool = (s.spec.driver, s.spec.pool.name)
            if s.spec.node_name:
                self._pool_nodes.setdefault(pool, set()).add(s.spec.node_name)
            else:
                self._everywhere.add(pool)
        nodes: set[str] = set()
        for rule in changed_rules:
            selector = rule.spec.device_selector
            if selector is None or selector.driver is None:
                nodes = set(state.nodes)  # a rule of every driver (or none) may taint any device
                break
            if selector.pool is None:
                pools |= {p for p in (*old_pool_nodes, *old_everywhere, *self._pool_nodes, *self._everywhere)
                          if p[0] == selector.driver}
            else:
                pools.add((selector.driver, selector.pool))
        if pools & (old_everywhere | self._everywhere):
            nodes = set(state.nodes)
        for pool in pools:
            nodes |= old_pool_nodes.get(pool, set()) | self._pool_nodes.get(pool, set())
        allocated = self._allocator.state if self._allocator is not None else AllocatedState(
            consumable_capacity=self.features.consumable_capacity
        )
        self._allocator = Allocator(self.features, allocated, classes, slices, self._cel, rules)
        if changed_slices or first:
            self._slice_text = {id(s): self._slice_text.get(id(s)) or _chunk(s, _slice_rows(s)) for s in slices}
        if changed_classes or first:
            self._class_text = {id(c): self._class_text.get(id(c)) or _chunk(c, _class_rows(c))
                                for c in classes.values()}
        return nodes, {c.metadata.name for c in changed_classes}

    def _touched(self, allocation: AllocationResult, nodes: set[str]) -> set[str]:
        touched: set[str] = set()
        for r in allocation.devices.results:
            pool = (r.driver, r.pool)
            if pool in self._everywhere:
                return set(nodes)
            touched |= self._pool_nodes.get(pool, set())
        return touched

    def _update_allocations(self, state: ClusterState, keys: set[str]) -> set[str]:
        """Apply the allocations of the claims in ``keys`` that differ; the nodes whose devices they touch."""
        assert self._allocator is not None
        allocated = self._allocator.state
        nodes = set(state.nodes)
        dirty: set[str] = set()
        added: list[tuple[str, AllocationResult]] = []
        for key in keys:
            claim = state.claims.get(key)
            allocation = claim.status.allocation if claim is not None else None
            previous = self._allocations.get(key)
            if previous is allocation or (previous is not None and allocation is not None and previous == allocation):
                continue
            if previous is not None:
                for r in previous.devices.results:
                    self._release(key, r)
                dirty |= self._touched(previous, nodes)
                del self._allocations[key]
            if allocation is not None:
                added.append((key, allocation))
        # Every release before any allocation: a device freed by one claim and taken by another at the same instant
        # is in use (the allocated state is a set, so the order matters).
        for key, allocation in added:
            for r in allocation.devices.results:
                allocated.add_allocation(r)
                if not r.admin_access:
                    self._holders.setdefault(self._held(r), {})[key] = r
            dirty |= self._touched(allocation, nodes)
            self._allocations[key] = allocation
        return dirty

    def _held(self, r: DeviceRequestAllocationResult) -> tuple[str, str, str, str | None]:
        share = r.share_id if self.features.consumable_capacity else None
        return r.driver, r.pool, r.device, share

    def _release(self, key: str, r: DeviceRequestAllocationResult) -> None:
        """Undo one result of claim ``key``: while another claim still holds the same device (or share), it stays
        in use, only this claim's consumed capacity goes. The allocated state counts the holds on a whole device
        itself, but keeps shares as a set (as a full build from every claim has them): a share another claim still
        holds is put back, without capacity."""
        assert self._allocator is not None
        allocated = self._allocator.state
        allocated.remove_allocation(r)
        if r.admin_access:
            return
        held = self._holders.get(self._held(r), {})
        held.pop(key, None)
        if not held:
            self._holders.pop(self._held(r), None)
            return
        other = next(iter(held.values()))
        if other.share_id is not None and self.features.consumable_capacity:
            allocated.add_allocation(msgspec.structs.replace(other, consumed_capacity=None))

    def _update_nodes(self, state: ClusterState, dirty: set[str], classes: set[str]) -> None:
        """Recompute every class on the ``dirty`` nodes and the changed ``classes`` on the others."""
        assert self._allocator is not None
        changed = False
        for name in [n for n in self._nodes if n not in state.nodes]:
            del self._nodes[name]
            self._node_classes.pop(name, None)
            changed = True
        todo = set(state.nodes) if classes else dirty
        for name in todo:
            node = state.nodes.get(name)
            if node is None:
                continue
            parts = self._node_classes.get(name, {})
            redo = state.classes if name in dirty or name not in self._node_classes else classes
            parts = {c: parts[c] for c in state.classes if c in parts and c not in redo}
            for class_name in redo:
                if class_name in state.classes:
                    found = self._class_rows_of(node, class_name)
                    if found is not None:
                        parts[class_name] = found
            parts = {c: parts[c] for c in state.classes if c in parts}
            self._node_classes[name] = parts
            self._nodes[name] = _join_chunks(node, parts.values(), (NODE_AVAILABLE, NODE_CAPACITY))
            changed = True
        if changed and list(self._nodes) != list(state.nodes):  # keep the nodes' own order
            self._nodes = {n: self._nodes[n] for n in state.nodes if n in self._nodes}

    def _class_rows_of(self, node: Node, class_name: str) -> _Chunk | None:
        """The node's rows for one class (None: the class selects none of its devices, so no series)."""
        assert self._allocator is not None
        found = availability(self._allocator, node, class_name)
        if found is None:
            return None
        name = node.metadata.name
        free: list[tuple[tuple[str, ...], float]] = [((name, class_name, "devices"), float(found.devices))]
        free.extend(((name, class_name, cap), value) for cap, value in sorted(found.capacity.items()))
        capacity: list[tuple[tuple[str, ...], float]] = [((name, class_name, "devices"), float(found.matching))]
        capacity.extend(((name, class_name, cap), value) for cap, value in sorted(found.total_capacity.items()))
        return _chunk(None, {NODE_AVAILABLE: free, NODE_CAPACITY: capacity})

    def _update_pods(self, state: ClusterState, keys: set[str]) -> set[str]:
        """Refresh the pods in ``keys``; the claims whose "wanted" may have changed with them."""
        affected: set[str] = set()
        for key in keys:
            cached = self._pods.pop(key, None)
            if cached is not None and cached.extra is not None:  # it wanted these until now
                for claim in cached.extra:
                    self._refs[claim] -= 1
                affected.update(cached.extra)
            was_live = key in self._live
            self._live.discard(key)
            record = state.pods.get(key)
            if record is not None:
                ns = record.pod.metadata.namespace
                # The claims this pod wants while it runs or waits (None once it has finished).
                wants = None if record.phase in TERMINAL else [f"{ns}/{c}" for _, c in pod_claims(record.pod) if c]
                source = (record.pod, record.deleted)
                if cached is not None and _same(cached.source, source):
                    self._pods[key] = _Chunk(source, cached.rows, cached.text, wants)
                else:
                    self._pods[key] = _chunk(source, {POD_CLAIM: self._pod_rows(record)}, wants)
                if wants is not None:
                    self._live.add(key)
                    for claim in wants:
                        self._refs[claim] = self._refs.get(claim, 0) + 1
                    affected.update(wants)
            if was_live != (key in self._live):
                affected |= self._owned.get(key, set())
        if keys and list(self._pods) != list(state.pods):
            self._pods = {k: self._pods[k] for k in state.pods}
        return affected

    def _update_claims(self, state: ClusterState, keys: set[str], affected: set[str]) -> None:
        """Refresh the claims in ``keys`` (changed) and ``affected`` (whether a pod wants them may have changed)."""
        changed = False
        for key in keys:
            old = self._facts.pop(key, None)
            if old is not None:
                self._owned.get(old[0], set()).discard(key)
                self._count_of[old[1]] -= 1
            claim = state.claims.get(key)
            if claim is None:
                changed = self._claims.pop(key, None) is not None or changed
                continue
            owner = _owner_pod(claim)
            owner_key = f"{claim.metadata.namespace}/{owner}" if owner else ""
            labels = ("true" if claim.status.allocation is not None else "false", admin_access(claim),
                      claim_source(claim))
            self._facts[key] = (owner_key, labels)
            if owner_key:
                self._owned.setdefault(owner_key, set()).add(key)
            self._count_of[labels] = self._count_of.get(labels, 0) + 1
        for key in keys | affected:
            claim = state.claims.get(key)
            if claim is None:
                continue
            owner_key = self._facts[key][0]
            want = bool(claim.status.reserved_for) or self._refs.get(key, 0) > 0 or owner_key in self._live
            cached = self._claims.get(key)
            if cached is None or not _same(cached.source, (claim, want)):
                self._claims[key] = _chunk((claim, want), _claim_rows(claim, want))
                changed = True
        if keys:
            self._counts = [(labels, float(n)) for labels, n in sorted(self._count_of.items()) if n]
        if changed and list(self._claims) != list(state.claims):
            self._claims = {k: self._claims[k] for k in state.claims}

    @staticmethod
    def _pod_rows(record: PodRecord) -> list[tuple[tuple[str, ...], float]]:
        if record.deleted:
            return []
        pod = record.pod
        return [((pod.metadata.namespace, pod.metadata.name, pod_claim, claim), 1.0)
                for pod_claim, claim in pod_claims(pod)]

    # ------------------------------------------------------------------------------------------ output

    def _group(self, group: str) -> dict[Any, _Chunk]:
        groups: dict[str, dict[Any, _Chunk]] = {"claims": self._claims, "nodes": self._nodes, "pods": self._pods,
                                                "classes": self._class_text, "slices": self._slice_text}
        return groups[group]

    def families(self) -> list[Family]:
        """Every family with its rows, in exposition order."""
        out: list[Family] = []
        for spec in FAMILIES:
            if spec is CLAIM_COUNTS:
                out.append(Family(spec, list(self._counts)))
            else:
                chunks = self._group(_GROUP_OF[spec]).values()
                out.append(Family(spec, [row for c in chunks for row in c.rows.get(spec, [])]))
        return out

    def render(self) -> str:
        """The text exposition of :meth:`families`, from the cached text of each object (see ``_Blocks``)."""
        for group, blocks in self._blocks.items():
            blocks.sync(self._group(group))
        parts: list[str] = []
        for spec in FAMILIES:
            parts.append(header(spec))
            if spec is CLAIM_COUNTS:
                parts.extend(sample_line(spec, lv, v) for lv, v in self._counts)
            else:
                parts.extend(self._blocks[_GROUP_OF[spec]].blocks[spec])
        return "".join(parts)
