"""Differential test: kubedra's DRA CEL environment (cel-cpp) against a celpy oracle (tests/cel/celpy_oracle.py).

Hypothesis draws a device (a driver, up to three attribute domains including the driver's own, int, bool,
string and version attributes, memory-like capacities) and selector expressions built from clauses over
it: mostly references to what the device has, sometimes unknown keys (an error), unknown domains (an
empty map) or an attribute of another type (a runtime type error). Both sides must agree: the same bool,
or both an error. CEL's ``&&``/``||`` absorb errors in both (``false && error`` is false).

Generated expressions stay statically well-typed for kubedra's checker (e.g. capacities are only used as
quantities), because a compile error fails the whole expression where celpy, which has no checker, could
still absorb the bad branch at runtime — a difference of phases, not of semantics.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cel_devices import make_view
from celpy_oracle import ERROR, Oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.cel import CelCompileError, CelRuntimeError, CompileCache, DeviceView
from kubedra.objects.model import Device, DeviceAttribute, DeviceCapacity

DRIVERS = ("gpu.example.com", "dra.example.com")
OTHER_DOMAINS = ("other.example.com", "gpu")
UNKNOWN_DOMAINS = ("missing.example.com", "nodomain")
IDS = ("model", "count", "ok", "ver", "index", "uuid", "memory", "cores")
INT64 = 2**63
STRING_ALPHABET = "abcAB01-._ É"
SEMVER_TEXT = ("1.2.3", "0.0.1", "1.10.0", "2.0.0-rc.1", "2.0.0-rc.2", "1.2.3+build.7", "10.0.0", "1.2.3-alpha")
PATTERNS = ("^a", "b$", "[0-9]+", "^[a-z]*$", "a.c", "(ab|AB)", ".*", "É")
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")

_cache = CompileCache()
_oracle = Oracle()


# ---------- devices ----------

small_ints = st.one_of(st.integers(-3, 12), st.integers(-INT64, INT64 - 1))
strings = st.text(STRING_ALPHABET, max_size=6)
versions = st.one_of(
    st.sampled_from(SEMVER_TEXT),
    st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)),
)
quantity_texts = st.one_of(
    st.builds(
        lambda n, s: f"{n}{s}",
        st.integers(0, 2048),
        st.sampled_from(("", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "m", "e3", "E6")),
    ),
    st.builds(lambda n, f, s: f"{n}.{f}{s}", st.integers(0, 64), st.integers(0, 99), st.sampled_from(("", "Gi", "M"))),
)
attribute_values = st.one_of(
    small_ints.map(lambda v: DeviceAttribute(int=v)),
    st.booleans().map(lambda v: DeviceAttribute(bool=v)),
    strings.map(lambda v: DeviceAttribute(string=v)),
    versions.map(lambda v: DeviceAttribute(version=v)),
)


@st.composite
def devices(draw: st.DrawFn) -> tuple[str, Device]:
    """A driver and one of its devices; attributes of the driver's domain are sometimes unqualified."""
    driver = draw(st.sampled_from(DRIVERS))
    domains = [driver, *draw(st.lists(st.sampled_from(OTHER_DOMAINS), max_size=2, unique=True))]
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    for domain in domains:
        for ident in draw(st.lists(st.sampled_from(IDS), max_size=4, unique=True)):
            name = ident if domain == driver and draw(st.booleans()) else f"{domain}/{ident}"
            attributes[name] = draw(attribute_values)
        for ident in draw(st.lists(st.sampled_from(("memory", "cores", "slots")), max_size=2, unique=True)):
            name = ident if domain == driver and draw(st.booleans()) else f"{domain}/{ident}"
            capacity[name] = DeviceCapacity(value=draw(quantity_texts))
    allow = draw(st.sampled_from((None, False, True)))
    return driver, Device(name="dev-0", attributes=attributes, capacity=capacity, allow_multiple_allocations=allow)


# ---------- expressions ----------


def lit(text: str) -> str:
    """A CEL string literal (json's escaping is valid CEL)."""
    return json.dumps(text, ensure_ascii=False)


def kinds_of(driver: str, device: Device) -> dict[tuple[str, str], str]:
    """(domain, id) → "int" | "bool" | "string" | "version" for each attribute."""
    out: dict[tuple[str, str], str] = {}
    for name, a in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        values = {"int": a.int, "bool": a.bool, "string": a.string, "version": a.version}
        out[(domain or driver, ident)] = next(k for k, v in values.items() if v is not None)
    return out


class Builder:
    """Draws clauses over one device; ``draw`` is hypothesis' draw function."""

    def __init__(self, draw: st.DrawFn, driver: str, device: Device) -> None:
        self.draw = draw
        self.driver = driver
        self.kinds = kinds_of(driver, device)
        self.capacities = [(n.rpartition("/")[0] or driver, n.rpartition("/")[2]) for n in device.capacity]
        self.domains = sorted({d for d, _ in self.kinds} | {d for d, _ in self.capacities} | {driver})

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def choose(self, options: list[Callable[[], str]]) -> str:
        """Build only the chosen option, so unused alternatives draw nothing."""
        return self.draw(st.sampled_from(options))()

    def domain_ref(self, root: str, domain: str) -> str:
        if domain.isidentifier() and self.draw(st.booleans()):
            return f"device.{root}.{domain}"
        return f"device.{root}[{lit(domain)}]"

    def ref(self, root: str, domain: str, ident: str) -> str:
        base = self.domain_ref(root, domain)
        return f"{base}.{ident}" if self.draw(st.booleans()) else f"{base}[{lit(ident)}]"

    def attribute(self, kind: str) -> str:
        """A reference meant to be of ``kind``: usually one, sometimes a missing or mistyped one."""
        matching = [k for k, v in self.kinds.items() if v == kind]
        roll = self.draw(st.integers(0, 9))
        if matching and roll < 7:
            domain, ident = self.pick(matching)
        elif roll < 8 and self.kinds:
            domain, ident = self.pick(sorted(self.kinds))
        elif roll < 9:
            domain, ident = self.pick(self.domains), self.pick(list(IDS))
        else:
            domain, ident = self.pick(list(UNKNOWN_DOMAINS)), self.pick(list(IDS))
        return self.ref("attributes", domain, ident)

    def capacity(self) -> str:
        roll = self.draw(st.integers(0, 9))
        if self.capacities and roll < 8:
            domain, ident = self.pick(self.capacities)
        elif roll < 9:
            domain, ident = self.pick(self.domains), "slots"
        else:
            domain, ident = self.pick(list(UNKNOWN_DOMAINS)), "memory"
        return self.ref("capacity", domain, ident)

    def int_literal(self) -> str:
        return str(self.draw(st.one_of(st.integers(-3, 12), st.integers(-(2**62), 2**62))))

    def quantity(self, depth: int = 0) -> str:
        roll = self.draw(st.integers(0, 9 if depth < 2 else 5))
        if roll < 4:
            return self.capacity()
        if roll < 6:
            text = self.draw(st.one_of(quantity_texts, st.sampled_from(("bogus", "1.2.3", "", "1Qi"))))
            return f"quantity({lit(text)})"
        method = self.pick(["add", "sub"])
        other = self.int_literal() if self.draw(st.booleans()) else self.quantity(depth + 1)
        return f"{self.quantity(depth + 1)}.{method}({other})"

    def semver(self) -> str:
        roll = self.draw(st.integers(0, 9))
        if roll < 6:
            return self.attribute("version")
        if roll < 8:
            return f"semver({lit(self.draw(versions))})"
        text = self.pick(["v1.2", "1.2", "01.2.3", "v2", "1.2.3", "bogus", "1.2-rc"])
        return f"semver({lit(text)}, {self.pick(['true', 'false'])})"

    def string_clause(self) -> str:
        a = self.attribute("string") if self.draw(st.integers(0, 5)) else "device.driver"
        s = lit(self.draw(strings))
        return self.choose(
            [
                lambda: f"{a} == {s}",
                lambda: f"{a} != {s}",
                lambda: f"{a} in [{s}, {lit(self.draw(strings))}]",
                lambda: f"{a}.startsWith({s})",
                lambda: f"{a}.endsWith({s})",
                lambda: f"{a}.contains({s})",
                lambda: f"{a}.matches({lit(self.pick(list(PATTERNS)))})",
                lambda: f"{a}.lowerAscii() == {s}",
                lambda: f"size({a}) {self.pick(list(CMP_OPS))} {self.draw(st.integers(0, 6))}",
                lambda: f"{a}.size() == {self.draw(st.integers(0, 6))}",
            ]
        )

    def int_clause(self) -> str:
        a = self.attribute("int")
        if self.draw(st.integers(0, 4)) == 0:
            return f"{a} in [{self.int_literal()}, {self.int_literal()}]"
        return f"{a} {self.pick(list(CMP_OPS))} {self.int_literal()}"

    def bool_clause(self) -> str:
        a = self.attribute("bool")
        return self.pick([a, f"!{a}", f"{a} == {self.pick(['true', 'false'])}", "device.allowMultipleAllocations"])

    def quantity_clause(self) -> str:
        q = self.quantity()
        op = self.pick(list(CMP_OPS))
        return self.choose(
            [
                lambda: f"{q}.compareTo({self.quantity()}) {op} {self.draw(st.integers(-1, 1))}",
                lambda: f"{q}.isGreaterThan({self.quantity()})",
                lambda: f"{q}.isLessThan({self.quantity()})",
                lambda: f"sign({q}) {op} {self.draw(st.integers(-1, 1))}",
                lambda: f"{q}.isInteger()",
                lambda: f"{q}.asInteger() {op} {self.int_literal()}",
                lambda: f"{q} == {self.quantity()}",
                lambda: f"{q} != {self.quantity()}",
                lambda: f"isQuantity({lit(self.draw(st.one_of(quantity_texts, strings)))})",
            ]
        )

    def semver_clause(self) -> str:
        v = self.semver()
        op = self.pick(list(CMP_OPS))
        n = self.draw(st.integers(0, 12))
        return self.choose(
            [
                lambda: f"{v}.major() {op} {n}",
                lambda: f"{v}.minor() {op} {n}",
                lambda: f"{v}.patch() {op} {n}",
                lambda: f"{v}.compareTo({self.semver()}) {op} {self.draw(st.integers(-1, 1))}",
                lambda: f"{v}.isGreaterThan({self.semver()})",
                lambda: f"{v}.isLessThan({self.semver()})",
                lambda: f"{v} == {self.semver()}",
                lambda: f"isSemver({lit(self.draw(versions))})",
            ]
        )

    def map_clause(self) -> str:
        root = self.pick(["attributes", "capacity"])
        domain = self.pick([*self.domains, *UNKNOWN_DOMAINS])
        base = self.domain_ref(root, domain)
        return self.choose(
            [
                lambda: f"{lit(self.pick(list(IDS)))} in {base}",
                lambda: f"{lit(domain)} in device.{root}",
                lambda: f"{base}.size() {self.pick(list(CMP_OPS))} {self.draw(st.integers(0, 4))}",
                lambda: f"size({base}) == 0",
            ]
        )

    def clause(self) -> str:
        kinds = [self.string_clause, self.int_clause, self.bool_clause, self.quantity_clause, self.semver_clause]
        return self.pick([*kinds, self.map_clause])()

    def expression(self, depth: int = 0) -> str:
        roll = self.draw(st.integers(0, 9 if depth < 3 else 0))
        if roll <= 3:
            return self.clause()
        if roll <= 5:
            return f"{self.expression(depth + 1)} && {self.expression(depth + 1)}"
        if roll <= 7:
            return f"({self.expression(depth + 1)} || {self.expression(depth + 1)})"
        if roll == 8:
            return f"!({self.expression(depth + 1)})"
        return f"({self.expression(depth + 1)} ? {self.expression(depth + 1)} : {self.expression(depth + 1)})"


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Device, list[str]]:
    """A device and a few selectors over it."""
    driver, device = draw(devices())
    builder = Builder(draw, driver, device)
    return driver, device, [builder.expression() for _ in range(draw(st.integers(1, 4)))]


# ---------- the comparison ----------


def ours(expression: str, view: DeviceView) -> bool | str:
    try:
        return _cache.compile(expression).evaluate(view)
    except (CelCompileError, CelRuntimeError):
        return ERROR




def compare(driver: str, device: Device, expression: str) -> None:
    expected = _oracle.evaluate(expression, driver, device)
    got = ours(expression, DeviceView(driver, device))
    assert got == expected, f"{expression!r} on {device!r} ({driver}): kubedra {got!r}, celpy {expected!r}"


@settings(
    max_examples=depth.examples(600, 6000),
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_kubedra_agrees_with_celpy(case: tuple[str, Device, list[str]]) -> None:
    driver, device, expressions = case
    for expression in expressions:
        compare(driver, device, expression)


# Shrunk disagreements found by the test above, kept as fixed examples (expression, attributes, capacity).
REGRESSIONS: list[Any] = [
    # kubedra bug (fixed in cel/values.py + cel/device.py): a device's capacity came back from the value memo
    # in its nano spelling, so "0" and "40Gi" were not isInteger() (and asInteger() failed) unless the same
    # value had been parsed from a literal earlier; the answer depended on history.
    ('device.capacity["dra.example.com"]["memory"].isInteger()', {}, {"memory": "0"}),
    ('device.capacity["dra.example.com"].memory.asInteger() == 42949672960', {}, {"memory": "40Gi"}),
    ('!device.capacity["dra.example.com"].cores.isInteger()', {}, {"cores": "1000m"}),
    # kubedra bug (fixed: quantity messages carry their representation, == / != / in on quantities compare values,
    # cel/analysis.py): two spellings of one value in one evaluation shared the later one's representation.
    ('quantity("1").isInteger() && !device.capacity["dra.example.com"].cores.isInteger()', {}, {"cores": "1000m"}),
    ('quantity("1") == device.capacity["dra.example.com"].cores && quantity("1").isInteger()', {}, {"cores": "1000m"}),
    ('device.capacity["dra.example.com"].cores in [quantity("1")] && !device.capacity["dra.example.com"].cores'
     '.isInteger()', {}, {"cores": "1000m"}),
    # celpy limitation (worked around in celpy_oracle._equal): CEL equality across types is false, celpy errs.
    ('device.attributes["dra.example.com"]["model"] in [0, 0]', {"model": False}, {}),
    ('device.attributes["dra.example.com"].model != 1', {"model": "x"}, {}),
    # celpy limitation (worked around in celpy_oracle._ordering): `false < 0` is no such overload in CEL.
    ('device.attributes["dra.example.com"].model < 0 || true', {"model": False}, {}),
    ('device.attributes["dra.example.com"].model < 0', {"model": False}, {}),
    # error absorption: false && error is false, true || error is true, error && true is an error.
    ('device.attributes["nodomain"].x == 1 && false', {}, {}),
    ('true || device.attributes["dra.example.com"].missing', {}, {}),
    ('device.attributes["dra.example.com"].missing && true', {}, {}),
]


@pytest.mark.parametrize(("expression", "attributes", "capacity"), REGRESSIONS)
def test_regression(expression: str, attributes: dict[str, Any], capacity: dict[str, str]) -> None:
    view = make_view(attributes, capacity)
    compare(view.driver, view.device, expression)
