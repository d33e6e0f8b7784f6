from __future__ import annotations

from kubedra.allocator.capacity import consumed_amount, fits, violates_policy
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


def test_range_rounds_in_value_integers_unless_fractional() -> None:
    # Upstream's integer path rounds every operand up to an integer (Quantity.Value()) first;
    # with DRAFractionalCapacityRange (1.37) it works in exact milli values.
    cap = _range("4", "500m", "500m")
    assert consumed_amount(Q("1200m"), cap) == Q("2")
    assert consumed_amount(Q("1200m"), cap, fractional=True) == Q("1500m")
    assert fits({"cores": Q("1500m")}, {"cores": cap}, None, None, fractional=True)
    assert violates_policy(Q("1200m"), cap, fractional=True)
    assert not violates_policy(Q("1200m"), cap)


def test_range_result_format_by_release() -> None:
    from kubedra.objects.quantity import Format

    cap = _range("10k", "0", "1k")
    assert consumed_amount(Q("1500"), cap) == Q("2k")
    assert consumed_amount(Q("1500"), cap).format is Format.DECIMAL_SI  # v0.37.2: the step's format
    assert consumed_amount(Q("1500"), cap, lenient=True).format is Format.BINARY_SI  # v0.36.6


def test_unrepresentable_fractional_request_is_an_error() -> None:
    import pytest

    from kubedra.allocator.capacity import CapacityError, consumed_capacity

    with pytest.raises(CapacityError, match=r'capacity "cores": .*not a representable milli value'):
        consumed_capacity({"cores": Q("1500001u")}, {"cores": _range("4", "500m", "500m")}, fractional=True)
