"""The scheduler's device side over kubedra's structured allocator, with one allocated state kept for the whole run.

Upstream builds an allocator per pod from informer caches; the simulator keeps one ``Allocator`` (its per-device
preparation and selector verdicts stay valid while slices and classes do not change) over the cluster's device
table, whose ``AllocatedState`` follows every allocation and release in place — the same state the scheduler would
gather.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable

from kubedra.allocator import Allocator, Features
from kubedra.cel import CompileCache
from kubedra.cluster.state import ClusterState

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
