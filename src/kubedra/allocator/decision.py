"""One node decision as data: allocated, unschedulable (with reasons) or error; and the diagnosis behind reasons.

The diagnosis runs only after a failed search, never inside it: for each request it counts the devices that
match its class and selectors on the node and says why those are not usable (in use by which claim, tainted,
counters or capacity exhausted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from kubedra.allocator.allocator import Allocator
from kubedra.allocator.errors import AllocationError
from kubedra.allocator.requests import claim_ref
from kubedra.allocator.search import Search
from kubedra.allocator.state import DeviceID
from kubedra.allocator.taints import untolerated
from kubedra.objects.model import AllocationResult, Node, ResourceClaim

Outcome = Literal["allocated", "unschedulable", "error"]
UNSCHEDULABLE = "cannot allocate all claims"


@dataclass
class Decision:
    """What the allocator decided for a set of claims on one node."""

    result: Outcome
    allocations: dict[str, AllocationResult] = field(default_factory=dict)
    message: str = ""
    reasons: list[str] = field(default_factory=list)
    steps: int = 0


def _owners(claims: Sequence[ResourceClaim]) -> dict[DeviceID, list[str]]:
    owners: dict[DeviceID, list[str]] = {}
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for r in allocation.devices.results:
            if not r.admin_access:
                owners.setdefault(DeviceID(r.driver, r.pool, r.device), []).append(claim_ref(claim))
    return owners


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def diagnose(
    allocator: Allocator, node: Node, claims: Sequence[ResourceClaim], allocated: Sequence[ResourceClaim] = ()
) -> list[str]:
    """One line per request of the claims that could not be allocated: what matches and why it is not enough."""
    try:
        search: Search = allocator.new_search(node, claims)
    except AllocationError as exc:
        return [str(exc)]
    owners = _owners(allocated)
    lines: list[str] = []
    for ci, slots in enumerate(search.slots):
        for alternatives in slots:
            for rd in alternatives:
                candidates = rd.all_devices if rd.mode_all else search._candidates(rd)
                usable = [c for c in candidates if c.failure is None]
                want = rd.num_devices if not rd.mode_all else max(1, rd.num_devices)
                class_name = rd.class_obj.metadata.name
                head = f"{rd.full_name}: {_plural(len(usable), 'device')} match class {class_name}"
                busy = [c for c in usable if c.entry.id in allocator.state.allocated_devices and not rd.admin]
                tainted = [
                    c
                    for c in usable
                    if c not in busy
                    and allocator.features.device_taints
                    and untolerated(c.entry.taints, rd.tolerations) is not None
                ]
                free = len(usable) - len(busy)
                if not usable:
                    lines.append(f"{head} on node {node.metadata.name}")
                    continue
                if busy and free < want:
                    who = sorted({o for c in busy for o in owners.get(c.entry.id, ["an allocated claim"])})
                    scope = "all" if len(busy) > 2 else "both" if len(busy) == 2 else "it is"
                    lines.append(
                        f"{head}, {scope} in use by {', '.join(who)}"
                        if len(busy) == len(usable)
                        else f"{head}, {len(busy)} in use by {', '.join(who)}, {want} needed"
                    )
                    continue
                if tainted:
                    lines.append(f"{head}, {len(tainted)} tainted without a toleration")
                    continue
                if free < want:
                    lines.append(f"{head}, {want} needed")
                else:
                    lines.append(
                        f"{head}; {want} needed but constraints, counters or capacity rule them out"
                        f" (claim {search.refs[ci]})"
                    )
    return lines


def allocate_on_node(
    allocator: Allocator,
    node: Node,
    claims: Sequence[ResourceClaim],
    allocated: Sequence[ResourceClaim] = (),
    *,
    explain: bool = True,
) -> Decision:
    """Run the allocator for one node and wrap the outcome (with reasons when it does not fit)."""
    try:
        results = allocator.allocate(node, claims)
    except AllocationError as exc:
        return Decision("error", message=str(exc), steps=allocator.last_steps)
    if results is None:
        reasons = diagnose(allocator, node, claims, allocated) if explain else []
        return Decision("unschedulable", message=UNSCHEDULABLE, reasons=reasons, steps=allocator.last_steps)
    keys = [claim_ref(c) for c in claims]
    return Decision("allocated", dict(zip(keys, results, strict=True)), steps=allocator.last_steps)
