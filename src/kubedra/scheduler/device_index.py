"""The simulator's fast path: free devices per node and per selector signature (counted by the cluster's device
table, which keeps them up to date as allocations come and go).

Running the structured allocator on every node for every pod is what makes kube-scheduler spend milliseconds per
pod. Most GPU pods ask for N devices of one class (with the same selectors), nothing else; for those, a node can take
the pod exactly when it has N free devices that match — provided the node's devices are plain (no counters, no
shared capacity, no taints that matter, no binding conditions, complete and valid pools). The index answers that in
O(1) per node; the allocator then runs only on the chosen node, so the decision (which devices) stays upstream's.

For anything else the index still gives a necessary condition (too few matching free devices → no), and the exact
allocator decides. Selector results per device are computed once per signature and reused for the whole run.

Shares (consumable capacity, KEP-5075) get the same treatment in one direction: a claim of one request for N shares
of one signature fits a node whose devices are plain but for ``allowMultipleAllocations`` when the matching devices
have room for one share each on N of them — a dedicated device if free and its capacity holds the request, a shared
one if its capacity left holds one more share (the search gives a request's devices in slice order, each after the
one before, and with no constraints or counters it never has to take one back). ``shares_fit`` says so without the
allocator; anything else (too little room included, whose reason the allocator words) is left to it. The stable
allocator (no capacity checks) and v0.36's lenient rules are not decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import msgspec

from kubedra.allocator.capacity import CapacityError, share, share_fits
from kubedra.allocator.devices import CapacityInfo, capacity_info
from kubedra.allocator.errors import AllocationError
from kubedra.allocator.requests import MAX_RESULTS
from kubedra.allocator.state import DeviceID
from kubedra.cel import CelError, CompileCache, DeviceView, SelectorProgram
from kubedra.cluster.devices import DeviceRecord, DeviceTable, Signature
from kubedra.objects.model import DeviceClass, ResourceClaim, ResourceClaimSpec, ResourceSlice
from kubedra.objects.quantity import Quantity, QuantityError

__all__ = ["CapacityRules", "Demand", "DeviceIndex", "ShareDemand", "Signature"]


@dataclass(frozen=True)
class Demand:
    signature: Signature
    count: int


@dataclass(frozen=True)
class ShareDemand:
    """N shares of one signature, each consuming per ``requests`` (a request's ``capacity.requests``)."""

    signature: Signature
    count: int
    requests: dict[str, Quantity]
    key: tuple[tuple[str, Quantity], ...]  # the requests, hashable: a device's share is worked out once per key


def _is_shareable_device(slice_: ResourceSlice, index: int) -> bool:
    """Plain but for ``allowMultipleAllocations``: only its capacity left decides whether a share fits."""
    device = slice_.spec.devices[index]
    return not (
        device.consumes_counters
        or device.binds_to_node
        or device.binding_conditions
        or any(t.effect in ("NoSchedule", "NoExecute") for t in device.taints)
    )


def _is_plain_device(slice_: ResourceSlice, index: int) -> bool:
    device = slice_.spec.devices[index]
    return not (
        device.consumes_counters
        or device.allow_multiple_allocations
        or device.binds_to_node
        or device.binding_conditions
        or any(t.effect in ("NoSchedule", "NoExecute") for t in device.taints)
    )


MAX_DEMANDS = 1024  # remembered demands per index; beyond that the memory starts over
MAX_SHARES = 100_000  # remembered (request, node) device lists; beyond that the memory starts over
_UNKNOWN = object()
_INVALID = object()
_NEVER = object()


class DeviceIndex:
    """See the module docstring. Built once per simulation over the cluster's device table, which keeps the free
    counts of every signature the index tracks as allocations come and go."""

    def __init__(
        self,
        table: DeviceTable,
        classes: Mapping[str, DeviceClass],
        cel: CompileCache,
        *,
        taint_rules: bool = False,
        shares: CapacityRules | None = None,
    ) -> None:
        self.table = table
        self._classes = classes
        self._cel = cel
        self._exact_nodes: set[str] = set()
        self._failed: set[Signature] = set()
        self._by_exprs: dict[tuple[str, ...], Signature] = {}
        self._canonical: dict[Signature, Signature] = {}
        self._off_node: list[DeviceRecord] = []  # devices of slices that are not node-local (network-attached)
        self._local: list[DeviceRecord] = []  # node-local devices, one per name (an invalid pool's last)
        self._served_off_node: set[Signature] = set()
        self._demands: dict[tuple[int, ...], tuple[list[ResourceClaimSpec], Demand | None]] = {}
        self._share_demands: dict[int, tuple[ResourceClaimSpec, ShareDemand | None]] = {}
        self._shares = shares  # None: shares are not decided here (consumable capacity off, or v0.36's rules)
        self._shareable_nodes: set[str] = set()
        self._matching: dict[Signature, dict[str, list[DeviceRecord]]] = {}
        self._capacities: dict[str, dict[str, CapacityInfo] | None] = {}
        # (signature, requests, node) -> the node's devices as ``_prepare`` gives them (or None)
        self._prepared: dict[tuple[Signature, tuple[tuple[str, Quantity], ...], str], object] = {}
        self._capacity_specs: dict[str, bytes] = {}  # device key -> its capacity spec, encoded
        self._needs_of: dict[tuple[tuple[tuple[str, Quantity], ...], bytes], object] = {}
        self._build()
        if taint_rules:
            self._exact_nodes = set()  # a DeviceTaintRule may taint any device: counts are only a bound then
            self._shareable_nodes = set()

    def _build(self) -> None:
        table = self.table
        slices = table.slices
        newest: dict[tuple[str, str], int] = {}
        for s in slices:
            pool = (s.spec.driver, s.spec.pool.name)
            newest[pool] = max(newest.get(pool, s.spec.pool.generation), s.spec.pool.generation)
        counts: dict[tuple[str, str], int] = {}
        expected: dict[tuple[str, str], int] = {}
        names: dict[tuple[str, str], set[str]] = {}
        broken: set[tuple[str, str]] = set()
        local_nodes: dict[tuple[str, str], set[str]] = {}
        any_shared = False
        nodes_with_devices: set[str] = set()
        impure: set[str] = set()
        unshareable: set[str] = set()
        for s in slices:
            pool = (s.spec.driver, s.spec.pool.name)
            if s.spec.pool.generation != newest[pool]:
                continue
            counts[pool] = counts.get(pool, 0) + 1
            expected[pool] = s.spec.pool.resource_slice_count
            records = table.of_slice(s)
            if not s.spec.node_name:
                any_shared = any_shared or bool(s.spec.devices)
                broken.add(pool)
                self._off_node += records
                continue
            local_nodes.setdefault(pool, set()).add(s.spec.node_name)
            seen = names.setdefault(pool, set())
            for i, record in enumerate(records):
                if record.device.name in seen:
                    broken.add(pool)
                seen.add(record.device.name)
                nodes_with_devices.add(s.spec.node_name)
                if not _is_plain_device(s, i):
                    impure.add(s.spec.node_name)
                if not _is_shareable_device(s, i):
                    unshareable.add(s.spec.node_name)
        self._local = [r for r in table.by_key.values() if r.node is not None and r.slice.spec.pool.generation
                       == newest[(r.slice.spec.driver, r.slice.spec.pool.name)]]
        broken |= {pool for pool, n in counts.items() if n != expected[pool]}
        for pool in broken:
            impure |= local_nodes.get(pool, set())
            unshareable |= local_nodes.get(pool, set())
        # A network-attached slice can serve any node, so with one around no node's count is exact.
        self._exact_nodes = set() if any_shared else nodes_with_devices - impure
        self._shareable_nodes = set() if any_shared or self._shares is None else nodes_with_devices - unshareable

    # ------------------------------------------------------------------------------------------ queries

    def demand(self, claims: Sequence[ResourceClaim]) -> Demand | None:
        """The claims as N devices of one signature, or None when they ask for more than that. Worked out once per
        tuple of specs: claims made from one template share its spec object (the entry holds the specs, so their
        ids stay unique)."""
        key = (id(claims[0].spec),) if len(claims) == 1 else tuple([id(claim.spec) for claim in claims])
        found = self._demands.get(key)
        if found is None:
            if len(self._demands) >= MAX_DEMANDS:
                self._demands.clear()
            found = self._demands[key] = ([claim.spec for claim in claims], self._demand(claims))
        return found[1]

    def _demand(self, claims: Sequence[ResourceClaim]) -> Demand | None:
        signature: Signature | None = None
        count = 0
        for claim in claims:
            devices = claim.spec.devices
            if devices.constraints:
                return None
            for request in devices.requests:
                exact = request.exactly
                if exact is None or exact.admin_access or exact.capacity is not None:
                    return None
                if exact.allocation_mode not in ("", "ExactCount"):
                    return None
                this: Signature = (exact.device_class_name, tuple(s.cel.expression for s in exact.selectors if s.cel))
                if len(this[1]) != len(exact.selectors) or (signature is not None and this != signature):
                    return None
                signature = this
                count += 1 if exact.count is None else exact.count
        if signature is None or not self._ensure(signature) or signature in self._served_off_node:
            return None  # devices a node does not own may serve it: its free count is no bound then
        return Demand(self._canonical.get(signature, signature), count)

    def warm(self, specs: Iterable[ResourceClaimSpec], classes: Iterable[DeviceClass]) -> None:
        """Evaluate selectors up front for the requests these claim specs make and for extended-resource classes,
        so the first pods do not pay for the whole cluster's CEL evaluations."""
        for spec in specs:
            for request in spec.devices.requests:
                exact = request.exactly
                if exact is not None and all(s.cel for s in exact.selectors):
                    self._ensure((exact.device_class_name, tuple(s.cel.expression for s in exact.selectors if s.cel)))
        for device_class in classes:
            if device_class.spec.extended_resource_name:
                self._ensure((device_class.metadata.name, ()))

    def share_demand(self, claims: Sequence[ResourceClaim]) -> ShareDemand | None:
        """The claims as N shares of one signature (see the module docstring), or None. Once per claim spec."""
        if len(claims) != 1 or self._shares is None:
            return None
        spec = claims[0].spec
        found = self._share_demands.get(id(spec))
        if found is None or found[0] is not spec:
            if len(self._share_demands) >= MAX_DEMANDS:
                self._share_demands.clear()
            found = self._share_demands[id(spec)] = (spec, self._share_demand(spec))
        return found[1]

    def _share_demand(self, spec: ResourceClaimSpec) -> ShareDemand | None:
        devices = spec.devices
        if devices.constraints or len(devices.requests) != 1:
            return None
        exact = devices.requests[0].exactly
        if exact is None or exact.admin_access or exact.capacity is None or not exact.capacity.requests:
            return None
        count = 1 if exact.count is None else exact.count
        if exact.allocation_mode not in ("", "ExactCount") or not 0 < count <= MAX_RESULTS:
            return None
        signature: Signature = (exact.device_class_name, tuple(s.cel.expression for s in exact.selectors if s.cel))
        if len(signature[1]) != len(exact.selectors) or not self._ensure(signature):
            return None
        if signature in self._served_off_node:
            return None
        try:
            requests = {name: Quantity.parse(value) for name, value in exact.capacity.requests.items()}
        except QuantityError:
            return None  # the allocator reports it in its own words
        return ShareDemand(self._canonical.get(signature, signature), count, requests, tuple(sorted(requests.items())))

    def shares_fit(self, demand: ShareDemand, node: str) -> bool | None:
        """Whether the node's matching devices have room for the demand's shares now (None: not known here)."""
        if self._shares is None or node not in self._shareable_nodes:
            return None
        key = (demand.signature, demand.key, node)
        prepared = self._prepared.get(key, _UNKNOWN)
        if prepared is _UNKNOWN:
            if len(self._prepared) >= MAX_SHARES:
                self._prepared.clear()
            prepared = self._prepared[key] = self._prepare(demand, node)
        if prepared is None:
            return None
        held = self.table.allocated.allocated_devices
        consumed = self.table.allocated.aggregated_capacity
        wanted = demand.count
        for device, needs in cast("list[tuple[DeviceID, tuple[tuple[str, int, int], ...] | None]]", prepared):
            if device in held:
                continue
            used = consumed.get(device)
            if used and needs is not None and any(
                each + (used[name].nanos if name in used else 0) > total for name, each, total in needs
            ):
                continue
            wanted -= 1
            if wanted <= 0:
                return True
        return False

    def _prepare(
        self, demand: ShareDemand, node: str
    ) -> list[tuple[DeviceID, tuple[tuple[str, int, int], ...] | None]] | None:
        """The node's matching devices that can take one share when nothing else uses them, with what the share
        needs of each capacity (None for a dedicated device: its use is all or nothing), in slice order; None when
        a device's capacity or the request is invalid (the allocator words that)."""
        out: list[tuple[DeviceID, tuple[tuple[str, int, int], ...] | None]] = []
        for record in self._matching_on(demand.signature, node):
            needs = self._needs(demand, record)
            if needs is _INVALID:
                return None
            if needs is _NEVER:
                continue  # never, whatever else uses it
            share_needs = cast("tuple[tuple[str, int, int], ...]", needs)
            out.append((record.id, share_needs if record.device.allow_multiple_allocations else None))
        return out

    def _needs(self, demand: ShareDemand, record: DeviceRecord) -> object:
        """What one share of the demand needs of each of the device's capacities (name, nanos, capacity nanos);
        ``_NEVER`` when it never fits the device, ``_INVALID`` when the capacity or request is invalid. Worked out
        once per request and capacity spec: a fleet's devices carry the same few."""
        spec = self._capacity_specs.get(record.key)
        if spec is None:
            spec = self._capacity_specs[record.key] = msgspec.json.encode(record.device.capacity)
        key = (demand.key, spec)
        found = self._needs_of.get(key)
        if found is None:
            if len(self._needs_of) >= MAX_SHARES:
                self._needs_of.clear()
            found = self._needs_of[key] = self._work_out_needs(demand, record)
        return found

    def _work_out_needs(self, demand: ShareDemand, record: DeviceRecord) -> object:
        assert self._shares is not None
        capacity = self._capacity_of(record)
        if capacity is None:
            return _INVALID
        try:
            one = share(demand.requests, capacity, fractional=self._shares.fractional)
        except CapacityError:
            return _INVALID
        if not share_fits(one, capacity, None, None):
            return _NEVER
        assert one is not None
        return tuple((name, one[0][name].nanos, cap.value.nanos) for name, cap in capacity.items())

    def _matching_on(self, signature: Signature, node: str) -> list[DeviceRecord]:
        per_node = self._matching.get(signature)
        if per_node is None:
            per_node = self._matching[signature] = {}
            for record in self._local:
                if signature in record.signatures and record.node is not None:
                    per_node.setdefault(record.node, []).append(record)
        return per_node.get(node, [])

    def _capacity_of(self, record: DeviceRecord) -> dict[str, CapacityInfo] | None:
        if record.key not in self._capacities:
            try:
                self._capacities[record.key] = {
                    name: capacity_info(name, cap, record.key) for name, cap in record.device.capacity.items()
                }
            except AllocationError:
                self._capacities[record.key] = None
        return self._capacities[record.key]

    def free(self, signature: Signature, node: str) -> int:
        return self.table.free[signature].get(node, 0)

    def exact(self, node: str) -> bool:
        """Whether free counts on this node decide feasibility for a plain demand."""
        return node in self._exact_nodes

    # ------------------------------------------------------------------------------------------ upkeep

    def _ensure(self, signature: Signature) -> bool:
        if signature in self.table.free:
            return True
        if signature in self._failed:
            return False
        class_name, request_exprs = signature
        device_class = self._classes.get(class_name)
        if device_class is None:
            self._failed.add(signature)
            return False
        exprs = [s.cel.expression for s in device_class.spec.selectors if s.cel] + list(request_exprs)
        same = self._by_exprs.get(tuple(exprs))
        if same is not None:  # another class with the same selectors (one class per extended resource, say)
            self.table.alias(signature, same)
            self._canonical[signature] = same
            if same in self._served_off_node:
                self._served_off_node.add(signature)
            return True
        try:
            programs = [self._cel.compile(e) for e in exprs]
            matches = _matcher(programs)
            matching = [r for r in self._local if matches(r.view())]
            if any(matches(r.view()) for r in self._off_node):
                self._served_off_node.add(signature)
        except CelError:
            self._failed.add(signature)  # the exact allocator reports the error in its own words
            return False
        self.table.track(signature, matching)
        self._by_exprs[tuple(exprs)] = signature
        return True


@dataclass(frozen=True)
class CapacityRules:
    """How the run's allocator compares shares (its features): ``fractional`` milli steps (1.37). Given only for
    an allocator that checks capacity by the 1.36+ rules (not the stable one, not v0.36's lenient ones)."""

    fractional: bool = False


def _matcher(programs: list[SelectorProgram]) -> Callable[[DeviceView], bool]:
    """Whether a device passes every program. Where the checker proves which attributes they read (and no cost guard
    looks at the rest), devices alike in those are evaluated once: a fleet's GPUs differ mostly in UUIDs and bus IDs."""
    reads: set[tuple[str, str]] = set()
    for program in programs:
        if program.reads is None or program.cost_guarded:
            return lambda view: all(p.evaluate(view) for p in programs)
        reads |= program.reads
    key = frozenset(reads)
    verdicts: dict[bytes, bool] = {}
    kept: dict[bytes, bytes] = {}

    def matches(view: DeviceView) -> bool:
        content = view.content_key(key, kept)
        found = verdicts.get(content)
        if found is None:
            found = verdicts[content] = all(p.evaluate(view) for p in programs)
        return found

    return matches
