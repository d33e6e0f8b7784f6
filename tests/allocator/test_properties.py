"""Properties on random small inputs: every allocation obeys the rules, and "does not fit" is only ever true."""

from __future__ import annotations

from itertools import permutations
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.allocator import AllocatedState, Allocator, Features
from kubedra.cel import CelOptions, CompileCache
from kubedra.objects.model import DeviceClass, Node, ObjectMeta, ResourceClaim, ResourceSlice

CLASS = msgspec.convert(
    {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d"'}}]}}, DeviceClass
)
CEL = CompileCache(CelOptions())
NODE = Node(metadata=ObjectMeta(name="n"))

device_st = st.fixed_dictionaries(
    {
        "t": st.sampled_from(["x", "y"]),
        "a": st.integers(0, 1),
        "taint": st.booleans(),
        "used": st.booleans(),
    }
)
request_st = st.fixed_dictionaries(
    {
        "count": st.integers(1, 3),
        "only": st.sampled_from([None, "x", "y"]),
        "tolerate": st.booleans(),
    }
)
problem_st = st.fixed_dictionaries(
    {
        "devices": st.lists(device_st, min_size=0, max_size=5),
        "requests": st.lists(request_st, min_size=1, max_size=2),
        "constraint": st.sampled_from([None, "match", "distinct"]),
    }
)


def _build(p: dict[str, Any]) -> tuple[list[ResourceSlice], ResourceClaim, AllocatedState]:
    devices = []
    for i, d in enumerate(p["devices"]):
        dev: dict[str, Any] = {"name": f"dev-{i}", "attributes": {"t": {"string": d["t"]}, "a": {"int": d["a"]}}}
        if d["taint"]:
            dev["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        devices.append(dev)
    slice_ = msgspec.convert(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "d",
                "nodeName": "n",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
        ResourceSlice,
    )
    requests = []
    for j, r in enumerate(p["requests"]):
        exact: dict[str, Any] = {"deviceClassName": "c", "count": r["count"]}
        if r["only"]:
            exact["selectors"] = [{"cel": {"expression": f'device.attributes["d"].t == "{r["only"]}"'}}]
        if r["tolerate"]:
            exact["tolerations"] = [{"key": "k", "operator": "Exists"}]
        requests.append({"name": f"r{j}", "exactly": exact})
    spec: dict[str, Any] = {"requests": requests}
    if p["constraint"] == "match":
        spec["constraints"] = [{"matchAttribute": "d/a"}]
    elif p["constraint"] == "distinct":
        spec["constraints"] = [{"distinctAttribute": "d/a"}]
    claim = msgspec.convert(
        {"metadata": {"name": "claim", "namespace": "ns"}, "spec": {"devices": spec}}, ResourceClaim
    )
    state = AllocatedState()
    for i, d in enumerate(p["devices"]):
        if d["used"]:
            state.allocated_devices.add(state_id(i))
    return [slice_], claim, state


def state_id(i: int) -> Any:
    from kubedra.allocator import DeviceID

    return DeviceID("d", "p", f"dev-{i}")


def _usable(p: dict[str, Any], i: int, r: dict[str, Any]) -> bool:
    d = p["devices"][i]
    return not d["used"] and (not d["taint"] or r["tolerate"]) and r["only"] in (None, d["t"])


def _valid(p: dict[str, Any], picks: list[tuple[int, int]]) -> bool:
    """``picks`` = (request index, device index); the rules of the claim, checked directly."""
    if len({i for _, i in picks}) != len(picks):
        return False
    if any(not _usable(p, i, p["requests"][j]) for j, i in picks):
        return False
    values = [p["devices"][i]["a"] for _, i in picks]
    if p["constraint"] == "match":
        return len(set(values)) <= 1
    if p["constraint"] == "distinct":
        return len(set(values)) == len(values)
    return True


def _brute_force(p: dict[str, Any]) -> bool:
    slots = [j for j, r in enumerate(p["requests"]) for _ in range(r["count"])]
    return any(
        _valid(p, list(zip(slots, chosen, strict=True)))
        for chosen in permutations(range(len(p["devices"])), len(slots))
    )


@settings(max_examples=depth.examples(150, 1500), deadline=None)
@given(problem_st)
def test_allocations_obey_the_rules_and_unschedulable_means_no_solution(p: dict[str, Any]) -> None:
    slices, claim, state = _build(p)
    allocator = Allocator(Features.for_release("1.37"), state, {"c": CLASS}, slices, CEL)
    results = allocator.allocate(NODE, [claim])
    if results is None:
        assert not _brute_force(p)
        return
    picks = [(int(r.request[1:]), int(r.device.split("-")[1])) for r in results[0].devices.results]
    assert len(picks) == sum(r["count"] for r in p["requests"])
    assert _valid(p, picks)
