"""What one scheduling attempt carries from PreFilter to Filter (``Attempt``), and a node Filter found feasible
(``Feasible``)."""

from __future__ import annotations

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import AllocationResult, ResourceClaim
from kubedra.scheduler.dra import NodeAllocator
from kubedra.scheduler.extended import ExtendedRequest, ExtendedResourceMap, node_batch
from kubedra.scheduler.interpodaffinity import AffinityFilter
from kubedra.scheduler.podtopologyspread import SpreadFilter


class Feasible(msgspec.Struct):
    node: str
    results: list[AllocationResult] | None
    special: ResourceClaim | None
    served: frozenset[str]
    batch: list[ResourceClaim]
    deferred: bool = False


class Attempt(msgspec.Struct):
    """What PreFilter worked out for one pod, shared by the Filter calls of one attempt."""

    record: PodRecord
    claims: list[ResourceClaim]
    to_allocate: list[ResourceClaim]
    extended: list[ExtendedRequest]
    allocator: NodeAllocator | None
    inter_pod: AffinityFilter | None = None  # InterPodAffinity's PreFilter state (None: it skips)
    spread: SpreadFilter | None = None  # PodTopologySpread's, for explicit DoNotSchedule constraints (None: it skips)
    # Per set of DRA-served extended resources (most pods: only the empty one), made when first asked.
    _batches: dict[frozenset[str], tuple[list[ResourceClaim], ResourceClaim | None]] | None = None

    def batch_for(
        self, served: frozenset[str], mapping: ExtendedResourceMap
    ) -> tuple[list[ResourceClaim], ResourceClaim | None]:
        """The claims to allocate on a node: the pod's own, then its special claim if DRA serves anything there."""
        batches = self._batches
        if batches is None:
            batches = self._batches = {}
        found = batches.get(served)
        if found is None:
            found = batches[served] = node_batch(self.record.pod, self.to_allocate, self.extended, served, mapping)
        return found
