"""The scheduler's device side over kubedra's structured allocator, with one allocated state kept for the whole run.

Upstream builds an allocator per pod from informer caches; the simulator keeps one ``Allocator`` (its per-device
preparation and selector verdicts stay valid while slices and classes do not change) over the cluster's device
table, whose ``AllocatedState`` follows every allocation and release in place — the same state the scheduler would
gather. ``NodeAllocator`` and ``DraBackend`` say what the scheduler asks of it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from kubedra.allocator import Allocator, Features
from kubedra.allocator.state import DeviceID
from kubedra.cel import CompileCache
from kubedra.cluster.state import ClusterState
from kubedra.objects.model import AllocationResult, Node, ResourceClaim

# Upstream bounds each node's Filter by a 10 s timeout; the simulator bounds the search by steps instead, so runs
# repeat exactly. One million allocateOne calls take seconds in Python — far beyond any sane claim.
DEFAULT_STEP_BUDGET = 1_000_000


def seeded_share_ids(seed: int) -> Callable[[str], str]:
    """Version-4 UUIDs hashed from the seed and the share (claim, request, device, ordinal): they look like the
    real ones, repeat run for run, and do not depend on the path taken (``simulate --exact`` and the device index
    try different nodes first; a stream would be drawn on every one)."""

    def share_id(key: str) -> str:
        digest = hashlib.sha256(f"kubedra-share-ids-{seed}/{key}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    return share_id


class AllocatorBackend:
    """A ``DraBackend`` for the scheduler: one ``Allocator`` (the ``NodeAllocator``) over the cluster's device table."""

    def __init__(
        self,
        features: Features,
        state: ClusterState,
        cel: CompileCache,
        *,
        step_budget: int = DEFAULT_STEP_BUDGET,
        share_ids: Callable[[str], str] = lambda _key: str(uuid.uuid4()),
        reuse_answers: bool = True,
    ) -> None:
        self.features = features
        self.allocator = Allocator(
            features,
            state.devices.allocated,
            state.classes,
            state.slices,
            cel,
            state.taint_rules,
            step_budget,
            share_ids=share_ids,
            reuse_answers=reuse_answers,
            device_views=state.devices.view_of,
        )

    def begin(self) -> Allocator:
        return self.allocator


class NodeAllocator(Protocol):
    """One allocator per attempt (upstream builds one in PreFilter), asked once per node."""

    @property
    def draws(self) -> int:
        """ShareIDs drawn so far (a stream an attempt may advance even where it finds no fit)."""
        ...

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], *, prefer: Sequence[DeviceID] = ()
    ) -> list[AllocationResult] | None:
        """Allocations for ``claims`` on ``node``; None if they do not fit. Raises the allocator's errors:
        ``AllocationError`` for bad input (scheduling of the pod is aborted), ``NodeAllocationFailed`` and
        ``SearchBudgetExceeded`` when only this node cannot take the claims (invalid pools, a search timeout).
        ``prefer``: devices to try first (a trace policy's choice within the node; kube-scheduler has none)."""
        ...


class DraBackend(Protocol):
    """The device side of the cluster: hands out allocators over the current allocated state."""

    def begin(self) -> NodeAllocator: ...
