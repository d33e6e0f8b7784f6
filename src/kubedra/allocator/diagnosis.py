"""Why claims do not fit on a node: the diagnosis behind ``unschedulable``, run only after a failed search.

Per request it narrows the node's devices stage by stage as the allocator does — class selectors, request selectors,
capacity that can never fit, then what holds the matching devices right now (in use by which claim, consumable
capacity, counter sets, taints) — and names the stage where too few are left, with the attribute and capacity values
the failing selector reads. When every request could be served on its own, fresh searches find the culprit: a claim
constraint, shared counters, or claims and requests competing for the same devices. Texts never name the node, so
identical situations read identically across nodes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from kubedra.allocator.allocator import Allocator
from kubedra.allocator.capacity import CapacityError, consumed_amount, fits, violates_policy
from kubedra.allocator.constraints import MatchAttribute
from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.errors import AllocationError, SearchBudgetExceeded
from kubedra.allocator.nodes import NodeSelectorError, node_matches
from kubedra.allocator.pools import Pool
from kubedra.allocator.requests import RequestData, claim_ref
from kubedra.allocator.search import Search
from kubedra.allocator.selectors import SelectorMemo
from kubedra.allocator.state import DeviceID
from kubedra.allocator.taints import rule_applies, untolerated
from kubedra.objects.model import DeviceAttribute, DeviceConstraint, Node, ResourceClaim

MAX_VALUES_SHOWN = 3
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Issue:
    """Why a request (or a claim, or the claims together) cannot be allocated on one node.

    ``text`` names neither the node nor the claims holding devices, so nodes in the same situation share it; the
    claims in the way are kept apart in ``users`` (a report merges them per group of nodes).
    """

    claim: str  # claim reference; "" when the claims only fail together
    request: str  # "req" or "req/sub"; "" when the issue concerns the whole claim
    text: str
    users: tuple[str, ...] = ()
    users_label: str = "in use by"

    def line(self, *, with_claim: bool = True, max_users: int = 5) -> str:
        subject = [f"claim {self.claim}"] if with_claim and self.claim else []
        if self.request:
            subject.append(f"request {self.request}" if with_claim else self.request)
        head = (", ".join(subject) + ": ") if subject else ""
        return head + self.text + users_suffix(self.users, self.users_label, max_users)


def users_suffix(users: Sequence[str], label: str, max_users: int = 5, nodes: int = 1) -> str:
    """`` by ns/a, ns/b and 3 more`` (after "all in use") or ``; in use by ...``; for a group of ``nodes`` > 1 the
    claims are those of all the group's nodes, so the text says the devices are in use on each node."""
    if not users:
        return ""
    shown = ", ".join(users[:max_users])
    more = len(users) - max_users
    listed = shown + (f" and {more} more" if more > 0 else "")
    if nodes > 1:
        return f" on each node, by {listed}" if label == "by" else f"; on these nodes {label} {listed}"
    return f" {label} {listed}" if label == "by" else f"; {label} {listed}"


def owners_of(claims: Sequence[ResourceClaim]) -> dict[DeviceID, list[str]]:
    """Device → the allocated claims using it (dedicated or as shares; admin access does not count)."""
    owners: dict[DeviceID, list[str]] = {}
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for r in allocation.devices.results:
            if not r.admin_access:
                found = owners.setdefault(DeviceID(r.driver, r.pool, r.device), [])
                if claim_ref(claim) not in found:
                    found.append(claim_ref(claim))
    return owners


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _attr_text(attr: DeviceAttribute) -> str:
    for value in (attr.string, attr.int, attr.bool, attr.version):
        if value is not None:
            return str(value).lower() if isinstance(value, bool) else str(value)
    for values in (attr.strings, attr.ints, attr.bools, attr.versions):
        if values is not None:
            return "[" + ",".join(str(v) for v in values) + "]"
    return "?"


def _referenced(expression: str, entries: Sequence[DeviceEntry]) -> list[str]:
    """Attributes and capacities (bare ids) of the devices whose names occur in the expression."""
    words = set(_WORD.findall(expression))
    names: dict[str, None] = {}
    if "driver" in words:
        names["driver"] = None
    for entry in entries:
        for qualified in (*entry.device.attributes, *entry.device.capacity):
            ident = qualified.rpartition("/")[2]
            if ident in words:
                names[ident] = None
    return list(names)


def _value(entry: DeviceEntry, name: str) -> str:
    if name == "driver":
        return entry.id.driver
    for qualified, attr in entry.device.attributes.items():
        if qualified.rpartition("/")[2] == name:
            return _attr_text(attr)
    for qualified, cap in entry.device.capacity.items():
        if qualified.rpartition("/")[2] == name:
            return cap.value
    return "unset"


def _summarize_values(entries: Sequence[DeviceEntry], expression: str) -> str:
    """``8 devices have memory=24Gi`` — the values the expression reads, most common first."""
    names = _referenced(expression, entries)
    if not names:
        return f"false for {_plural(len(entries), 'device')}"
    counts = Counter(", ".join(f"{n}={_value(e, n)}" for n in names) for e in entries)
    shown = [
        f"{_plural(n, 'device')} {'has' if n == 1 else 'have'} {values}" if i == 0 else f"{n} {values}"
        for i, (values, n) in enumerate(counts.most_common(MAX_VALUES_SHOWN))
    ]
    rest = len(counts) - MAX_VALUES_SHOWN
    return ", ".join(shown) + (f" and {rest} other combinations" if rest > 0 else "")


def _first_false(memo: SelectorMemo, expressions: Sequence[str], entry: DeviceEntry) -> int | None:
    """Index of the first selector that is false (or fails) on the device; None when all are true."""
    from kubedra.cel import CelRuntimeError

    for index, expression in enumerate(expressions):
        program = memo._program(expression)
        if isinstance(program, str):
            return index
        try:
            if not program.evaluate(entry.view()):
                return index
        except CelRuntimeError:
            return index
    return None


Devices = list[tuple[DeviceEntry, Pool]]


def _selector_stage(
    memo: SelectorMemo, expressions: Sequence[str], devices: Devices, owner: str
) -> tuple[Devices, str]:
    """The devices passing every selector, and (when none does) why, per failing selector."""
    passing: Devices = []
    failing: dict[int, list[DeviceEntry]] = {}
    for entry, pool in devices:
        index = _first_false(memo, expressions, entry)
        if index is None:
            passing.append((entry, pool))
        else:
            failing.setdefault(index, []).append(entry)
    if passing or not failing:
        return passing, ""
    parts = [
        (index, f"({expressions[index]}): {_summarize_values(entries, expressions[index])}")
        for index, entries in sorted(failing.items())
    ]
    if len(parts) == 1:
        index, detail = parts[0]
        return [], f"no device matches selector #{index} of {owner} {detail}"
    return [], f"no device matches {owner}: " + "; ".join(f"selector #{i} {d}" for i, d in parts)


class _Diagnosis:
    """The state one diagnosis reads: the allocator, one prepared search, and who holds which device."""

    def __init__(self, allocator: Allocator, search: Search, owners: Mapping[DeviceID, Sequence[str]]) -> None:
        self.allocator = allocator
        self.features = allocator.features
        self.state = allocator.state
        self.search = search
        self.owners = owners
        self.shared_ids = allocator.state.shares

    def considered(self) -> tuple[Devices, int]:
        """The node's devices any request may look at, and how many wait for binding conditions (gate off)."""
        out: Devices = []
        binding = 0
        node = self.search.view.node
        for entry, pool in self.search.view.flat:
            if entry.has_binding_conditions and not self.features.binding_and_status:
                binding += 1
                continue
            if entry.per_device_nodes:
                d = entry.device
                try:
                    if not node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector):
                        continue
                except NodeSelectorError:
                    continue
            out.append((entry, pool))
        return out, binding

    def matching(self, rd: RequestData) -> tuple[Devices, str]:
        """Devices passing class and request selectors and able to hold the requested capacity, or why none."""
        devices, binding = self.considered()
        class_name = rd.class_obj.metadata.name
        if not devices:
            unusable = [f"pool {p.id} {'is being updated' if p.incomplete else 'is invalid'}"
                        for p in self.search.view.pools if not p.usable]
            why = "no devices are published for the node" + (f" ({'; '.join(unusable)})" if unusable else "")
            if binding:
                why += f" ({_plural(binding, 'device')} with binding conditions: DRADeviceBindingConditions is off)"
            return [], why
        memo = self.allocator.memo
        devices, why = _selector_stage(memo, rd.class_exprs, devices, f"class {class_name}")
        if why:
            return [], why
        devices, why = _selector_stage(memo, rd.request_exprs, devices, "the request")
        if why:
            return [], f"{_plural(self._count_class(class_name), 'device')} match class {class_name}, but " + why
        if not (self.features.consumable_capacity and rd.capacity):
            return devices, ""
        fitting = [(e, p) for e, p in devices if e.capacity and self._fits_empty(rd, e)]
        if fitting:
            return fitting, ""
        asked = ", ".join(f"{k}={v}" for k, v in rd.capacity.items())
        offered = Counter(", ".join(f"{k}={c.value}" for k, c in e.device.capacity.items()) or "no capacity"
                          for e, _ in devices)
        return [], (
            f"{_plural(len(devices), 'device')} match class {class_name}, but none can hold the requested capacity "
            f"{asked} (" + ", ".join(f"{n} with {o}" for o, n in offered.most_common(MAX_VALUES_SHOWN)) + ")"
        )

    def _count_class(self, class_name: str) -> int:
        devices, _ = self.considered()
        exprs = tuple(s.cel.expression for s in self.allocator.classes[class_name].spec.selectors if s.cel)
        return sum(1 for e, _ in devices if _first_false(self.allocator.memo, exprs, e) is None)

    @staticmethod
    def _fits_empty(rd: RequestData, entry: DeviceEntry) -> bool:
        try:
            return fits(rd.capacity, entry.capacity, None, None)
        except CapacityError:
            return False

    def blocker(self, rd: RequestData, entry: DeviceEntry, pool: Pool) -> tuple[str, tuple[str, ...]] | None:
        """Why a matching device cannot be taken now (in the allocator's order), and the claims behind it."""
        device = entry.id
        if not rd.admin and device in self.state.allocated_devices:
            return "in use", tuple(self.owners.get(device, ()))
        if self.features.consumable_capacity and entry.capacity:
            text = self._capacity_blocker(rd, entry)
            if text:
                return text, tuple(self.owners.get(device, ()))
        if entry.consumes:
            if not self.features.partitionable_devices:
                return "consumes shared counters but DRAPartitionableDevices is off", ()
            multi = self.features.consumable_capacity and entry.multi
            in_use = device in self.state.aggregated_capacity or device in self.shared_ids
            if not (multi and in_use):
                exhausted = self._exhausted_sets(entry, pool)
                if exhausted:
                    return f"counter set {', '.join(exhausted)} exhausted", self._set_users(pool, exhausted)
        if self.features.device_taints and entry.taints:
            taint = untolerated(entry.taints, rd.tolerations)
            if taint is not None:
                key, value, effect = taint
                source = self._taint_source(entry, taint)
                return f"taint {key}{'=' + value if value else ''}:{effect}{source} not tolerated", ()
        return None

    def _taint_source(self, entry: DeviceEntry, taint: tuple[str, str, str]) -> str:
        """`` from DeviceTaintRule x`` when the taint is not the device's own (it is not in the ResourceSlice)."""
        if any((t.key, t.value, t.effect) == taint for t in entry.device.taints):
            return ""
        rules = [
            r.metadata.name
            for r in self.allocator.taint_rules
            if (r.spec.taint.key, r.spec.taint.value, r.spec.taint.effect) == taint
            and rule_applies(r, entry.id.driver, entry.id.pool, entry.id.device)
        ]
        return f" (from DeviceTaintRule {', '.join(rules)})" if rules else ""

    def _capacity_blocker(self, rd: RequestData, entry: DeviceEntry) -> str:
        try:
            if fits(rd.capacity, entry.capacity, self.state.aggregated_capacity.get(entry.id), None):
                return ""
        except CapacityError as exc:
            return f"consumable capacity: {exc}"
        used = self.state.aggregated_capacity.get(entry.id, {})
        for name, cap in entry.capacity.items():
            amount = consumed_amount(rd.capacity.get(name) if rd.capacity else None, cap)
            if violates_policy(amount, cap):
                return f"consumable capacity: {name} {amount} is not allowed by the device's request policy"
            held = used.get(name)
            if held is not None and held + amount > cap.value:
                need = "" if held >= cap.value else f", {amount} needed"
                return f"consumable capacity: {name} {held} of {cap.value} in use{need}"
        return "consumable capacity exhausted"

    def _exhausted_sets(self, entry: DeviceEntry, pool: Pool) -> list[str]:
        counters = self.allocator._pool_counters(pool)
        if counters.reserve(entry):
            counters.release(entry)
            return []
        sets: dict[str, None] = {}
        for set_name, amounts in entry.consumes:
            for name, amount in amounts:
                left = counters.available.get((set_name, name))
                if left is not None and left < amount:
                    sets[set_name] = None
        return list(sets) or [s for s, _ in entry.consumes]

    def _set_users(self, pool: Pool, sets: Sequence[str]) -> tuple[str, ...]:
        users: dict[str, None] = {}
        for slice_ in (*pool.slices, *pool.other_slices):
            for entry in self.allocator.entries(slice_):
                if self.state.is_allocated(entry.id) and any(s in sets for s, _ in entry.consumes):
                    users.update(dict.fromkeys(self.owners.get(entry.id, ())))
        return tuple(users)


@dataclass
class _View:
    """One (sub)request on one node: matching devices, the free ones, and the issue if too few are free."""

    rd: RequestData
    free: list[DeviceEntry]
    want: int
    issue: Issue | None


def _request_view(diag: _Diagnosis, rd: RequestData, ref: str) -> _View:
    matching, why = diag.matching(rd)
    name = rd.full_name
    if why:
        return _View(rd, [], max(1, rd.num_devices), Issue(ref, name, why))
    blocked: Counter[str] = Counter()
    users: dict[str, None] = {}
    free: list[DeviceEntry] = []
    for entry, pool in matching:
        found = diag.blocker(rd, entry, pool)
        if found is None:
            free.append(entry)
        else:
            blocked[found[0]] += 1
            users.update(dict.fromkeys(found[1]))
    want = len(matching) if rd.mode_all else rd.num_devices
    if (rd.mode_all and not blocked) or (not rd.mode_all and len(free) >= want):
        return _View(rd, free, want, None)
    m = len(matching)
    head = f"{_plural(m, 'device')} match{'es' if m == 1 else ''} class {rd.class_obj.metadata.name}"
    if rd.request_exprs:
        head += " and the request's selectors"
    held = tuple(users)
    if not free and set(blocked) == {"in use"}:
        scope = "it is" if m == 1 else "both" if m == 2 else "all"
        return _View(rd, free, want, Issue(ref, name, f"{head}, {scope} in use", held, "by"))
    breakdown = ", ".join(
        f"{n} in use" if kind == "in use" else f"{kind} ({_plural(n, 'device')})" for kind, n in blocked.most_common()
    )
    if not blocked:
        return _View(rd, free, want, Issue(ref, name, f"{head}, {want} requested"))
    if rd.mode_all:
        busy = len(matching) - len(free)
        verb = "is" if busy == 1 else "are"
        text = f"{head}; allocationMode All needs every one of them, but {busy} {verb} not free: "
    elif not free and len(blocked) == 1 and m == 1:
        return _View(rd, free, want, Issue(ref, name, f"{head}: {next(iter(blocked))}", held))
    else:
        text = f"{head}; only {len(free)} of {want} requested devices are free: "
    label = "by" if set(blocked) == {"in use"} else "held by"
    return _View(rd, free, want, Issue(ref, name, text + breakdown, held, label))


def _fits(allocator: Allocator, node: Node, claims: Sequence[ResourceClaim]) -> bool:
    try:
        return allocator.new_search(node, claims).run()
    except (AllocationError, SearchBudgetExceeded):
        return False


def _constraint_issue(claim: ResourceClaim, index: int, views: Sequence[_View]) -> Issue:
    spec = claim.spec.devices.constraints[index]
    attribute = spec.match_attribute or spec.distinct_attribute or ""
    scope = MatchAttribute(attribute, list(spec.requests))
    covered = [v for v in views if scope.covers(v.rd.base, v.rd.name if v.rd.parent is not None else "")]
    needed: dict[str, int] = {}
    for v in covered:
        needed[v.rd.base] = min(needed.get(v.rd.base, v.want), v.want)
    free = {e.id: e for v in covered for e in v.free}
    values = Counter(_attr_text(a) if (a := e.attribute(attribute)) is not None else "unset" for e in free.values())
    shown = ", ".join(f"{value} ({n})" for value, n in values.most_common(MAX_VALUES_SHOWN + 2))
    total = sum(needed.values())
    if spec.match_attribute:
        text = (f"matchAttribute {attribute} cannot be satisfied: {total} devices must share one value, "
                f"the free matching devices have {shown or 'none'}")
    else:
        text = (f"distinctAttribute {attribute} cannot be satisfied: {total} devices need different values, "
                f"the free matching devices have {shown or 'none'}")
    return Issue(claim_ref(claim), "", text)


def _claim_issue(allocator: Allocator, node: Node, claim: ResourceClaim, views: Sequence[_View]) -> Issue:
    """A claim whose requests each fit alone but not all at once: which rule is in the way."""
    ref = claim_ref(claim)
    constraints = claim.spec.devices.constraints
    for index in range(len(constraints)):
        rest = [c for i, c in enumerate(constraints) if i != index]
        if _fits(allocator, node, [_with_constraints(claim, rest)]):
            return _constraint_issue(claim, index, views)
    if constraints and _fits(allocator, node, [_with_constraints(claim, [])]):
        names = ", ".join(c.match_attribute or c.distinct_attribute or "?" for c in constraints)
        return Issue(ref, "", f"the claim's constraints ({names}) cannot all be satisfied by the free devices")
    sets = sorted({s for v in views for e in v.free for s, _ in e.consumes})
    if sets:
        shown = ", ".join(sets[:MAX_VALUES_SHOWN]) + (f" and {len(sets) - MAX_VALUES_SHOWN} more"
                                                     if len(sets) > MAX_VALUES_SHOWN else "")
        return Issue(ref, "", f"the free devices draw on shared counter sets ({shown}) that cannot serve every "
                     "requested device at once")
    requests = sorted({v.rd.base for v in views})
    free = len({e.id for v in views for e in v.free})
    if len(requests) > 1:
        return Issue(ref, "", f"requests {', '.join(requests)} compete for the same devices: together they need "
                     f"more than the {_plural(free, 'free device')} that match them")
    return Issue(ref, "", "no combination of the free devices satisfies the claim")


def _with_constraints(claim: ResourceClaim, constraints: list[DeviceConstraint]) -> ResourceClaim:
    devices = msgspec.structs.replace(claim.spec.devices, constraints=constraints)
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def node_issues(
    allocator: Allocator,
    node: Node,
    claims: Sequence[ResourceClaim],
    owners: Mapping[DeviceID, Sequence[str]],
) -> list[Issue]:
    """Why ``claims`` cannot be allocated together on ``node`` (call after the allocator said they do not fit)."""
    try:
        search = allocator.new_search(node, claims)
    except AllocationError as exc:
        return [Issue("", "", str(exc))]
    diag = _Diagnosis(allocator, search, owners)
    issues: list[Issue] = []
    per_claim: list[list[_View]] = []
    for ci, slots in enumerate(search.slots):
        views: list[_View] = []
        for alternatives in slots:
            alt_views = [_request_view(diag, rd, search.refs[ci]) for rd in alternatives]
            views.extend(alt_views)
            if all(v.issue is not None for v in alt_views):
                issues.extend(v.issue for v in alt_views if v.issue is not None)
        per_claim.append(views)
    if issues:
        return issues
    failing = [ci for ci, claim in enumerate(claims) if not _fits(allocator, node, [claim])]
    if failing:
        return [_claim_issue(allocator, node, claims[ci], per_claim[ci]) for ci in failing]
    competing = ", ".join(_competing(allocator, node, claims, search.refs))
    return [Issue("", "", f"each claim fits alone but not all together: {competing} compete for the same devices")]


def _competing(allocator: Allocator, node: Node, claims: Sequence[ResourceClaim], refs: Sequence[str]) -> list[str]:
    """The claims in the way: a claim is dropped from the blame when the others still fail without it."""
    kept = list(range(len(claims)))
    for ci in range(len(claims)):
        rest = [i for i in kept if i != ci]
        if len(rest) >= 2 and not _fits(allocator, node, [claims[i] for i in rest]):
            kept = rest
    return [refs[i] for i in kept]


def diagnose(
    allocator: Allocator, node: Node, claims: Sequence[ResourceClaim], allocated: Sequence[ResourceClaim] = ()
) -> list[str]:
    """One line per failing request (``req-0: 2 devices match class gpu, both in use by ml/claim-a``)."""
    issues = node_issues(allocator, node, claims, owners_of(allocated))
    return [issue.line(with_claim=len(claims) > 1) for issue in issues]
