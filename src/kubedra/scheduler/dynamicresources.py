"""DynamicResources: its Filter's call of the allocator on one node (``allocate``, over ``dra.py``'s allocator) and
the reasons it gives; its Score, which ranks only ``firstAvailable`` sub-requests."""

from __future__ import annotations

from collections.abc import Sequence

from kubedra.allocator import AllocationError, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.state import DeviceID
from kubedra.objects.model import AllocationResult, Node, ResourceClaim
from kubedra.scheduler.dra import NodeAllocator
from kubedra.scheduler.normalize import default_normalize
from kubedra.scheduler.outcome import Failed

FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
UNSCHEDULABLE_CLAIMS = "cannot allocate all claims"
CLAIM_NOT_ON_NODE = "resourceclaim not available on the node"
TIMED_OUT = "timed out trying to allocate devices"


def first_available_score(claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult]) -> int:
    """DynamicResources ``computeScore``: per ``firstAvailable`` request, 8 - the index of the sub-request that was
    allocated. ``allocations`` are the results for the claims not yet allocated, in order."""
    score = 0
    pending = iter(allocations)
    for claim in claims:
        allocation = claim.status.allocation if claim.status.allocation is not None else next(pending, None)
        if allocation is None:
            continue
        used = {r.request for r in allocation.devices.results if "/" in r.request}
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                continue
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in used:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score

def dynamic_resources_scores(
    claims: Sequence[ResourceClaim], allocations: Sequence[Sequence[AllocationResult] | None]
) -> list[int]:
    """Score and NormalizeScore on each feasible node, from the allocations Filter made there (None: not computed,
    which only happens where no request has ``firstAvailable`` and every node scores 0)."""
    if not any(r.exactly is None for c in claims for r in c.spec.devices.requests):
        return [0] * len(allocations)
    return default_normalize([first_available_score(claims, a) if a is not None else 0 for a in allocations], False)


def allocate(
    allocator: NodeAllocator, node: Node, batch: Sequence[ResourceClaim], prefer: Sequence[DeviceID] = ()
) -> list[AllocationResult] | Failed | str:
    """The allocations, a Failed outcome for fatal input, or the node's reason for refusing."""
    try:
        results = allocator.allocate(node, batch, prefer=prefer)
    except NodeAllocationFailed as exc:
        return str(exc)
    except SearchBudgetExceeded:
        return TIMED_OUT
    except AllocationError as exc:
        return Failed(str(exc))
    if results is None or len(results) != len(batch):
        return UNSCHEDULABLE_CLAIMS
    return results
