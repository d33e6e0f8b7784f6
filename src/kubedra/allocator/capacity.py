"""Consumable capacity (``consumable_capacity.go``): what one share consumes, and whether it still fits.

For every capacity of the device: a named request is rounded up by the policy (``validRange``: to ``min``, then to
``min + n*step``; ``validValues``: to the smallest valid value >= the request); an unnamed one consumes the
policy's ``default``, else the whole capacity. A device fits if no consumed amount violates the policy (unless it
equals ``default``) and already-allocated + being-allocated + this share stays within the capacity. A request
naming a capacity the device does not have skips the device.

Range arithmetic is upstream's: ``Value()`` integers (rounded up), or with DRAFractionalCapacityRange
(``fractional``, 1.37) milli values when every bound is one. ``lenient`` is v0.36.6's ``consumable_capacity.go``:
a rounded range value is built in BinarySI (v0.37.2 uses the step's format) and a negative consumed amount is
not an error.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubedra.allocator.devices import CapacityInfo
from kubedra.objects.quantity import Format, Quantity

Amounts = Mapping[str, Quantity]


class CapacityError(ValueError):
    """A consumed amount that cannot be used (negative, or not representable); upstream aborts the allocation."""


_NANO = 10**9
_MILLI = 10**6


def _value(q: Quantity) -> int:
    """``Quantity.Value()``: rounded up to an integer."""
    return -((-q.nanos) // _NANO)


def _exact_milli(q: Quantity) -> int | None:
    """``safeMilliValue``: the milli value if it is lossless."""
    return q.nanos // _MILLI if q.nanos % _MILLI == 0 else None


def _use_milli(cap: CapacityInfo, fractional: bool) -> bool:
    """``useMilli``: DRAFractionalCapacityRange on, every range bound a lossless milli value, step at least 1m."""
    if not fractional:
        return False
    for q in (cap.range_min, cap.range_max, cap.range_step):
        if q is not None and _exact_milli(q) is None:
            return False
    step = cap.range_step
    return step is None or step.nanos >= _MILLI


def _div_up(added: int, step: int) -> int:
    """Go's ``added / step``, plus one when there is a remainder (truncating division)."""
    n = abs(added) // abs(step) * (1 if (added >= 0) == (step > 0) else -1)
    return n + 1 if added - n * step != 0 else n


def _round_up_range(  # noqa: PLR0917
    requested: Quantity, low: Quantity, step: Quantity, cap: CapacityInfo, lenient: bool, fractional: bool
) -> Quantity:
    """``roundUpRange``: in milli values with DRAFractionalCapacityRange, else in ``Value()`` integers."""
    if _use_milli(cap, fractional):
        req = _exact_milli(requested)
        if req is None:
            raise CapacityError(f"{_UNREPRESENTABLE}: request {requested} is not a representable milli value")
        low_m, step_m = low.nanos // _MILLI, step.nanos // _MILLI
        total = low_m + step_m * _div_up(req - low_m, step_m)
        if total % 1000 == 0:
            return Quantity.from_int(total // 1000, step.format)
        return Quantity.from_scaled(total, -3, step.format)
    low_i, step_i = _value(low), _value(step)
    total = low_i + step_i * _div_up(_value(requested) - low_i, step_i)
    return Quantity.from_int(total, Format.BINARY_SI if lenient else step.format)


_UNREPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"


def consumed_amount(
    requested: Quantity | None, cap: CapacityInfo, *, lenient: bool = False, fractional: bool = False
) -> Quantity:
    """What one share consumes of one capacity (``calculateConsumedCapacity``)."""
    if requested is None:
        return cap.default if cap.default is not None else cap.value
    if not cap.has_policy:
        return requested
    if cap.range_min is not None:
        if requested < cap.range_min:
            return cap.range_min
        if cap.range_step is None or cap.range_step.nanos == 0:
            return requested
        return _round_up_range(requested, cap.range_min, cap.range_step, cap, lenient, fractional)
    for valid in cap.valid_values:
        if requested <= valid:
            return valid
    return requested


def violates_policy(amount: Quantity, cap: CapacityInfo, *, fractional: bool = False) -> bool:
    """Outside ``validRange`` (above max or off-step) or not one of ``validValues``; ``default`` always passes."""
    if not cap.has_policy:
        return False
    if cap.default is not None and amount == cap.default:
        return False
    if cap.range_min is not None:
        if cap.range_max is not None and amount > cap.range_max:
            return True
        step = cap.range_step
        if step is None or step.nanos == 0:
            return False
        if _use_milli(cap, fractional):
            got = _exact_milli(amount)
            return got is None or (got - cap.range_min.nanos // _MILLI) % (step.nanos // _MILLI) != 0
        return (_value(amount) - _value(cap.range_min)) % _value(step) != 0
    if cap.valid_values:
        return all(amount != valid for valid in cap.valid_values)
    return False


def consumed_capacity(
    requests: Amounts | None, capacity: Mapping[str, CapacityInfo], *, lenient: bool = False, fractional: bool = False
) -> dict[str, Quantity]:
    """What one share consumes of every capacity of the device (recorded as ``consumedCapacity``)."""
    out: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        try:
            requested = requests.get(name) if requests else None
            amount = consumed_amount(requested, cap, lenient=lenient, fractional=fractional)
        except CapacityError as exc:
            raise CapacityError(f'capacity "{name}": {exc}') from exc
        if not lenient and amount.sign() < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        out[name] = amount
    return out


Share = tuple[dict[str, Quantity], bool]
"""What one share of a request consumes of each capacity of a device, and whether the device's policies allow it."""


def share(
    requests: Amounts | None, capacity: Mapping[str, CapacityInfo], *, lenient: bool = False, fractional: bool = False
) -> Share | None:
    """One share of ``requests`` on a device with ``capacity``; None when a request names a capacity the device does
    not have (the device is skipped). Depends on neither device's use: the search keeps it per device and request
    (``DeviceEntry.shares``)."""
    if requests and any(name not in capacity for name in requests):
        return None
    consumed = consumed_capacity(requests, capacity, lenient=lenient, fractional=fractional)
    allowed = not any(violates_policy(consumed[name], cap, fractional=fractional) for name, cap in capacity.items())
    return consumed, allowed


def share_fits(
    found: Share | None, capacity: Mapping[str, CapacityInfo], allocated: Amounts | None, allocating: Amounts | None
) -> bool:
    """Whether the share still fits beside what is allocated and being allocated (values compared, as Cmp does)."""
    if found is None:
        return False
    consumed, allowed = found
    if not allowed:
        return False
    for name, cap in capacity.items():
        total = consumed[name].nanos
        if allocated and name in allocated:
            total += allocated[name].nanos
        if allocating and name in allocating:
            total += allocating[name].nanos
        if total > cap.value.nanos:
            return False
    return True


def fits(
    requests: Amounts | None,
    capacity: Mapping[str, CapacityInfo],
    allocated: Amounts | None,
    allocating: Amounts | None,
    *,
    lenient: bool = False,
    fractional: bool = False,
) -> bool:
    """Upstream's ``CmpRequestOverCapacity``; raises :class:`CapacityError` where upstream aborts."""
    if not requests:
        plain = all(not c.has_policy and c.value.sign() >= 0 for c in capacity.values())
        if plain and not allocated and not allocating:
            return True  # each capacity consumes exactly its whole (valid) value, and nothing else is using it
    return share_fits(share(requests, capacity, lenient=lenient, fractional=fractional), capacity, allocated,
                      allocating)
