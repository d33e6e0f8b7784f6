"""Consumable shares elsewhere in the cluster cost a node decision nothing (issue 8, "Shared GPUs scale").

The allocated state answers "does this device have shares" from a per-device count kept with the shares, so one
``Allocate`` call never walks the cluster's shares, and a pool's available counters survive changes to other pools.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kubedra.allocator import Features
from kubedra.allocator.snapshot import Snapshot
from kubedra.allocator.state import AllocatedState, DeviceID, SharedDeviceID
from kubedra.objects.load import load_text
from kubedra.objects.model import DeviceRequestAllocationResult

DRIVER = "gpu.example.com"


class _Unwalkable(set[SharedDeviceID]):
    """The cluster's shares, as a set that fails the test if anything walks it (membership is fine)."""

    def __iter__(self) -> Iterator[SharedDeviceID]:
        raise AssertionError("a node decision walked every share of the cluster")


def _documents(nodes: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    ]
    for n in range(nodes):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}})
        pool = {"name": f"pool-{n}", "generation": 1, "resourceSliceCount": 2}
        docs.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"counters-{n}"},
            "spec": {"driver": DRIVER, "nodeName": f"node-{n}", "pool": pool,
                     "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]},
        })
        docs.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"slice-{n}"},
            "spec": {
                "driver": DRIVER, "nodeName": f"node-{n}", "pool": pool,
                "devices": [{
                    "name": "gpu-0", "allowMultipleAllocations": True,
                    "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
                        "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
                    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
                }],
            },
        })
    docs.append({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "new", "namespace": "d"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu", "capacity": {"requests": {"memory": "4Gi"}}}}]}},
    })
    return docs


def _share(node: int, share: int) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        request="r", driver=DRIVER, pool=f"pool-{node}", device="gpu-0", share_id=f"share-{node}-{share}",
        consumed_capacity={"memory": "1Gi"},
    )


def test_a_node_decision_does_not_walk_the_shares_of_other_nodes() -> None:
    snapshot = Snapshot.from_objects(load_text(yaml.safe_dump_all(_documents(50))).objects, "node-0")
    features = Features()
    allocator = snapshot.allocator(features)
    state = allocator.state
    state.allocated_shared = _Unwalkable()
    for node in range(1, 50):
        for share in range(3):
            state.add_allocation(_share(node, share))
    state.add_allocation(_share(0, 0))  # node-0's own share: the device is in use, the counters are not taken twice

    results = allocator.allocate(snapshot.node, snapshot.pending)

    assert results is not None
    (result,) = results[0].devices.results
    assert (result.pool, result.device, result.consumed_capacity) == ("pool-0", "gpu-0", {"memory": "4Gi"})
    assert state.is_allocated(DeviceID(DRIVER, "pool-0", "gpu-0"))
    assert state.shares[DeviceID(DRIVER, "pool-7", "gpu-0")] == 3


def test_share_counts_follow_adds_and_removes() -> None:
    state = AllocatedState()
    device = DeviceID(DRIVER, "pool-1", "gpu-0")
    state.add_allocation(_share(1, 0))
    state.add_allocation(_share(1, 1))
    state.add_allocation(_share(1, 1))  # the same share twice counts once, as the set does
    assert state.shares == {device: 2}
    state.remove_allocation(_share(1, 0))
    assert state.is_allocated(device)
    state.remove_allocation(_share(1, 1))
    state.remove_allocation(_share(1, 1))
    assert state.shares == {}
    assert not state.is_allocated(device)


def test_a_pools_counters_are_not_recomputed_for_changes_in_other_pools() -> None:
    snapshot = Snapshot.from_objects(load_text(yaml.safe_dump_all(_documents(3))).objects, "node-0")
    allocator = snapshot.allocator(Features())
    assert allocator.allocate(snapshot.node, snapshot.pending) is not None
    cached = allocator._available[(DRIVER, "pool-0")]
    allocator.state.add_allocation(_share(2, 0))
    assert allocator.allocate(snapshot.node, snapshot.pending) is not None
    assert allocator._available[(DRIVER, "pool-0")] is cached
    allocator.state.add_allocation(_share(0, 0))  # the pool's own device is in use now: its counters are taken
    (pool,) = allocator.node_view(snapshot.node).pools
    allocator._pool_counters(pool)
    assert allocator._available[(DRIVER, "pool-0")][1] == {("gpu-0", "memory"): 0}
