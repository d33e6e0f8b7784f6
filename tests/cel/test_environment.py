"""The DRA environment and every library function, table-driven: expression, device, expected bool or error."""

from __future__ import annotations

from typing import Any

import pytest
from cel_devices import make_view

from kubedra.cel import CelCompileError, CelOptions, CelRuntimeError, CompileCache

GPU = {
    "model": "A100",
    "count": 4,
    "ok": True,
    "driverVersion": "v:1.2.3",
    "other.example.com/name": "x",
    "services": "some_example_value",
}
CAP = {"memory": "40Gi", "cores": "1500m"}

# (expression, expected: bool, or "!" + runtime error substring)
CASES: list[tuple[str, Any]] = [
    ("true", True),
    ("false", False),
    ('device.driver == "dra.example.com"', True),
    ('device.attributes["dra.example.com"].model == "A100"', True),
    ('device.attributes["dra.example.com"]["model"] == "A100"', True),
    ('device.attributes["dra.example.com"].count > 3', True),
    ('device.attributes["dra.example.com"].ok', True),
    ('device.attributes["other.example.com"].name == "x"', True),
    ('"dra.example.com" in device.attributes', True),
    ('"no-such-domain" in device.attributes', False),
    ('"x" in device.attributes["no-such-domain"]', False),
    ('device.attributes["no-such-domain"].size() == 0', True),
    ('device.capacity["no-such-domain"].size() == 0', True),
    ("device.attributes.nodomain.size() == 0", True),
    ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', "!no such key: noSuchAttr"),
    ('device.attributes["dra.example.com"].nokey == 1', "!no such key: nokey"),
    ('sign(device.capacity["dra.example.com"].nokey) == 1', "!no such key: nokey"),
    ('!("name" in device.capacity["dra.example.com"]) || sign(device.capacity["dra.example.com"].name) == 1', True),
    ("device.allowMultipleAllocations == false", True),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.ok && dra.count == 4)', True),
    ('device.attributes.exists_one(x, x == "dra.example.com")', True),
    ('device.attributes["dra.example.com"].exists(k, k == "model")', True),
    ('device.attributes["dra.example.com"].services.split("example").size() >= 2', True),
    ('device.attributes["dra.example.com"].services.matches("[^a]?xam")', True),
    ('device.attributes["dra.example.com"].model', "!CEL result of type string could not be converted to bool"),
    ("1 / 0 == 1", "!division by zero"),
    # quantity library
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("1Gi")) >= 0', True),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) == 0', True),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("80Gi")) == -1', True),
    ('device.capacity["dra.example.com"].memory == quantity("40960Mi")', True),
    ('device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Mi"))', True),
    ('device.capacity["dra.example.com"].memory.isLessThan(quantity("1Mi"))', False),
    ('isQuantity("1Gi") && !isQuantity("bogus")', True),
    ('quantity("bogus") == quantity("1")', "!quantities must match the regular expression"),
    ('sign(quantity("-5")) == -1 && sign(quantity("0")) == 0 && sign(quantity("2Gi")) == 1', True),
    ('device.capacity["dra.example.com"].cores.isInteger()', False),
    ('quantity("1000m").isInteger()', False),
    ('quantity("2k").asInteger() == 2000', True),
    ('quantity("1.5").asInteger() == 1', "!cannot convert value to integer"),
    ('quantity("1Ki").asApproximateFloat() == 1024.0', True),
    ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
    ('quantity("1").add(2) == quantity("3")', True),
    ('quantity("1Ki").sub(quantity("24")).asInteger() == 1000', True),
    ('quantity("10").sub(3) == quantity("7")', True),
    # semver library
    ('device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("0.0.1"))', True),
    ('device.attributes["dra.example.com"].driverVersion.isLessThan(semver("1.10.0"))', True),
    ('device.attributes["dra.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0', True),
    ('device.attributes["dra.example.com"].driverVersion.major() == 1', True),
    ('device.attributes["dra.example.com"].driverVersion.minor() == 2', True),
    ('device.attributes["dra.example.com"].driverVersion.patch() == 3', True),
    ('semver("v1.2", true) == semver("1.2.0")', True),
    ('semver("1.0.0+build") == semver("1.0.0")', True),
    ('isSemver("1.2.3") && !isSemver("v1.2") && isSemver("v1.2", true)', True),
    ('semver("v1.2") == semver("1.2.0")', "!"),
    # lists and regex
    ("[1, 2, 3].isSorted() && ![2, 1].isSorted()", True),
    ('["a", "b"].isSorted()', True),
    ("[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0", True),
    ("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3", True),
    ("[0].filter(x, x > 0).min() == 1", "!min called on empty list"),
    ('"abc123".find("[0-9]+") == "123" && "abc".find("[0-9]") == ""', True),
    ('"a1b2c3".findAll("[0-9]") == ["1", "2", "3"] && "a1b2c3".findAll("[0-9]", 2) == ["1", "2"]', True),
    # strings extension and macros
    ('"A100".lowerAscii() == "a100" && "a,b".split(",") == ["a", "b"] && "abc".substring(1) == "bc"', True),
    ("[1, 2, 3].all(x, x > 0) && [1, 2].exists(x, x == 2) && [1, 2].exists_one(x, x == 1)", True),
    ("[1, 2].map(x, x * 2) == [2, 4] && [1, 2, 3].filter(x, x > 1) == [2, 3]", True),
    ('device.attributes[?"dra.example.com"].orValue({}).size() > 0', True),
]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_selector(cache: CompileCache, expression: str, expected: Any) -> None:
    view = make_view(GPU, CAP)
    program = cache.compile(expression)
    if isinstance(expected, str):
        with pytest.raises(CelRuntimeError) as info:
            program.evaluate(view)
        assert expected[1:] in str(info.value)
    else:
        assert program.evaluate(view) is expected


COMPILE_ERRORS = [
    ("?!", "Syntax error"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ('"a"', "must evaluate to bool or the unknown type, not string"),
    ("[1]", "must evaluate to bool or the unknown type, not list(int)"),
    ("noSuchVar", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')"),
    ("device.noSuchField", "ERROR: <input>:1:7: undefined field 'noSuchField'"),
    ("device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ('quantity("1").isLessThan(semver("1.0.0"))', "found no matching overload for 'isLessThan'"),
    ("x" * 10241, "Too long: may not be more than 10240 bytes"),
    # A global function upstream: cel-go says "found no matching overload for 'sign' applied to
    # 'kubernetes.Quantity.()'", cel-cpp "undeclared reference to 'sign'" (test_upstream_cel: compile message).
    ('quantity("1").sign() == 1', "reference to 'sign'"),
]


@pytest.mark.parametrize(("expression", "message"), COMPILE_ERRORS)
def test_compile_error(cache: CompileCache, expression: str, message: str) -> None:
    with pytest.raises(CelCompileError) as info:
        cache.compile(expression)
    assert message in str(info.value)


def test_compile_error_has_no_status_decoration(cache: CompileCache) -> None:
    with pytest.raises(CelCompileError) as info:
        cache.compile("noSuchVar")
    assert str(info.value) == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n"
        " | noSuchVar\n | ^"
    )


def test_dyn_result_compiles_and_bool_attribute_matches(cache: CompileCache) -> None:
    assert cache.compile('device.attributes["dra.example.com"].ok').evaluate(make_view(GPU)) is True


def test_unqualified_names_land_in_driver_domain(cache: CompileCache) -> None:
    view = make_view({"model": "H100"}, {"memory": "80Gi"}, driver="gpu.example.com")
    expr = (
        'device.attributes["gpu.example.com"].model == "H100" && '
        'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1"))'
    )
    assert cache.compile(expr).evaluate(view) is True


def test_allow_multiple_allocations_only_with_consumable_capacity() -> None:
    expr = "device.allowMultipleAllocations"
    assert CompileCache(CelOptions(consumable_capacity=True)).compile(expr).evaluate(make_view(allow_multiple=True))
    with pytest.raises(CelCompileError, match="undefined field 'allowMultipleAllocations'"):
        CompileCache(CelOptions(consumable_capacity=False)).compile(expr)


def test_list_attribute_values_by_release() -> None:
    view = make_view({"names": ["fish", "bird"]})
    expr = 'device.attributes["dra.example.com"].names.size() == 2'
    assert CompileCache(CelOptions(list_type_attributes=True)).compile(expr).evaluate(view) is True
    # v0.37.2 hands list values to CEL whatever the gate (conformance case diff-list-values-without-gate-1.37).
    assert CompileCache().compile(expr).evaluate(view) is True
    assert CompileCache().compile('"names" in device.attributes["dra.example.com"]').evaluate(view) is True
    # v0.36.6 without the gate fails any evaluation on such a device (diff-list-values-without-gate-1.36).
    old = CompileCache(CelOptions(lists_without_gate=False))
    with pytest.raises(CelRuntimeError, match="attribute names: unsupported attribute value"):
        old.compile("true").evaluate(view)


def test_bad_device_values_are_runtime_errors(cache: CompileCache) -> None:
    with pytest.raises(CelRuntimeError, match="attribute v: parse semantic version"):
        cache.compile("true").evaluate(make_view({"v": "v:not-a-version"}))
    with pytest.raises(CelRuntimeError, match="capacity memory"):
        cache.compile("true").evaluate(make_view(capacity={"memory": "lots"}))


def test_shadowed_device_name_is_not_rewritten(cache: CompileCache) -> None:
    expr = '[{"attributes": {"d": 1}}].all(device, device.attributes["d"] == 1)'
    assert cache.compile(expr).evaluate(make_view()) is True


def test_domain_lookup_inside_strings_and_comments_is_untouched(cache: CompileCache) -> None:
    expr = 'device.attributes["a]\\"b"].size() == 0 // device.attributes["x"]\n&& "device.attributes[\\"y\\"]" != ""'
    assert cache.compile(expr).evaluate(make_view()) is True
