"""The Allocator: objects and allocated state in, one decision per node out.

Upstream's contract (``structured.Allocator.Allocate``): a list with one result per claim when they fit, ``None``
when they do not fit on this node (incomplete pools included), :class:`AllocationError` for fatal input,
:class:`NodeAllocationFailed` for what only concerns this node, :class:`SearchBudgetExceeded` when the step or
time budget runs out. Everything that does not depend on the claims (device entries, pools per node, selector
verdicts, available counters) is computed once and reused by later calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubedra.allocator.answers import MAX_ANSWERS, ClaimKeys, NodeShape, Reads, ShapeBuilder, Stored
from kubedra.allocator.compatibility import CompatibilityState, CounterSetGroups, allocated_groups
from kubedra.allocator.counters import PoolCounters, available_counters
from kubedra.allocator.devices import CapacityInfo, DeviceEntry
from kubedra.allocator.errors import INVALID_POOLS, NodeAllocationFailed
from kubedra.allocator.features import Features
from kubedra.allocator.pools import Pool, gather_pools
from kubedra.allocator.requests import RequestData
from kubedra.allocator.results import NodeSelectors, build_result, replay
from kubedra.allocator.search import NodeView, Result, Search
from kubedra.allocator.selectors import Compiler, SelectorMemo
from kubedra.allocator.state import AllocatedState, DeviceID
from kubedra.objects.model import AllocationResult, DeviceClass, DeviceTaintRule, Node, ResourceClaim, ResourceSlice

REUSE_TRIAL = 256
REUSE_MIN_SHARE = 16
"""After ``REUSE_TRIAL`` lookups, answers are no longer kept unless at least one lookup in ``REUSE_MIN_SHARE`` was
answered from them (a cluster whose nodes are seldom alike, or claims that seldom repeat): the search alone is then
cheaper. Decisions are the same either way."""


def _uuid4(_key: str) -> str:
    return str(uuid.uuid4())


class Allocator:
    """The structured allocator for one snapshot of slices, classes and allocated state."""

    def __init__(  # noqa: PLR0917 - mirrors upstream NewAllocator
        self,
        features: Features,
        state: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        cel: Compiler,
        taint_rules: Sequence[DeviceTaintRule] = (),
        step_budget: int | None = None,
        *,
        share_ids: Callable[[str], str] = _uuid4,
        interrupt: Callable[[], bool] | None = None,
        pool_order: Callable[[list[Pool]], list[Pool]] | None = None,
        reuse_answers: bool = True,
        device_views: Callable[[ResourceSlice, int], Any] | None = None,
    ) -> None:
        """``pool_order`` reorders the gathered pools of a node. Upstream's stable variant walks its pools in Go map
        order, which is random; kubedra uses (driver, name) order, and a differential test passes ``pool_order`` to
        reproduce any other order upstream may have taken. ``reuse_answers`` off searches on every call (the
        reference the reused answers of nodes alike are checked against). ``device_views(slice, i)`` hands out CEL
        views of devices built elsewhere (the cluster's device table), so each device's view is built once."""
        self.features = features
        self.state = state
        self.classes = dict(classes)
        self.slices = list(slices)
        self.step_budget = step_budget
        self.share_ids = self._counted_share_ids
        self._new_share_id = share_ids
        self._draws = 0
        self.interrupt = interrupt
        self.pool_order = pool_order
        self.reuse_answers = reuse_answers
        self._device_views = device_views
        self._reusing = reuse_answers
        self._lookups = 0
        self._binding_conditions = features.binding_and_status
        self._config_per_request = features.config_per_request
        self.memo = SelectorMemo(cel, names_device=features.cel_error_names_device)
        self._rules = [r for r in taint_rules if self._rule_active(r)] if features.taint_rules_apply else []
        self._on_node: dict[str, list[ResourceSlice]] = {}
        self._shared: list[ResourceSlice] = []
        # Upstream's NewAllocator splits slices by node name; v0.36.6 keeps every slice with sharedCounters
        # with the slices of all nodes (``allocator_incubating.go``).
        everywhere = features.counter_slices_everywhere
        for s in self.slices:
            if s.spec.node_name and not (everywhere and s.spec.shared_counters):
                self._on_node.setdefault(s.spec.node_name, []).append(s)
            else:
                self._shared.append(s)
        self._entries: dict[int, list[DeviceEntry]] = {}
        self._capacities: dict[int, tuple[Any, dict[str, CapacityInfo]]] = {}
        self._views: dict[tuple[str, tuple[tuple[str, str], ...]], NodeView] = {}
        self._last_views: dict[str, tuple[Node, NodeView]] = {}
        self._available: dict[
            tuple[str, str], tuple[int, dict[tuple[str, str], int], dict[str, CompatibilityState] | None]
        ] = {}
        self.last_steps = 0
        """``allocateOne`` calls of the last :meth:`allocate` (upstream's ``NumAllocateOneInvocations``)."""
        self._shapes = ShapeBuilder(self.entries, with_taints=bool(self._rules))
        self._claim_keys = ClaimKeys()
        self._reads: dict[tuple[bytes, ...], Reads | None] = {}
        self._answers: dict[tuple[object, ...], tuple[Stored, int]] = {}
        self._built: dict[tuple[object, ...], list[AllocationResult]] = {}
        self._first_built: dict[tuple[object, ...], list[AllocationResult]] = {}  # per answer, on the first node
        self._node_selectors = NodeSelectors()
        self.answers_reused = 0
        """Calls answered from a node alike (see ``answers``), for tests and benchmarks."""

    @property
    def draws(self) -> int:
        """ShareIDs drawn so far: a caller replaying an earlier answer must know the stream did not advance."""
        return self._draws

    def _counted_share_ids(self, key: str) -> str:
        """A shareID for the share ``key`` names (claim, request, device, ordinal); see ``seeded_share_ids``."""
        self._draws += 1
        return self._new_share_id(key)

    @property
    def taint_rules(self) -> list[DeviceTaintRule]:
        """The DeviceTaintRules in effect (those whose taints the devices carry)."""
        return self._rules

    def _rule_active(self, rule: DeviceTaintRule) -> bool:
        # Since 1.37 a rule without deviceSelector selects no device; before, it selected every device.
        return rule.spec.device_selector is not None or self.features.release < "1.37"

    def entries(self, slice_: ResourceSlice) -> list[DeviceEntry]:
        """The prepared devices of a slice (built on first use)."""
        found = self._entries.get(id(slice_))
        if found is None:
            base = len(self._entries) << 10
            hide = self.features.stable
            devices = slice_.spec.devices
            views = self._device_views
            found = [
                DeviceEntry(base + i, slice_, d, self._rules, hide_multi=hide,
                            view=views(slice_, i) if views is not None else None, capacities=self._capacities)
                for i, d in enumerate(devices)
            ]
            self._entries[id(slice_)] = found
        return found

    def node_view(self, node: Node) -> NodeView:
        """The pools of a node and its devices in search order (cached per node name and labels)."""
        same = self._last_views.get(node.metadata.name)
        if same is not None and same[0] is node:  # the same Node object: its labels are the ones the view has
            return same[1]
        key = (node.metadata.name, tuple(sorted(node.metadata.labels.items())))
        view = self._views.get(key)
        if view is None:
            # allocator_stable.go gathers pools from every slice, in input order.
            stable = self.features.stable
            slices = self.slices if stable else self._on_node.get(node.metadata.name, []) + self._shared
            pools = gather_pools(slices, node, self.features, self.slices)
            if self.pool_order is not None:
                pools = self.pool_order(pools)
            flat = [(e, p) for p in pools if p.usable for s in p.slices for e in self.entries(s)]
            view = self._views[key] = NodeView(node, pools, flat)
        self._last_views[node.metadata.name] = (node, view)
        return view

    def _pool_counters(self, pool: Pool) -> PoolCounters:
        key = (pool.driver, pool.name)
        cached = self._available.get(key)
        # Only the pool's own devices consume its counters: changes elsewhere leave the cache valid.
        version = self.state.pool_version(*key)
        if cached is None or cached[0] != version:
            entries = [e for s in (*pool.slices, *pool.other_slices) for e in self.entries(s)]
            baseline = (
                allocated_groups(entries, self.state.is_allocated) if self.features.compatibility_groups else None
            )
            cached = (version, available_counters(pool, entries, self.state.is_allocated), baseline)
            self._available[key] = cached
        return PoolCounters(cached[1], CounterSetGroups(cached[2]) if cached[2] is not None else None)

    def new_search(self, node: Node, claims: Sequence[ResourceClaim], view: NodeView | None = None) -> Search:
        """A prepared search (for :meth:`allocate` and for diagnosis); ``view``: the node's devices in another order."""
        search = Search(
            view if view is not None else self.node_view(node),
            claims,
            self.features,
            self.classes,
            self.state,
            self.memo,
            self.entries,
            self._pool_counters,
            self.share_ids,
            self.step_budget,
            self.interrupt,
        )
        search.prepare()
        return search

    def allocate(  # noqa: PLR0912 - the preferring search, then answer reuse
        self, node: Node, claims: Sequence[ResourceClaim], *, prefer: Sequence[DeviceID] = ()
    ) -> list[AllocationResult] | None:
        """One result per claim if all claims fit on the node, ``None`` if they do not.

        ``prefer``: devices the search tries first, in that order, before the node's others in their usual order —
        a scheduling policy's choice of device within the node (kube-scheduler's DRA plugin has none: it never
        passes one). Such a call searches afresh (answers of nodes alike hold for the usual order only).

        Raises:
            AllocationError: fatal input (CEL errors, unknown class, unsupported mode, too many devices...).
            NodeAllocationFailed: only this node is affected ("invalid resource pools were encountered").
            SearchBudgetExceeded: the step (or time) budget ran out before an answer.
        """
        self.last_steps = 0
        if prefer:
            return self._allocate_preferring(node, claims, prefer)
        same = self._last_views.get(node.metadata.name)
        view = same[1] if same is not None and same[0] is node else self.node_view(node)
        key: tuple[object, ...] | None = None
        shape: NodeShape | None = None
        if self._reusing and self.interrupt is None:
            claims_key = self._claim_keys.key(claims)
            reads = self._reads_of(claims, claims_key)
            shape = view.shape if view.shape is not None and view.shape_reads == reads else self._shape(view, reads)
            key = (shape.key, shape.use(self.state), claims_key)
            stored = self._answers.get(key)
            self._lookups += 1
            seldom = self.answers_reused * REUSE_MIN_SHARE < self._lookups
            if stored is None and self._lookups >= REUSE_TRIAL and seldom:
                self._stop_reusing()  # hardly any node is alike another here: keeping answers only costs
            elif stored is not None:
                self.answers_reused += 1
                answer, self.last_steps = stored
                if answer is None:
                    self._refused(view)
                    return None
                # Allocation results are never modified once built: the same node in the same state gets the
                # same objects again.
                built = self._built.get((key, id(view)))
                if built is None:
                    devices = shape.devices
                    results: list[list[Result]] = [[(rd, devices[pos], None, None) for rd, pos in chosen]
                                                   for chosen in answer[0]]
                    built = self._remember_built((key, id(view)), self._replayed(key, node, claims, answer[1], results))
                return list(built)
        draws = self._draws
        search = self.new_search(node, claims)
        try:
            found = search.run()
        finally:
            self.last_steps = search.steps
        if key is not None and shape is not None and self._reusing and self._draws == draws:
            if len(self._answers) >= MAX_ANSWERS:
                self._answers.clear()
            positions = shape.position
            kept = [[(rd, positions[entry.uid]) for rd, entry, _, _ in chosen] for chosen in search.results]
            for claim_slots in search.slots:
                for alternatives in claim_slots:
                    for rd in alternatives:  # results are built from a request's name, class and flags only
                        rd.candidates, rd.positions, rd.all_devices, rd.constraints = None, [], [], []
            self._answers[key] = ((kept, search.slots) if found else None, search.steps)
        if not found:
            self._refused(view)
            return None
        return self._results(node, claims, search.slots, search.results)

    def _allocate_preferring(
        self, node: Node, claims: Sequence[ResourceClaim], prefer: Sequence[DeviceID]
    ) -> list[AllocationResult] | None:
        """``allocate`` over the node's devices with ``prefer`` moved to the front (a view of its own)."""
        usual = self.node_view(node)
        rank = {device: i for i, device in enumerate(prefer)}
        first = sorted((item for item in usual.flat if item[0].id in rank), key=lambda item: rank[item[0].id])
        view = NodeView(node, usual.pools, first + [item for item in usual.flat if item[0].id not in rank])
        search = self.new_search(node, claims, view)
        try:
            found = search.run()
        finally:
            self.last_steps = search.steps
        if not found:
            self._refused(view)
            return None
        return self._results(node, claims, search.slots, search.results)

    def _stop_reusing(self) -> None:
        self._reusing = False
        self._answers.clear()
        self._built.clear()
        self._first_built.clear()

    def _replayed(
        self,
        key: tuple[object, ...],
        node: Node,
        claims: Sequence[ResourceClaim],
        slots: list[list[list[RequestData]]],
        results: list[list[Result]],
    ) -> list[AllocationResult]:
        """The results of a stored answer on ``node``: built in full on the first node it is replayed on, then
        copied with each node's names (``results.replay``)."""
        first = self._first_built.get(key)
        if first is None:
            first = self._results(node, claims, slots, results)
            if len(self._first_built) >= MAX_ANSWERS:
                self._first_built.clear()
            self._first_built[key] = first
            return first
        name, selectors = node.metadata.name, self._node_selectors
        return [replay(done, results[i], name, claims[i], selectors) for i, done in enumerate(first)]

    def _remember_built(self, key: tuple[object, ...], built: list[AllocationResult]) -> list[AllocationResult]:
        if len(self._built) >= MAX_ANSWERS:
            self._built.clear()
        self._built[key] = built
        return built

    def _shape(self, view: NodeView, reads: Reads | None) -> NodeShape:
        """The view's shape for claims that read ``reads`` (the last one asked is kept on the view)."""
        shapes = view.shapes
        if shapes is None:
            shapes = view.shapes = {}
        found = shapes.get(reads)
        if found is None:
            node = view.node
            # Devices that select nodes themselves make the node's name and labels part of what the search reads.
            identity = (
                (node.metadata.name, tuple(sorted(node.metadata.labels.items())))
                if any(e.per_device_nodes for e, _ in view.flat)
                else None
            )
            found = shapes[reads] = self._shapes.shape(view.pools, identity, reads)
        view.shape, view.shape_reads = found, reads
        return found

    def _reads_of(self, claims: Sequence[ResourceClaim], claims_key: tuple[bytes, ...]) -> Reads | None:
        """The device attributes the claims' searches can read: their selectors' and their classes' (as the CEL
        checker proves them), and their constraints'; None when some selector could read any."""
        if claims_key in self._reads:
            return self._reads[claims_key]
        if len(self._reads) >= MAX_ANSWERS:
            self._reads.clear()
        found = self._reads[claims_key] = self._claims_reads(claims)
        return found

    def _claims_reads(self, claims: Sequence[ResourceClaim]) -> Reads | None:
        reads: set[tuple[str, str]] = set()
        for claim in claims:
            devices = claim.spec.devices
            for request in devices.requests:
                for sub in [request.exactly] if request.exactly is not None else request.first_available:
                    if sub.derived_attributes is not None:
                        return None
                    device_class = self.classes.get(sub.device_class_name)
                    if device_class is None:
                        return None
                    for selector in (*device_class.spec.selectors, *sub.selectors):
                        if selector.cel is None:
                            continue
                        program = self.memo.program(selector.cel.expression)
                        # (A cost-guarded program's verdict also depends on the sizes of every attribute.)
                        if isinstance(program, str) or program.reads is None or program.cost_guarded:
                            return None
                        reads |= program.reads
            for constraint in devices.constraints:
                for name in (constraint.match_attribute, constraint.distinct_attribute):
                    if name is None:
                        continue
                    domain, sep, ident = name.partition("/")
                    if not sep:
                        return None
                    reads.add((domain, ident))
        return frozenset(reads)

    @staticmethod
    def _refused(view: NodeView) -> None:
        """No fit: ``None`` to the caller, unless an invalid pool is why (then only this node failed)."""
        if any(p.invalid for p in view.pools):
            raise NodeAllocationFailed(INVALID_POOLS)

    def _results(
        self,
        node: Node,
        claims: Sequence[ResourceClaim],
        slots: list[list[list[RequestData]]],
        results: list[list[Result]],
    ) -> list[AllocationResult]:
        return [
            build_result(
                claim,
                slots[i],
                results[i],
                node.metadata.name,
                binding_conditions=self._binding_conditions,
                config_per_request=self._config_per_request,
                selectors=self._node_selectors,
            )
            for i, claim in enumerate(claims)
        ]
