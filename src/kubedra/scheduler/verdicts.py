"""The allocator's answers kept per demand shape (``Verdicts``), what keeps an answer "fits" valid (``Witness``), and
when a node's answers depend on its own devices alone (``pools_are_node_local``, ``device_shapes``), for the node sets
of ``candidates.py`` and ``ClaimsFit``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from kubedra.cluster.devices import DeviceRecord, DeviceTable
from kubedra.cluster.state import ClusterState
from kubedra.objects.model import ResourceClaim, ResourceSlice


@dataclass
class Verdicts:
    """The allocator's answers for one demand shape: nodes known to fit, known not to, and why not."""

    ok: int = 0
    bad: int = 0
    # One claim with one plain request: its answer is monotone in the node's free devices (more free devices or
    # capacity never turn "fits" into "does not", less never the other way), so a node that only gained keeps
    # "fits" and one that only lost keeps "does not" (see ``NodeSets.touch_devices``).
    monotone: bool = False
    # node -> the allocation that proved "fits" there, when none of its devices draws on a counter set: while it
    # could still be made (its devices untaken, its shares' devices with room for them), it still proves it
    witness: dict[int, Witness] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)
    # Nodes of ``bad`` whose reason the allocator has not worded yet: the share counts said the claim does not fit
    # (``DeviceIndex.shares_fit``), as the allocator would; worded on the node's unchanged devices when a refusal reads
    # it (most never are: the walk only needs to know the node is out).
    unworded: int = 0
    # (node device shape, devices in use) -> None (fits) or the reason: nodes alike get the same answer
    by_state: dict[tuple[int, frozenset[str]], str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Witness:
    """An allocation that fits, as the devices it needs: dedicated ones (``driver/pool/device``) and, per shared
    device, what its shares consume (nanos per capacity)."""

    dedicated: frozenset[str]
    shared: dict[str, tuple[DeviceRecord, dict[str, int]]]

    def still_fits(self, taken: set[str], devices: DeviceTable) -> bool:
        """Whether the allocation could still be made after ``taken`` were allocated (nothing was freed)."""
        if not self.dedicated.isdisjoint(taken):
            return False
        return all(devices.has_room(*self.shared[key]) for key in taken if key in self.shared)


def device_shapes(state: ClusterState, names: list[str]) -> list[int | None]:
    """Per node, an id shared by nodes whose slices carry the same devices in the same order."""
    on_node: dict[str, list[ResourceSlice]] = {}
    for slice_ in state.slices:
        on_node.setdefault(slice_.spec.node_name or "", []).append(slice_)
    ids: dict[bytes, int] = {}
    shapes: list[int | None] = []
    for name in names:
        slices = on_node.get(name, [])
        key = msgspec.json.encode([(s.spec.driver, s.spec.pool.resource_slice_count, s.spec.devices) for s in slices])
        shapes.append(ids.setdefault(key, len(ids)))
    return shapes


def monotone(batch: Sequence[ResourceClaim]) -> bool:
    """One claim with one ``exactly`` request: whether it fits a node can only get easier as devices are freed.
    (Several requests fit too, but their searches multiply: kept to what stays within the step budget.)"""
    if len(batch) != 1:
        return False
    requests = batch[0].spec.devices.requests
    return len(requests) == 1 and requests[0].exactly is not None


def pools_are_node_local(state: ClusterState) -> bool:
    """Whether each pool's slices all sit on one node, so only that node's devices change its allocator answers."""
    nodes: dict[tuple[str, str], str] = {}
    for slice_ in state.slices:
        node = slice_.spec.node_name
        if not node:
            return False
        pool = (slice_.spec.driver, slice_.spec.pool.name)
        if nodes.setdefault(pool, node) != node:
            return False
    return True
