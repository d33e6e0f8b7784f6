"""Nodes that are alike are decided once: the allocator's answers keyed by what the search reads, modulo names.

The search of one ``Allocate`` call reads the node's pools (in order, with their flags and counter sets), each
device's contents (attributes, capacity, counters, taints, binding conditions), which devices are in use (dedicated,
shared, capacity consumed) and the claims' specs. Pool, node and slice names reach only the results (which device)
and error texts. So two calls whose node *shape* (everything the search reads but the names), whose devices' *use*
and whose claims' specs are equal get the same answer, with the devices at the same positions: the answer is stored
as positions and replayed on the other node's devices.

Not stored (the search runs): answers that raise, that drew a shareID (the stream of IDs must advance as it would),
searches with a time budget, and nodes whose devices select nodes themselves (then the node's name and labels are
part of the shape).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.pools import Pool
from kubedra.allocator.requests import RequestData
from kubedra.allocator.state import NO_NAMES, AllocatedState
from kubedra.cel.device import kept_attributes
from kubedra.objects.model import ResourceClaim, ResourceSlice

MAX_ANSWERS = 4096
"""Remembered answers per allocator; beyond that the memory starts over (bounded, still correct)."""

Reads = frozenset[tuple[str, str]]
"""The (domain, id) device attributes the claims' selectors and constraints can read."""

Stored = tuple[list[list[tuple[RequestData, int]]], list[list[list[RequestData]]]] | None
"""Per claim its (request, device position) results and its request slots; None: the claims do not fit."""


class NodeShape:
    """The name-free shape of one node view, and its devices (those of its pools' slices) in a fixed order."""

    __slots__ = ("_use", "_use_at", "devices", "key", "pool_keys", "position")

    def __init__(self, key: object, devices: list[DeviceEntry], pool_keys: tuple[tuple[str, str], ...]) -> None:
        self.key = key
        self.devices = devices
        self.position = {entry.uid: i for i, entry in enumerate(devices)}
        self.pool_keys = pool_keys
        self._use: tuple[Any, ...] = ()
        self._use_at: tuple[int, ...] | None = None

    def use(self, state: AllocatedState) -> tuple[Any, ...]:
        """What the search sees of the devices' use. Without shares or consumed capacity anywhere: per pool, the
        names of its dedicated devices (pools alike on nodes alike have the same names). Otherwise per device:
        whether it is dedicated, and with shares what the search sees of them, recomputed only when one of its
        pools changed."""
        if not state.shares and not state.aggregated_capacity:
            names = state.dedicated_names
            keys = self.pool_keys
            if len(keys) == 1:  # most nodes: one pool
                return (names.get(keys[0], NO_NAMES),)
            return tuple([names.get(key, NO_NAMES) for key in keys])
        known = state.pool_versions
        versions = tuple([known.get(key, 0) for key in self.pool_keys])
        if versions != self._use_at:
            dedicated, shares, consumed = state.allocated_devices, state.shares, state.aggregated_capacity
            out: list[Any] = []
            for entry in self.devices:
                device = entry.id
                totals = consumed.get(device)
                if totals is None and device not in shares:
                    out.append(device in dedicated)
                    continue
                amounts = tuple(sorted((name, q.nanos) for name, q in totals.items())) if totals else ()
                out.append((device in dedicated, device in shares, amounts))
            self._use = ("per device", *out)
            self._use_at = versions
        return self._use


class ShapeBuilder:
    """Builds node shapes; slices' name-free encodings are computed once per slice."""

    def __init__(self, entries_of: Callable[[ResourceSlice], list[DeviceEntry]], with_taints: bool) -> None:
        self._entries_of = entries_of
        self._with_taints = with_taints
        self._slices: dict[tuple[int, Reads | None], tuple[ResourceSlice, bytes]] = {}
        self._ids: dict[object, int] = {}

    def _slice_key(self, slice_: ResourceSlice, reads: Reads | None) -> bytes:
        found = self._slices.get((id(slice_), reads))
        if found is None:
            spec = slice_.spec
            devices = spec.devices
            if reads is not None:  # only the attributes some selector or constraint reads (a GPU's UUID differs on
                # every node and is read by none)
                driver = spec.driver
                devices = [
                    msgspec.structs.replace(device, attributes=kept_attributes(device.attributes, driver, reads))
                    for device in devices
                ]
            nameless = msgspec.structs.replace(
                spec,
                node_name="" if spec.node_name is not None else None,
                pool=msgspec.structs.replace(spec.pool, name=""),
                devices=devices,
            )
            key = msgspec.json.encode(nameless)
            if self._with_taints:  # DeviceTaintRules may taint devices by pool or node: the taints in effect count
                key += msgspec.json.encode([e.taints for e in self._entries_of(slice_)])
            found = self._slices[id(slice_), reads] = (slice_, key)
        return found[1]

    def shape(self, pools: Sequence[Pool], node_identity: object, reads: Reads | None = None) -> NodeShape:
        parts: list[object] = [node_identity]
        devices: list[DeviceEntry] = []
        for pool in pools:
            counters = tuple(
                (name, tuple((c, q.nanos) for c, q in values.items())) for name, values in pool.counter_sets.items()
            )
            slices = tuple(self._slice_key(s, reads) for s in pool.slices)
            others = tuple(self._slice_key(s, reads) for s in pool.other_slices)
            parts.append((pool.driver, pool.incomplete, pool.invalid, counters, slices, others))
            for s in (*pool.slices, *pool.other_slices):
                devices.extend(self._entries_of(s))
        key = tuple(parts)
        shape_id = self._ids.setdefault(key, len(self._ids))
        return NodeShape(shape_id, devices, tuple((p.driver, p.name) for p in pools))


class ClaimKeys:
    """The claims' specs as one key; specs shared by many claims (a template's) are encoded once."""

    def __init__(self) -> None:
        self._specs: dict[int, tuple[object, bytes]] = {}

    def key(self, claims: Sequence[ResourceClaim]) -> tuple[bytes, ...]:
        out = []
        for claim in claims:
            spec = claim.spec
            found = self._specs.get(id(spec))
            if found is None:
                if len(self._specs) >= MAX_ANSWERS:
                    self._specs.clear()
                found = self._specs[id(spec)] = (spec, msgspec.json.encode(spec))  # holds spec: ids stay unique
            out.append(found[1])
        return tuple(out)
