"""``kubedra explain``: why a pod is pending (or where it runs), node by node, grouped so that 500 nodes read well.

Upstream's scheduler says "0/500 nodes are available: 500 cannot allocate all claims". Here every node is run
through the same checks in kube-scheduler's order — PreFilter (claims exist, may be reserved, classes exist), node
rules (node name, selector/affinity, taints, cpu/memory/pods/device-plugin resources), the nodeSelector of claims
already allocated, then the allocator for the claims still to allocate plus KEP-5004's special claim — and a node
that fails the device step gets the allocator's diagnosis (which request, which selector and the values it reads,
who holds the devices, which constraint, counter set, taint or capacity is in the way). Nodes with the same
explanation form one group; the claims in the way are merged per group.

The per-node checks are ``explain_checks.py``, what comes back and its JSON shape ``explain_results.py``, a
workload's pods ``explain_workload.py``.
Pure: state and allocator in, data out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import msgspec

from kubedra.allocator import Allocator
from kubedra.allocator.diagnosis import Issue, owners_of
from kubedra.allocator.results import result_label
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.durations import format_duration
from kubedra.objects.model import AllocationResult, ResourceClaim, ResourceClaimStatus
from kubedra.scheduler.claims import claim_key, generated_name, key_of, template_not_found
from kubedra.scheduler.explain_checks import Explainer, Grouper, describe_selector, device_check
from kubedra.scheduler.explain_results import FITS, ClaimExplanation, ClaimLine, Group, PodExplanation
from kubedra.scheduler.extended import extended_requests
from kubedra.scheduler.prefilter import prefilter_claims

ENDED = ("Succeeded", "Deleted")


def _allocated_on(allocation: AllocationResult) -> str:
    if allocation.node_selector is None:
        return "all nodes"
    return describe_selector(allocation.node_selector).removeprefix("allocated on node ")


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
    explainer = Explainer(state, allocator)  # indexes every allocated claim: only when nodes are checked
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
    grouper = Grouper()
    for name, node in state.nodes.items():
        grouper.add(name, *device_check(allocator, node, [claim], owners))
    message = "no pod uses this claim; a claim is allocated when the first pod using it is scheduled"
    return ClaimExplanation(line, message, [], grouper.groups())


