"""A scheduling attempt's outcome, as data: ``Placement``, ``Unschedulable`` (with kube-scheduler's FitError text)
or ``Failed``. Applying it is the caller's business."""

from __future__ import annotations

import msgspec

from kubedra.objects.model import AllocationResult, ContainerExtendedResourceRequest, ResourceClaim
from kubedra.scheduler.nodefit import reasons_of


class Placement(msgspec.Struct, frozen=True):
    node: str
    allocations: dict[str, AllocationResult]  # claim key -> new allocation (claims allocated by this attempt)
    special_claim: ResourceClaim | None = None
    special_allocation: AllocationResult | None = None
    mappings: list[ContainerExtendedResourceRequest] = msgspec.field(default_factory=list)


NO_NODES = "no nodes available to schedule pods"  # ErrNoNodesAvailable: an empty cluster, as the pod's message


class Unschedulable(msgspec.Struct, frozen=True):
    message: str  # "0/3 nodes are available: ..." or the PreFilter reason
    reasons: dict[str, list[str]] = msgspec.field(default_factory=dict)  # reason -> nodes


class Failed(msgspec.Struct, frozen=True):
    message: str


Outcome = Placement | Unschedulable | Failed


def summarize(reasons: dict[str, list[str]], node_count: int) -> str:
    """kube-scheduler's FitError text: ``0/N nodes are available: <count> <reason>, ...`` sorted."""
    counts: dict[str, int] = {}
    for status, nodes in reasons.items():
        for reason in reasons_of(status):
            counts[reason] = counts.get(reason, 0) + len(nodes)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."
