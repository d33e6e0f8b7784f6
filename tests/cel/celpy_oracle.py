"""A second, independent DRA CEL environment on celpy (cel-python), used only as a test oracle.

It shares nothing with ``kubedra.cel`` but the value types: ``kubedra.objects.quantity.Quantity`` and
``kubedra.objects.semver.Semver`` travel through celpy as plain Python objects, and the Kubernetes
library functions are written here again, directly on those objects. Quantity and semver share the
names ``compareTo``/``isGreaterThan``/``isLessThan``; celpy has one namespace for functions, so they
dispatch on the Python type. celpy's ``InterpretedRunner`` is used (its CompiledRunner has bugs,
see python-deps.md §1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import base_functions

from kubedra.objects.model import Device, DeviceAttribute
from kubedra.objects.quantity import Quantity
from kubedra.objects.semver import Semver

ERROR = "error"
"""The oracle's verdict for an expression that fails to compile or evaluate."""


class DomainMap(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: an unknown domain is an empty map, as in Kubernetes."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and not super().__contains__(key):
            return celtypes.MapType({})
        return super().__getitem__(key)


def _attribute(attribute: DeviceAttribute) -> Any:
    if attribute.int is not None:
        return celtypes.IntType(attribute.int)
    if attribute.bool is not None:
        return celtypes.BoolType(attribute.bool)
    if attribute.string is not None:
        return celtypes.StringType(attribute.string)
    if attribute.version is not None:
        return Semver.parse(attribute.version)
    raise ValueError("unsupported attribute value")


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_value(driver: str, device: Device) -> celtypes.MapType:
    """The ``device`` variable for ``device`` of ``driver``, shaped as Kubernetes shapes it."""
    attributes: dict[str, dict[celtypes.StringType, Any]] = {}
    for name, attribute in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[celtypes.StringType(ident)] = _attribute(attribute)
    capacity: dict[str, dict[celtypes.StringType, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[celtypes.StringType(ident)] = Quantity.parse(cap.value)
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("attributes"): DomainMap(
                {celtypes.StringType(d): celtypes.MapType(m) for d, m in attributes.items()}
            ),
            celtypes.StringType("capacity"): DomainMap(
                {celtypes.StringType(d): celtypes.MapType(m) for d, m in capacity.items()}
            ),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(bool(device.allow_multiple_allocations)),
        }
    )


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.cmp(b)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.cmp(b)
    raise TypeError(f"no such overload: compareTo({type(a).__name__}, {type(b).__name__})")


def _quantity(value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _semver(value: Any) -> Semver:
    if not isinstance(value, Semver):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _operand(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, celtypes.IntType):
        return Quantity.from_int(int(value))
    raise TypeError(f"no such overload for {type(value).__name__}")


def _string(value: Any) -> str:
    if not isinstance(value, celtypes.StringType):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return str(value)


def _lower_ascii(value: Any) -> celtypes.StringType:
    text = _string(value)
    return celtypes.StringType("".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text))


def _parse_semver(text: Any, normalize: Any = False) -> Semver:
    return Semver.parse(_string(text), normalize=bool(normalize))


def _is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    try:
        _parse_semver(text, normalize)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        Quantity.parse(_string(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _kind(value: Any) -> str:
    """The CEL type family of a value; int, uint and double compare as one numeric family."""
    if isinstance(value, celtypes.BoolType):
        return "bool"
    if isinstance(value, (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)):
        return "number"
    return type(value).__name__


def _equal(a: Any, b: Any) -> Any:
    """CEL's heterogeneous equality (cel-go's default, so Kubernetes'): different types are unequal.

    celpy 0.5.0 raises a type error instead (``false in [0]`` is an error there, false in cel-go).
    """
    if isinstance(a, celpy.CELEvalError):
        return a
    if isinstance(b, celpy.CELEvalError):
        return b
    if _kind(a) != _kind(b):
        return celtypes.BoolType(False)
    return base_functions["_==_"](a, b)


def _not_equal(a: Any, b: Any) -> Any:
    result = _equal(a, b)
    return result if isinstance(result, celpy.CELEvalError) else celtypes.BoolType(not result)


def _ordering(name: str) -> Callable[[Any, Any], Any]:
    """``<``, ``<=``, ``>``, ``>=`` only within one type family; celpy 0.5.0 orders ``false < 0`` as Python ints."""
    base = base_functions[name]

    def compare(a: Any, b: Any) -> Any:
        if not isinstance(a, celpy.CELEvalError) and not isinstance(b, celpy.CELEvalError) and _kind(a) != _kind(b):
            raise TypeError(f"no such overload: {name}({_kind(a)}, {_kind(b)})")
        return base(a, b)

    return compare


def _is_true(value: Any) -> bool:
    return isinstance(value, celtypes.BoolType) and bool(value)


def _in(item: Any, container: Any) -> Any:
    if isinstance(item, celpy.CELEvalError):
        return item
    if isinstance(container, celtypes.ListType):
        return celtypes.BoolType(any(_is_true(_equal(item, c)) for c in container))
    if isinstance(container, celtypes.MapType):
        return celtypes.BoolType(any(_is_true(_equal(item, k)) for k in container))
    return base_functions["_in_"](item, container)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_==_": _equal,
    "_!=_": _not_equal,
    "_in_": _in,
    **{name: _ordering(name) for name in ("_<_", "_<=_", "_>_", "_>=_")},
    "quantity": lambda s: Quantity.parse(_string(s)),
    "isQuantity": _is_quantity,
    "sign": lambda q: celtypes.IntType(_quantity(q).sign()),
    "isInteger": lambda q: celtypes.BoolType(_quantity(q).cel_is_integer()),
    "asInteger": lambda q: celtypes.IntType(_quantity(q).cel_as_integer()),
    "asApproximateFloat": lambda q: celtypes.DoubleType(_quantity(q).as_approximate_float()),
    "add": lambda q, o: _quantity(q) + _operand(o),
    "sub": lambda q, o: _quantity(q) - _operand(o),
    "semver": _parse_semver,
    "isSemver": _is_semver,
    "major": lambda v: celtypes.IntType(_semver(v).major),
    "minor": lambda v: celtypes.IntType(_semver(v).minor),
    "patch": lambda v: celtypes.IntType(_semver(v).patch),
    "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
    "lowerAscii": _lower_ascii,
}


class Oracle:
    """Compiles and evaluates selectors with celpy; ``evaluate`` returns True, False or ``ERROR``."""

    def __init__(self) -> None:
        self._env = celpy.Environment(runner_class=celpy.InterpretedRunner)
        self._programs: dict[str, Any] = {}

    def program(self, expression: str) -> Any:
        program = self._programs.get(expression)
        if program is None:
            program = self._env.program(self._env.compile(expression), functions=FUNCTIONS)
            self._programs[expression] = program
        return program

    def evaluate(self, expression: str, driver: str, device: Device) -> bool | str:
        """The selector's verdict on ``device``: a bool, or ``ERROR`` for any failure."""
        try:
            value = self.program(expression).evaluate({"device": device_value(driver, device)})
        except (celpy.CELEvalError, celpy.CELParseError):
            return ERROR
        if isinstance(value, celtypes.BoolType):
            return bool(value)
        return ERROR
