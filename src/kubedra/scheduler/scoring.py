"""Choosing among feasible nodes: ``kube-scheduler`` (default), ``least-allocated``, ``most-allocated``, ``first-fit``.

``kube-scheduler`` scores as kube-scheduler's default profile does (``scheduler/kube_scorer.py``).

``least-allocated`` is kubedra's earlier approximation: LeastAllocated on cpu and memory plus the share of the node's
DRA devices that stay free, ties sampled from a seeded RNG; ``most-allocated`` is its bin-packing mirror image;
``first-fit`` takes the first feasible node in node (NodeTree) order and never looks further.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubedra.cluster.usage import ZERO, NodeUsage
from kubedra.objects.model import Node, ResourceClaim
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.normalize import MAX_NODE_SCORE

SCORED_RESOURCES = ("cpu", "memory")


class Policy(enum.StrEnum):
    KUBE_SCHEDULER = "kube-scheduler"
    FIRST_FIT = "first-fit"
    LEAST_ALLOCATED = "least-allocated"
    MOST_ALLOCATED = "most-allocated"
    FGD = "fgd"  # the FGD artifact's policies (scheduler/fgd.py)
    BEST_FIT = "best-fit"
    RANDOM = "random"


TRACE_POLICIES = frozenset({Policy.FGD, Policy.BEST_FIT, Policy.RANDOM})


# ---------------------------------------------------------------------------------------------- least/most-allocated


@dataclass(frozen=True)
class DeviceUse:
    """DRA devices on a node: how many exist and how many are in use, after placing the pod."""

    total: int
    used: float  # whole devices plus the shares' use of shared ones


def _fraction_free(allocatable: Quantity, requested: Quantity) -> float | None:
    if allocatable <= ZERO:
        return None
    capacity, used = allocatable.as_approximate_float(), requested.as_approximate_float()
    if math.isfinite(capacity) and math.isfinite(used):
        return max(0.0, capacity - used) / capacity
    # Past a float's range (the API server accepts cpu: 1e999), the exact ratio; inf - inf would be NaN.
    return max(0, allocatable.nanos - requested.nanos) / allocatable.nanos


def node_score(
    policy: Policy,
    node: Node,
    usage: NodeUsage,
    pod_requests: Mapping[str, Quantity],
    devices: DeviceUse | None,
) -> float:
    """0..100 under ``least-allocated`` / ``most-allocated``; higher is better."""
    fractions: list[float] = []
    for name in SCORED_RESOURCES:
        text = node.status.allocatable.get(name)
        if text is None:
            continue
        after = usage.requested.get(name, ZERO) + pod_requests.get(name, ZERO)
        fraction = _fraction_free(Quantity.parse(text), after)
        if fraction is not None:
            fractions.append(fraction)
    if devices is not None and devices.total > 0:
        fractions.append(max(0, devices.total - devices.used) / devices.total)
    if not fractions:
        return 0.0
    free = sum(fractions) / len(fractions)
    share = free if policy is Policy.LEAST_ALLOCATED else 1.0 - free
    return share * MAX_NODE_SCORE


def pick(scored: Sequence[tuple[float, str]], rng: random.Random) -> str:
    """The best-scored node; ties sampled uniformly (``least-allocated`` / ``most-allocated``)."""
    best = max(score for score, _ in scored)
    tied = [name for score, name in scored if score == best]
    return tied[0] if len(tied) == 1 else rng.choice(tied)


def devices_asked(claim: ResourceClaim) -> int:
    """Devices a claim takes for scoring purposes (``All`` and subrequests counted as one). A request for consumable
    capacity adds nothing up front: how much of a device its share is depends on the device, and once allocated it
    counts as the share's use of it (``DeviceTable.device_use``)."""
    return sum(
        ((request.exactly.count or 1) if request.exactly.capacity is None else 0) if request.exactly is not None else 1
        for request in claim.spec.devices.requests
    )
