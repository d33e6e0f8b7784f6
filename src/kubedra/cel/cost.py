"""A deterministic cost guard, standing in for cel-go's runtime cost limit (cel-expr-python has none).

Kubernetes stops a selector once its runtime cost passes 1,000,000 units (``CELSelectorExpressionMaxCost``).
We cannot count steps inside cel-cpp, so we bound them from the checked syntax tree instead, with cel-go's
unit costs: 1 per variable, field, index and function call, 10 per list literal, 30 per map literal,
plus one unit per ten characters for string scans, and for a comprehension
``range + init + iterations * (condition + step) + result``.

The iteration count of a comprehension is the size of its range: the length of a list literal, the number
of domains or of keys in a domain for the device's maps, a string attribute's length bound for values read
from a device, and the range's size for ``map``/``filter`` results. A range whose size cannot be bounded
any other way counts as ``UNKNOWN_SIZE`` elements.

Two passes: at compile time with Kubernetes' per-device maxima (32 domains, 32 keys, 64-character values,
48-element lists); if that worst case fits the limit, evaluation never checks again. Otherwise each
evaluation first re-estimates with the device's actual sizes and refuses to run when the bound still
exceeds the limit, with cel-go's message. The bound is conservative: an expression refused here could,
on some devices, have finished below the limit in Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubedra.objects import limits

COST_LIMIT = limits.CELSelectorExpressionMaxCost
UNKNOWN_SIZE = 64
COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"

_DOMAIN_MAPS = {"device.attributes", "device.capacity"}
_SCANNING = {
    "contains", "startsWith", "endsWith", "matches", "find", "findAll", "split", "replace", "indexOf",
    "lastIndexOf", "lowerAscii", "upperAscii", "trim", "substring", "join", "_+_",
}  # fmt: skip


@dataclass(frozen=True)
class Bounds:
    """The sizes a device can have: counts of domains and keys, longest value and list."""

    domains: int = limits.ResourceSliceMaxAttributesAndCapacitiesPerDevice
    keys: int = limits.ResourceSliceMaxAttributesAndCapacitiesPerDevice
    value_length: int = limits.DeviceAttributeMaxValueLength
    list_length: int = limits.ResourceSliceMaxAttributeValuesPerDevice


WORST_CASE = Bounds()

# What a node evaluates to, for sizing: (size, kind) with kind "outer" (a device map of domains),
# "domain" (one domain's map), "value" (a device attribute or capacity), or "" (anything else).
_Shape = tuple[int, str]


class _Estimator:
    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds

    def estimate(self, expr: Any, scope: dict[str, _Shape]) -> tuple[int, _Shape]:
        kind = expr.WhichOneof("expr_kind")
        if kind == "const_expr":
            c = expr.const_expr
            which = c.WhichOneof("constant_kind")
            size = len(c.string_value) if which == "string_value" else len(c.bytes_value) if which else 0
            return 0, (size, "")
        if kind == "ident_expr":
            name = expr.ident_expr.name
            if name in scope:
                return 1, scope[name]
            if name in _DOMAIN_MAPS:
                return 1, (self.bounds.domains, "outer")
            return 1, (limits.DriverNameMaxLength, "")
        if kind == "select_expr":
            cost, shape = self.estimate(expr.select_expr.operand, scope)
            return cost + 1, self._member(shape)
        if kind == "call_expr":
            return self._call(expr.call_expr, scope)
        if kind == "list_expr":
            cost = 10 + sum(self.estimate(e, scope)[0] for e in expr.list_expr.elements)
            return cost, (len(expr.list_expr.elements), "")
        if kind == "struct_expr":
            cost = 30
            for entry in expr.struct_expr.entries:
                if entry.HasField("map_key"):
                    cost += self.estimate(entry.map_key, scope)[0]
                cost += self.estimate(entry.value, scope)[0]
            return cost, (len(expr.struct_expr.entries), "")
        if kind == "comprehension_expr":
            return self._comprehension(expr.comprehension_expr, scope)
        return 1, (UNKNOWN_SIZE, "")

    def _member(self, shape: _Shape) -> _Shape:
        if shape[1] == "outer":
            return self.bounds.keys, "domain"
        if shape[1] == "domain":
            return max(self.bounds.value_length, self.bounds.list_length), "value"
        return UNKNOWN_SIZE, ""

    def _call(self, call: Any, scope: dict[str, _Shape]) -> tuple[int, _Shape]:
        parts = ([call.target] if call.HasField("target") else []) + list(call.args)
        estimates = [self.estimate(p, scope) for p in parts]
        cost = 1 + sum(c for c, _ in estimates)
        shapes = [s for _, s in estimates]
        fn = call.function
        if fn in ("_[_]", "_[?_]") and shapes:
            return cost, self._member(shapes[0])
        if fn == "orValue" and shapes:
            return cost, shapes[0]
        if fn in _SCANNING:
            cost += sum(s[0] for s in shapes) // 10
        if fn == "@in" and len(shapes) == 2:
            cost += shapes[1][0]
        if fn == "_+_":
            return cost, (sum(s[0] for s in shapes), "")
        if fn in ("split", "findAll") and shapes:
            return cost, (shapes[0][0] + 1, "")
        return cost, (UNKNOWN_SIZE, "")

    def _comprehension(self, c: Any, scope: dict[str, _Shape]) -> tuple[int, _Shape]:
        range_cost, range_shape = self.estimate(c.iter_range, scope)
        init_cost, init_shape = self.estimate(c.accu_init, scope)
        iterations = range_shape[0]
        element = self._member(range_shape) if range_shape[1] == "outer" else (UNKNOWN_SIZE, "")
        if range_shape[1] == "domain":
            element = (limits.DeviceMaxIDLength, "")
        inner = dict(scope)
        inner[c.iter_var] = element
        if c.iter_var2:
            inner[c.iter_var2] = self._member(range_shape)
        accu_shape = (iterations, "") if init_shape == (0, "") else init_shape
        inner[c.accu_var] = accu_shape
        step = self.estimate(c.loop_condition, inner)[0] + self.estimate(c.loop_step, inner)[0]
        result_scope = dict(scope)
        result_scope[c.accu_var] = accu_shape
        result_cost, result_shape = self.estimate(c.result, result_scope)
        return range_cost + init_cost + iterations * step + result_cost, result_shape


def estimate_cost(expr: Any, bounds: Bounds = WORST_CASE) -> int:
    """An upper bound, in cel-go cost units, of evaluating ``expr`` on any device within ``bounds``."""
    return _Estimator(bounds).estimate(expr, {})[0]
