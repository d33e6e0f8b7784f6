"""A v1 document (a dict) → a model struct, or every decoding problem with its exact field path.

The fast path is one ``msgspec.convert``. When it fails, the document is repaired the way the API
server reads JSON (``null`` means absent; a quantity may be written as a number) and tried again;
if it still fails, a walk over the struct's type information reports *every* problem — unknown
field, missing field, wrong type — with Kubernetes field paths (``spec.devices[0].attributes[model]``)
instead of msgspec's first error only.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from msgspec import inspect

T = TypeVar("T")

FieldProblem = tuple[str, str]  # (field path, message)

# Where a Kubernetes Quantity sits in each kind, as key paths ("*" = every map value, "[]" = every list item).
_QUANTITY_PATHS: dict[str, list[tuple[str, ...]]] = {
    "ResourceSlice": [
        ("spec", "devices", "[]", "capacity", "*", "value"),
        ("spec", "devices", "[]", "capacity", "*", "requestPolicy", "default"),
        ("spec", "devices", "[]", "capacity", "*", "requestPolicy", "validValues", "[]"),
        ("spec", "devices", "[]", "capacity", "*", "requestPolicy", "validRange", "min"),
        ("spec", "devices", "[]", "capacity", "*", "requestPolicy", "validRange", "max"),
        ("spec", "devices", "[]", "capacity", "*", "requestPolicy", "validRange", "step"),
        ("spec", "devices", "[]", "consumesCounters", "[]", "counters", "*", "value"),
        ("spec", "sharedCounters", "[]", "counters", "*", "value"),
    ],
    "ResourceClaim": [
        ("spec", "devices", "requests", "[]", "exactly", "capacity", "requests", "*"),
        ("spec", "devices", "requests", "[]", "firstAvailable", "[]", "capacity", "requests", "*"),
        ("status", "allocation", "devices", "results", "[]", "consumedCapacity", "*"),
    ],
    "ResourceClaimTemplate": [
        ("spec", "spec", "devices", "requests", "[]", "exactly", "capacity", "requests", "*"),
        ("spec", "spec", "devices", "requests", "[]", "firstAvailable", "[]", "capacity", "requests", "*"),
    ],
    "Node": [("status", "capacity", "*"), ("status", "allocatable", "*")],
    "Pod": [
        (section, "[]", "resources", part, "*")
        for section in ("spec.containers", "spec.initContainers")
        for part in ("limits", "requests")
    ],
}


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _quantities_to_strings(value: Any, path: tuple[str, ...]) -> Any:
    if not path:
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        return str(value) if numeric else value
    head, rest = path[0], path[1:]
    result = value
    if head == "[]" and isinstance(value, list):
        result = [_quantities_to_strings(v, rest) for v in value]
    elif head == "*" and isinstance(value, dict):
        result = {k: _quantities_to_strings(v, rest) for k, v in value.items()}
    elif "." in head:
        result = _quantities_to_strings(value, (*head.split("."), *rest))
    elif isinstance(value, dict) and head in value:
        result = {**value, head: _quantities_to_strings(value[head], rest)}
    return result


def repair(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    """``null`` fields removed and numeric quantities turned into strings, as the API server reads them."""
    repaired: dict[str, Any] = _strip_nulls(document)
    for path in _QUANTITY_PATHS.get(kind, []):
        repaired = _quantities_to_strings(repaired, path)
    return repaired


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
        elif isinstance(t, inspect.FloatType):
            if not isinstance(value, int | float) or isinstance(value, bool):
                self.wrong(path, value, "a number")
        elif isinstance(t, inspect.NoneType) and value is not None:
            self.wrong(path, value, "null")

    def struct(self, value: Any, t: inspect.StructType, path: str) -> None:
        if not isinstance(value, dict):
            self.wrong(path, value, "an object")
            return
        fields = {f.encode_name: f for f in t.fields}
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


def decode(document: dict[str, Any], cls: type[T], kind: str) -> tuple[T | None, list[FieldProblem]]:
    """The struct, or None and every problem found (never raises for any JSON-like input)."""
    try:
        return msgspec.convert(document, cls), []
    except msgspec.ValidationError:
        pass
    repaired = repair(kind, document)
    try:
        return msgspec.convert(repaired, cls), []
    except msgspec.ValidationError as error:
        walker = _Walker()
        walker.walk(repaired, inspect.type_info(cls), "")
        return None, walker.problems or [translate_msgspec_error(error)]
