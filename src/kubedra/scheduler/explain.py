"""``kubedra explain``: why a pod is pending (or where it runs), node by node, grouped so that 500 nodes read well.

Upstream's scheduler says "0/500 nodes are available: 500 cannot allocate all claims". Here every node is run
through the same checks in kube-scheduler's order — PreFilter (claims exist, may be reserved, classes exist), node
rules (node name, selector/affinity, taints, cpu/memory/pods/device-plugin resources), the nodeSelector of claims
already allocated, then the allocator for the claims still to allocate plus KEP-5004's special claim — and a node
that fails the device step gets the allocator's diagnosis (which request, which selector and the values it reads,
who holds the devices, which constraint, counter set, taint or capacity is in the way). Nodes with the same
explanation form one group; the claims in the way are merged per group.

Documented JSON shape (``as_dict``)::

    pod:     {"pod": "ns/name", "phase": "Pending|Running|Succeeded", "node": str|null, "message": str,
              "summary": str, "claims": [{"claim", "state", "devices", "reservedFor", "allocatedOn"}],
              "groups": [{"check", "reason", "reasons": [str], "count": int, "nodes": [str], "heldBy": [str]}]}
    claim:   {"claim": "ns/name", "state": "allocated|pending", "devices": [...], "allocatedOn": str,
              "reservedFor": [...], "message": str, "pods": [<pod>...], "groups": [...]}

``check`` is one of ``pod`` (PreFilter: applies to every node), ``node`` (node rules), ``allocation`` (a claim's
existing allocation), ``devices`` (the allocator), ``error`` (input the allocator refuses) or ``fits``. Reasons
name at most 5 claims in the way ("and K more"); ``heldBy`` (only when some) lists them all.
Pure: state and allocator in, data out.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubedra.allocator import AllocationError, Allocator, DeviceID, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.diagnosis import Issue, node_issues, owners_of, users_suffix
from kubedra.allocator.results import result_label
from kubedra.cluster.devices import DeviceRecord
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import ZERO, NodeUsage
from kubedra.objects.durations import format_duration
from kubedra.objects.model import (
    AllocationResult,
    Node,
    NodeSelector,
    Pod,
    ResourceClaim,
    ResourceClaimStatus,
    to_dict,
)
from kubedra.scheduler.candidates import device_shapes, pools_are_node_local
from kubedra.scheduler.claims import claim_key, generated_name, key_of, template_not_found
from kubedra.scheduler.device_index import DeviceIndex
from kubedra.scheduler.extended import (
    SPECIAL_CLAIM_IN_MEMORY_NAME,
    ExtendedRequest,
    ExtendedResourceMap,
    dra_served_resources,
    extended_requests,
    node_batch,
)
from kubedra.scheduler.interpodaffinity import INTER_POD_REASONS, AffinityFilter, describe
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.nodefit import (
    NOT_PINNED,
    TAINT_REASON,
    claim_rejecting,
    node_fit_reason,
    pinned_nodes,
    reasons_of,
    untolerated_taint,
)
from kubedra.scheduler.prefilter import prefilter_claims

FITS = "fits"
CHECK_ORDER = {FITS: 0, "pod": 1, "error": 2, "node": 3, "allocation": 4, "devices": 5}
ENDED = ("Succeeded", "Deleted")


@dataclass
class Group:
    """Nodes with the same explanation; ``issues`` carry the claims in the way, merged over the nodes."""

    check: str
    issues: list[Issue]
    nodes: list[str] = field(default_factory=list)
    users: list[dict[str, None]] = field(default_factory=list)

    def reasons(self, labels: dict[str, str] | None = None, max_users: int = 5) -> list[str]:
        out = []
        for issue, users in zip(self.issues, self.users, strict=True):
            subject = _subject(issue, labels or {})
            out.append(subject + issue.text + users_suffix(list(users), issue.users_label, max_users,
                                                                  len(self.nodes)))
        return out


def _subject(issue: Issue, labels: dict[str, str]) -> str:
    if issue.claim.endswith("/" + SPECIAL_CLAIM_IN_MEMORY_NAME):
        resource = labels.get(issue.request.partition("/")[0], issue.request)
        return f"extended resource {resource}: " if issue.request else "extended resources: "
    parts = [f"claim {issue.claim}"] if issue.claim else []
    if issue.request:
        parts.append(f"request {issue.request}")
    return (", ".join(parts) + ": ") if parts else ""


@dataclass
class ClaimLine:
    claim: str
    state: str  # allocated | pending | missing
    devices: list[str] = field(default_factory=list)
    reserved_for: list[str] = field(default_factory=list)
    allocated_on: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "state": self.state, "devices": self.devices,
                "reservedFor": self.reserved_for, "allocatedOn": self.allocated_on}


@dataclass
class PodExplanation:
    pod: str
    phase: str
    node: str
    message: str
    summary: str
    claims: list[ClaimLine]
    groups: list[Group]
    labels: dict[str, str] = field(default_factory=dict)  # special-claim request name -> extended resource
    started_at: float | None = None
    ended_at: float | None = None
    end_reason: str = ""
    cluster: ClusterVerdict | None = None  # what the cluster itself said of the pod, where the input carried it
    gang: dict[str, Any] | None = None  # its PodGroup's state (``explain_groups.gang_section``)
    preemption: dict[str, Any] | None = None  # what preemption does for it (``explain_groups.preemption_section``)

    def as_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"cluster": self.cluster.as_dict()} if self.cluster is not None else {}
        if self.gang is not None:
            extra["gang"] = self.gang
        if self.preemption is not None:
            extra["preemption"] = self.preemption
        return {
            "pod": self.pod,
            "phase": self.phase,
            "node": self.node or None,
            "message": self.message,
            "summary": self.summary,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "endReason": self.end_reason,
            "claims": [c.as_dict() for c in self.claims],
            "groups": [_group_dict(g, self.labels) for g in self.groups],
            **extra,
        }


@dataclass(frozen=True)
class ClusterVerdict:
    """The cluster's own answer for a pod (its ``nodeName`` and ``PodScheduled`` condition, as read from a live
    cluster or a snapshot) beside kubedra's; ``agrees`` is None where the cluster has given no answer yet."""

    node: str
    scheduled: str  # the PodScheduled condition's status: "True", "False" or "" (no condition)
    reason: str
    message: str
    agrees: bool | None
    note: str

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node or None, "scheduled": self.scheduled or None, "reason": self.reason or None,
                "message": self.message or None, "agrees": self.agrees, "note": self.note}


def compare_with_cluster(observed: Pod, explanation: PodExplanation) -> ClusterVerdict:
    """Say where the cluster's own status and kubedra's decision differ instead of hiding it: a pod the cluster's
    scheduler marked Unschedulable that kubedra places, or one bound elsewhere than kubedra has it."""
    condition = next((c for c in observed.status.conditions if c.type == "PodScheduled"), None)
    status, reason, message = (condition.status, condition.reason, condition.message) if condition else ("", "", "")
    bound, ours = observed.spec.node_name, explanation.node
    said = f"{reason}: {message}" if message else reason or "unschedulable"
    if bound:
        agrees = bound == ours
        note = (f"the cluster runs it on {bound}" if agrees else
                f"the cluster runs it on {bound}, kubedra has it on {ours or 'no node'}")
    elif observed.status.phase in ("Succeeded", "Failed"):
        agrees, note = True, f"the cluster reports it {observed.status.phase}"
    elif status == "False":
        agrees = explanation.phase == "Pending"
        note = (f"the cluster's scheduler agrees: {said}" if agrees else
                f"the cluster's scheduler reports {said}, but kubedra finds it fits on {ours}: the cluster may have "
                "changed since the scheduler last tried (it retries on cluster events and after a backoff), or the "
                "scheduler weighs something kubedra does not model")
    else:
        agrees = None
        note = ("the cluster's scheduler has not decided yet (no PodScheduled condition)" +
                (f"; kubedra places it on {ours}" if ours else ""))
    return ClusterVerdict(bound, status, reason, message, agrees, note)


@dataclass
class ClaimExplanation:
    claim: ClaimLine
    message: str
    pods: list[PodExplanation]
    groups: list[Group]

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.claim.as_dict(),
            "message": self.message,
            "pods": [p.as_dict() for p in self.pods],
            "groups": [_group_dict(g, {}) for g in self.groups],
        }


def _group_dict(group: Group, labels: dict[str, str]) -> dict[str, Any]:
    reasons = group.reasons(labels)
    held = list(dict.fromkeys(u for users in group.users for u in users))
    return {"check": group.check, "reason": "; ".join(reasons), "reasons": reasons,
            "count": len(group.nodes), "nodes": group.nodes, **({"heldBy": held} if held else {})}


# ---------------------------------------------------------------------------------------------- lookup


@dataclass(frozen=True)
class Lookup:
    key: str | None  # the one object meant, or None
    matches: list[str]  # when key is None: the ambiguous or close names


def lookup(keys: Iterable[str], name: str, namespace: str | None = None) -> Lookup:
    """``ns/name``, ``name`` with ``namespace``, or a name unique across namespaces; else close matches."""
    keys = list(keys)
    if namespace is None and "/" in name:
        namespace, name = name.split("/", 1)
    if namespace is not None:
        wanted = key_of(namespace, name)
        if wanted in keys:
            return Lookup(wanted, [])
    else:
        same = [k for k in keys if k.split("/", 1)[1] == name]
        if len(same) == 1:
            return Lookup(same[0], [])
        if same:
            return Lookup(None, same)
    scoped = [k for k in keys if namespace is None or k.startswith(namespace + "/")]
    prefixed = [k for k in scoped if k.split("/", 1)[1].startswith(name)]
    names = {k.split("/", 1)[1]: k for k in scoped}
    close = [names[n] for n in difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)]
    return Lookup(None, list(dict.fromkeys([*prefixed[:10], *close])))


# ---------------------------------------------------------------------------------------------- the checks


@dataclass
class _Attempt:
    """What explaining one pod needs on every node (PreFilter's result)."""

    record: PodRecord
    claims: list[ResourceClaim]
    to_allocate: list[ResourceClaim]
    extended: list[ExtendedRequest]
    mapping: ExtendedResourceMap
    usage_without_pod: str = ""  # node whose usage excludes the pod (a running pod's own node)
    inter_pod: AffinityFilter | None = None  # InterPodAffinity's PreFilter state, the pod itself left out


def _device_check(
    allocator: Allocator, node: Node, batch: list[ResourceClaim], owners: dict[DeviceID, list[str]]
) -> tuple[str, list[Issue]]:
    """The allocator's verdict on one node as (check, issues): fits, devices (with the diagnosis) or error."""
    try:
        results = allocator.allocate(node, batch)
    except SearchBudgetExceeded as exc:
        return "devices", [Issue("", "", f"timed out trying to allocate devices ({exc})")]
    except NodeAllocationFailed as exc:
        return "devices", [Issue("", "", str(exc))]
    except AllocationError as exc:
        return "error", [Issue("", "", str(exc))]
    if results is not None and len(results) == len(batch):
        return FITS, []
    return "devices", node_issues(allocator, node, batch, owners)


def _describe_selector(selector: NodeSelector) -> str:
    names = [v for term in selector.node_selector_terms for f in term.match_fields
             if f.key == "metadata.name" and f.operator == "In" for v in f.values]
    if len(names) == 1 and len(selector.node_selector_terms) == 1:
        return f"allocated on node {names[0]}"
    return "allocated for other nodes"


def _quantity(text: str | None) -> str:
    return text if text is not None else "none"


def _node_detail(status: str, record: PodRecord, node: Node) -> str:
    """kube-scheduler's reasons plus what each compared (values that are the same across a node pool)."""
    return "; ".join(_reason_detail(reason, record, node) for reason in reasons_of(status))


def _reason_detail(reason: str, record: PodRecord, node: Node) -> str:
    pod = record.pod
    if reason.startswith("Insufficient "):
        name = reason.removeprefix("Insufficient ")
        have = node.status.allocatable.get(name)
        want = record.requests.get(name, ZERO)
        if have is None:
            return f"{reason} (the pod requests {want}; the node does not advertise {name})"
        return f"{reason} (the pod requests {want}; node allocatable {have})"
    if reason == "Too many pods":
        return f"{reason} (node allocatable pods {_quantity(node.status.allocatable.get('pods'))})"
    if "node affinity/selector" in reason:
        labels = node.metadata.labels
        wrong = [f"{k}={v} (node: {labels.get(k, 'unset')})"
                 for k, v in pod.spec.node_selector.items() if labels.get(k) != v]
        return f"{reason}: nodeSelector {', '.join(wrong)}" if wrong else f"{reason}: required node affinity"
    if reason == TAINT_REASON:
        taint = untolerated_taint(pod, node)
        if taint is not None:
            return f"{reason}: {{{taint.key}: {taint.value}}}" if taint.value else f"{reason}: {{{taint.key}}}"
    return reason


class _Grouper:
    """Collects (check, issues) per node into groups keyed by everything but the claims in the way."""

    def __init__(self) -> None:
        self.found: dict[tuple[object, ...], Group] = {}

    def add(self, node: str, check: str, issues: list[Issue]) -> None:
        key = (check, *((i.claim, i.request, i.text, i.users_label) for i in issues))
        group = self.found.get(key)
        if group is None:
            group = self.found[key] = Group(check, issues, users=[{} for _ in issues])
        group.nodes.append(node)
        for merged, issue in zip(group.users, issues, strict=True):
            merged.update(dict.fromkeys(issue.users))

    def groups(self) -> list[Group]:
        return sorted(self.found.values(), key=lambda g: (CHECK_ORDER.get(g.check, 9), -len(g.nodes)))


class _Explainer:
    def __init__(self, state: ClusterState, allocator: Allocator) -> None:
        self.state = state
        self.allocator = allocator
        # Without the DRAExtendedResource gate no class serves an extended resource (the API server drops the field).
        classes = list(state.classes.values()) if allocator.features.extended_resource else []
        self.mapping = ExtendedResourceMap(classes)
        self.owners = owners_of(list(state.allocated_claims()))
        self.pod_affinity = BoundAffinity(state, watch=False)  # explaining changes nothing

    def check_node(self, attempt: _Attempt, node: Node) -> tuple[str, list[Issue]]:
        """The first failing check on one node and its explanation, or (``fits``, [])."""
        name = node.metadata.name
        record = attempt.record
        served = dra_served_resources(attempt.extended, node, self.mapping) if attempt.extended else frozenset()
        usage = self.state.usage.get(name, NodeUsage())
        if name == attempt.usage_without_pod:
            usage = NodeUsage(dict(usage.requested), usage.pods)
            usage.remove(record.requests)
        pinned = pinned_nodes(record.pod)
        if pinned is not None and name not in pinned:  # left out by NodeAffinity's PreFilter, as a DaemonSet pins
            shown = ", ".join(sorted(pinned))
            return "node", [Issue("", "", f"{NOT_PINNED}: the pod is pinned to {shown} (matchFields metadata.name)")]
        reason = node_fit_reason(record.pod, record.requests, node, usage, served, ports=record.host_ports,
                                 inter_pod=attempt.inter_pod)
        if reason:
            if attempt.inter_pod is not None and reason in INTER_POD_REASONS:
                return "node", [Issue("", "", describe(attempt.inter_pod, node, reason))]
            return "node", [Issue("", "", _node_detail(reason, record, node))]
        rejecting = claim_rejecting(attempt.claims, node)
        if rejecting is not None:
            selector = rejecting.status.allocation.node_selector if rejecting.status.allocation else None
            assert selector is not None
            where = _describe_selector(selector)
            text = f"node not selected by the claim's existing allocation ({where})"
            return "allocation", [Issue(claim_key(rejecting), "", text)]
        batch, _ = node_batch(record.pod, attempt.to_allocate, attempt.extended, served, self.mapping)
        if not batch:
            return FITS, []
        return _device_check(self.allocator, node, batch, self.owners)

    def groups(self, attempt: _Attempt, skip: str = "") -> list[Group]:
        grouper = _Grouper()
        for name, node in self.state.nodes.items():
            if name != skip:
                grouper.add(name, *self.check_node(attempt, node))
        return grouper.groups()

    def attempt(self, record: PodRecord, claims: list[ResourceClaim], own_node: str = "") -> _Attempt:
        extended = extended_requests(record.pod) if self.mapping else []
        return _Attempt(record, claims, [c for c in claims if c.status.allocation is None], extended, self.mapping,
                        own_node, self.pod_affinity.prefilter(record.pod, skip=record.key))


def _allocated_on(allocation: AllocationResult) -> str:
    if allocation.node_selector is None:
        return "all nodes"
    return _describe_selector(allocation.node_selector).removeprefix("allocated on node ")


def claim_line(claim: ResourceClaim) -> ClaimLine:
    allocation = claim.status.allocation
    reserved = [key_of(claim.metadata.namespace, r.name) for r in claim.status.reserved_for]
    if allocation is None:
        return ClaimLine(claim_key(claim), "pending", reserved_for=reserved)
    return ClaimLine(claim_key(claim), "allocated", [result_label(r) for r in allocation.devices.results],
                     reserved, _allocated_on(allocation))


def missing_templates(state: ClusterState, record: PodRecord) -> list[tuple[str, str]]:
    """(pod claim, template) for each claim of the pod whose ResourceClaimTemplate does not exist, so that the
    resourceclaim controller can never create it."""
    pod = record.pod
    generated = {s.name for s in pod.status.resource_claim_statuses}
    return [
        (c.name, c.resource_claim_template_name)
        for c in pod.spec.resource_claims
        if c.resource_claim_template_name and c.name not in generated
        and key_of(pod.metadata.namespace, c.resource_claim_template_name) not in state.templates
    ]


def _pod_claim_lines(state: ClusterState, record: PodRecord) -> list[ClaimLine]:
    pod = record.pod
    statuses = pod.status.resource_claim_statuses
    no_template = dict(missing_templates(state, record))
    ended = record.phase in ENDED
    lines = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated_name(statuses, pod_claim.name)
        claim = state.claims.get(key_of(pod.metadata.namespace, name)) if name else None
        if claim is None:
            label = name or f"{pod_claim.name} (from template {pod_claim.resource_claim_template_name})"
            state_ = "missing"
            if pod_claim.name in no_template:
                state_ = "template not found"
            elif ended and not pod_claim.resource_claim_name:
                state_ = "deleted"  # a generated claim goes with its pod once the pod is done
            lines.append(ClaimLine(key_of(pod.metadata.namespace, label), state_))
        else:
            lines.append(claim_line(claim))
    special = state.claims.get(record.extended_claim_key) if record.extended_claim_key else None
    if special is not None:
        lines.append(claim_line(special))
    return lines


def _fits_summary(groups: Sequence[Group], total: int, verb: str) -> str:
    fitting = sum(len(g.nodes) for g in groups if g.check == FITS)
    return f"{fitting} of {total} nodes {verb}"


def explain_pod(
    state: ClusterState, allocator: Allocator, key: str, *, policy: str = "", other_nodes: bool = True
) -> PodExplanation:
    """Why the pod ``key`` (``ns/name``) is pending, or where it runs and which other nodes could run it, or how it
    ended. The pod's phase, node and end come from its record (``PodRecord.phase``, the simulation report's answer);
    the node checks run on ``state`` as it is. ``other_nodes=False`` skips checking other nodes for a running pod."""
    explanation = _explain_pod(state, allocator, key, policy, other_nodes)
    record = state.pods[key]
    explanation.started_at, explanation.ended_at = record.started_at, record.finished_at
    return explanation


def _explain_pod(state: ClusterState, allocator: Allocator, key: str, policy: str, other_nodes: bool) -> PodExplanation:
    record = state.pods[key]
    phase = record.phase
    node = record.pod.spec.node_name
    claims = _pod_claim_lines(state, record)
    labels = {r.request_name: r.resource for r in extended_requests(record.pod)}
    total = len(state.nodes)
    if phase in ENDED:
        ran = f"from {format_duration(record.started_at or 0)} to {format_duration(record.finished_at or 0)}"
        if phase == "Deleted":
            message = (f"deleted at {format_duration(record.finished_at or 0)} after running on {node} {ran}: "
                       f"{record.end_reason}")
            return PodExplanation(key, phase, node, message, "the pod was deleted", claims, [], labels,
                                  end_reason=record.end_reason)
        message = f"finished on {node} after running {ran}"
        return PodExplanation(key, phase, node, message, "the pod has finished", claims, [], labels)
    gates = [gate.name for gate in record.pod.spec.scheduling_gates]
    if phase == "Pending" and gates:  # SchedulingGates' PreEnqueue: no node is tried while a gate remains
        summary = (f"gated by {', '.join(gates)}: kube-scheduler does not try it on any node until its scheduling "
                   "gates are removed (a controller such as Kueue removes them when it admits the workload)")
        return PodExplanation(key, phase, node, record.pending_reason, summary, claims, [], labels)
    if phase == "Running" and not other_nodes:
        message = f"scheduled at {format_duration(record.started_at or 0)} on {node}"
        return PodExplanation(key, phase, node, message, "", claims, [], labels)
    explainer = _Explainer(state, allocator)  # indexes every allocated claim: only when nodes are checked
    if phase == "Running":
        resolved = prefilter_claims(state, record)
        hypothetical = [
            msgspec.structs.replace(c, status=ResourceClaimStatus()) if c.status.allocation is not None and
            len(c.status.reserved_for) <= 1 else c
            for c in (resolved if isinstance(resolved, list) else [])
        ]
        unbound = dataclasses.replace(
            record, pod=msgspec.structs.replace(record.pod, spec=msgspec.structs.replace(record.pod.spec, node_name=""))
        )
        groups = explainer.groups(explainer.attempt(unbound, hypothetical, node), skip=node)
        by = f" by the {policy} policy" if policy else ""
        message = (f"scheduled at {format_duration(record.started_at or 0)} on {node}{by}, among the nodes where its "
                   "node rules "
                   "and claims fit at that time")
        summary = _fits_summary(groups, total - 1, "other than its own could run it now")
        return PodExplanation(key, phase, node, message, summary, claims, groups, labels)
    resolved = prefilter_claims(state, record)
    if isinstance(resolved, str):
        namespace = record.pod.metadata.namespace
        issues = [
            Issue("", "", f"pod claim {claim!r}: ResourceClaimTemplate {key_of(namespace, template)} does not exist, "
                  f"so the resourceclaim controller cannot create the claim ({template_not_found(claim, template)})")
            for claim, template in missing_templates(state, record)
        ] or [Issue("", "", resolved)]
        group = Group("pod", issues, list(state.nodes), [{} for _ in issues])
        return PodExplanation(key, phase, node, record.pending_reason or resolved,
                              f"0 of {total} nodes can run the pod now", claims, [group], labels)
    groups = explainer.groups(explainer.attempt(record, resolved))
    summary = _fits_summary(groups, total, "can run the pod now")
    return PodExplanation(key, phase, node, record.pending_reason, summary, claims, groups, labels)


def _uses(record: PodRecord, key: str) -> bool:
    pod = record.pod
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated_name(pod.status.resource_claim_statuses, pod_claim.name)
        if name and key_of(pod.metadata.namespace, name) == key:
            return True
    return record.extended_claim_key == key


def explain_claim(state: ClusterState, allocator: Allocator, key: str, *, policy: str = "") -> ClaimExplanation:
    """The claim's allocation and users, the explanation of every pod using it, or (unused) where it could go."""
    claim = state.claims[key]
    line = claim_line(claim)
    users = [k for k, record in state.pods.items() if _uses(record, key)]
    pods = [explain_pod(state, allocator, k, policy=policy) for k in users]
    if claim.status.allocation is not None:
        message = f"allocated on {line.allocated_on}, reserved for {len(claim.status.reserved_for)} pod(s)"
        return ClaimExplanation(line, message, pods, [])
    if users:
        pending = sum(1 for p in pods if p.phase == "Pending")
        message = (f"not allocated: it is allocated when the first pod using it is scheduled; "
                   f"{pending} of {len(pods)} pod(s) using it are pending")
        return ClaimExplanation(line, message, pods, [])
    owners = owners_of(list(state.allocated_claims()))
    grouper = _Grouper()
    for name, node in state.nodes.items():
        grouper.add(name, *_device_check(allocator, node, [claim], owners))
    message = "no pod uses this claim; a claim is allocated when the first pod using it is scheduled"
    return ClaimExplanation(line, message, [], grouper.groups())


# ---------------------------------------------------------------------------------------------- workloads

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job")


@dataclass
class PodGroup:
    """Pods of one workload with the same answer; ``explanation`` is the first pod's (the others differ in names)."""

    phase: str
    pods: list[str]
    nodes: list[str]
    explanation: PodExplanation

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "count": len(self.pods), "pods": self.pods, "nodes": self.nodes,
                "explanation": self.explanation.as_dict()}


@dataclass
class WorkloadExplanation:
    workload: str  # "Deployment/ns/name"
    summary: str
    groups: list[PodGroup]

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "summary": self.summary, "groups": [g.as_dict() for g in self.groups]}


def _workloads_of(record: PodRecord, kind: str) -> list[str]:
    """``ns/name`` of the workloads of ``kind`` the pod belongs to: its controller's owner references (a Deployment's
    pods are owned by its ReplicaSet) and the workload it was made from."""
    pod = record.pod
    keys = [key_of(pod.metadata.namespace, o.name) for o in pod.metadata.owner_references if o.kind == kind]
    if record.owner.startswith(kind + "/"):
        keys.append(record.owner.removeprefix(kind + "/"))
    return keys


def workload_keys(state: ClusterState, kind: str) -> list[str]:
    """``ns/name`` of every workload of ``kind`` that has pods, in the order its first pod appears."""
    return list(dict.fromkeys(k for r in state.pods.values() for k in _workloads_of(r, kind)))


def _own_claims(record: PodRecord) -> dict[str, str]:
    """The pod's generated claim keys -> a name that is the same for every pod of the workload."""
    pod = record.pod
    names = {key_of(pod.metadata.namespace, s.resource_claim_name): f"<claim {s.name} of the pod>"
             for s in pod.status.resource_claim_statuses if s.resource_claim_name}
    if record.extended_claim_key:
        names[record.extended_claim_key] = "<extended-resource claim of the pod>"
    return names


def _answer(explanation: PodExplanation, record: PodRecord) -> str:
    """The explanation with the pod's own names replaced, so pods of one template that got the same answer match."""
    data = explanation.as_dict()
    for key in ("pod", "node", "startedAt", "endedAt"):
        data.pop(key)
    if explanation.phase != "Pending":
        data = {"phase": data["phase"], "endReason": data["endReason"]}
    text = msgspec.json.encode(data).decode()
    for key, label in _own_claims(record).items():
        text = text.replace(key, label)
    return text.replace(record.key, "<the pod>").replace(record.pod.metadata.name, "<the pod>")


def _signature(record: PodRecord) -> tuple[object, ...]:
    """What a pending pod's explanation depends on besides the cluster state: pods with equal signatures get the
    same answer, so it is computed once for them (a 1,000-replica Deployment is not checked 1,000 times)."""
    reason = record.pending_reason
    for key, label in _own_claims(record).items():
        reason = reason.replace(key.split("/", 1)[1], label)
    generated = tuple(sorted(s.name for s in record.pod.status.resource_claim_statuses))
    return msgspec.json.encode(record.pod.spec), record.pod.metadata.namespace, generated, reason, record.phase


def explain_workload(
    state: ClusterState, allocator: Allocator, kind: str, key: str, *, policy: str = ""
) -> WorkloadExplanation:
    """The pods of workload ``kind`` ``key`` (``ns/name``), grouped by answer: running and ended pods by phase (and
    why they ended), pending pods by their node-by-node explanation."""
    owner = f"{kind}/{key}"
    keys = [k for k, r in state.pods.items() if key in _workloads_of(r, kind)]
    computed: dict[tuple[object, ...], tuple[PodExplanation, str]] = {}
    groups: dict[str, PodGroup] = {}
    phases: dict[str, int] = {}
    for pod_key in keys:
        record = state.pods[pod_key]
        phases[record.phase] = phases.get(record.phase, 0) + 1
        signature = _signature(record)
        known = computed.get(signature)
        if known is None or record.phase != "Pending":
            explanation = explain_pod(state, allocator, pod_key, policy=policy, other_nodes=False)
            known = computed[signature] = explanation, _answer(explanation, record)
        explanation, answer = known
        group = groups.get(answer)
        if group is None:
            group = groups[answer] = PodGroup(record.phase, [], [], explanation)
        group.pods.append(pod_key)
        node = record.pod.spec.node_name
        if node and node not in group.nodes:
            group.nodes.append(node)
    order = {"Pending": 0, "Running": 1, "Succeeded": 2, "Deleted": 3}
    ordered = sorted(groups.values(), key=lambda g: (order.get(g.phase, 9), -len(g.pods)))
    counts = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items(), key=lambda p: order.get(p[0], 9)))
    summary = f"{len(keys)} pod{'s' if len(keys) != 1 else ''}: {counts}"
    return WorkloadExplanation(owner, summary, ordered)


class ClaimsFit:
    """Whether a pending pod's claims could be allocated on a node now: the claims' existing allocations, then the
    allocator, as ``explain`` runs them — node rules and cpu/memory left out, and no diagnosis of a node that does not
    fit. For the report's stranded capacity (free devices no waiting request can use), which asks it of many pods
    and nodes, again at every sample of a run: answers are kept per pod shape (``key``) and node state, so nodes
    alike in devices and use, and nodes unchanged since the last sample, are decided once."""

    def __init__(self, state: ClusterState, allocator: Allocator, index: DeviceIndex | None = None) -> None:
        self._explainer = _Explainer(state, allocator)
        self._state = state
        self._index = index  # the run's free-device counts, where it keeps them: plain demands decided by count
        self._answers: dict[tuple[str, frozenset[str], Hashable], bool] = {}
        self._shape_of: dict[str, int | None] | None = None  # node -> its device shape (None: not comparable)
        self._devices_of: dict[str, list[DeviceRecord]] = {}

    def key(self, record: PodRecord) -> str:
        """Pods alike for ``fits``: the same device requests (claim specs, their claims' allocations, extended
        resources). The pod's node rules and cpu/memory do not count: ``fits`` does not read them."""
        state = self._state
        pod = record.pod
        namespace = pod.metadata.namespace
        generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
        claims: list[Any] = []
        for source in pod.spec.resource_claims:
            name = source.resource_claim_name or generated.get(source.name)
            claim = state.claims.get(f"{namespace}/{name}") if name else None
            if claim is not None:
                allocation = claim.status.allocation
                claims.append([to_dict(claim.spec), to_dict(allocation) if allocation is not None else None])
            elif source.resource_claim_template_name and not source.resource_claim_name:
                template = state.templates.get(f"{namespace}/{source.resource_claim_template_name}")
                claims.append([to_dict(template.spec.spec), None] if template is not None else None)
            else:
                claims.append(None)
        extended = [dataclasses.astuple(r)[2:] for r in extended_requests(pod)] if self._explainer.mapping else []
        return msgspec.json.encode([claims, extended]).decode()

    def attempt(self, record: PodRecord) -> _Attempt | None:
        """What checking the pod needs on every node; None when its claims cannot exist (no node fits)."""
        resolved = prefilter_claims(self._state, record)
        return None if isinstance(resolved, str) else self._explainer.attempt(record, resolved)

    def fits(self, attempt: _Attempt, node: Node, key: str | None = None) -> bool:
        """``key``: the pod's ``key`` — the answer is then kept for this node's state."""
        explainer = self._explainer
        if claim_rejecting(attempt.claims, node) is not None:
            return False
        served = dra_served_resources(attempt.extended, node, explainer.mapping) if attempt.extended else frozenset()
        node_state = self._node_state(node.metadata.name) if key is not None else None
        if node_state is not None and key is not None:
            known = self._answers.get((key, served, node_state))
            if known is not None:
                return known
        batch, _ = node_batch(attempt.record.pod, attempt.to_allocate, attempt.extended, served, explainer.mapping)
        if not batch:
            return False  # nothing to allocate: the pod asks no device of this node
        answer = self._counted(batch, node.metadata.name)
        if answer is None:
            try:
                results = explainer.allocator.allocate(node, batch)
            except AllocationError:  # NodeAllocationFailed and SearchBudgetExceeded included: no fit found here
                answer = False
            else:
                answer = results is not None and len(results) == len(batch)
        if node_state is not None and key is not None:
            if len(self._answers) >= MAX_KEPT_ANSWERS:
                self._answers.clear()
            self._answers[key, served, node_state] = answer
        return answer

    def _counted(self, batch: list[ResourceClaim], name: str) -> bool | None:
        """The answer the free-device counts give, as the scheduler takes it: too few matching devices free never
        fit, enough on a node whose devices are plain always do; shares as ``DeviceIndex.shares_fit`` counts them
        (None: the allocator must say)."""
        index = self._index
        if index is None:
            return None
        demand = index.demand(batch)
        if demand is None:
            shares = index.share_demand(batch)
            return index.shares_fit(shares, name) if shares is not None else None
        if index.free(demand.signature, name) < demand.count:
            return False
        return True if index.exact(name) else None

    def _node_state(self, name: str) -> Hashable | None:
        """What the allocator's answer on a node depends on, when that is only its own devices and their use:
        pools node-local and no taint rules (as the scheduler's ``NodeSets.state_key``), and here shares and
        consumed capacity too. Nodes whose slices carry the same devices in the same order, with the same ones
        in use and the same consumed, get the same answer: CEL sees neither pool nor node."""
        state = self._state
        if state.taint_rules:
            return None
        if self._shape_of is None:
            names = list(state.nodes)
            local = pools_are_node_local(state)
            self._shape_of = dict(zip(names, device_shapes(state, names) if local else [None] * len(names),
                                      strict=True))
            for record in state.devices.by_key.values():
                if record.node is not None:
                    self._devices_of.setdefault(record.node, []).append(record)
        shape = self._shape_of.get(name)
        if shape is None:
            return None
        shares, capacity = state.devices.allocated.shares, state.devices.allocated.aggregated_capacity
        used = []
        for record in self._devices_of.get(name, ()):
            consumed = capacity.get(record.id)
            if consumed or record.id in shares:
                amounts = tuple(sorted((c, q.nanos) for c, q in consumed.items())) if consumed else ()
                used.append((record.local, shares.get(record.id, 0), amounts))
        return shape, state.devices.in_use_on(name), tuple(used)


MAX_KEPT_ANSWERS = 200_000
