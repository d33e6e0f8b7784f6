"""One node decision as data: allocated, unschedulable (with reasons from :mod:`.diagnosis`) or error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from kubedra.allocator.allocator import Allocator
from kubedra.allocator.diagnosis import diagnose
from kubedra.allocator.errors import AllocationError
from kubedra.allocator.requests import claim_ref
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
