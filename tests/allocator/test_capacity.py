from __future__ import annotations

from kubedra.allocator.capacity import consumed_amount, fits
from kubedra.allocator.devices import CapacityInfo
from kubedra.objects.quantity import Quantity

Q = Quantity


def _range(value: str, lo: str, step: str, hi: str | None = None) -> CapacityInfo:
    return CapacityInfo(Q(value), None, (), Q(lo), Q(hi) if hi else None, Q(step), True)


def test_valid_range_rounds_up_to_min_then_step() -> None:
    cap = _range("80Gi", "10Gi", "10Gi")
    assert consumed_amount(Q("5Gi"), cap) == Q("10Gi")
    assert consumed_amount(Q("11Gi"), cap) == Q("20Gi")
    assert consumed_amount(None, cap) == Q("80Gi")


def test_valid_values_and_totals() -> None:
    cap = CapacityInfo(Q("40Gi"), Q("10Gi"), (Q("10Gi"), Q("20Gi")), None, None, None, True)
    assert consumed_amount(Q("15Gi"), cap) == Q("20Gi")
    assert fits({"memory": Q("15Gi")}, {"memory": cap}, {"memory": Q("20Gi")}, None)
    assert not fits({"memory": Q("15Gi")}, {"memory": cap}, {"memory": Q("30Gi")}, None)
    assert not fits({"other": Q("1")}, {"memory": cap}, None, None)
