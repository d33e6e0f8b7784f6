"""Consumable capacity (``consumable_capacity.go``): what one share consumes, and whether it still fits.

For every capacity of the device: a named request is rounded up by the policy (``validRange``: to ``min``, then to
``min + n*step``; ``validValues``: to the smallest valid value >= the request); an unnamed one consumes the
policy's ``default``, else the whole capacity. A device fits if no consumed amount violates the policy (unless it
equals ``default``) and already-allocated + being-allocated + this share stays within the capacity. A request
naming a capacity the device does not have skips the device.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubedra.allocator.devices import CapacityInfo
from kubedra.objects.quantity import Quantity

Amounts = Mapping[str, Quantity]


class CapacityError(ValueError):
    """A consumed amount that cannot be used (negative); upstream aborts the allocation."""


def consumed_amount(requested: Quantity | None, cap: CapacityInfo) -> Quantity:
    """What one share consumes of one capacity."""
    if requested is None:
        return cap.default if cap.default is not None else cap.value
    if not cap.has_policy:
        return requested
    if cap.range_min is not None:
        if requested < cap.range_min:
            return cap.range_min
        if cap.range_step is None:
            return requested
        return requested.rounded_up_to_multiple(cap.range_step, cap.range_min, cap.range_step.format)
    for valid in cap.valid_values:
        if requested <= valid:
            return valid
    return requested


def violates_policy(amount: Quantity, cap: CapacityInfo) -> bool:
    """Outside ``validRange`` (above max or off-step) or not one of ``validValues``; ``default`` always passes."""
    if not cap.has_policy:
        return False
    if cap.default is not None and amount == cap.default:
        return False
    if cap.range_min is not None:
        if cap.range_max is not None and amount > cap.range_max:
            return True
        step = cap.range_step
        return step is not None and step.nanos > 0 and (amount.nanos - cap.range_min.nanos) % step.nanos != 0
    if cap.valid_values:
        return all(amount != valid for valid in cap.valid_values)
    return False


def consumed_capacity(requests: Amounts | None, capacity: Mapping[str, CapacityInfo]) -> dict[str, Quantity]:
    """What one share consumes of every capacity of the device (recorded as ``consumedCapacity``)."""
    out: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        amount = consumed_amount(requests.get(name) if requests else None, cap)
        if amount.sign() < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        out[name] = amount
    return out


def fits(
    requests: Amounts | None,
    capacity: Mapping[str, CapacityInfo],
    allocated: Amounts | None,
    allocating: Amounts | None,
) -> bool:
    """Upstream's ``CmpRequestOverCapacity``; raises :class:`CapacityError` where upstream aborts."""
    if requests and any(name not in capacity for name in requests):
        return False
    consumed = consumed_capacity(requests, capacity)
    for name, cap in capacity.items():
        amount = consumed[name]
        if violates_policy(amount, cap):
            return False
        total = amount
        if allocated and name in allocated:
            total = allocated[name] + total
        if allocating and name in allocating:
            total = total + allocating[name]
        if total > cap.value:
            return False
    return True
