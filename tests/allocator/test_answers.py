"""Reused answers (nodes alike decided once) are the answers a full search gives, call for call.

Two allocators over the same objects, one reusing answers and one searching every time, get the same random stream
of calls — nodes of a few shapes (plain devices, counters, consumable capacity, a tainted device, a device with its
own node selection), claims of many shapes — and the same allocations and releases between calls. Every result, and
every error, must be equal; the reusing allocator must actually have reused answers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from kubedra.allocator import AllocatedState, Allocator, Features
from kubedra.allocator.errors import AllocationError, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.results import allocation_to_dict
from kubedra.allocator.state import DeviceID
from kubedra.cel import CompileCache
from kubedra.objects.load import load_text
from kubedra.objects.model import AllocationResult, DeviceClass, Node, ResourceClaim, ResourceSlice

DRIVER = "gpu.example.com"
KINDS = ("plain", "counters", "shared", "tainted", "per-device")


def _device(name: str, d: int, **extra: Any) -> dict[str, Any]:
    """Every device has a UUID of its own, as real GPUs do: answers may be reused across nodes only for claims whose
    selectors and constraints cannot read it."""
    node = extra.pop("node", "")
    return {"name": name, "attributes": {"numa": {"int": d // 2}, "model": {"string": "A" if d % 3 else "B"},
                                         "uuid": {"string": f"GPU-{node}-{d}"}}, **extra}


def _slices(node: str, kind: str) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": node,
                            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}
    docs = []
    if kind == "counters":
        size = "40Gi" if int(node.rsplit("-", 1)[1]) % 2 else "30Gi"  # same devices, different counters
        spec["pool"]["resourceSliceCount"] = 2
        docs.append({"driver": DRIVER, "nodeName": node, "pool": spec["pool"],
                     "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": size}}}]})
        spec["devices"] = [
            _device(f"part-{d}", d, node=node, consumesCounters=[{"counterSet": "mem", "counters": {
                "memory": {"value": size}}}])
            for d, size in enumerate(["20Gi", "20Gi", "40Gi", "10Gi"])
        ]
    elif kind == "shared":
        spec["devices"] = [_device(f"gpu-{d}", d, node=node, allowMultipleAllocations=True, capacity={"memory": {
            "value": "40Gi", "requestPolicy": {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}}})
            for d in range(2)]
    elif kind == "per-device":
        del spec["nodeName"]
        spec["perDeviceNodeSelection"] = True
        spec["devices"] = [_device(f"gpu-{d}", d, node=node, nodeName=node) for d in range(3)]
    else:
        spec["devices"] = [_device(f"gpu-{d}", d, node=node) for d in range(4)]
        if kind == "tainted":
            spec["devices"][1]["taints"] = [{"key": "broken", "effect": "NoSchedule"}]
    docs.append(spec)
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{node}-{i}"}, "spec": s} for i, s in enumerate(docs)]


def _request(rng: random.Random, name: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu"}
    roll = rng.random()
    if roll < 0.25:
        exactly["count"] = rng.choice([2, 3])
    elif roll < 0.35:
        exactly["allocationMode"] = "All"
    roll = rng.random()
    if roll < 0.25:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "A"'}}]
    elif roll < 0.32:  # reads the UUID: one node's device only
        exactly["selectors"] = [{"cel": {"expression":
                                         f'device.attributes["{DRIVER}"].uuid == "GPU-node-{rng.randrange(15)}-1"'}}]
    elif roll < 0.37:  # could read any attribute: the UUID included
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].exists(k, k == "uuid")'}}]
    if rng.random() < 0.25:
        exactly["capacity"] = {"requests": {"memory": rng.choice(["5Gi", "10Gi", "20Gi"])}}
    if rng.random() < 0.2:
        exactly["tolerations"] = [{"key": "broken", "operator": "Exists"}]
    if rng.random() < 0.15:
        big = {**exactly, "count": 3}
        big.pop("allocationMode", None)
        return {"name": name, "firstAvailable": [{"name": "big", **big},
                                                 {"name": "small", "deviceClassName": "gpu"}]}
    return {"name": name, "exactly": exactly}


def _claim(rng: random.Random, i: int) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [_request(rng, f"r{r}") for r in range(rng.choice([1, 1, 2]))]}
    roll = rng.random()
    if roll < 0.3:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    elif roll < 0.36:  # never met by two devices: every UUID differs
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/uuid"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{i}", "namespace": "default"}, "spec": {"devices": devices}}


def _objects(rng: random.Random) -> tuple[list[Node], list[ResourceSlice], dict[str, DeviceClass], list[ResourceClaim]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    ]
    for n in range(15):
        name = f"node-{n}"
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"n": str(n)}}})
        docs += _slices(name, KINDS[n % len(KINDS)])
    docs += [_claim(rng, i) for i in range(12)]
    loaded = load_text(yaml.safe_dump_all(docs)).objects
    return (
        [o for o in loaded if isinstance(o, Node)],
        [o for o in loaded if isinstance(o, ResourceSlice)],
        {o.metadata.name: o for o in loaded if isinstance(o, DeviceClass)},
        [o for o in loaded if isinstance(o, ResourceClaim)],
    )


def _ids(seed: int) -> Any:
    rng = random.Random(seed)
    return lambda _key: f"share-{rng.getrandbits(32)}"


def _outcome(allocator: Allocator, node: Node, claims: list[ResourceClaim]) -> Any:
    try:
        results = allocator.allocate(node, claims)
    except (AllocationError, NodeAllocationFailed, SearchBudgetExceeded) as exc:
        return (type(exc).__name__, str(exc)), allocator.last_steps, None
    return (None if results is None else [allocation_to_dict(r) for r in results]), allocator.last_steps, results


@pytest.mark.parametrize("seed", range(12))
def test_reused_answers_equal_a_full_search_on_every_call(seed: int) -> None:
    rng = random.Random(seed)
    nodes, slices, classes, claims = _objects(rng)
    features = Features()
    pair = []
    for reuse in (True, False):
        state = AllocatedState(consumable_capacity=features.consumable_capacity)
        cel = CompileCache(features.cel_options())
        pair.append(Allocator(features, state, classes, slices, cel, step_budget=5000, share_ids=_ids(seed),
                              reuse_answers=reuse))
    reusing, searching = pair
    held: list[AllocationResult] = []
    for _ in range(400):
        node = rng.choice(nodes)
        batch = rng.sample(claims, rng.choice([1, 1, 2]))
        got, want = _outcome(reusing, node, batch), _outcome(searching, node, batch)
        assert got[:2] == want[:2]
        if got[2] is not None and rng.random() < 0.6:
            for allocation in got[2]:
                held.append(allocation)
                for allocator in pair:
                    for result in allocation.devices.results:
                        allocator.state.add_allocation(result)
        if held and rng.random() < 0.35:
            allocation = held.pop(rng.randrange(len(held)))
            for allocator in pair:
                for result in allocation.devices.results:
                    allocator.state.remove_allocation(result)
    assert reusing.answers_reused > 0
    assert searching.answers_reused == 0


def test_answers_stop_being_kept_where_nodes_are_seldom_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubedra.allocator import allocator as allocator_module

    monkeypatch.setattr(allocator_module, "REUSE_TRIAL", 20)
    rng = random.Random(99)
    nodes, slices, classes, claims = _objects(rng)
    features = Features()
    reusing = Allocator(features, AllocatedState(), classes, slices, CompileCache(features.cel_options()),
                        share_ids=_ids(1))
    searching = Allocator(features, AllocatedState(), classes, slices, CompileCache(features.cel_options()),
                          share_ids=_ids(1), reuse_answers=False)
    for i in range(40):  # every call on another node shape or claim: nothing to reuse
        node, claim = nodes[i % len(KINDS)], claims[i // len(KINDS) % len(claims)]
        assert _outcome(reusing, node, [claim])[:2] == _outcome(searching, node, [claim])[:2]
    assert reusing.answers_reused == 0
    assert not reusing._reusing
    assert not reusing._answers


def _uuid_cluster(selector: str) -> tuple[Allocator, list[Node], ResourceClaim]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {
             "deviceClassName": "gpu", "selectors": [{"cel": {"expression": selector}}]}}]}}},
    ]
    for n in range(3):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}})
        docs += _slices(f"node-{n}", "plain")
    loaded = load_text(yaml.safe_dump_all(docs)).objects
    features = Features()
    allocator = Allocator(features, AllocatedState(), {"gpu": next(o for o in loaded if isinstance(o, DeviceClass))},
                          [o for o in loaded if isinstance(o, ResourceSlice)], CompileCache(features.cel_options()))
    return allocator, [o for o in loaded if isinstance(o, Node)], next(o for o in loaded if isinstance(o, ResourceClaim))


def test_nodes_that_differ_only_in_attributes_no_selector_reads_are_decided_once() -> None:
    allocator, nodes, claim = _uuid_cluster(f'device.attributes["{DRIVER}"].model == "A"')
    results = [allocator.allocate(node, [claim]) for node in nodes]
    assert [r[0].devices.results[0].device for r in results if r] == ["gpu-1", "gpu-1", "gpu-1"]
    assert [r[0].devices.results[0].pool for r in results if r] == ["node-0", "node-1", "node-2"]
    assert allocator.answers_reused == 2


@pytest.mark.parametrize("selector", [
    f'device.attributes["{DRIVER}"].uuid == "GPU-node-1-2"',
    f'device.attributes["{DRIVER}"]["uuid"] == "GPU-node-1-2"',
    f'device.attributes["{DRIVER}"].exists(k, k == "uuid") && "GPU-node-1-2" in [device.attributes["{DRIVER}"].uuid]',
])
def test_a_selector_that_reads_the_uuid_keeps_nodes_apart(selector: str) -> None:
    allocator, nodes, claim = _uuid_cluster(selector)
    results = [allocator.allocate(node, [claim]) for node in nodes]
    assert results[0] is None and results[2] is None
    assert results[1] is not None and results[1][0].devices.results[0].device == "gpu-2"
    assert allocator.answers_reused == 0


@pytest.mark.parametrize("seed", range(6))
def test_a_device_preference_never_changes_whether_claims_fit(seed: int) -> None:
    """``prefer`` only reorders the search (which is complete): fit or no fit is the same as without it, on every
    node shape and claim shape, and the allocation is valid for the same claims."""
    rng = random.Random(seed)
    nodes, slices, classes, claims = _objects(rng)
    features = Features()
    allocator = Allocator(features, AllocatedState(consumable_capacity=features.consumable_capacity), classes, slices,
                          CompileCache(features.cel_options()), step_budget=5000, share_ids=_ids(seed))
    for _ in range(120):
        node = rng.choice(nodes)
        batch = rng.sample(claims, rng.choice([1, 1, 2]))
        devices = [e.id for e, _ in allocator.node_view(node).flat]
        prefer = rng.sample(devices, min(len(devices), rng.choice([1, 2]))) if devices else []
        try:
            plain = allocator.allocate(node, batch)
            preferring = allocator.allocate(node, batch, prefer=prefer)
        except (AllocationError, NodeAllocationFailed, SearchBudgetExceeded):
            continue
        assert (plain is None) == (preferring is None)
        if preferring is not None:
            assert len(preferring) == len(batch)


def test_a_preferred_device_is_taken_first_and_a_busy_one_skipped() -> None:
    allocator, nodes, claim = _uuid_cluster(f'device.driver == "{DRIVER}"')
    node = nodes[1]
    pool = node.metadata.name

    def device(prefer: list[str]) -> str:
        results = allocator.allocate(node, [claim], prefer=[DeviceID(DRIVER, pool, d) for d in prefer])
        assert results is not None
        return results[0].devices.results[0].device

    assert allocator.allocate(node, [claim]) is not None
    assert device([]) == "gpu-0"  # the usual order
    assert device(["gpu-2"]) == "gpu-2"
    held = allocator.allocate(node, [claim], prefer=[allocator.node_view(node).flat[2][0].id])
    assert held is not None
    allocator.state.add_allocation(held[0].devices.results[0])
    assert device(["gpu-2", "gpu-3"]) == "gpu-3"  # gpu-2 is held: the next preferred one
