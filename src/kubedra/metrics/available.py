"""What is still free on a node for a device class, decided by the structured allocator itself.

A device counts as free for a class when one more request of that class (count 1, the class's selectors, no
tolerations, the default share of a shareable device) could take it right now: the allocator's own candidate list
(class selectors evaluated in CEL, pools complete and valid, binding conditions, per-device node selection) and its
own ``allocate_device`` (in use, counter sets, taints, consumable capacity), each try rolled back. No matching rule
is written again here, so the numbers cannot drift from what the scheduler would do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubedra.allocator import AllocationError, Allocator
from kubedra.allocator.requests import RequestData
from kubedra.objects.model import (
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimSpec,
)

PROBE_REQUEST = "probe"
_NANO = 10**9


@dataclass(frozen=True)
class Availability:
    """Free devices of one class on one node, and the consumable capacity left on its free shareable devices."""

    devices: int
    matching: int  # devices of the node the class selects, free or not
    capacity: dict[str, float] = field(default_factory=dict)  # capacity name -> remaining (bytes, shares, ...)
    total_capacity: dict[str, float] = field(default_factory=dict)  # the same over every shareable matching device


def probe_claim(class_name: str) -> ResourceClaim:
    """The one-device claim whose candidates are the class's devices (never stored anywhere)."""
    request = DeviceRequest(name=PROBE_REQUEST, exactly=ExactDeviceRequest(device_class_name=class_name))
    return ResourceClaim(
        metadata=ObjectMeta(name=f"kubedra-probe-{class_name}", namespace="kubedra-metrics"),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=[request])),
    )


def availability(allocator: Allocator, node: Node, class_name: str) -> Availability | None:
    """None when no device of the node is selected by the class (no series for that pair)."""
    try:
        search = allocator.new_search(node, [probe_claim(class_name)])
    except AllocationError:
        return None  # unknown class or a selector that does not compile: the scheduler fails such claims too
    rd: RequestData = search.slots[0][0][0]
    candidates = [c for c in search._candidates(rd) if c.failure is None]
    if not candidates:
        return None
    free = 0
    remaining: dict[str, int] = {}
    total: dict[str, int] = {}
    shares = allocator.features.consumable_capacity
    for cand in candidates:
        if shares and cand.entry.multi:
            for name, info in cand.entry.capacity.items():
                total[name] = total.get(name, 0) + info.value.nanos
        try:
            token = search.allocate_device(rd, cand, must=False)
        except AllocationError:
            token = None
        if token is None:
            continue
        search.rollback(token)
        free += 1
        entry = cand.entry
        if shares and entry.multi and entry.capacity:
            used = allocator.state.aggregated_capacity.get(entry.id, {})
            for name, info in entry.capacity.items():
                left = info.value.nanos - (used[name].nanos if name in used else 0)
                remaining[name] = remaining.get(name, 0) + left
    return Availability(
        free,
        len(candidates),
        {name: nanos / _NANO for name, nanos in remaining.items()},
        {name: nanos / _NANO for name, nanos in total.items()},
    )
