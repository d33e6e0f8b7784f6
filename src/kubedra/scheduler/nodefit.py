"""The node-level rules a GPU user writes, as kube-scheduler's plugins check them.

NodeName, NodeUnschedulable, TaintToleration (NoSchedule and NoExecute), NodeAffinity (``nodeSelector`` and required
affinity) and NodeResourcesFit (cpu, memory, pods, device-plugin extended resources). Each check returns ``None``
when the node fits or the reason in kube-scheduler's words, so pending pods explain themselves.
``node_detail`` adds what each reason compared, for ``kubedra explain``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kubedra.cluster.state import PodRecord
from kubedra.cluster.usage import ZERO, HostPort, NodeUsage, ports_conflict
from kubedra.objects.model import Node, Pod, ResourceClaim, Taint
from kubedra.objects.quantity import Quantity
from kubedra.objects.selection import node_selector_matches, toleration_tolerates
from kubedra.scheduler.interpodaffinity import AffinityFilter

if TYPE_CHECKING:
    from kubedra.scheduler.podtopologyspread import SpreadFilter

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
# Resources every pod has and that are not extended resources.
NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


NODE_NAME_MISMATCH = "node(s) didn't match the requested node name"
NODE_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"  # NodeAffinity (Unresolvable)
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"  # NodePorts (Unschedulable)
IMPLICIT_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_extended_resource(name: str) -> bool:
    """Fully qualified names outside ``kubernetes.io`` (``nvidia.com/gpu``), plus KEP-5004's implicit class names."""
    if name.startswith(IMPLICIT_DEVICE_CLASS_PREFIX):
        return True
    if name in NATIVE_RESOURCES or name.startswith(("hugepages-", "requests.")):
        return False
    domain = name.split("/", 1)[0] if "/" in name else ""
    return bool(domain) and not domain.endswith("kubernetes.io")


TAINT_REASON = "node(s) had untolerated taint(s)"  # TaintToleration (UnschedulableAndUnresolvable)
UNSCHEDULABLE_REASON = "node(s) were unschedulable"  # NodeUnschedulable (UnschedulableAndUnresolvable)


def _tolerated(pod: Pod, taint: Taint) -> bool:
    return any(
        toleration_tolerates(
            key=t.key,
            operator=t.operator,
            value=t.value,
            effect=t.effect,
            taint_key=taint.key,
            taint_value=taint.value,
            taint_effect=taint.effect,
        )
        for t in pod.spec.tolerations
    )


def untolerated_taint(pod: Pod, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint of the node that the pod does not tolerate (TaintToleration's
    ``FindMatchingUntoleratedTaint``), which upstream only logs; explanations show it."""
    for taint in node.spec.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(pod, taint):
            return taint
    return None


def taint_reason(pod: Pod, node: Node) -> str | None:
    """NodeUnschedulable then TaintToleration, in kube-scheduler's words: a cordoned node the pod does not tolerate
    (as the ``node.kubernetes.io/unschedulable:NoSchedule`` taint), then any NoSchedule/NoExecute taint of the node
    left untolerated. Upstream's message names no taint; ``untolerated_taint`` says which one."""
    if node.spec.unschedulable and not _tolerated(pod, UNSCHEDULABLE_TAINT):
        return UNSCHEDULABLE_REASON
    return TAINT_REASON if untolerated_taint(pod, node) is not None else None


def affinity_reason(pod: Pod, node: Node) -> str | None:
    """``nodeSelector`` and required node affinity, reported as kube-scheduler does."""
    labels = node.metadata.labels
    for key, value in pod.spec.node_selector.items():
        if labels.get(key) != value:
            return NODE_AFFINITY_REASON
    affinity = pod.spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if (
        affinity and affinity.node_affinity
    ) else None
    if required is not None and not node_selector_matches(required, node.metadata.name, labels):
        return NODE_AFFINITY_REASON
    return None


NOT_PINNED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"  # a node PreFilter left out (SetAbsentNodesStatus)


def pinned_nodes(pod: Pod) -> frozenset[str] | None:
    """NodeAffinity's PreFilterResult: the node names the required affinity allows when every term names them with
    ``matchFields metadata.name In`` (within a term intersected, across terms united), as a DaemonSet pins its pods;
    None when some term does not (every node is then filtered). Terms that conflict (an empty set) are left to
    Filter here, which refuses every node."""
    affinity = pod.spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if (
        affinity and affinity.node_affinity
    ) else None
    if required is None or not required.node_selector_terms:
        return None
    names: set[str] = set()
    for term in required.node_selector_terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == "metadata.name" and req.operator == "In":
                term_names = set(req.values) if term_names is None else term_names & set(req.values)
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names) or None


@functools.lru_cache(maxsize=1024)
def _count(text: str) -> int:
    """A quantity's ``Value()`` (how kube-scheduler reads allocatable pods), parsed once per text."""
    return Quantity.parse(text).value()


REASON_SEPARATOR = "\n"  # between the reasons of one node's status (never inside one: they are single lines)
_FIRST_RESOURCES = ("cpu", "memory", "ephemeral-storage")  # fitsRequest's order; scalar resources after, by name


def reasons_of(status: str) -> list[str]:
    """The reasons of one node's Filter status: NodeResourcesFit keeps them all (``Too many pods``, ``Insufficient
    cpu``, ``Insufficient memory``...), and kube-scheduler's FitError counts each of them per node."""
    return status.split(REASON_SEPARATOR)


def resources_reason(
    requests: Mapping[str, Quantity],
    node: Node,
    usage: NodeUsage,
    dra_extended: frozenset[str] = frozenset(),
) -> str | None:
    """NodeResourcesFit: every failure reason of the node (``Too many pods``, ``Insufficient cpu`` and friends,
    joined by ``REASON_SEPARATOR``, in v1.37.2 ``fitsRequest``'s order), or None; DRA-served extended resources are
    not counted here."""
    allocatable = node.status.allocatable
    found: list[str] = []
    pods_allowed = allocatable.get("pods")
    if pods_allowed is not None and usage.pods + 1 > _count(pods_allowed):
        found.append("Too many pods")
    names = [n for n in _FIRST_RESOURCES if n in requests]
    if len(names) != len(requests):
        names.extend(sorted(n for n in requests if n not in _FIRST_RESOURCES))
    for name in names:
        want = requests[name]
        if want <= ZERO or name in dra_extended:
            continue
        have_text = allocatable.get(name)
        if have_text is None:
            # A Node written without status.allocatable (common in hand-written inventories) is treated as
            # having room for any cpu and memory; extended resources it does not advertise are never there.
            if is_extended_resource(name) or (allocatable and name in _FIRST_RESOURCES):
                found.append(f"Insufficient {name}")
            continue
        # The sum's value, not a summed Quantity: this runs per cached request shape on every node that changed.
        if usage.requested.get(name, ZERO).nanos + want.nanos > Quantity.parse(have_text).nanos:
            found.append(f"Insufficient {name}")
    if not found:
        return None
    return found[0] if len(found) == 1 else REASON_SEPARATOR.join(found)


def node_fit_reason(
    pod: Pod,
    requests: Mapping[str, Quantity],
    node: Node,
    usage: NodeUsage,
    dra_extended: frozenset[str] = frozenset(),
    *,
    ports: tuple[HostPort, ...] = (),
    inter_pod: AffinityFilter | None = None,
    spread: SpreadFilter | None = None,
) -> str | None:
    """All node-level checks in kube-scheduler's filter order (NodeName, NodeUnschedulable, TaintToleration,
    NodeAffinity, NodePorts, NodeResourcesFit, ...); the first failure is the reason. ``ports``: the
    pod's host ports (``host_ports``), for NodePorts; ``spread``: PodTopologySpread's PreFilter state and
    ``inter_pod``: InterPodAffinity's (None where they skip), in that order after NodeResourcesFit."""
    if pod.spec.node_name and pod.spec.node_name != node.metadata.name:
        return NODE_NAME_MISMATCH
    return (
        taint_reason(pod, node)
        or affinity_reason(pod, node)
        or (PORTS_REASON if ports and ports_conflict(ports, usage.ports) else None)
        or resources_reason(requests, node, usage, dra_extended)
        or (spread.reason(node) if spread is not None else None)
        or (inter_pod.reason(node) if inter_pod is not None else None)
    )


def claim_rejecting(claims: Sequence[ResourceClaim], node: Node) -> ResourceClaim | None:
    """The first claim whose existing allocation's ``nodeSelector`` does not admit the node (DynamicResources'
    Filter: "resourceclaim not available on the node"), if any."""
    name, labels = node.metadata.name, node.metadata.labels
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is not None and allocation.node_selector is not None and not node_selector_matches(
            allocation.node_selector, name, labels
        ):
            return claim
    return None


def _quantity(text: str | None) -> str:
    return text if text is not None else "none"


def node_detail(status: str, record: PodRecord, node: Node) -> str:
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
    if reason == UNSCHEDULABLE_REASON:
        return f"{reason}: spec.unschedulable (cordoned), node.kubernetes.io/unschedulable:NoSchedule not tolerated"
    if reason == TAINT_REASON:
        taint = untolerated_taint(pod, node)
        if taint is None:
            return reason
        shown = f"{taint.key}={taint.value}" if taint.value else taint.key
        return f"{reason}: {shown}:{taint.effect}"
    if "node affinity/selector" in reason:
        labels = node.metadata.labels
        wrong = [f"{k}={v} (node: {labels.get(k, 'unset')})"
                 for k, v in pod.spec.node_selector.items() if labels.get(k) != v]
        return f"{reason}: nodeSelector {', '.join(wrong)}" if wrong else f"{reason}: required node affinity"
    return reason
