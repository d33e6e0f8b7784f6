"""DynamicResources' Score: it ranks only ``firstAvailable`` sub-requests (its Filter is ``dra.py``'s allocator)."""

from __future__ import annotations

from collections.abc import Sequence

from kubedra.objects.model import AllocationResult, ResourceClaim

FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


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
