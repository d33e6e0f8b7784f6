"""A document (a dict) → a struct, or every decoding problem with its exact field path.

The one reader of documents into structs: the loader's kinds, NodePools and workloads all decode here. The fast
path is one ``msgspec.convert``. When it fails, the document is repaired the way the API server reads JSON, driven
by the struct's own types (``null`` means absent; a number where the model declares a ``QuantityText`` is its
text, as ``Quantity.UnmarshalJSON`` reads it; a whole float where an integer goes is that integer) and tried
again; if it still fails, a walk over the struct's type information reports *every* problem — unknown field,
missing field, wrong type, an integer outside its Go type (``Int32``/``Int64``) — with Kubernetes field paths
(``spec.containers[0].resources.limits[nvidia.com/gpu]``) instead of msgspec's first error only.

``lenient`` decoding drops the fields the model does not know instead of refusing them, as Kubernetes clients read
what a server returns: a newer API server adds fields, and an object it sends must not become unreadable for that.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, TypeVar

import msgspec
from msgspec import inspect

from kubedra.objects.model import QUANTITY_MARK

T = TypeVar("T")

FieldProblem = tuple[str, str]  # (field path, message)

_INT32_MAX = 2**31 - 1


_TYPES: dict[type[Any], inspect.Type] = {}


def _type_info(cls: type[Any]) -> inspect.Type:
    info = _TYPES.get(cls)
    if info is None:
        info = _TYPES[cls] = inspect.type_info(cls)
    return info


_FIELDS: dict[type[Any], dict[str, inspect.Field]] = {}


def _fields(t: inspect.StructType) -> dict[str, inspect.Field]:
    """The struct's fields by JSON name (memoised per class: the walk visits the same structs many times)."""
    fields = _FIELDS.get(t.cls)
    if fields is None:
        fields = _FIELDS[t.cls] = {f.encode_name: f for f in t.fields}
    return fields


def _is_quantity(t: inspect.Type) -> bool:
    return isinstance(t, inspect.Metadata) and bool((t.extra or {}).get(QUANTITY_MARK))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def number_text(value: float) -> str:
    """A JSON number as Go's ``encoding/json`` writes it (what ``Quantity.UnmarshalJSON`` then parses).

    YAML → JSON (``sigs.k8s.io/yaml``) re-encodes numbers: ``0.5`` stays ``0.5``, ``2.0`` becomes ``2``,
    ``1e21`` and up and below ``1e-6`` use an exponent (``1e+21``, ``1.5e-7``). Non-finite floats cannot be
    written in JSON; their Python text fails quantity parsing, as the API server refuses them.
    """
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return repr(value)
    magnitude = abs(value)
    if magnitude and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        sign, digits = (exponent[0], exponent[1:]) if exponent[:1] in "+-" else ("+", exponent)
        return f"{mantissa}e{sign}{digits.lstrip('0') or '0'}"
    return format(Decimal(repr(value)).normalize(), "f")


def _repair(value: Any, t: inspect.Type, lenient: bool) -> Any:
    """``value`` read as the API server reads JSON into type ``t``: ``null`` fields are absent, a number where a
    Quantity goes is its text, a whole float where an integer goes is that integer (YAML ``2.0`` → JSON ``2``);
    ``lenient``: fields the model does not know are dropped."""
    if isinstance(t, inspect.Metadata):
        if _is_number(value) and _is_quantity(t):
            return number_text(value)
        return _repair(value, t.type, lenient)
    if isinstance(t, inspect.UnionType):
        others = [x for x in t.types if not isinstance(x, inspect.NoneType)]
        return _repair(value, others[0], lenient) if len(others) == 1 else value
    if isinstance(t, inspect.StructType):
        return _repair_struct(value, t, lenient) if isinstance(value, dict) else value
    if isinstance(t, inspect.ListType):
        return [_repair(v, t.item_type, lenient) for v in value] if isinstance(value, list) else value
    if isinstance(t, inspect.DictType):
        if not isinstance(value, dict):
            return value
        return {k: _repair(v, t.value_type, lenient) for k, v in value.items() if v is not None}
    if isinstance(t, inspect.IntType) and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _repair_struct(value: dict[Any, Any], t: inspect.StructType, lenient: bool) -> dict[Any, Any]:
    fields = _fields(t)
    out = {}
    for key, item in value.items():
        if item is None:
            continue
        field = fields.get(key) if isinstance(key, str) else None
        if field is not None:
            out[key] = _repair(item, field.type, lenient)
        elif not lenient:
            out[key] = item
    return out


def repair(cls: type[Any], document: Any, *, lenient: bool = False) -> Any:
    """``document`` as the API server would read it into ``cls`` (see :func:`_repair`)."""
    return _repair(document, _type_info(cls), lenient)


def _prune(value: Any, t: inspect.Type) -> Any:
    """``value`` with only the struct fields ``t`` declares (recursively); everything else as it was."""
    if isinstance(t, inspect.Metadata):
        return _prune(value, t.type)
    if isinstance(t, inspect.UnionType):
        others = [x for x in t.types if not isinstance(x, inspect.NoneType)]
        return _prune(value, others[0]) if len(others) == 1 else value
    if isinstance(t, inspect.StructType) and isinstance(value, dict):
        fields = _fields(t)
        return {key: _prune(item, fields[key].type) for key, item in value.items()
                if isinstance(key, str) and key in fields}
    if isinstance(t, inspect.ListType) and isinstance(value, list):
        return [_prune(v, t.item_type) for v in value]
    if isinstance(t, inspect.DictType) and isinstance(value, dict):
        return {k: _prune(v, t.value_type) for k, v in value.items()}
    return value


def prune(cls: type[Any], document: Any) -> Any:
    """``document`` reduced to what ``cls`` reads: a long-lived copy of a Pod or Node need not keep its
    managedFields, images or volumes. For a struct that ignores unknown fields, ``decode`` reads the pruned
    document exactly as the whole one; nothing is converted, so a wrong value stays wrong."""
    return _prune(document, _type_info(cls))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _type_name(value: Any) -> str:
    return next((name for t, name in _JSON_TYPES if isinstance(value, t)), type(value).__name__)


def _show(value: Any) -> str:
    if isinstance(value, dict | list):
        return _type_name(value)
    text = msgspec.json.encode(value).decode() if isinstance(value, str | int | float | bool) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Walker:
    """Collects every mismatch between a document and a msgspec type."""

    def __init__(self) -> None:
        self.problems: list[FieldProblem] = []

    def wrong(self, path: str, value: Any, expected: str) -> None:
        self.problems.append((path, f"Invalid value: {_show(value)}: must be {expected}, not {_type_name(value)}"))

    def walk(self, value: Any, t: inspect.Type, path: str) -> None:  # noqa: C901, PLR0912
        if isinstance(t, inspect.UnionType):
            if value is None and any(isinstance(x, inspect.NoneType) for x in t.types):
                return
            others = [x for x in t.types if not isinstance(x, inspect.NoneType)]
            if len(others) == 1:
                self.walk(value, others[0], path)
            return
        if isinstance(t, inspect.AnyType):
            return
        if isinstance(t, inspect.Metadata):
            if _is_quantity(t) and not isinstance(value, str):
                self.wrong(path, value, "a quantity (a string or a number)")
                return
            self.walk(value, t.type, path)
            return
        if isinstance(t, inspect.StructType):
            self.struct(value, t, path)
        elif isinstance(t, inspect.ListType):
            if not isinstance(value, list):
                self.wrong(path, value, "an array")
                return
            for i, item in enumerate(value):
                self.walk(item, t.item_type, f"{path}[{i}]")
        elif isinstance(t, inspect.DictType):
            if not isinstance(value, dict):
                self.wrong(path, value, "an object")
                return
            for key, item in value.items():
                if not isinstance(key, str):
                    self.problems.append((path, f"Invalid value: {_show(key)}: keys must be strings"))
                    continue
                self.walk(item, t.value_type, f"{path}[{key}]")
        elif isinstance(t, inspect.StrType):
            if not isinstance(value, str):
                self.wrong(path, value, "a string")
        elif isinstance(t, inspect.BoolType):
            if not isinstance(value, bool):
                self.wrong(path, value, "a boolean")
        elif isinstance(t, inspect.IntType):
            if not isinstance(value, int) or isinstance(value, bool):
                self.wrong(path, value, "an integer")
            elif (t.ge is not None and value < t.ge) or (t.le is not None and value > t.le):
                go_type = "int32" if t.le == _INT32_MAX else "int64"
                self.problems.append(
                    (path, f"Invalid value: {_show(value)}: cannot unmarshal number into Go value of type {go_type}")
                )
        elif isinstance(t, inspect.FloatType):
            if not isinstance(value, int | float) or isinstance(value, bool):
                self.wrong(path, value, "a number")
        elif isinstance(t, inspect.NoneType) and value is not None:
            self.wrong(path, value, "null")

    def struct(self, value: Any, t: inspect.StructType, path: str) -> None:
        if not isinstance(value, dict):
            self.wrong(path, value, "an object")
            return
        fields = _fields(t)
        for key, item in value.items():
            if not isinstance(key, str):
                self.problems.append((path, f"Invalid value: {_show(key)}: keys must be strings"))
                continue
            field = fields.get(key)
            if field is None:
                if t.forbid_unknown_fields:
                    self.problems.append((_join(path, key), f'unknown field "{_join(path, key)}"'))
                continue
            self.walk(item, field.type, _join(path, key))
        for name, field in fields.items():
            if field.required and name not in value:
                self.problems.append((_join(path, name), "Required value"))


_MSGSPEC_PATH = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def translate_msgspec_error(error: msgspec.ValidationError) -> FieldProblem:
    """msgspec's "Expected `str`, got `int` - at `$.spec.driver`" → ("spec.driver", "Expected `str`, got `int`")."""
    match = _MSGSPEC_PATH.match(str(error))
    assert match is not None
    path = (match.group("path") or "").lstrip(".")
    message = match.group("message")
    field = re.search(r"(?:unknown|required) field `([^`]+)`", message)
    if field:
        path = _join(path, field.group(1))
        message = f'unknown field "{path}"' if "unknown" in message else "Required value"
    return path, message


def decode(document: Any, cls: type[T], *, lenient: bool = False) -> tuple[T | None, list[FieldProblem]]:
    """The struct, or None and every problem found (never raises for any JSON-like input); ``lenient``: unknown
    fields are dropped, not problems (an API server's objects, see the module docstring).

    The one reader of documents into structs: the loader's kinds, NodePools and workloads all come through
    here, so a Quantity written as a number, a field path naming the key, and int32/int64 ranges are the same
    everywhere.
    """
    try:
        return msgspec.convert(document, cls), []
    except msgspec.ValidationError:
        pass
    repaired = repair(cls, document, lenient=lenient)
    try:
        return msgspec.convert(repaired, cls), []
    except msgspec.ValidationError as error:
        walker = _Walker()
        walker.walk(repaired, _type_info(cls), "")
        return None, walker.problems or [translate_msgspec_error(error)]
