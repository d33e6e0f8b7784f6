"""What we learn from a checked expression: where the device's domain maps are indexed, and a cost bound.

cel-expr-python evaluates plain dicts, and a dict has no default. Kubernetes gives an empty map for an
unknown domain, so every ``device.attributes[D]`` / ``device.capacity[D]`` (and ``.D``) in the source is
rewritten to ``device.attributes[?D].orValue({})`` before the final compile. The sites come from the
checked syntax tree, never from pattern matching on text, so strings, comments and shadowed names are safe.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubedra.cel.protos import QUANTITY_TYPE

DEVICE_VAR = "device"
DOMAIN_MAPS = ("device.attributes", "device.capacity")


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` with ``text`` (an insertion when start == end)."""

    start: int
    end: int
    text: str


def _children(expr: Any) -> Iterator[Any]:
    kind = expr.WhichOneof("expr_kind")
    if kind == "select_expr":
        yield expr.select_expr.operand
    elif kind == "call_expr":
        if expr.call_expr.HasField("target"):
            yield expr.call_expr.target
        yield from expr.call_expr.args
    elif kind == "list_expr":
        yield from expr.list_expr.elements
    elif kind == "struct_expr":
        for entry in expr.struct_expr.entries:
            if entry.HasField("map_key"):
                yield entry.map_key
            yield entry.value


def _is_domain_map(expr: Any, bound: frozenset[str]) -> bool:
    """``device.attributes`` or ``device.capacity`` as the checker resolved them (qualified variables).

    When a comprehension or ``cel.bind`` names something ``device``, the checker leaves ``device.attributes``
    as a field selection on that name instead, so it is never mistaken for the variable.
    """
    return (
        expr.WhichOneof("expr_kind") == "ident_expr" and expr.ident_expr.name in DOMAIN_MAPS and DEVICE_VAR not in bound
    )


def _matching_bracket(source: str, start: int) -> int:
    """Index of the ``]`` closing the ``[`` at ``start``; skips string and bytes literals and comments."""
    depth = 0
    i = start
    n = len(source)
    while i < n:
        ch = source[i]
        if ch in "\"'":
            i = _skip_string(source, i)
            continue
        if source.startswith("//", i):
            newline = source.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced brackets")


def _skip_string(source: str, i: int) -> int:
    """Return the index just after the string literal whose quote is at ``i``."""
    raw = i > 0 and source[i - 1] in "rR" and (i < 2 or not (source[i - 2].isalnum() or source[i - 2] == "_"))
    raw = raw or (i > 1 and source[i - 1] in "bB" and source[i - 2] in "rR")
    raw = raw or (i > 1 and source[i - 1] in "rR" and source[i - 2] in "bB")
    quote = source[i] * 3 if source.startswith(source[i] * 3, i) else source[i]
    j = i + len(quote)
    while j < len(source):
        if not raw and source[j] == "\\":
            j += 2
            continue
        if source.startswith(quote, j):
            return j + len(quote)
        if len(quote) == 1 and source[j] == "\n":
            break
        j += 1
    raise ValueError("unterminated string")


def domain_lookup_edits(checked: Any, source: str) -> list[Edit]:
    """The edits that turn each domain lookup into an optional lookup with an empty-map default."""
    positions = dict(checked.source_info.positions)
    edits: list[Edit] = []

    def visit(expr: Any, bound: frozenset[str]) -> None:
        kind = expr.WhichOneof("expr_kind")
        if kind == "comprehension_expr":
            c = expr.comprehension_expr
            visit(c.iter_range, bound)
            visit(c.accu_init, bound | {c.accu_var})
            inner = bound | {c.iter_var, c.accu_var} | ({c.iter_var2} if c.iter_var2 else set())
            for part in (c.loop_condition, c.loop_step):
                visit(part, inner)
            visit(c.result, bound | {c.accu_var})
            return
        if kind == "call_expr" and expr.call_expr.function == "_[_]" and _is_domain_map(expr.call_expr.args[0], bound):
            at = positions[expr.id]
            if source[at] == "[":
                close = _matching_bracket(source, at)
                edits.append(Edit(at + 1, at + 1, "?"))
                edits.append(Edit(close + 1, close + 1, ".orValue({})"))
        elif (
            kind == "select_expr" and _is_domain_map(expr.select_expr.operand, bound) and not expr.select_expr.test_only
        ):
            at = positions[expr.id]
            field = expr.select_expr.field
            end = source.find(field, at + 1)
            if source[at] == "." and end >= 0 and not source[at + 1 : end].strip():
                edits.append(Edit(at, end + len(field), f'[?"{field}"].orValue({{}})'))
        for child in _children(expr):
            visit(child, bound)

    visit(checked.expr, frozenset())
    return edits


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits, last position first so earlier offsets stay valid."""
    out = source
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


# Quantity comparisons by value: names the parser never produces (like its own "@in"), so no expression can
# call them directly; declared in library_quantity.equality_functions.
QUANTITY_EQUALS = "@kubedra_quantity_equals"
QUANTITY_NOT_EQUALS = "@kubedra_quantity_not_equals"
QUANTITY_LIST_EQUALS = "@kubedra_quantity_list_equals"
QUANTITY_LIST_NOT_EQUALS = "@kubedra_quantity_list_not_equals"
QUANTITY_IN = "@kubedra_quantity_in"


def _type_shape(t: Any) -> str:
    """``q`` for a quantity, ``[q]`` for a list of them, ``""`` for anything else."""
    if t is None:
        return ""
    if t.message_type == QUANTITY_TYPE:
        return "q"
    if t.HasField("list_type") and t.list_type.elem_type.message_type == QUANTITY_TYPE:
        return "[q]"
    return ""


_RENAMES = {
    ("_==_", "q", "q"): QUANTITY_EQUALS,
    ("_!=_", "q", "q"): QUANTITY_NOT_EQUALS,
    ("_==_", "[q]", "[q]"): QUANTITY_LIST_EQUALS,
    ("_!=_", "[q]", "[q]"): QUANTITY_LIST_NOT_EQUALS,
    ("@in", "q", "[q]"): QUANTITY_IN,
}


def compare_quantities_by_value(checked: Any) -> bool:
    """Rename, in place, the checked tree's ``==``, ``!=`` and ``in`` whose operands the checker typed as quantities
    (or lists of them) to functions comparing values, as Kubernetes' Quantity.Equal does; True when any was.

    Quantity messages carry their representation too (``cel/values.py``), which plain message equality would
    compare. A quantity the checker only knows as ``dyn`` (``dyn(q) == q``) is still compared field by field.
    """
    types = dict(checked.type_map)
    renamed = False
    stack = [checked.expr]
    while stack:
        expr = stack.pop()
        if expr.WhichOneof("expr_kind") == "comprehension_expr":
            c = expr.comprehension_expr
            stack += [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
            continue
        if expr.WhichOneof("expr_kind") == "call_expr" and len(expr.call_expr.args) == 2:
            call = expr.call_expr
            a, b = (_type_shape(types.get(arg.id)) for arg in call.args)
            name = _RENAMES.get((call.function, a, b))
            if name is not None:
                call.function = name
                renamed = True
        stack.extend(_children(expr))
    return renamed


Reads = frozenset[tuple[str, str]]
"""(domain, id) pairs of the attributes an expression can read; the domain is as written (a qualified one)."""

ATTRIBUTES_MAP = "device.attributes"


def attribute_reads(checked: Any) -> Reads | None:
    """The device attributes an expression can read, or None when it could read any.

    Only ``device.attributes[D].id``, ``device.attributes[D][id]`` and ``has(...)`` of them, with ``D`` and ``id``
    string literals, name an attribute; any other use of the map (``size()``, iteration, an index computed at run time,
    the map passed whole, a shadowed ``device``) could read them all. The allocator keys its reused answers by what a
    search can read: attributes no selector reads (a GPU's UUID) do not keep nodes apart.
    """
    found: set[tuple[str, str]] = set()

    def domain_of(expr: Any, bound: frozenset[str]) -> str | None:
        """``D`` when ``expr`` is ``device.attributes[D]`` (or ``.D``) with ``D`` a string literal."""
        kind = expr.WhichOneof("expr_kind")
        if kind == "call_expr" and expr.call_expr.function == "_[_]":
            args = expr.call_expr.args
            if _is_attributes(args[0], bound) and _string_literal(args[1]) is not None:
                return _string_literal(args[1])
        if kind == "select_expr" and _is_attributes(expr.select_expr.operand, bound) and not expr.select_expr.test_only:
            return str(expr.select_expr.field)
        return None

    def visit(expr: Any, bound: frozenset[str]) -> bool:
        """False when the attributes are used in a way that could read any of them."""
        kind = expr.WhichOneof("expr_kind")
        if kind == "ident_expr":
            name = expr.ident_expr.name
            return name != DEVICE_VAR and not (name == ATTRIBUTES_MAP and DEVICE_VAR not in bound)
        if kind == "comprehension_expr":
            c = expr.comprehension_expr
            if DEVICE_VAR in {c.iter_var, c.iter_var2, c.accu_var}:
                return False
            return all(visit(part, bound) for part in (c.iter_range, c.accu_init, c.loop_condition, c.loop_step,
                                                       c.result))
        if kind == "select_expr":
            domain = domain_of(expr.select_expr.operand, bound)
            if domain is not None:
                found.add((domain, str(expr.select_expr.field)))
                return True
        if kind == "call_expr" and expr.call_expr.function == "_[_]":
            args = expr.call_expr.args
            domain = domain_of(args[0], bound)
            ident = _string_literal(args[1])
            if domain is not None and ident is not None:
                found.add((domain, ident))
                return True
        if domain_of(expr, bound) is not None:
            return False  # a domain's map used whole
        return all(visit(child, bound) for child in _children(expr))

    return frozenset(found) if visit(checked.expr, frozenset()) else None


def _is_attributes(expr: Any, bound: frozenset[str]) -> bool:
    return (
        expr.WhichOneof("expr_kind") == "ident_expr" and expr.ident_expr.name == ATTRIBUTES_MAP
        and DEVICE_VAR not in bound
    )


def _string_literal(expr: Any) -> str | None:
    if expr.WhichOneof("expr_kind") == "const_expr" and expr.const_expr.WhichOneof("constant_kind") == "string_value":
        return str(expr.const_expr.string_value)
    return None
