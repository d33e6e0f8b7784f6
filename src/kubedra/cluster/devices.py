"""The cluster's one table of devices: what each device is, which selectors it matches, and who holds it now.

Three readers used to keep their own record of devices in use — the allocator's ``AllocatedState``, the scheduler's
device index (free devices per node and selector signature) and the cluster state (devices in use per node, for
scoring and the report) — each updated on every allocation and release, each building the device's
``driver/pool/device`` name again. Here one record per device holds it all, and one pass over an allocation's
results (``mark``) updates every view of it: the allocator reads ``allocated``, the device index reads ``free``,
``in_use_on`` and the records' CEL views, scoring, the report and ``explain`` read ``in_use`` and ``total``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kubedra.allocator.state import AllocatedState, DeviceID
from kubedra.objects.model import AllocationResult, DeviceRequestAllocationResult, ResourceSlice

Signature = tuple[str, tuple[str, ...]]
"""A plain device demand's selection: (class name, the request's selector expressions)."""

MAX_REMEMBERED = 4096  # allocations whose records are remembered (a run reuses a few results many times over)


class DeviceRecord:
    """One published device: its identity, where it is, the selector signatures it matches and whether it is held."""

    __slots__ = ("_view", "device", "holds", "id", "index", "key", "local", "node", "pool", "signatures", "slice")

    def __init__(self, slice_: ResourceSlice, index: int, local: str) -> None:
        spec = slice_.spec
        device = spec.devices[index]
        self.slice = slice_
        self.index = index
        self.device = device
        self.id = DeviceID(spec.driver, spec.pool.name, device.name)
        self.pool = (spec.driver, spec.pool.name)
        self.key = f"{spec.driver}/{spec.pool.name}/{device.name}"
        self.node = spec.node_name or None  # None: network-attached (a slice that is not node-local)
        self.local = local  # "<slice ordinal on the node>/<device>": the device's place on its node, pool-free
        self.signatures: list[Signature] = []
        self.holds = 0  # allocations holding the device dedicated (admin access and shares do not)
        self._view: Any = None

    def view(self) -> Any:
        """The CEL ``device`` variable, built on first use and shared by every reader."""
        if self._view is None:
            from kubedra.cel import DeviceView

            self._view = DeviceView(self.id.driver, self.device)
        return self._view


class DeviceTable:
    """See the module docstring. Built from the cluster's slices; changed only through ``mark``."""

    def __init__(self, slices: Sequence[ResourceSlice], *, consumable_capacity: bool = True) -> None:
        self.slices = list(slices)
        self.records: list[DeviceRecord] = []
        self.by_key: dict[str, DeviceRecord] = {}
        self._by_slice: dict[int, list[DeviceRecord]] = {}
        self.total: dict[str, int] = {}  # node -> node-local devices published
        self.in_use: dict[str, int] = {}  # node -> node-local devices dedicated to an allocation now
        self._in_use_on: dict[str, set[str]] = {}  # node -> local names of those devices
        self.allocated = AllocatedState(consumable_capacity=consumable_capacity)
        self.free: dict[Signature, dict[str, int]] = {}  # signature -> node -> matching devices not held
        self.watchers: list[Callable[[str], None]] = []  # called with a node's name after its devices changed
        self._remembered: dict[int, tuple[AllocationResult, list[tuple[DeviceRequestAllocationResult,
                                                                        DeviceRecord | None]], tuple[str, ...]]] = {}
        ordinal: dict[str, int] = {}
        for slice_ in self.slices:
            node = slice_.spec.node_name or ""
            position = ordinal.get(node, 0)
            ordinal[node] = position + 1
            records = []
            for i, device in enumerate(slice_.spec.devices):
                record = DeviceRecord(slice_, i, f"{position}/{device.name}")
                records.append(record)
                self.records.append(record)
                known = self.by_key.get(record.key)
                # A name published twice: the newest pool generation's (what the allocator reads), else the last.
                if known is None or known.slice.spec.pool.generation <= slice_.spec.pool.generation:
                    self.by_key[record.key] = record
            self._by_slice[id(slice_)] = records
            if node:
                self.total[node] = self.total.get(node, 0) + len(records)

    # ------------------------------------------------------------------------------------------ reading

    def of_slice(self, slice_: ResourceSlice) -> list[DeviceRecord]:
        """The records of one slice, in its device order (empty for a slice the table was not built from)."""
        return self._by_slice.get(id(slice_), [])

    def view_of(self, slice_: ResourceSlice, index: int) -> Any:
        """The shared CEL view of a slice's device (for the allocator's device entries)."""
        records = self._by_slice.get(id(slice_))
        if records is None or records[index].device is not slice_.spec.devices[index]:
            return None
        return records[index].view()

    def node_of(self, key: str) -> str | None:
        """The node a ``driver/pool/device`` lives on (None: unknown or network-attached)."""
        record = self.by_key.get(key)
        return record.node if record is not None else None

    def in_use_on(self, node: str) -> frozenset[str]:
        """The node's devices dedicated to an allocation now, named by slice position and device (no pool)."""
        return frozenset(self._in_use_on.get(node, ()))

    def held(self, allocation: AllocationResult) -> tuple[str, ...]:
        """The devices an allocation occupies, as ``driver/pool/device`` (admin access occupies none)."""
        return self._entry(allocation)[2]

    # ------------------------------------------------------------------------------------------ selectors

    def track(self, signature: Signature, matching: Iterable[DeviceRecord]) -> None:
        """Count, per node, the devices matching a signature that no allocation holds, from now on."""
        free: dict[str, int] = {}
        for record in matching:
            record.signatures.append(signature)
            if record.node is not None and not record.holds:
                free[record.node] = free.get(record.node, 0) + 1
        self.free[signature] = free

    def alias(self, signature: Signature, same: Signature) -> None:
        """A signature that selects exactly the devices of another (another class with the same selectors)."""
        self.free[signature] = self.free[same]

    # ------------------------------------------------------------------------------------------ upkeep

    def _entry(
        self, allocation: AllocationResult
    ) -> tuple[AllocationResult, list[tuple[DeviceRequestAllocationResult, DeviceRecord | None]], tuple[str, ...]]:
        """An allocation's results with their records, and the devices it holds; remembered per allocation object
        (the allocator hands the same result objects to every node alike in the same state)."""
        found = self._remembered.get(id(allocation))
        if found is None or found[0] is not allocation:
            results = allocation.devices.results
            by_key = self.by_key
            pairs = [(r, by_key.get(f"{r.driver}/{r.pool}/{r.device}")) for r in results]
            held = tuple(
                record.key if record is not None else f"{r.driver}/{r.pool}/{r.device}"
                for r, record in pairs
                if not r.admin_access
            )
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            found = self._remembered[id(allocation)] = (allocation, pairs, held)
        return found

    def mark(self, allocation: AllocationResult, sign: int) -> None:
        """An allocation made (+1) or released (-1): every view of its devices changes in this one pass."""
        found = self._remembered.get(id(allocation))
        if found is None or found[0] is not allocation:
            found = self._entry(allocation)
        change = self.allocated.change
        touched: list[str] = []
        for result, record in found[1]:
            if record is None:  # not published (a stale or hand-written allocation): the allocator still counts it
                change(result, DeviceID(result.driver, result.pool, result.device), (result.driver, result.pool), sign)
                continue
            change(result, record.id, record.pool, sign)
            node = record.node
            if node is None:
                continue
            if node not in touched:
                touched.append(node)
            if result.admin_access or result.share_id:
                continue  # a share or an admin's view does not take the device from others
            self._hold(record, node, sign)
        for watcher in self.watchers:
            for node in touched:
                watcher(node)

    def _hold(self, record: DeviceRecord, node: str, sign: int) -> None:
        """One more (+1) or one less (-1) allocation holds the device; free counts change when it becomes held or
        free."""
        holds = record.holds
        record.holds = holds + sign if holds + sign > 0 else 0
        if (holds > 0) == (record.holds > 0):
            return
        on_node = self._in_use_on.get(node)
        if on_node is None:
            on_node = self._in_use_on[node] = set()
        if sign > 0:
            on_node.add(record.local)
        else:
            on_node.discard(record.local)
        self.in_use[node] = self.in_use.get(node, 0) + sign
        for signature in record.signatures:
            counts = self.free[signature]
            counts[node] = counts.get(node, 0) - sign
