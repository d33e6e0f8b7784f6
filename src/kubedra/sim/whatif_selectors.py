"""What would make it fit, kind ``selector``: a numeric comparison in a request's CEL selector (``>=``, ``>``, ``<=``,
``<``, directly or through ``compareTo``/``isGreaterThan``/``isLessThan`` on a quantity) relaxed to the nearest value
some device offers; cost how far the threshold moves, in percent of the original. The comparisons are found in the
checked expression's syntax tree, never by matching text. Proven as every suggestion is (``sim.whatif``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubedra.cel import CompileCache
from kubedra.cel.errors import CelCompileError
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import CELDeviceSelector, DeviceRequest, DeviceSelector, ResourceClaim
from kubedra.objects.quantity import Quantity
from kubedra.sim.whatif import Cost, Inputs, Limits, Suggestion, _copy, _fits, _on, _pending_claims, _template_of
from kubedra.sim.whatif_patches import claim_patch


@dataclass(frozen=True)
class Comparison:
    """``device.<map>[domain].name <op> literal`` found in a selector, with where the literal is written."""

    map: str  # attributes | capacity
    domain: str
    name: str
    op: str  # >= > <= < with the device value on the left
    value: Quantity
    quantity: bool  # the literal is quantity("...")
    start: int
    end: int


FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
OPS = {"_>=_": ">=", "_>_": ">", "_<=_": "<=", "_<_": "<"}


def _const(expr: Any) -> Any:
    if expr.WhichOneof("expr_kind") != "const_expr":
        return None
    c = expr.const_expr
    kind = c.WhichOneof("constant_kind")
    return getattr(c, kind) if kind in ("int64_value", "uint64_value", "double_value", "string_value") else None


def _device_value(expr: Any) -> tuple[str, str, str] | None:
    """(map, domain, name) for ``device.attributes[D].name`` / ``device.capacity[D].name`` (or ``.D``)."""
    if expr.WhichOneof("expr_kind") != "select_expr" or expr.select_expr.test_only:
        return None
    operand = expr.select_expr.operand
    kind = operand.WhichOneof("expr_kind")
    domain, target = None, None
    if kind == "call_expr" and operand.call_expr.function == "_[_]":
        target, index = operand.call_expr.args
        domain = _const(index)
    elif kind == "select_expr":
        target, domain = operand.select_expr.operand, operand.select_expr.field
    if target is None or not isinstance(domain, str) or target.WhichOneof("expr_kind") != "ident_expr":
        return None
    ident = target.ident_expr.name
    if ident not in ("device.attributes", "device.capacity"):
        return None
    return ident.removeprefix("device."), domain, str(expr.select_expr.field)


def _quantity_literal(expr: Any) -> Any:
    """The string const of ``quantity("...")``, or None."""
    if expr.WhichOneof("expr_kind") == "call_expr" and expr.call_expr.function == "quantity" and \
            len(expr.call_expr.args) == 1:
        arg = expr.call_expr.args[0]
        return arg if isinstance(_const(arg), str) else None
    return None


def _literal_span(source: str, at: int, quoted: bool) -> tuple[int, int] | None:
    if quoted:
        if at >= len(source) or source[at] not in "\"'":
            return None
        end = source.find(source[at], at + 1)
        return (at, end + 1) if end > at and "\\" not in source[at:end] else None
    end = at
    while end < len(source) and (source[end].isdigit() or source[end] in ".-+eE"):
        end += 1
    return (at, end) if end > at else None


def comparisons(checked: Any, source: str) -> list[Comparison]:
    """The relaxable comparisons of a checked selector, found in its syntax tree (never by matching text)."""
    finder = _Finder(dict(checked.source_info.positions), source)
    finder.visit(checked.expr)
    return finder.found


@dataclass
class _Finder:
    positions: dict[int, int]
    source: str
    found: list[Comparison] = field(default_factory=list)

    def make(self, value_expr: Any, literal: Any, op: str, quantity: bool) -> None:
        where = _device_value(value_expr)
        raw = _const(literal)
        span = _literal_span(self.source, self.positions.get(literal.id, -1), quantity)
        if where is None or raw is None or span is None or isinstance(raw, bool):
            return
        try:
            value = Quantity.parse(raw) if quantity else Quantity.parse(str(raw))
        except ValueError:
            return
        self.found.append(Comparison(where[0], where[1], where[2], op, value, quantity, *span))

    def compared(self, call: Any) -> None:
        op = OPS.get(call.function)
        if op is not None and len(call.args) == 2:
            left, right = call.args
            for value_side, const_side, side_op in ((left, right, op), (right, left, FLIP[op])):
                if _device_value(value_side) is not None and _const(const_side) is not None:
                    self.make(value_side, const_side, side_op, False)
                if (value_side.WhichOneof("expr_kind") == "call_expr" and value_side.call_expr.function == "compareTo"
                        and _const(const_side) == 0 and value_side.call_expr.HasField("target")):
                    literal = _quantity_literal(value_side.call_expr.args[0])
                    if literal is not None:
                        self.make(value_side.call_expr.target, literal, side_op, True)
        elif call.function in ("isGreaterThan", "isLessThan") and call.HasField("target") and len(call.args) == 1:
            literal = _quantity_literal(call.args[0])
            if literal is not None:
                self.make(call.target, literal, ">" if call.function == "isGreaterThan" else "<", True)

    def visit(self, expr: Any) -> None:
        kind = expr.WhichOneof("expr_kind")  # a comprehension could shadow ``device``: left alone
        if kind == "call_expr":
            self.compared(expr.call_expr)
            if expr.call_expr.HasField("target"):
                self.visit(expr.call_expr.target)
            for arg in expr.call_expr.args:
                self.visit(arg)
        elif kind == "select_expr":
            self.visit(expr.select_expr.operand)
        elif kind == "list_expr":
            for element in expr.list_expr.elements:
                self.visit(element)


@dataclass
class Offer:
    """A value devices publish, as one of them writes it, and the nodes with such a device (None: any node, for
    devices of slices that are not node-local)."""

    text: str
    nodes: set[str] | None = field(default_factory=set)

    def seen_on(self, node: str | None) -> None:
        if node is None:
            self.nodes = None
        elif self.nodes is not None:
            self.nodes.add(node)


def _published(device: Any, comparison: Comparison, own: bool) -> str | None:
    qualified = f"{comparison.domain}/{comparison.name}"
    if comparison.map == "capacity":
        capacity = device.capacity.get(qualified) or (device.capacity.get(comparison.name) if own else None)
        return capacity.value if capacity is not None else None
    attribute = device.attributes.get(qualified) or (device.attributes.get(comparison.name) if own else None)
    return str(attribute.int) if attribute is not None and attribute.int is not None else None


def _offered(state: ClusterState, comparison: Comparison) -> dict[Quantity, Offer]:
    """Every value the devices publish for the compared attribute (an int) or capacity, and where."""
    out: dict[Quantity, Offer] = {}
    for slice_ in state.slices:
        own = slice_.spec.driver == comparison.domain
        for device in slice_.spec.devices:
            text = _published(device, comparison, own)
            if text is None:
                continue
            try:
                value = Quantity.parse(text)
            except ValueError:
                continue
            out.setdefault(value, Offer(text)).seen_on(slice_.spec.node_name or device.node_name or None)
    return out


def _admits(op: str, threshold: Quantity, value: Quantity) -> bool:
    return {">=": value >= threshold, ">": value > threshold, "<=": value <= threshold, "<": value < threshold}[op]


def _relaxed_values(comparison: Comparison, offered: dict[Quantity, Offer], limit: int) -> list[tuple[Quantity, str]]:
    """Offered values the comparison excludes, nearest first, each as the literal that lets it in."""
    op, value = comparison.op, comparison.value
    excluded = sorted((v for v in offered if not _admits(op, value, v)), reverse=op in (">=", ">"))
    out = []
    for v in excluded[:limit]:
        if op in (">=", "<="):
            out.append((v, offered[v].text))
        else:  # strict: the next offered value beyond lets ``v`` in
            beyond = [w for w in offered if (w < v if op == ">" else w > v)]
            if beyond:
                w = max(beyond) if op == ">" else min(beyond)
                out.append((w, offered[w].text))
    return out


def _newly_admitted_nodes(
    comparison: Comparison, offered: dict[Quantity, Offer], relaxed: Quantity
) -> list[str] | None:
    """The nodes with a device the relaxed comparison lets in and the original did not (None: any node)."""
    nodes: set[str] = set()
    for value, offer in offered.items():
        if _admits(comparison.op, relaxed, value) and not _admits(comparison.op, comparison.value, value):
            if offer.nodes is None:
                return None
            nodes |= offer.nodes
    return sorted(nodes)


def _with_selectors(claim: ResourceClaim, request: str, index: int, expression: str) -> ResourceClaim:
    """``claim`` with selector ``index`` of request ``request`` (``name`` or ``name/sub``) replaced."""
    def swap(selectors: list[DeviceSelector]) -> list[DeviceSelector]:
        out = list(selectors)
        out[index] = DeviceSelector(cel=CELDeviceSelector(expression=expression))
        return out

    name, _, sub = request.partition("/")
    requests = []
    for r in claim.spec.devices.requests:
        changed = r
        if r.name == name and not sub and r.exactly is not None:
            exactly = msgspec.structs.replace(r.exactly, selectors=swap(r.exactly.selectors))
            changed = msgspec.structs.replace(r, exactly=exactly)
        elif r.name == name and sub:
            changed = msgspec.structs.replace(r, first_available=[
                msgspec.structs.replace(s, selectors=swap(s.selectors)) if s.name == sub else s
                for s in r.first_available])
        requests.append(changed)
    devices = msgspec.structs.replace(claim.spec.devices, requests=requests)
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def _request_selectors(request: DeviceRequest) -> Iterator[tuple[str, list[DeviceSelector]]]:
    if request.exactly is not None:
        yield request.name, request.exactly.selectors
    for sub in request.first_available:
        yield f"{request.name}/{sub.name}", sub.selectors


def _short(comparison: Comparison, literal: str) -> str:
    return f"{comparison.name} {comparison.op} {literal}"


def selectors(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    environment = CompileCache(inputs.features.cel_options()).environment
    tried = 0
    for key, claim in _pending_claims(state, record):
        for request in claim.spec.devices.requests:
            for request_name, selectors in _request_selectors(request):
                for index, selector in enumerate(selectors):
                    if selector.cel is None:
                        continue
                    source = selector.cel.expression
                    try:
                        found = comparisons(environment.checked(source), source)
                    except CelCompileError:
                        continue
                    for comparison in found:
                        if tried >= limits.comparisons:
                            return
                        tried += 1
                        suggestion = _relax(inputs, record, (key, claim, request_name, index), source, comparison,
                                            limits)
                        if suggestion is not None:
                            yield suggestion


def _relax(  # noqa: PLR0917 - one comparison of one selector, and what proves it
    inputs: Inputs, record: PodRecord, target: tuple[str, ResourceClaim, str, int], source: str,
    comparison: Comparison, limits: Limits,
) -> Suggestion | None:
    """The nearest offered value that lets the pod fit, for one comparison of selector ``target`` (claim key,
    claim, request, selector index)."""
    key, claim, request, index = target
    original = source[comparison.start:comparison.end]
    offered = _offered(inputs.state, comparison)
    for value, text in _relaxed_values(comparison, offered, limits.values):
        literal = f'"{text}"' if comparison.quantity else text
        relaxed = source[: comparison.start] + literal + source[comparison.end:]
        changed = _with_selectors(claim, request, index, relaxed)
        nodes = _newly_admitted_nodes(comparison, offered, value)
        state = _copy(inputs, claims={key: changed})
        fitting = _fits(inputs, state, record, [n for n in state.nodes if nodes is None or n in set(nodes)],
                        limits.nodes_checked)
        if not fitting:
            continue
        base = comparison.value.as_approximate_float()
        moved = abs(value.as_approximate_float() - base)
        percent = round(100 * moved / abs(base), 1) if base else 100.0
        shown_old = original.strip("\"'")
        template = _template_of(record, key)
        where = f"template {template}" if template else f"claim {key}"
        return Suggestion(
            f"fits on {_on(fitting)} if {where}, request {request} asked "
            f"{_short(comparison, text)} instead of {shown_old}",
            Cost("selector", percent, "percent", f"threshold moved {percent:g}%"),
            {"claim": key, "template": template or None, "request": request, "selector": index,
             "expression": source, "relaxed": relaxed, "from": shown_old, "to": text,
             "patches": [claim_patch(claim, template, key, changed)]}, fitting)
    return None
