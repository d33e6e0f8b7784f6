"""Kubernetes' CEL list and regex libraries, the parts selectors use (k8s.io/apiserver/pkg/cel/library).

lists: ``isSorted``, ``sum``, ``min``, ``max`` on lists of int, uint, double, string and bool (the comparable
primitives). ``indexOf``/``lastIndexOf`` on lists are left out: cel-expr-python's strings extension already
declares those names for strings and refuses a second declaration.
regex: ``find`` and ``findAll`` (with an optional limit).
Lists of different element types share one runtime kind, so one overload per function carries the
implementation and works on any element type. Regexes use Python's ``re``; CEL uses RE2, and the two
agree on the syntax RE2 accepts except for rarely used classes, which we document rather than emulate.
"""

from __future__ import annotations

import re
from typing import Any

from cel_expr_python import cel

_ELEMENT_TYPES = (cel.Type.INT, cel.Type.UINT, cel.Type.DOUBLE, cel.Type.STRING, cel.Type.BOOL)
_SUMMABLE = (cel.Type.INT, cel.Type.UINT, cel.Type.DOUBLE)
_REGEX_MEMO_LIMIT = 256


def _is_sorted(values: list[Any]) -> bool:
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _sum(values: list[Any]) -> Any:
    total: Any = 0.0 if values and isinstance(values[0], float) else 0
    for v in values:
        total += v
    if isinstance(total, int) and not -(2**63) <= total < 2**63:
        raise OverflowError("integer overflow")
    return total


def _min(values: list[Any]) -> Any:
    if not values:
        raise ValueError("min called on empty list")
    return min(values)


def _max(values: list[Any]) -> Any:
    if not values:
        raise ValueError("max called on empty list")
    return max(values)


def _overloads(name: str, result_of: Any, extra_arg: bool, types: tuple[cel.Type, ...], impl: Any) -> cel.FunctionDecl:
    overloads = []
    for i, element in enumerate(types):
        params = [cel.Type.List(element)] + ([element] if extra_arg else [])
        result = result_of(element)
        overload_id = f"list_{element.name().lower()}_{name}"
        if i == 0:
            # The one implementation serves every element type, so its declared result must not convert.
            dyn_result = cel.Type.BOOL if result == cel.Type.BOOL else cel.Type.DYN
            overloads.append(cel.Overload(overload_id, dyn_result, params, is_member=True, impl=impl))
        else:
            overloads.append(cel.Overload(overload_id, result, params, is_member=True))
    return cel.FunctionDecl(name, overloads)


def list_functions() -> list[cel.FunctionDecl]:
    """Kubernetes' list library for the comparable primitive element types."""
    return [
        _overloads("isSorted", lambda _t: cel.Type.BOOL, False, _ELEMENT_TYPES, _is_sorted),
        _overloads("sum", lambda t: t, False, _SUMMABLE, _sum),
        _overloads("min", lambda t: t, False, _ELEMENT_TYPES, _min),
        _overloads("max", lambda t: t, False, _ELEMENT_TYPES, _max),
    ]


def regex_functions() -> list[cel.FunctionDecl]:
    """``s.find(re)`` (first match or ``""``) and ``s.findAll(re)`` / ``s.findAll(re, limit)``."""
    memo: dict[str, re.Pattern[str]] = {}

    def compiled(pattern: str) -> re.Pattern[str]:
        rx = memo.get(pattern)
        if rx is None:
            if len(memo) >= _REGEX_MEMO_LIMIT:
                memo.clear()
            rx = memo[pattern] = re.compile(pattern)
        return rx

    def find(s: str, pattern: str) -> str:
        m = compiled(pattern).search(s)
        return m.group(0) if m else ""

    def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
        if limit == 0:
            return []
        out = [m.group(0) for m in compiled(pattern).finditer(s)]
        return out if limit < 0 else out[:limit]

    strings = cel.Type.List(cel.Type.STRING)
    return [
        cel.FunctionDecl(
            "find", [cel.Overload("string_find", cel.Type.STRING, [cel.Type.STRING, cel.Type.STRING], True, find)]
        ),
        cel.FunctionDecl(
            "findAll",
            [
                cel.Overload("string_find_all", strings, [cel.Type.STRING, cel.Type.STRING], True, find_all),
                cel.Overload(
                    "string_find_all_n", strings, [cel.Type.STRING, cel.Type.STRING, cel.Type.INT], True, find_all
                ),
            ],
        ),
    ]
