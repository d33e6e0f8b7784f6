"""What would make a pending pod fit: the few smallest changes, each proven on a modified copy of the run's end state.

``explain`` says why a pod waits; this says what would end the wait. Every suggestion is checked, never guessed: the
change is applied to a copy of the cluster state the run ended in (the objects rebuilt into a fresh ``ClusterState``,
the bound pods bound again) and the scheduler's own Filter (``Scheduler.place_on``: node rules, the claims' existing
allocations, the allocator) is run for the pod on that copy. A suggestion is offered only where the pod then fits.

The kinds of change, and their cost (the ranking: kind first, in this order, then the amount):

0. ``resources``: a node pool publishes a resource the pod asks for and none of its nodes has (a NodePool written
   without ``allocatable.cpu``, nodes without ``ephemeral-storage``: an omission, usually); cost the resources named
   (``sim.whatif_resources``).
1. ``selector``: a numeric comparison in a request's CEL selector (``>=``, ``>``, ``<=``, ``<``, directly or through
   ``compareTo``/``isGreaterThan``/``isLessThan`` on a quantity) relaxed to the nearest value some device offers;
   cost how far the threshold moves, in percent of the original. The workload asks for less than it said it needs.
2. ``toleration``: a node taint (the pod's ``tolerations``) or a device taint (the request's ``tolerations``)
   tolerated; cost 1 for a NoSchedule taint, 2 for NoExecute, one more for a device taint (which usually marks an
   unhealthy GPU: a DeviceTaintRule or the driver's health check put it there).
3. ``release``: pods holding the devices on a node end, so their claims release them; cost the pods ended. (A run
   ends when every known completion has happened: a pod still running then has no ``kubedra.io/run-for``.)
4. ``nodes``: one more node like those of a node pool (the ``kubedra.io/nodepool`` label a NodePool gives, or a
   cloud provider's pool label), empty, with copies of its ResourceSlices; cost the nodes added. One pod lands on
   one node, so one more node fits it or no number does.

Bounded: at most ``Limits`` candidates of each kind are tried (nodes, holders, comparisons, values, taints, pools),
and each try is one Filter per node it can affect (the nodes carrying the taint, publishing a value the relaxed
selector lets in, holding the released devices, added), at most ``nodes_checked``; each try rebuilds the state once.
The pod alone is proven: other pending pods may compete for what a change frees. Pure: the run's result in, data out.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubedra.allocator import Features
from kubedra.cel import CompileCache
from kubedra.cel.errors import CelCompileError
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import (
    CELDeviceSelector,
    DeviceRequest,
    DeviceSelector,
    DeviceToleration,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
    Toleration,
)
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.claims import generated_name, key_of, release
from kubedra.scheduler.dra import AllocatorBackend
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy

KIND_ORDER = ("resources", "selector", "toleration", "release", "nodes")
POOL_LABELS = ("kubedra.io/nodepool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
               "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool")
EFFECT_RISK = {"NoSchedule": 1, "NoExecute": 2}


@dataclass(frozen=True)
class Limits:
    """How much is tried, so that explaining one pod stays bounded on a large cluster."""

    suggestions: int = 5  # shown, best first
    release_nodes: int = 4  # nodes whose holders are released
    holders: int = 4  # holders released per node (one by one, then together)
    comparisons: int = 4  # numeric comparisons relaxed
    values: int = 3  # offered values tried per comparison, nearest first
    taints: int = 4  # distinct taints tolerated
    pools: int = 4  # node pools grown
    nodes_checked: int = 500  # nodes a change is proven on (the ones it can affect first)


@dataclass(frozen=True)
class Cost:
    kind: str
    amount: float
    unit: str
    text: str

    def rank(self) -> tuple[int, float]:
        return KIND_ORDER.index(self.kind), self.amount


@dataclass(frozen=True)
class Suggestion:
    """One proven change: ``text`` for people, ``change`` for scripts, ``nodes`` where the pod then fits."""

    text: str
    cost: Cost
    change: dict[str, Any]
    nodes: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.cost.kind, "text": self.text, "change": self.change, "fitsOn": self.nodes,
                "cost": {"amount": self.cost.amount, "unit": self.cost.unit, "text": self.cost.text}}


@dataclass
class Inputs:
    """What the proof needs from the run: its end state and the scheduler's settings."""

    state: ClusterState
    features: Features
    policy: Policy
    blocked_nodes: list[str] = field(default_factory=list)  # nodes where devices held by others are in the way


# ---------------------------------------------------------------------------------------------- the proof


def _copy(
    inputs: Inputs,
    *,
    nodes: Iterable[Node] = (),
    slices: Iterable[ResourceSlice] = (),
    claims: dict[str, ResourceClaim | None] | None = None,
    ended: frozenset[str] = frozenset(),
    replaced: dict[str, Node] | None = None,
) -> ClusterState:
    """The end state rebuilt with ``nodes``/``slices`` added, ``claims`` replaced (None: deleted), nodes ``replaced``
    by name and the pods ``ended`` unbound; the run's own state is not touched."""
    state = inputs.state
    changed = claims or {}
    kept = [c for k, c in state.claims.items() if k not in changed]
    kept += [c for c in changed.values() if c is not None]
    swap = replaced or {}
    copy = ClusterState.build(
        nodes=[*(swap.get(name, node) for name, node in state.nodes.items()), *nodes], slices=[*state.slices, *slices],
        classes=state.classes.values(),
        taint_rules=state.taint_rules, claims=kept, templates=state.templates.values(),
        consumable_capacity=inputs.features.consumable_capacity,
    )
    copy.spread_sources = state.spread_sources
    for key, record in state.pods.items():
        if key not in ended:
            copy.add_pod(record)
    for node, bound in state.bound.items():
        for key, record in bound.items():
            if key not in ended:
                copy.bind(record, node)
    return copy


def _fits(
    inputs: Inputs, state: ClusterState, record: PodRecord, only: Iterable[str] | None = None, cap: int = 500
) -> list[str]:
    """The nodes (of ``only``, else all; the first ``cap``) where the scheduler's Filter places ``record`` on
    ``state``."""
    features = inputs.features
    backend = AllocatorBackend(features, state, CompileCache(features.cel_options()), reuse_answers=False)
    scheduler = Scheduler(state, backend, inputs.policy, random.Random(0), None,
                          extended_resources=features.extended_resource)
    names = (list(only) if only is not None else list(state.nodes))[:cap]
    return [n for n in names if n in state.nodes and isinstance(scheduler.place_on(record, n), Placement)]


def _pod_claim_keys(record: PodRecord) -> list[str]:
    pod = record.pod
    keys = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated_name(pod.status.resource_claim_statuses, pod_claim.name)
        if name:
            keys.append(key_of(pod.metadata.namespace, name))
    return keys


def _template_of(record: PodRecord, claim_key: str) -> str:
    """The ResourceClaimTemplate the pod's claim ``claim_key`` was made from, or ""."""
    pod = record.pod
    for pod_claim in pod.spec.resource_claims:
        name = generated_name(pod.status.resource_claim_statuses, pod_claim.name)
        if pod_claim.resource_claim_template_name and name and key_of(pod.metadata.namespace, name) == claim_key:
            return key_of(pod.metadata.namespace, pod_claim.resource_claim_template_name)
    return ""


def _on(nodes: list[str], shown: int = 3) -> str:
    """"3 nodes (a, b, c)", "12 nodes (a, b, c and 9 more)"."""
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return f"{len(nodes)} node{'s' * (len(nodes) != 1)} ({', '.join(nodes[:shown])}{more})"


# ---------------------------------------------------------------------------------------------- releases


def _holders(state: ClusterState, node: str, record: PodRecord) -> list[PodRecord]:
    """Pods bound to ``node`` that hold allocated claims (other than the pod's own)."""
    own = set(_pod_claim_keys(record))
    out = []
    for other in state.bound.get(node, {}).values():
        keys = [k for k in other.claim_keys if k not in own]
        if any((c := state.claims.get(k)) is not None and c.status.allocation is not None for k in keys):
            out.append(other)
    return out


Released = tuple[dict[str, ResourceClaim | None], dict[str, list[str]]]


def _release(state: ClusterState, holders: list[PodRecord]) -> Released:
    """The claims once ``holders`` end (as the run releases them) and the devices freed, by claim."""
    claims: dict[str, ResourceClaim | None] = {}
    freed: dict[str, list[str]] = {}
    for holder in holders:
        for key in holder.claim_keys:
            claim = claims.get(key, state.claims.get(key))
            if claim is None:
                continue
            outcome = release(claim, holder.pod)
            claims[key] = outcome.claim
            if outcome.deallocated is not None:
                freed[key] = [r.device for r in outcome.deallocated.devices.results]
    return claims, freed


def _releases(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    for node in inputs.blocked_nodes[: limits.release_nodes]:
        holders = _holders(state, node, record)[: limits.holders]
        tries = [[h] for h in holders] + [holders[:n] for n in range(2, len(holders) + 1)]
        for group in tries:
            claims, freed = _release(state, group)
            if not freed or not _fits(inputs, _copy(inputs, claims=claims, ended=frozenset(h.key for h in group)),
                                      record, [node]):
                continue
            pods = [h.key for h in group]
            devices = ", ".join(f"{claim} releases {', '.join(names)}" for claim, names in freed.items())
            ends = f"{', '.join(pods)} end{'s' * (len(group) == 1)}"
            releases = [{"claim": c, "devices": d} for c, d in freed.items()]
            running = f"end {len(group)} running pod{'s' * (len(group) > 1)}"
            yield Suggestion(f"fits on {node} once {devices} (when {ends}, not within the run)",
                             Cost("release", len(group), "pods", running),
                             {"node": node, "endPods": pods, "releases": releases}, [node])
            break  # the smallest set for this node


# ---------------------------------------------------------------------------------------------- more nodes


def pool_of(node: Node) -> tuple[str, str] | None:
    """(label, pool) naming the node's pool, or None."""
    labels = node.metadata.labels
    for label in POOL_LABELS:
        if labels.get(label):
            return label, labels[label]
    return None


def clone_node(state: ClusterState, template: Node, name: str) -> tuple[Node, list[ResourceSlice]]:
    """A new empty node like ``template``, named ``name``, with copies of the slices published for it."""
    old = template.metadata.name
    labels = {**template.metadata.labels, "kubernetes.io/hostname": name}
    meta = msgspec.structs.replace(template.metadata, name=name, uid=f"whatif-{name}", labels=labels)
    node = msgspec.structs.replace(template, metadata=meta)
    slices = []
    for slice_ in state.slices:
        if slice_.spec.node_name != old:
            continue
        pool = slice_.spec.pool
        pool_name = name if pool.name == old else f"{pool.name}-{name}"
        spec = msgspec.structs.replace(slice_.spec, node_name=name,
                                       pool=msgspec.structs.replace(pool, name=pool_name))
        slice_meta = ObjectMeta(name=slice_.metadata.name.replace(old, name) if old in slice_.metadata.name
                                else f"{slice_.metadata.name}-{name}")
        slices.append(msgspec.structs.replace(slice_, metadata=slice_meta, spec=spec))
    return node, slices


def _new_names(state: ClusterState, pool: str, count: int) -> list[str]:
    names: list[str] = []
    index = 0
    while len(names) < count:
        candidate = f"{pool}-{index}"
        if candidate not in state.nodes:
            names.append(candidate)
        index += 1
    return names


def _more_nodes(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    pools: dict[tuple[str, str], Node] = {}
    for node in state.nodes.values():
        found = pool_of(node)
        if found is not None and found not in pools:
            pools[found] = node
    for (label, pool), template in list(pools.items())[: limits.pools]:
        # One pod lands on one node: one more node is enough or no number is.
        names = _new_names(state, pool, 1)
        added = [clone_node(state, template, n) for n in names]
        copy = _copy(inputs, nodes=[n for n, _ in added], slices=[s for _, ss in added for s in ss])
        fitting = _fits(inputs, copy, record, names)
        if fitting:
            yield Suggestion(f"fits if 1 more node of pool {pool} were added (like {template.metadata.name})",
                             Cost("nodes", 1, "nodes", "add 1 node"),
                             {"pool": pool, "label": label, "nodes": 1, "like": template.metadata.name}, fitting)


# ---------------------------------------------------------------------------------------------- selectors


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


def _pending_claims(state: ClusterState, record: PodRecord) -> list[tuple[str, ResourceClaim]]:
    return [(k, c) for k in _pod_claim_keys(record) if (c := state.claims.get(k)) is not None
            and c.status.allocation is None]


def _short(comparison: Comparison, literal: str) -> str:
    return f"{comparison.name} {comparison.op} {literal}"


def _selectors(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
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
             "expression": source, "relaxed": relaxed, "from": shown_old, "to": text}, fitting)
    return None


# ---------------------------------------------------------------------------------------------- taints


def _node_taints(state: ClusterState, record: PodRecord) -> list[tuple[str, str, str]]:
    from kubedra.scheduler.nodefit import taint_reason

    seen: dict[tuple[str, str, str], None] = {}
    for node in state.nodes.values():
        if taint_reason(record.pod, node) is None:
            continue
        for taint in node.spec.taints:
            if taint.effect in EFFECT_RISK:
                seen.setdefault((taint.key, taint.value, taint.effect))
    return list(seen)


def _device_taints(state: ClusterState) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str, str], None] = {}
    for slice_ in state.slices:
        for device in slice_.spec.devices:
            for taint in device.taints:
                if taint.effect in EFFECT_RISK:
                    seen.setdefault((taint.key, taint.value, taint.effect))
    for rule in state.taint_rules:
        taint = rule.spec.taint
        if taint.effect in EFFECT_RISK:
            seen.setdefault((taint.key, taint.value, taint.effect))
    return list(seen)


def _tolerating_pod(record: PodRecord, key: str, value: str, effect: str) -> PodRecord:
    pod = record.pod
    toleration = Toleration(key=key, operator="Equal", value=value, effect=effect)
    spec = msgspec.structs.replace(pod.spec, tolerations=[*pod.spec.tolerations, toleration])
    return dataclasses.replace(record, pod=msgspec.structs.replace(pod, spec=spec))


def _tolerating_claim(claim: ResourceClaim, key: str, value: str, effect: str) -> ResourceClaim:
    toleration = DeviceToleration(key=key, operator="Equal", value=value, effect=effect)
    requests = []
    for r in claim.spec.devices.requests:
        exactly = r.exactly and msgspec.structs.replace(r.exactly, tolerations=[*r.exactly.tolerations, toleration])
        requests.append(msgspec.structs.replace(r, exactly=exactly, first_available=[
            msgspec.structs.replace(s, tolerations=[*s.tolerations, toleration]) for s in r.first_available]))
    devices = msgspec.structs.replace(claim.spec.devices, requests=requests)
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def _taint_text(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _tolerations(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    tried = 0
    for key, value, effect in _node_taints(state, record):
        if tried >= limits.taints:
            return
        tried += 1
        tainted = [n for n, node in state.nodes.items()
                   if any((t.key, t.value, t.effect) == (key, value, effect) for t in node.spec.taints)]
        fitting = _fits(inputs, _copy(inputs), _tolerating_pod(record, key, value, effect), tainted,
                        limits.nodes_checked)
        if fitting:
            taint = _taint_text(key, value, effect)
            yield Suggestion(f"fits on {_on(fitting)} if the pod tolerated the node taint {taint}",
                             Cost("toleration", EFFECT_RISK[effect], "risk", f"tolerate a {effect} node taint"),
                             {"target": "pod", "key": key, "value": value, "effect": effect}, fitting)
    pending = _pending_claims(state, record)
    if not pending:
        return
    for key, value, effect in _device_taints(state):
        if tried >= limits.taints:
            return
        tried += 1
        changed: dict[str, ResourceClaim | None] = {
            k: _tolerating_claim(c, key, value, effect) for k, c in pending}
        fitting = _fits(inputs, _copy(inputs, claims=changed), record, None, limits.nodes_checked)
        if fitting:
            taint = _taint_text(key, value, effect)
            claims = [_template_of(record, k) or k for k, _ in pending]
            yield Suggestion(
                f"fits on {_on(fitting)} if {', '.join(claims)} tolerated the device taint {taint}",
                Cost("toleration", EFFECT_RISK[effect] + 1, "risk", f"tolerate a {effect} device taint"),
                {"target": "claims", "claims": claims, "key": key, "value": value, "effect": effect}, fitting)


# ---------------------------------------------------------------------------------------------- all together

KINDS: tuple[Callable[[Inputs, PodRecord, Limits], Iterator[Suggestion]], ...] = (
    _releases, _selectors, _tolerations, _more_nodes)


def what_would_fit(inputs: Inputs, key: str, limits: Limits = Limits()) -> list[Suggestion]:
    """The smallest proven changes that let the pending pod ``key`` fit, cheapest first (see the module docstring);
    empty when none of the tried changes helps or the pod is not pending."""
    record = inputs.state.pods.get(key)
    if record is None or record.phase != "Pending":
        return []
    from kubedra.sim.whatif_resources import published_resources  # it builds on this module's proof

    found = [s for kind in (published_resources, *KINDS) for s in kind(inputs, record, limits)]
    return sorted(found, key=lambda s: s.cost.rank())[: limits.suggestions]
