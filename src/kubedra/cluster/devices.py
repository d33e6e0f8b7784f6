"""The cluster's one table of devices: what each device is, which selectors it matches, and who holds it now.

Three readers used to keep their own record of devices in use — the allocator's ``AllocatedState``, the scheduler's
device index (free devices per node and selector signature) and the cluster state (devices in use per node, for
scoring and the report) — each updated on every allocation and release, each building the device's
``driver/pool/device`` name again. Here one record per device holds it all, and one pass over an allocation's
results (``mark``) updates every view of it: the allocator reads ``allocated``, the device index reads ``free``,
``in_use_on`` and the records' CEL views, scoring, the report and ``explain`` read ``in_use`` and ``total``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kubedra.allocator.state import AllocatedState, Delta, DeviceID
from kubedra.objects.model import AllocationResult, ResourceSlice
from kubedra.objects.quantity import Quantity

Signature = tuple[str, tuple[str, ...]]
"""A plain device demand's selection: (class name, the request's selector expressions)."""

MAX_REMEMBERED = 256  # allocations remembered: a run reuses a few many times; more keeps garbage alive


class DeviceRecord:
    """One published device: its identity, where it is, the selector signatures it matches and whether it is held."""

    __slots__ = ("_view", "device", "id", "key", "local", "node", "pool", "signatures", "slice")

    def __init__(self, slice_: ResourceSlice, index: int, local: str) -> None:
        spec = slice_.spec
        device = spec.devices[index]
        self.slice = slice_
        self.device = device
        self.id = DeviceID(spec.driver, spec.pool.name, device.name)
        self.pool = (spec.driver, spec.pool.name)
        self.key = f"{spec.driver}/{spec.pool.name}/{device.name}"
        self.node = spec.node_name or None  # None: network-attached (a slice that is not node-local)
        self.local = local  # "<slice ordinal on the node>/<device>": the device's place on its node, pool-free
        self.signatures: list[Signature] = []
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
        self.by_key: dict[str, DeviceRecord] = {}
        self._by_slice: dict[int, list[DeviceRecord]] = {}
        self.total: dict[str, int] = {}  # node -> node-local devices published
        self.in_use: dict[str, int] = {}  # node -> node-local devices dedicated to an allocation now
        # node -> what shares use of its devices, in millionths of a device: per shared device, the largest
        # fraction of one capacity its shares consume (integers, so sums stay exact and equal nodes compare equal)
        self.share_use: dict[str, int] = {}
        self._capacity_nanos: dict[tuple[str, str], int] = {}  # (device, capacity) -> its value, parsed once
        self._in_use_on: dict[str, set[str]] = {}  # node -> local names of those devices
        self.allocated = AllocatedState(consumable_capacity=consumable_capacity)
        self.free: dict[Signature, dict[str, int]] = {}  # signature -> node -> matching devices not held
        # called with a node's name, the sign of the change (+1 taken, -1 freed) and the allocation's devices
        # (``held``) after its devices changed
        self.watchers: list[Callable[[str, int, tuple[str, ...]], None]] = []
        self._remembered: dict[int, _Entry] = {}
        ordinal: dict[str, int] = {}
        for slice_ in self.slices:
            node = slice_.spec.node_name or ""
            position = ordinal.get(node, 0)
            ordinal[node] = position + 1
            records = []
            for i, device in enumerate(slice_.spec.devices):
                record = DeviceRecord(slice_, i, f"{position}/{device.name}")
                records.append(record)
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
        """The devices an allocation occupies, as ``driver/pool/device`` (admin access occupies none). Read for
        reports too, long after the allocation's entry was forgotten: then only the names are worked out."""
        found = self._remembered.get(id(allocation))
        if found is not None and found.allocation is allocation:
            return found.held
        return tuple(f"{r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results if not r.admin_access)

    # ------------------------------------------------------------------------------------------ selectors

    def track(self, signature: Signature, matching: Iterable[DeviceRecord]) -> None:
        """Count, per node, the devices matching a signature that no allocation holds, from now on."""
        free: dict[str, int] = {}
        held = self.allocated.allocated_devices
        self._remembered.clear()  # what each allocation changes per signature includes this one from now on
        for record in matching:
            record.signatures.append(signature)
            if record.node is not None and record.id not in held:
                free[record.node] = free.get(record.node, 0) + 1
        self.free[signature] = free

    def alias(self, signature: Signature, same: Signature) -> None:
        """A signature that selects exactly the devices of another (another class with the same selectors)."""
        self.free[signature] = self.free[same]

    # ------------------------------------------------------------------------------------------ upkeep

    def _entry(self, allocation: AllocationResult) -> _Entry:
        """What an allocation changes, remembered per allocation object (the allocator hands the same result
        objects to every node alike in the same state, and each allocation is released again)."""
        found = self._remembered.get(id(allocation))
        if found is None or found.allocation is not allocation:
            results = allocation.devices.results
            by_key = self.by_key
            if len(results) == 1:  # the usual one device held whole: its record says it all (at once: not kept)
                only = results[0]
                record = by_key.get(f"{only.driver}/{only.pool}/{only.device}")
                if record is not None and not only.admin_access and only.share_id is None:
                    return _single(allocation, record)
            records = [by_key.get(f"{r.driver}/{r.pool}/{r.device}") for r in results]
            ids = [
                (record.id, record.pool) if record is not None else (DeviceID(r.driver, r.pool, r.device),
                                                                      (r.driver, r.pool))
                for r, record in zip(results, records, strict=True)
            ]
            delta = self.allocated.delta(results, ids)
            by_id = {device: record for (device, _), record in zip(ids, records, strict=True)}
            held = tuple(str(device) for r, (device, _) in zip(results, ids, strict=True) if not r.admin_access)
            nodes = tuple(dict.fromkeys(record.node for record in records if record is not None and record.node))
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            found = _Entry(allocation, delta, _per_node([by_id[device] for device in delta.dedicated]), nodes, held)
            self._remembered[id(allocation)] = found
        return found

    def mark(self, allocation: AllocationResult, sign: int) -> tuple[str, ...]:
        """An allocation made (+1) or released (-1): every view of its devices changes in this one pass. Returns
        the devices it occupies (``held``), for the caller's event."""
        found = self._remembered.get(id(allocation))
        if found is None or found.allocation is not allocation:
            found = self._entry(allocation)
        shared = found.delta.shared
        before = [self.share_use_of(device) for _, device in shared] if shared else None
        changed = self.allocated.apply(found.delta, sign)
        if before is not None:
            self._shares_changed(shared, before)
        if changed:
            # Devices that became held or free: node-local ones change their node's counts (usually all of the
            # allocation's at once; else those ``apply`` reports).
            per_node = found.per_node
            if changed is not found.delta.dedicated:
                per_node = _per_node([self.by_key.get(str(device)) for device in changed])
            in_use_on, in_use, free = self._in_use_on, self.in_use, self.free
            for node, local_names, signatures in per_node:
                on_node = in_use_on.get(node)
                if on_node is None:
                    on_node = in_use_on[node] = set()
                if sign > 0:
                    on_node.update(local_names)
                else:
                    on_node.difference_update(local_names)
                in_use[node] = in_use.get(node, 0) + sign * len(local_names)
                for signature, count in signatures:
                    counts = free[signature]
                    counts[node] = counts.get(node, 0) - sign * count
        for watcher in self.watchers:
            for node in found.nodes:
                watcher(node, sign, found.held)
        return found.held


    def capacity_nanos(self, record: DeviceRecord, name: str) -> int:
        """One capacity of a device, in nanos (0 where the device does not have it), parsed once."""
        total = self._capacity_nanos.get((record.key, name))
        if total is None:
            capacity = record.device.capacity.get(name)
            total = self._capacity_nanos[record.key, name] = (
                Quantity.parse(capacity.value).nanos if capacity is not None else 0
            )
        return total

    def has_room(self, record: DeviceRecord, more: Mapping[str, int]) -> bool:
        """Whether the device's capacities hold what its shares consume now plus ``more`` (nanos per capacity), as
        the allocator compares them."""
        consumed = self.allocated.aggregated_capacity.get(record.id)
        for name, amount in more.items():
            used = consumed.get(name) if consumed else None
            if amount + (used.nanos if used is not None else 0) > self.capacity_nanos(record, name):
                return False
        return True

    def share_use_of(self, device: DeviceID) -> int:
        """How much of one shared device its shares use: the largest consumed fraction of any of its capacities."""
        consumed = self.allocated.aggregated_capacity.get(device)
        record = self.by_key.get(str(device))
        if not consumed or record is None:
            return 0
        most = 0
        for name, amount in consumed.items():
            total = self.capacity_nanos(record, name)
            if total > 0:
                most = max(most, min(amount.nanos * USE_SCALE // total, USE_SCALE))
        return most

    def _shares_changed(self, shared: Sequence[tuple[Any, DeviceID]], before: list[int]) -> None:
        seen: set[DeviceID] = set()
        for (_, device), was in zip(shared, before, strict=True):
            if device in seen:
                continue
            seen.add(device)
            record = self.by_key.get(str(device))
            if record is None or record.node is None:
                continue
            now = self.share_use_of(device)
            if now != was:
                self.share_use[record.node] = self.share_use.get(record.node, 0) + now - was

    def device_use(self, node: str) -> float:
        """Devices of the node in use: whole ones, plus the shares' use of shared ones (a GPU half consumed: 0.5)."""
        return self.in_use.get(node, 0) + self.share_use.get(node, 0) / USE_SCALE


USE_SCALE = 1_000_000


PerNode = tuple[tuple[str, tuple[str, ...], tuple[tuple[Signature, int], ...]], ...]
"""Per node: the local names of an allocation's devices there, and how many of them match each signature."""


def _per_node(records: Iterable[DeviceRecord | None]) -> PerNode:
    names: dict[str, list[str]] = {}
    matching: dict[str, dict[Signature, int]] = {}
    for record in records:
        if record is None or record.node is None:
            continue
        names.setdefault(record.node, []).append(record.local)
        counts = matching.setdefault(record.node, {})
        for signature in record.signatures:
            counts[signature] = counts.get(signature, 0) + 1
    return tuple((node, tuple(local), tuple(matching[node].items())) for node, local in names.items())


def _single(allocation: AllocationResult, record: DeviceRecord) -> _Entry:
    """``_entry`` of an allocation of one device held whole (no admin access, no share): what ``delta`` and
    ``_per_node`` work out for it, built straight from its record."""
    device = record.id
    delta = Delta((record.pool,), (device,), ((record.pool, frozenset((device.device,))),), ())
    node = record.node
    if node is None:
        return _Entry(allocation, delta, (), (), (record.key,))
    counts: dict[Signature, int] = {}
    for signature in record.signatures:
        counts[signature] = counts.get(signature, 0) + 1
    return _Entry(allocation, delta, ((node, (record.local,), tuple(counts.items())),), (node,), (record.key,))


class _Entry(msgspec.Struct, frozen=True, gc=False):
    """What one allocation changes (untracked by the garbage collector, as ``Delta``)."""

    allocation: AllocationResult  # held, so that its id stays unique while remembered
    delta: Delta  # what it changes in the allocator's state
    per_node: PerNode  # what holding ``delta.dedicated`` changes per node (the published, node-local ones)
    nodes: tuple[str, ...]  # nodes whose devices it touches
    held: tuple[str, ...]  # "driver/pool/device" of every device it occupies (admin access occupies none)
