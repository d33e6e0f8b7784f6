"""``kubedra explain``'s checks of one pod on every node, in kube-scheduler's order, and the groups of nodes with the
same explanation."""

from __future__ import annotations

from dataclasses import dataclass

from kubedra.allocator import AllocationError, Allocator, DeviceID, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.diagnosis import Issue, node_issues, owners_of
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import NodeUsage
from kubedra.objects.model import Node, NodeSelector, ResourceClaim
from kubedra.scheduler.claims import claim_key
from kubedra.scheduler.explain_results import CHECK_ORDER, FITS, Group
from kubedra.scheduler.extended import (
    ExtendedRequest,
    ExtendedResourceMap,
    dra_served_resources,
    extended_requests,
    node_batch,
)
from kubedra.scheduler.interpodaffinity import INTER_POD_REASONS, AffinityFilter, describe
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.nodefit import NOT_PINNED, claim_rejecting, node_detail, node_fit_reason, pinned_nodes
from kubedra.scheduler.podtopologyspread import SPREAD_REASONS, SpreadFilter, prefilter_in
from kubedra.scheduler.podtopologyspread import describe as describe_spread


@dataclass
class Attempt:
    """What explaining one pod needs on every node (PreFilter's result)."""

    record: PodRecord
    claims: list[ResourceClaim]
    to_allocate: list[ResourceClaim]
    extended: list[ExtendedRequest]
    mapping: ExtendedResourceMap
    usage_without_pod: str = ""  # node whose usage excludes the pod (a running pod's own node)
    inter_pod: AffinityFilter | None = None  # InterPodAffinity's PreFilter state, the pod itself left out
    spread: SpreadFilter | None = None  # PodTopologySpread's (explicit constraints), the pod itself left out


def device_check(
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


def describe_selector(selector: NodeSelector) -> str:
    names = [v for term in selector.node_selector_terms for f in term.match_fields
             if f.key == "metadata.name" and f.operator == "In" for v in f.values]
    if len(names) == 1 and len(selector.node_selector_terms) == 1:
        return f"allocated on node {names[0]}"
    return "allocated for other nodes"


class Grouper:
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


class Explainer:
    def __init__(self, state: ClusterState, allocator: Allocator) -> None:
        self.state = state
        self.allocator = allocator
        # Without the DRAExtendedResource gate no class serves an extended resource (the API server drops the field).
        classes = list(state.classes.values()) if allocator.features.extended_resource else []
        self.mapping = ExtendedResourceMap(classes)
        self.owners = owners_of(list(state.allocated_claims()))
        self.pod_affinity = BoundAffinity(state, watch=False)  # explaining changes nothing

    def check_node(self, attempt: Attempt, node: Node) -> tuple[str, list[Issue]]:
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
                                 inter_pod=attempt.inter_pod, spread=attempt.spread)
        if reason:
            if attempt.spread is not None and reason in SPREAD_REASONS:
                return "node", [Issue("", "", describe_spread(attempt.spread, node, reason))]
            if attempt.inter_pod is not None and reason in INTER_POD_REASONS:
                return "node", [Issue("", "", describe(attempt.inter_pod, node, reason))]
            return "node", [Issue("", "", node_detail(reason, record, node))]
        rejecting = claim_rejecting(attempt.claims, node)
        if rejecting is not None:
            selector = rejecting.status.allocation.node_selector if rejecting.status.allocation else None
            assert selector is not None
            where = describe_selector(selector)
            text = f"node not selected by the claim's existing allocation ({where})"
            return "allocation", [Issue(claim_key(rejecting), "", text)]
        batch, _ = node_batch(record.pod, attempt.to_allocate, attempt.extended, served, self.mapping)
        if not batch:
            return FITS, []
        return device_check(self.allocator, node, batch, self.owners)

    def groups(self, attempt: Attempt, skip: str = "") -> list[Group]:
        grouper = Grouper()
        for name, node in self.state.nodes.items():
            if name != skip:
                grouper.add(name, *self.check_node(attempt, node))
        return grouper.groups()

    def attempt(self, record: PodRecord, claims: list[ResourceClaim], own_node: str = "") -> Attempt:
        extended = extended_requests(record.pod) if self.mapping else []
        return Attempt(record, claims, [c for c in claims if c.status.allocation is None], extended, self.mapping,
                        own_node, self.pod_affinity.prefilter(record.pod, skip=record.key),
                        prefilter_in(self.state, record.pod, skip=record.key))
