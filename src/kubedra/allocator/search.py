"""The depth-first search of upstream's allocator: first solution wins.

``allocateOne`` and ``allocateDevice`` upstream, step for step (the number of ``allocate_one`` calls matches
upstream's ``NumAllocateOneInvocations``). The incubating and experimental variants try combinations within a
request (the next device starts after the previous one); the stable variant (``allocator_stable.go``, chosen
when :attr:`Features.stable`) restarts at the first device every time, so it tries permutations.

What upstream recomputes on every visit is prepared once here: each request gets the list of devices that pass
its static checks (selectors, per-device node selection, binding conditions, static capacity), in search order,
and the search only walks that list.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubedra.allocator.capacity import CapacityError, Share, fits, share, share_fits
from kubedra.allocator.counters import PoolCounters
from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.errors import AllocationError, SearchBudgetExceeded
from kubedra.allocator.features import Features
from kubedra.allocator.nodes import NodeSelectorError, node_matches
from kubedra.allocator.pools import Pool
from kubedra.allocator.requests import (
    MAX_RESULTS,
    Candidate,
    RequestData,
    build_request,
    claim_constraints,
    claim_ref,
)
from kubedra.allocator.selectors import SelectorMemo
from kubedra.allocator.state import AllocatedState, DeviceID
from kubedra.allocator.taints import untolerated
from kubedra.objects.model import DeviceClass, ExactDeviceRequest, Node, ResourceClaim
from kubedra.objects.quantity import Quantity

MAX_SHARES_PER_DEVICE = 256  # request shapes whose share a device keeps; beyond that it starts over


class _MaxSize(Exception):  # noqa: N818 - a control-flow signal, like upstream's errAllocationResultMaxSizeExceeded
    """More than 32 devices would be needed for the claim on this path."""


class NodeFailure:
    """A per-device node selector that cannot be parsed, raised when the search reaches the device."""

    def __init__(self, message: str) -> None:
        self.message = message

    def error(self, claim: str) -> AllocationError:  # noqa: ARG002
        return AllocationError(self.message)


Result = tuple[RequestData, DeviceEntry, str | None, dict[str, Quantity] | None]
"""One chosen device: request, device, shareID, consumed capacity."""


class NodeView:
    """The pools of one node and the devices the search may walk, in search order."""

    def __init__(self, node: Node, pools: list[Pool], flat: list[tuple[DeviceEntry, Pool]]) -> None:
        self.node = node
        self.pools = pools
        self.flat = flat
        self.shape: Any = None
        """The view's name-free shape (``answers.NodeShape``), built on first use by the allocator, for the attributes
        ``shape_reads`` (the claims asked last); ``shapes`` holds one per attribute set asked."""
        self.shape_reads: Any = None
        self.shapes: dict[Any, Any] | None = None


class Search:
    """One ``Allocate`` call: prepare the requests, then search."""

    def __init__(  # noqa: PLR0917
        self,
        view: NodeView,
        claims: Sequence[ResourceClaim],
        features: Features,
        classes: dict[str, DeviceClass],
        state: AllocatedState,
        memo: SelectorMemo,
        entries_of: Callable[[Any], list[DeviceEntry]],
        available: Callable[[Pool], PoolCounters],
        new_share_id: Callable[[str], str],
        step_budget: int | None,
        interrupt: Callable[[], bool] | None,
    ) -> None:
        self.view = view
        self.claims = claims
        self.features = features
        self.classes = classes
        self.state = state
        self.memo = memo
        self.entries_of = entries_of
        self.available = available
        self.new_share_id = new_share_id
        self.step_budget = step_budget
        self.interrupt = interrupt
        self.steps = 0
        self.slots: list[list[list[RequestData]]] = []
        self.results: list[list[Result]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Quantity]] = {}
        self.counters: dict[tuple[str, str], PoolCounters] = {}
        self.stable = features.stable
        self.lenient = features.lenient_capacity
        self.fractional = features.fractional_capacity_range
        # v0.37.2 counts a share without consumedCapacity as capacity in use; v0.36.6 does not.
        self.shared_ids: Mapping[DeviceID, int] = state.shares if not self.lenient else {}
        self.refs = [claim_ref(c) for c in claims]

    # ------------------------------------------------------------------------------------------ preparation

    def prepare(self) -> None:  # noqa: PLR0912
        """Validate every claim and request, in upstream's order and with its messages."""
        f = self.features
        per_request_limit = f.code != "1.36"  # v0.37.2 checks the limit request by request, v0.36.3 per claim
        for ci, claim in enumerate(self.claims):
            ref = self.refs[ci]
            slots: list[list[RequestData]] = []
            min_claim = 0
            for request in claim.spec.devices.requests:
                if not f.prioritized_list and request.first_available:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                if not f.consumable_capacity and not self.stable:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise AllocationError(
                            f"claim {ref}, request {request.name}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in request.first_available:
                        if sub.capacity is not None:
                            raise AllocationError(
                                f"claim {ref}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                alternatives: list[RequestData] = []
                if request.first_available:
                    for sub in request.first_available:
                        alternatives.append(self._validated(ci, claim, sub, sub.name, request.name))
                else:
                    exact = request.exactly if request.exactly is not None else ExactDeviceRequest()
                    alternatives.append(self._validated(ci, claim, exact, request.name, None))
                least = min(rd.num_devices for rd in alternatives)
                if per_request_limit and least > MAX_RESULTS - min_claim:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: adding {least} devices exceeds the claim limit of "
                        f"{MAX_RESULTS}, with {min_claim} already accounted for"
                    )
                min_claim += least
                slots.append(alternatives)
            if not per_request_limit and min_claim > MAX_RESULTS:  # v0.36.3: the claim's total, after every request
                raise AllocationError(
                    f"claim {ref}: number of requested devices {min_claim} exceeds the claim limit of {MAX_RESULTS}")
            constraints = claim_constraints(claim, f)
            for alternatives in slots:
                for rd in alternatives:
                    sub_name = rd.name if rd.parent is not None else ""
                    rd.constraints = [c for c in constraints if c.covers(rd.base, sub_name)]
            self.slots.append(slots)

    def _validated(self, ci: int, claim: ResourceClaim, req: Any, name: str, parent: str | None) -> RequestData:
        rd = build_request(ci, claim, req, name, parent, self.features, self.classes)
        if rd.mode_all:
            self._gather_all(rd)
        return rd

    def _gather_all(self, rd: RequestData) -> None:
        ref = self.refs[rd.claim_index]
        for pool in self.view.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"claim {ref}, request {rd.name}: asks for all devices, "
                    f"but resource pool {pool.id} is currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"claim {ref}, request {rd.name}: asks for all devices, "
                    f"but resource pool {pool.id} is currently invalid"
                )
            for slice_ in pool.slices:
                for entry in self.entries_of(slice_):
                    verdict = self._selectable(rd, entry)
                    if verdict is False:
                        continue
                    if verdict is not True:
                        raise verdict.error(ref)
                    if self.features.consumable_capacity:
                        # v0.37.2 checks static capacity only (allocateDevice sees what is in use);
                        # v0.36.6 already subtracts the capacity of allocated shares here.
                        in_use = self.state.aggregated_capacity.get(entry.id) if self.lenient else None
                        try:
                            ok = self._fits(rd, entry, in_use, None)
                        except CapacityError as exc:
                            raise AllocationError(
                                f"claim {ref}, request {rd.name}: "
                                f"checking capacity for device {entry.device.name}: {exc}"
                            ) from exc
                        if not ok:
                            continue
                    rd.all_devices.append(Candidate(0, entry, (pool.driver, pool.name)))
        rd.num_devices = len(rd.all_devices)

    def _selectable(self, rd: RequestData, entry: DeviceEntry) -> Any:
        if entry.has_binding_conditions and not self.features.binding_and_status:
            return False
        verdict = self.memo.verdict(entry, rd.class_obj.metadata.name, rd.class_exprs, rd.request_exprs)
        if verdict is not True:
            return verdict
        if entry.per_device_nodes:
            d = entry.device
            try:
                if not node_matches(self.view.node, d.node_name or "", bool(d.all_nodes), d.node_selector):
                    return False
            except NodeSelectorError as exc:
                return NodeFailure(f"failed to parse node selector: {exc}")
        return True

    def _candidates(self, rd: RequestData) -> list[Candidate]:
        found: list[Candidate] = []
        check_capacity = self.features.consumable_capacity
        for pos, (entry, pool) in enumerate(self.view.flat):
            verdict = self._selectable(rd, entry)
            if verdict is False:
                continue
            if verdict is True:
                verdict = None
                if check_capacity and not entry.capacity and rd.capacity:
                    continue
            found.append(
                Candidate(pos, entry, (pool.driver, pool.name), verdict, check_capacity and bool(entry.capacity))
            )
        rd.candidates = found
        rd.positions = [c.pos for c in found]
        return found

    # ------------------------------------------------------------------------------------------ the search

    def run(self) -> bool:
        """Search; ``True`` when every claim got its devices (then :attr:`results` holds them)."""
        return self.allocate_one(0, 0, 0, 0, False, 0)

    def _in_use(self, device: DeviceID) -> bool:
        return device in self.state.allocated_devices or bool(self.allocating.get(device))

    def _capacity_in_use(self, device: DeviceID) -> bool:
        return (
            device in self.state.aggregated_capacity or device in self.shared_ids or device in self.allocating_capacity
        )

    def allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:  # noqa: C901, PLR0912, PLR0915, PLR0917
        self.steps += 1
        if self.step_budget is not None and self.steps > self.step_budget:
            raise SearchBudgetExceeded(f"search step budget of {self.step_budget} exhausted", self.steps)
        if self.interrupt is not None and not self.steps & 255 and self.interrupt():
            raise SearchBudgetExceeded(f"search time budget exhausted after {self.steps} steps", self.steps)
        if ci >= len(self.claims):
            return True
        slots = self.slots[ci]
        if ri >= len(slots):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, 0)
            except _MaxSize:
                return False
        alternatives = slots[ri]
        rd = alternatives[si]
        if not in_sub and rd.parent is not None:
            all_exceeded = True
            for index in range(len(alternatives)):
                try:
                    ok = self.allocate_one(ci, ri, index, di, True, 0)
                except _MaxSize:
                    continue
                all_exceeded = False
                if ok:
                    alternatives[0].selected = index
                    return True
            if all_exceeded:
                raise _MaxSize
            return False
        if rd.mode_all and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False, 0)
        if rd.num_devices - di > MAX_RESULTS - len(self.results[ci]):
            raise _MaxSize
        if rd.mode_all:
            token = self.allocate_device(rd, rd.all_devices[di], must=True)
            if token is None:
                return False
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, 0)
            except BaseException:
                self.rollback(token)
                raise
            if not done:
                self.rollback(token)
            return done
        candidates = rd.candidates if rd.candidates is not None else self._candidates(rd)
        first = bisect_left(rd.positions, start) if start and not self.stable else 0
        admin = rd.admin
        allocating = self.allocating
        allocated = self.state.allocated_devices
        for k in range(first, len(candidates)):
            cand = candidates[k]
            device = cand.entry.id
            if admin:
                owners = allocating.get(device)
                if owners and ci in owners:
                    continue
            elif device in allocated or allocating.get(device):
                continue
            if cand.failure is not None:
                raise cand.failure.error(self.refs[ci])
            if cand.capacity_check and not self._capacity_fits(rd, cand.entry, "checking"):
                continue
            token = self.allocate_device(rd, cand, must=False)
            if token is None:
                continue
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, cand.pos + 1)
            except BaseException:
                self.rollback(token)
                raise
            if done:
                return True
            self.rollback(token)
        return False

    def _share_key(self, rd: RequestData, entry: DeviceEntry) -> str:
        """What a new share is (claim, request, device, how many of its shares the claim holds already): its ID
        is drawn from this, not from a stream, so it does not depend on the nodes and branches tried before."""
        ci = rd.claim_index
        nth = sum(1 for r, e, share, _ in self.results[ci] if share is not None and e.id == entry.id and r is rd)
        return f"{self.refs[ci]}/{rd.name}/{entry.id}/{nth}"

    def _share(self, rd: RequestData, entry: DeviceEntry) -> Share:
        """One share of the request on the device, worked out once per device and request (``capacity.share``);
        only for a request the device has every named capacity for (the callers checked ``_fits`` first)."""
        found = self._shares_of(rd, entry)
        assert found is not None
        return found

    def _shares_of(self, rd: RequestData, entry: DeviceEntry) -> Share | None:
        requests = rd.capacity
        key = (tuple(requests.items()) if requests else (), self.lenient, self.fractional)
        shares = entry.shares
        if key in shares:
            return shares[key]
        found = share(requests, entry.capacity, lenient=self.lenient, fractional=self.fractional)
        if len(shares) >= MAX_SHARES_PER_DEVICE:
            shares.clear()
        shares[key] = found
        return found

    def _fits(
        self, rd: RequestData, entry: DeviceEntry, allocated: Mapping[str, Quantity] | None,
        allocating: Mapping[str, Quantity] | None,
    ) -> bool:
        """``capacity.fits`` with the share kept per device and request: the search asks it of every device it tries,
        and only the use beside it changes."""
        if not rd.capacity:
            return fits(None, entry.capacity, allocated, allocating, lenient=self.lenient, fractional=self.fractional)
        return share_fits(self._shares_of(rd, entry), entry.capacity, allocated, allocating)

    def _capacity_fits(self, rd: RequestData, entry: DeviceEntry, verb: str) -> bool:
        try:
            return self._fits(
                rd, entry, self.state.aggregated_capacity.get(entry.id), self.allocating_capacity.get(entry.id)
            )
        except CapacityError as exc:
            raise AllocationError(
                f"claim {self.refs[rd.claim_index]}, request {rd.name}: {verb} capacity for device {entry.id}: {exc}"
            ) from exc

    def _pool_counters(self, cand: Candidate) -> PoolCounters:
        counters = self.counters.get(cand.counters_key)
        if counters is None:
            pool = next(p for p in self.view.pools if (p.driver, p.name) == cand.counters_key)
            counters = self.counters[cand.counters_key] = self.available(pool)
        return counters

    def allocate_device(self, rd: RequestData, cand: Candidate, *, must: bool) -> tuple[Any, ...] | None:  # noqa: C901, PLR0912
        """Take one device for a request; a rollback token, or ``None`` when it cannot be used now."""
        f = self.features
        entry = cand.entry
        device = entry.id
        ci = rd.claim_index
        multi = f.consumable_capacity and entry.multi
        owners = self.allocating.get(device)
        if not multi and rd.admin and owners and ci in owners:
            return None
        if not rd.admin and (device in self.state.allocated_devices or owners):
            return None
        if entry.consumes and not f.partitionable_devices:
            return None
        counters: PoolCounters | None = None
        if entry.consumes and not (multi and self._capacity_in_use(device)):
            counters = self._pool_counters(cand)
            if not counters.reserve(entry):
                return None
        if f.device_taints and entry.taints and untolerated(entry.taints, rd.tolerations) is not None:
            if counters is not None:
                counters.release(entry)
            return None
        added = 0
        for constraint in rd.constraints:
            if not constraint.add(rd.base, entry):
                self._undo(rd, entry, counters, added, False, None)
                if must:
                    raise AllocationError(
                        f"claim {self.refs[ci]}, request {rd.name}: cannot add device {device} "
                        "because a claim constraint would not be satisfied"
                    )
                return None
            added += 1
        marked = False
        if not multi:
            if owners is None:
                owners = self.allocating[device] = set()
            owners.add(ci)
            marked = True
        share_id: str | None = None
        consumed: dict[str, Quantity] | None = None
        cap_undo: tuple[dict[str, Quantity], bool] | None = None
        if f.consumable_capacity:
            try:
                ok = self._fits(
                    rd, entry, self.state.aggregated_capacity.get(device), self.allocating_capacity.get(device)
                )
            except CapacityError as exc:
                self._undo(rd, entry, counters, added, marked, None)
                raise AllocationError(
                    f"claim {self.refs[ci]}, request {rd.name}: rechecking capacity for device {device}: {exc}"
                ) from exc
            if not ok:
                self._undo(rd, entry, counters, added, marked, None)
                return None
            if multi:
                consumed = dict(self._share(rd, entry)[0])
                share_id = self.new_share_id(self._share_key(rd, entry))
                existed = device in self.allocating_capacity
                totals = self.allocating_capacity.setdefault(device, {})
                for name, amount in consumed.items():
                    totals[name] = totals[name] + amount if name in totals else amount
                cap_undo = (consumed, existed)
        self.results[ci].append((rd, entry, share_id, consumed or None))
        return (rd, entry, counters, added, marked, cap_undo)

    def _undo(  # noqa: PLR0917
        self,
        rd: RequestData,
        entry: DeviceEntry,
        counters: PoolCounters | None,
        added: int,
        marked: bool,
        cap_undo: tuple[dict[str, Quantity], bool] | None,
    ) -> None:
        device = entry.id
        if cap_undo is not None:
            consumed, existed = cap_undo
            totals = self.allocating_capacity.get(device)
            if totals is not None:
                for name, amount in consumed.items():
                    if name in totals:
                        totals[name] = totals[name] - amount
                if all(q.is_zero() for q in totals.values()):
                    del self.allocating_capacity[device]
                if existed and device not in self.allocating_capacity:
                    self.allocating_capacity[device] = {}
        if marked:
            owners = self.allocating.get(device)
            if owners is not None:
                owners.discard(rd.claim_index)
        for constraint in reversed(rd.constraints[:added]):
            constraint.remove(rd.base, entry)
        if counters is not None:
            counters.release(entry)

    def rollback(self, token: tuple[Any, ...]) -> None:
        """Undo a successful :meth:`allocate_device` while backtracking."""
        rd, entry, counters, added, marked, cap_undo = token
        self.results[rd.claim_index].pop()
        self._undo(rd, entry, counters, added, marked, cap_undo)
