"""The deterministic cost guard that stands in for cel-go's runtime cost limit."""

from __future__ import annotations

import pytest
from cel_devices import make_view

from kubedra.cel import CelRuntimeError, CompileCache

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
EXPENSIVE = (
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)  # upstream's "expensive" case: cost 85,555,551


def test_runaway_expression_is_stopped(cache: CompileCache) -> None:
    program = cache.compile(EXPENSIVE)
    assert program.cost_guarded
    with pytest.raises(CelRuntimeError, match="operation cancelled: actual cost limit exceeded"):
        program.evaluate(make_view())


def test_cheap_expression_is_not_guarded(cache: CompileCache) -> None:
    assert not cache.compile(f"{TEN}.all(x, {TEN}.all(y, x + y > 0))").cost_guarded


def test_guard_uses_the_devices_actual_sizes(cache: CompileCache) -> None:
    # 32 domains x 32 keys nested four deep is over the limit in the worst case, tiny on a real device.
    expr = (
        "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))"
    )
    program = cache.compile(expr)
    assert program.cost_guarded
    assert program.evaluate(make_view({"model": "x"})) is True
