"""Per-device data computed once per Allocator: identity, parsed quantities, taints, attribute lookups, CEL view."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubedra.allocator.errors import AllocationError
from kubedra.allocator.state import DeviceID
from kubedra.allocator.taints import Taint, blocking_taints
from kubedra.objects.model import Device, DeviceAttribute, DeviceCapacity, DeviceTaintRule, ResourceSlice
from kubedra.objects.quantity import Quantity, QuantityError


def parse_quantity(text: str, where: str) -> Quantity:
    """A quantity from the input; a malformed one is a fatal input error naming where it is."""
    try:
        return Quantity.parse(text)
    except QuantityError as exc:
        raise AllocationError(f"{where}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class CapacityInfo:
    """One capacity of a device with its request policy parsed."""

    value: Quantity
    default: Quantity | None
    valid_values: tuple[Quantity, ...]
    range_min: Quantity | None
    range_max: Quantity | None
    range_step: Quantity | None
    has_policy: bool


def capacity_info(name: str, cap: DeviceCapacity, where: str) -> CapacityInfo:
    """A device capacity with its request policy parsed (``AllocationError`` naming ``where`` for bad values)."""
    where = f"{where}, capacity {name}"
    policy = cap.request_policy
    if policy is None:
        return CapacityInfo(parse_quantity(cap.value, where), None, (), None, None, None, False)
    rng = policy.valid_range
    return CapacityInfo(
        value=parse_quantity(cap.value, where),
        default=parse_quantity(policy.default, where) if policy.default is not None else None,
        valid_values=tuple(parse_quantity(v, where) for v in policy.valid_values),
        range_min=parse_quantity(rng.min, where) if rng is not None else None,
        range_max=parse_quantity(rng.max, where) if rng is not None and rng.max is not None else None,
        range_step=parse_quantity(rng.step, where) if rng is not None and rng.step is not None else None,
        has_policy=True,
    )


_PLAIN: dict[tuple[str, str], CapacityInfo] = {}
MAX_CAPACITIES = 4096  # capacity maps parsed per allocator (``DeviceEntry``'s ``capacities``)


def _plain_capacity(name: str, value: str, where: str) -> CapacityInfo:
    """``capacity_info`` of a capacity without a request policy, parsed once per name and value (every GPU of a
    fleet has the same few): the parsed value is immutable, and only a malformed one, never kept, names ``where``."""
    found = _PLAIN.get((name, value))
    if found is None:
        found = CapacityInfo(parse_quantity(value, f"{where}, capacity {name}"), None, (), None, None, None, False)
        if len(_PLAIN) >= 4096:
            _PLAIN.clear()
        _PLAIN[name, value] = found
    return found


class DeviceEntry:
    """One device of one slice, with everything the search reads prepared once."""

    __slots__ = (
        "_attrs",
        "_view",
        "capacity",
        "consumes",
        "device",
        "groups",
        "has_binding_conditions",
        "hide_multi",
        "id",
        "multi",
        "per_device_nodes",
        "shares",
        "slice",
        "taints",
        "uid",
    )

    def __init__(
        self,
        uid: int,
        slice_: ResourceSlice,
        device: Device,
        rules: Sequence[DeviceTaintRule],
        *,
        hide_multi: bool = False,
        view: Any = None,
        capacities: dict[int, tuple[Any, dict[str, CapacityInfo]]] | None = None,
    ) -> None:
        """``view``: the device's CEL view when one is built already (not used where ``hide_multi`` changes it).
        ``capacities``: parsed capacities by the identity of a device's capacity map, kept by the caller: a fleet's
        devices share one map, so it is parsed once and the parsed one shared (it is only read)."""
        spec = slice_.spec
        self.uid = uid
        self.id = DeviceID(spec.driver, spec.pool.name, device.name)
        self.device = device
        self.slice = slice_
        self.per_device_nodes = bool(spec.per_device_node_selection)
        # no own taint and no rule (most devices): no taint, without the call
        self.taints: tuple[Taint, ...] = (
            blocking_taints(device.taints, rules, spec.driver, spec.pool.name, device.name)
            if device.taints or rules else ()
        )
        consumptions = device.consumes_counters
        where = f"ResourceSlice {slice_.metadata.name}, device {device.name}" if consumptions else ""
        self.consumes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = tuple(
            (
                c.counter_set,
                tuple(
                    (name, parse_quantity(counter.value, f"{where}, counter {c.counter_set}/{name}").nanos)
                    for name, counter in c.counters.items()
                ),
            )
            for c in consumptions
        ) if consumptions else ()
        self.groups: tuple[tuple[str, frozenset[str]], ...] = tuple(
            (c.counter_set, frozenset(c.compatibility_groups)) for c in consumptions
        ) if consumptions else ()
        """Per counter consumption, the compatibility groups named (read only with DRADeviceCompatibilityGroups)."""
        capacity = device.capacity
        parsed = capacities.get(id(capacity)) if capacities is not None else None
        if parsed is None or parsed[0] is not capacity:
            where = where or f"ResourceSlice {slice_.metadata.name}, device {device.name}"
            parsed = (capacity, {
                name: _plain_capacity(name, cap.value, where) if cap.request_policy is None
                else capacity_info(name, cap, where)
                for name, cap in capacity.items()
            })
            if capacities is not None:
                if len(capacities) >= MAX_CAPACITIES:
                    capacities.clear()
                capacities[id(capacity)] = parsed  # holds the map: its id stays unique
        self.capacity: dict[str, CapacityInfo] = parsed[1]
        self.multi = bool(device.allow_multiple_allocations)
        self.has_binding_conditions = bool(device.binding_conditions)
        self.hide_multi = hide_multi
        # one share per request shape (``Search._share``): static, so kept with the device
        self.shares: dict[tuple[object, ...], tuple[dict[str, Quantity], bool] | None] = {}
        self._attrs: dict[str, DeviceAttribute | None] = {}
        self._view: Any = view if not (hide_multi and device.allow_multiple_allocations) else None

    def attribute(self, name: str) -> DeviceAttribute | None:
        """Upstream's ``lookupAttribute``: the fully qualified name, else the bare id in the driver's domain."""
        try:
            return self._attrs[name]
        except KeyError:
            pass
        attrs = self.device.attributes
        found = attrs.get(name)
        if found is None:
            domain, sep, ident = name.partition("/")
            if sep and domain == self.id.driver:
                found = attrs.get(ident)
        self._attrs[name] = found
        return found

    def view(self) -> Any:
        """The CEL ``device`` variable, built on first use.

        The stable variant (``allocator_stable.go`` ``selectorsMatch``) never passes ``allowMultipleAllocations``
        to CEL, so there it reads as false (``hide_multi``).
        """
        if self._view is None:
            from kubedra.cel import DeviceView

            device = self.device
            if self.hide_multi and device.allow_multiple_allocations:
                device = msgspec.structs.replace(device, allow_multiple_allocations=None)
            self._view = DeviceView(self.id.driver, device)
        return self._view

    def __repr__(self) -> str:
        return f"DeviceEntry({self.id})"
