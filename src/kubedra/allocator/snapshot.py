"""One node decision from a bag of objects, as ``kubedra allocate`` and its conformance suite both make it.

The claims without ``status.allocation`` are allocated (in document order, as one pod that uses them all); the
claims with one are the allocated state, gathered as the scheduler gathers it. A node missing from the objects is
a Node with that name and no labels.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubedra.allocator.allocator import Allocator
from kubedra.allocator.decision import Decision, allocate_on_node
from kubedra.allocator.features import Features
from kubedra.allocator.results import allocation_to_dict
from kubedra.allocator.state import AllocatedState
from kubedra.cel import CompileCache
from kubedra.objects.model import (
    DeviceClass,
    DeviceTaintRule,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)


@dataclass(frozen=True)
class Snapshot:
    """What one ``Allocate`` call sees."""

    node: Node
    pending: list[ResourceClaim]
    allocated: list[ResourceClaim]
    classes: dict[str, DeviceClass]
    slices: list[ResourceSlice]
    taint_rules: list[DeviceTaintRule]

    @classmethod
    def from_objects(cls, objects: Iterable[object], node_name: str) -> Snapshot:
        items = list(objects)
        claims = [o for o in items if isinstance(o, ResourceClaim)]
        node = next((o for o in items if isinstance(o, Node) and o.metadata.name == node_name), None)
        return cls(
            node=node if node is not None else Node(metadata=ObjectMeta(name=node_name)),
            pending=[c for c in claims if c.status.allocation is None],
            allocated=[c for c in claims if c.status.allocation is not None],
            classes={o.metadata.name: o for o in items if isinstance(o, DeviceClass)},
            slices=[o for o in items if isinstance(o, ResourceSlice)],
            taint_rules=[o for o in items if isinstance(o, DeviceTaintRule)],
        )

    def allocator(
        self,
        features: Features,
        *,
        interrupt: Callable[[], bool] | None = None,
        share_ids: Callable[[str], str] | None = None,
    ) -> Allocator:
        cel = CompileCache(features.cel_options())
        state = AllocatedState.from_claims(self.allocated, consumable_capacity=features.consumable_capacity)
        return Allocator(features, state, self.classes, self.slices, cel, self.taint_rules, interrupt=interrupt,
                         share_ids=share_ids or (lambda _key: str(uuid.uuid4())))

    def decide(
        self,
        features: Features,
        *,
        explain: bool = False,
        interrupt: Callable[[], bool] | None = None,
        share_ids: Callable[[str], str] | None = None,
    ) -> tuple[Decision, Allocator]:
        """The decision; ``share_ids`` generates the shareIDs of shared devices (default: random UUIDs)."""
        allocator = self.allocator(features, interrupt=interrupt, share_ids=share_ids)
        return allocate_on_node(allocator, self.node, self.pending, self.allocated, explain=explain), allocator


def decision_document(node_name: str, decision: Decision) -> dict[str, Any]:
    """The ``kubedra allocate -o json`` object (the contract external tests rely on); ``reasons`` is the diagnosis
    of an unschedulable decision (the lines the table prints), empty otherwise."""
    return {
        "node": node_name,
        "result": decision.result,
        "allocations": {key: allocation_to_dict(a) for key, a in decision.allocations.items()},
        "message": decision.message,
        "reasons": decision.reasons,
    }
