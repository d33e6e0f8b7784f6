"""NodePool expansion: Nodes, NVIDIA-shaped ResourceSlices valid against the v1.37 strict schema and the API
limits, MIG counters that add up, sharing, device-plugin nodes, and every input error with its message."""

from __future__ import annotations

import copy
import json
import os
import re
from collections import Counter as Tally
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import msgspec
import pytest
from referencing import Registry, Resource

from kubedra.cluster import catalogue
from kubedra.cluster.gpuslices import binary_si, pci_location
from kubedra.cluster.nodepool import expand_nodepools, is_nodepool
from kubedra.objects import limits
from kubedra.objects.errors import InvalidInputError, Location
from kubedra.objects.load import load_text
from kubedra.objects.model import ResourceSlice, to_dict
from kubedra.objects.validate import validate


@dataclass
class Raw:
    location: Location
    data: dict[str, Any]


def pool(name: str = "a100", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "count": 2,
        "allocatable": {"cpu": "96", "memory": "1152Gi"},
        "gpu": {"model": "A100-40GB", "count": 8},
    }
    body.update(spec)
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name}, "spec": body}


def expand(*docs: dict[str, Any]) -> tuple[list[Any], list[ResourceSlice]]:
    return expand_nodepools([Raw(Location("pools.yaml", i), d) for i, d in enumerate(docs)])


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidInputError) as err:
        expand(doc)
    return [str(p) for p in err.value.problems]


@cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    base = f"{os.path.dirname(kubernetes_validate.__file__)}/kubernetes-json-schema/v1.37.0-local-strict"
    with open(f"{base}/_definitions.json") as f:
        defs = Resource.from_contents(json.load(f))
    with open(f"{base}/{kind}") as f:
        schema = json.load(f)
    return jsonschema.Draft202012Validator(schema, registry=defs @ (Resource.from_contents(schema) @ Registry()))


def schema_errors(obj: dict[str, Any], kind: str = "resourceslice-resource-v1.json") -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator(kind).iter_errors(obj)]


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def limit_problems(pool_slices: list[ResourceSlice]) -> list[str]:
    """The v1 (1.35+) validation rules a pool's slices must satisfy."""
    found: list[str] = []
    names: Tally[str] = Tally()
    sets: dict[str, dict[str, str]] = {}
    for s in pool_slices:
        spec = s.spec
        if spec.devices and spec.shared_counters:
            found.append(f"{s.metadata.name}: devices and sharedCounters in one slice")
        if len(spec.shared_counters) > limits.ResourceSliceMaxCounterSets:
            found.append(f"{s.metadata.name}: {len(spec.shared_counters)} counter sets")
        advanced = any(d.consumes_counters or d.taints for d in spec.devices)
        cap = limits.ResourceSliceMaxDevicesWithTaintsOrConsumesCounters if advanced else limits.ResourceSliceMaxDevices
        if len(spec.devices) > cap:
            found.append(f"{s.metadata.name}: {len(spec.devices)} devices > {cap}")
        if spec.pool.resource_slice_count != len(pool_slices):
            found.append(f"{s.metadata.name}: resourceSliceCount {spec.pool.resource_slice_count}")
        for cs in spec.shared_counters:
            if cs.name in sets:
                found.append(f"duplicate counter set {cs.name}")
            if len(cs.counters) > limits.ResourceSliceMaxCountersPerCounterSet:
                found.append(f"{cs.name}: {len(cs.counters)} counters")
            sets[cs.name] = {k: v.value for k, v in cs.counters.items()}
        for d in spec.devices:
            names[d.name] += 1
            if not _DNS_LABEL.match(d.name) or len(d.name) > 63:
                found.append(f"bad device name {d.name}")
            if len(d.attributes) + len(d.capacity) > limits.ResourceSliceMaxAttributesAndCapacitiesPerDevice:
                found.append(f"{d.name}: too many attributes and capacities")
            if len(d.consumes_counters) > limits.ResourceSliceMaxDeviceCounterConsumptionsPerDevice:
                found.append(f"{d.name}: too many counter consumptions")
            for attr in d.attributes.values():
                if attr.string is not None and len(attr.string) > limits.DeviceAttributeMaxValueLength:
                    found.append(f"{d.name}: attribute too long")
    found.extend(f"duplicate device {n}" for n, c in names.items() if c > 1)
    for s in pool_slices:
        for d in s.spec.devices:
            for use in d.consumes_counters:
                if use.counter_set not in sets:
                    found.append(f"{d.name}: unknown counter set {use.counter_set}")
                    continue
                found.extend(f"{d.name}: unknown counter {c}" for c in use.counters if c not in sets[use.counter_set])
    return found


def by_pool(slices: list[ResourceSlice]) -> dict[str, list[ResourceSlice]]:
    pools: dict[str, list[ResourceSlice]] = {}
    for s in slices:
        pools.setdefault(s.spec.pool.name, []).append(s)
    return pools


def qty(text: str) -> int:
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", text)
    assert m, text
    return int(m[1]) << {None: 0, "Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[m[2]]


# --------------------------------------------------------------------------------------------------


def test_nodes_are_named_and_labelled() -> None:
    doc = pool(
        labels={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        count=4,
    )
    nodes, _ = expand(doc)
    assert [n.metadata.name for n in nodes] == ["a100-0", "a100-1", "a100-2", "a100-3"]
    node = nodes[1]
    assert node.metadata.labels == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "a100-1",
        "kubernetes.io/os": "linux",
        "kubedra.io/nodepool": "a100",
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
    }
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
    assert node.status.allocatable == {"cpu": "96", "memory": "1152Gi", "pods": "110"}
    assert node.status.capacity == node.status.allocatable
    assert "nvidia.com/gpu" not in node.status.allocatable
    assert len({n.metadata.uid for n in nodes}) == 4
    assert schema_errors(to_dict(node), "node-v1.json") == []


def test_plain_gpu_slice_looks_like_nvidias() -> None:
    nodes, slices = expand(pool())
    assert len(slices) == 2
    s = slices[0]
    assert s.spec.driver == "gpu.nvidia.com"
    assert s.spec.node_name == "a100-0"
    assert (s.spec.pool.name, s.spec.pool.generation, s.spec.pool.resource_slice_count) == ("a100-0", 1, 1)
    assert re.fullmatch(r"00000-gpu\.nvidia\.com-a100-0-[bcdfghjklmnpqrstvwxz2456789]{5}", s.metadata.name)
    owner = s.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Node", "a100-0", nodes[0].metadata.uid, True)
    assert [d.name for d in s.spec.devices] == [f"gpu-{i}" for i in range(8)]
    gpu = s.spec.devices[3]
    attrs = {k: msgspec.to_builtins(v) for k, v in gpu.attributes.items()}
    assert attrs == {
        "architecture": {"string": "Ampere"},
        "brand": {"string": "Nvidia"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "cudaDriverVersion": {"version": "13.0.0"},
        "driverVersion": {"version": "580.126.20"},
        "productName": {"string": "NVIDIA A100-SXM4-40GB"},
        "resource.kubernetes.io/numaNode": {"int": 0},
        "resource.kubernetes.io/pciBusID": {"string": "0000:31:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:2f"},
        "type": {"string": "gpu"},
        "uuid": {"string": attrs["uuid"]["string"]},
    }
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", attrs["uuid"]["string"])
    assert {k: v.value for k, v in gpu.capacity.items()} == {"memory": "40Gi"}
    assert gpu.consumes_counters == []
    assert gpu.allow_multiple_allocations is None


def test_pcie_and_numa_topology() -> None:
    _, slices = expand(pool(count=1))
    devices = slices[0].spec.devices
    roots = [d.attributes["resource.kubernetes.io/pcieRoot"].string for d in devices]
    assert roots == [r for r in roots[::2] for _ in range(2)]  # two GPUs per root
    assert len(set(roots)) == 4
    assert [d.attributes["resource.kubernetes.io/numaNode"].int for d in devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    bus_ids = [d.attributes["resource.kubernetes.io/pciBusID"].string for d in devices]
    assert bus_ids == sorted(bus_ids)
    assert len(set(bus_ids)) == 8
    assert pci_location(17, 20) == ("0001:11:00.0", "pci0001:0f", 1)


def test_uuids_are_deterministic_and_unique() -> None:
    _, first = expand(pool())
    _, again = expand(pool())
    uuids = [d.attributes["uuid"].string for s in first for d in s.spec.devices]
    assert uuids == [d.attributes["uuid"].string for s in again for d in s.spec.devices]
    assert len(set(uuids)) == 16
    assert [to_dict(s) for s in first] == [to_dict(s) for s in again]


VARIANTS = {
    "plain": {},
    "shares": {"sharing": {"shares": 4}},
    "mig": {"mig": {"enabled": True}},
    "mig-shares": {"mig": {"enabled": True}, "sharing": {"shares": 2}},
}
LAYOUTS = [
    pytest.param(m.name, v, id=f"{m.name}-{k}")
    for m in catalogue.MODELS
    for k, v in VARIANTS.items()
    if m.mig_capable or "mig" not in v
]


@pytest.mark.parametrize(("model", "variant"), LAYOUTS)
def test_every_model_and_layout_is_valid(model: str, variant: dict[str, Any]) -> None:
    _, slices = expand(pool(count=1, gpu={"model": model, "count": 8}, **variant))
    for s in slices:
        body = to_dict(s)
        assert schema_errors(body) == []
        assert msgspec.convert(body, ResourceSlice) == s
        assert validate(s) == []
    assert limit_problems(slices) == []


def test_mig_split_layout_on_hopper() -> None:
    _, slices = expand(pool(count=1, gpu={"model": "H100-80GB", "count": 8}, mig={"enabled": True}))
    assert len(slices) == 9
    counters, *gpus = slices
    assert counters.spec.devices == []
    assert [cs.name for cs in counters.spec.shared_counters] == [f"gpu-{i}-counter-set" for i in range(8)]
    assert all(s.spec.shared_counters == [] for s in gpus)
    names = [d.name for d in gpus[2].spec.devices]
    assert names == sorted(names)
    assert names[0] == "gpu-2"
    assert "gpu-2-mig-1g10gb-19-6" in names
    assert "gpu-2-mig-1g10gb-me-20-0" in names
    assert "gpu-2-mig-7g80gb-0-0" in names
    assert len(names) == 1 + 7 + 7 + 4 + 3 + 2 + 1 + 1
    mig = next(d for d in gpus[2].spec.devices if d.name == "gpu-2-mig-3g40gb-9-4")
    full = gpus[2].spec.devices[0]
    assert mig.attributes["type"].string == "mig"
    assert mig.attributes["profile"].string == "3g.40gb"
    assert mig.attributes["parentUUID"].string == full.attributes["uuid"].string
    assert "uuid" not in mig.attributes
    assert {k: v.value for k, v in mig.capacity.items()} == {
        "copyEngines": "3",
        "decoders": "3",
        "encoders": "0",
        "jpegEngines": "3",
        "memory": "40448Mi",
        "multiprocessors": "60",
        "ofaEngines": "0",
    }
    assert {k: v.value for k, v in mig.consumes_counters[0].counters.items()} == {
        "copy-engines": "3",
        "decoders": "3",
        "encoders": "0",
        "jpeg-engines": "3",
        "memory": "40448Mi",
        "memory-slice-4": "1",
        "memory-slice-5": "1",
        "memory-slice-6": "1",
        "memory-slice-7": "1",
        "multiprocessors": "60",
        "ofa-engines": "0",
    }


def test_ampere_in_mig_mode_offers_no_full_gpu() -> None:
    _, slices = expand(pool(count=1, mig={"enabled": True}))
    devices = [d for s in slices for d in s.spec.devices]
    assert not any(d.attributes["type"].string == "gpu" for d in devices)
    assert len(devices) == 8 * 25
    assert len(slices[0].spec.shared_counters) == 8


@pytest.mark.parametrize("model", [m.name for m in catalogue.MODELS if m.mig_capable])
def test_mig_counters_add_up(model: str) -> None:
    _, slices = expand(pool(count=1, gpu={"model": model, "count": 1}, mig={"enabled": True}))
    counter_set = {k: qty(v.value) for k, v in slices[0].spec.shared_counters[0].counters.items()}
    devices = slices[1].spec.devices
    gpu_model = catalogue.lookup(model)
    assert sum(1 for k in counter_set if k.startswith("memory-slice-")) == 8
    for d in devices:
        use = {k: qty(v.value) for k, v in d.consumes_counters[0].counters.items()}
        assert all(use[k] <= counter_set[k] for k in use), d.name
        if d.attributes["type"].string == "gpu":
            assert use == counter_set  # the full GPU consumes everything
            continue
        start = int(d.name.rsplit("-", 1)[1])
        profile = next(p for p in gpu_model.mig_profiles if p.name == d.attributes["profile"].string)
        size = dict(profile.placements)[start]
        assert sorted(k for k in use if k.startswith("memory-slice-")) == sorted(
            f"memory-slice-{i}" for i in range(start, start + size)
        )
        assert use["memory"] == profile.memory_mib << 20
    # every maximal packing of one profile fits in the counters
    for profile in gpu_model.mig_profiles:
        placed = [d for d in devices if d.attributes.get("profile") and d.attributes["profile"].string == profile.name]
        disjoint = [d for d in placed if int(d.name.rsplit("-", 1)[1]) in {s for s, _ in profile.placements}]
        totals: Tally[str] = Tally()
        used_slices: set[str] = set()
        for d in disjoint:
            for k, v in d.consumes_counters[0].counters.items():
                if k.startswith("memory-slice-"):
                    used_slices.add(k)
                elif profile.name.endswith("+me"):
                    continue  # only one +me instance fits; its engines are checked per device above
                else:
                    totals[k] += qty(v.value)
        assert all(totals[k] <= counter_set[k] for k in totals), profile.name
        assert len(used_slices) <= 8


def test_more_than_eight_gpus_split_counter_slices() -> None:
    _, slices = expand(pool(count=1, gpu={"model": "H100", "count": 12}, mig={"enabled": True}))
    assert [len(s.spec.shared_counters) for s in slices[:2]] == [8, 4]
    assert len(slices) == 2 + 12
    assert all(s.spec.pool.resource_slice_count == 14 for s in slices)
    assert limit_problems(slices) == []
    names = [s.metadata.name for s in slices]
    assert names[0].startswith("00000-")
    assert names[13].startswith("0000d-")


def test_consumable_shares_match_nvidia() -> None:
    _, slices = expand(pool(count=1, gpu={"model": "H100-80GB", "count": 2}, sharing={"shares": 4}))
    gpu = slices[0].spec.devices[0]
    assert gpu.allow_multiple_allocations is True
    memory, shares = gpu.capacity["memory"], gpu.capacity["shares"]
    assert memory.value == "81559Mi"
    assert msgspec.to_builtins(memory.request_policy) == {
        "default": "0",
        "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"},
    }
    assert shares.value == "4"
    assert msgspec.to_builtins(shares.request_policy) == {
        "default": "1",
        "validRange": {"min": "1", "max": "4", "step": "1"},
    }


def test_device_plugin_nodes_publish_no_slices() -> None:
    nodes, slices = expand(pool(devicePlugin=True))
    assert slices == []
    assert nodes[0].status.allocatable["nvidia.com/gpu"] == "8"
    assert nodes[0].status.capacity["nvidia.com/gpu"] == "8"


def test_generated_objects_load_back() -> None:
    nodes, slices = expand(pool(count=2, mig={"enabled": True}, gpu={"model": "H100", "count": 10}))
    text = "\n---\n".join(json.dumps(to_dict(o)) for o in [*nodes, *slices])
    loaded = load_text(text, source="generated.yaml")
    assert [to_dict(o) for o in loaded.objects] == [to_dict(o) for o in [*nodes, *slices]]
    assert all(validate(n) == [] for n in nodes)


def test_pools_from_the_loader() -> None:
    loaded = load_text(
        "apiVersion: kubedra.io/v1alpha1\nkind: NodePool\nmetadata: {name: l4}\n"
        "spec: {count: 1, gpu: {model: L4, count: 1, modle: x}}\n",
        source="pools.yaml",
    )
    with pytest.raises(InvalidInputError) as err:
        expand_nodepools([r for r in loaded.raw if is_nodepool(r.data)])
    assert [str(p) for p in err.value.problems] == ['pools.yaml[0]: NodePool/l4: spec.gpu.modle: unknown field "spec.gpu.modle"']


def test_cpu_pool_and_mixed_pools() -> None:
    cpu = pool("cpu", count=3)
    del cpu["spec"]["gpu"]
    nodes, slices = expand(cpu, pool("h100", count=1, gpu={"model": "h100", "count": 4}))
    assert [n.metadata.name for n in nodes] == ["cpu-0", "cpu-1", "cpu-2", "h100-0"]
    assert [s.spec.pool.name for s in slices] == ["h100-0"]
    assert len(by_pool(slices)["h100-0"][0].spec.devices) == 4


def test_custom_versions_and_zero_count() -> None:
    nodes, slices = expand(
        pool(count=0),
        pool(
            "b", count=1, gpu={"model": "L4", "count": 1, "driverVersion": "570.86.15", "cudaDriverVersion": "12.8.0"}
        ),
    )
    assert [n.metadata.name for n in nodes] == ["b-0"]
    d = slices[0].spec.devices[0]
    assert (d.attributes["driverVersion"].version, d.attributes["cudaDriverVersion"].version) == ("570.86.15", "12.8.0")
    assert d.capacity["memory"].value == "23034Mi"


def test_is_nodepool() -> None:
    assert is_nodepool(pool())
    assert is_nodepool({**pool(), "apiVersion": "kubedra.io/v1"})
    assert not is_nodepool({"apiVersion": "v1", "kind": "Node"})


def test_binary_si() -> None:
    assert [binary_si(v) for v in (0, 14, 1024, 1536, 40 << 30, 4864 << 20, (1 << 20) + 1)] == [
        "0",
        "14",
        "1Ki",
        "1536",
        "40Gi",
        "4864Mi",
        str((1 << 20) + 1),
    ]


# --------------------------------------------------------------------------------------------------
# Errors

P = "pools.yaml[0]: NodePool/a100: "


def with_spec(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(pool())
    doc["spec"].update(changes)
    return doc


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            with_spec(gpu={"modle": "A100", "count": 1}),
            [P + 'spec.gpu.modle: unknown field "spec.gpu.modle"', P + "spec.gpu.model: Required value"],
        ),
        (with_spec(gpu={"count": 1}), [P + "spec.gpu.model: Required value"]),
        (with_spec(count="4"), [P + 'spec.count: Invalid value: "4": must be an integer, not string']),
        (
            {**pool(), "apiVersion": "kubedra.io/v1"},
            [P + "apiVersion: unsupported apiVersion 'kubedra.io/v1' for NodePool; use 'kubedra.io/v1alpha1'"],
        ),
        (with_spec(count=-1), [P + "spec.count: Invalid value: -1: must be greater than or equal to 0"]),
        (with_spec(labels={"bad key!": "x"}), [P + "spec.labels[bad key!]: invalid label key 'bad key!'"]),
        (with_spec(labels={"team": "a b"}), [P + "spec.labels[team]: invalid label value 'a b'"]),
        (
            with_spec(labels={"kubernetes.io/hostname": "x"}),
            [P + "spec.labels[kubernetes.io/hostname]: is set per node to the node's name; remove it"],
        ),
        (with_spec(taints=[{"key": "", "effect": "NoSchedule"}]), [P + "spec.taints[0].key: Required value"]),
        (
            with_spec(taints=[{"key": "k", "effect": "Never"}]),
            [
                P + "spec.taints[0].effect: unsupported value 'Never': "
                "must be one of NoSchedule, PreferNoSchedule, NoExecute"
            ],
        ),
        (
            with_spec(allocatable={"memory": "lots"}),
            [P + 'spec.allocatable[memory]: Invalid value: "lots": must be a quantity (e.g. 40Gi, 500m, 1e3)'],
        ),
        # Numbers are quantities, as Kubernetes reads them; what a Node's validation refuses is refused.
        (
            with_spec(allocatable={"cpu": True}),
            [P + "spec.allocatable[cpu]: Invalid value: true: must be a quantity (a string or a number), not boolean"],
        ),
        (
            with_spec(allocatable={"cpu": 0.5, "memory": -1, "pods": 1.5}),
            [
                P + 'spec.allocatable[memory]: Invalid value: "-1": must be greater than or equal to 0',
                P + 'spec.allocatable[pods]: Invalid value: "1.5": must be an integer',
            ],
        ),
        (
            with_spec(count=2**63),
            [P + "spec.count: Invalid value: 9223372036854775808: cannot unmarshal number into Go value of type int64"],
        ),
        (
            with_spec(gpu={"model": "A200", "count": 1}),
            [
                P + "spec.gpu.model: unknown GPU model 'A200'; known models: " + ", ".join(catalogue.known_names())
                + "; or declare the model with spec.gpu.memory (and productName, attributes)"
            ],
        ),
        (
            with_spec(gpu={"model": "T4", "count": 1, "memory": "15Gi"}),
            [
                P + "spec.gpu.memory: 'T4' is the catalogue's T4 (Tesla T4); drop spec.gpu.memory and "
                "spec.gpu.productName, or give the declared model a name of its own"
            ],
        ),
        (
            with_spec(gpu={"model": "T4", "count": 1, "productName": "Tesla T4"}),
            [P + "spec.gpu.productName: needs spec.gpu.memory: only a model the pool declares names its product"],
        ),
        (
            with_spec(gpu={"model": "G2", "count": 1, "memory": "lots"}),
            [P + 'spec.gpu.memory: Invalid value: "lots": must be a quantity (e.g. 40Gi, 500m, 1e3)'],
        ),
        (
            with_spec(gpu={"model": "G2", "count": 1, "memory": "1Ki"}),
            [P + "spec.gpu.memory: must be at least 1Mi, got '1Ki'"],
        ),
        (
            with_spec(gpu={"model": "G2", "count": 1, "memory": "16Gi"}, mig={"enabled": True}),
            [P + "spec.mig.enabled: G2 (G2) does not support MIG"],
        ),
        (
            with_spec(gpu={"model": "G2", "count": 1, "memory": "16Gi", "attributes": {"x": {"int": 1, "string": "a"}}}),
            [P + 'spec.gpu.attributes[x]: Invalid value: "<value omitted>": exactly one value must be specified'],
        ),
        (
            with_spec(gpu={"model": "G2", "count": 1, "memory": "16Gi", "attributes": {"bad name": {"int": 1}}}),
            [
                P + 'spec.gpu.attributes[bad name]: Invalid value: "bad name": a valid C identifier must start with '
                "alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',"
                "  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
            ],
        ),
        (with_spec(gpu={"model": "T4", "count": 65}), [P + "spec.gpu.count: must be between 1 and 64, got 65"]),
        (
            with_spec(gpu={"model": "T4", "count": 1, "driverVersion": "580"}),
            [P + "spec.gpu.driverVersion: invalid version '580': must be a semantic version such as 580.126.20"],
        ),
        (
            with_spec(gpu={"model": "T4", "count": 1}, mig={"enabled": True}),
            [P + "spec.mig.enabled: T4 (Tesla T4) does not support MIG"],
        ),
        (with_spec(sharing={"shares": 0}), [P + "spec.sharing.shares: must be at least 1, got 0"]),
        (
            with_spec(devicePlugin=True, sharing={"shares": 2}),
            [P + "spec.devicePlugin: a device-plugin node publishes no ResourceSlices; drop spec.mig and spec.sharing"],
        ),
        (
            with_spec(allocatable={"nvidia.com/gpu": "8"}),
            [
                P + "spec.allocatable[nvidia.com/gpu]: "
                "set spec.devicePlugin: true to advertise GPUs through the device plugin"
            ],
        ),
        (with_spec(gpu=None, mig={"enabled": True}), [P + "spec.mig: needs spec.gpu"]),
        (with_spec(gpu=None, devicePlugin=True), [P + "spec.devicePlugin: needs spec.gpu"]),
    ],
)
def test_errors(doc: dict[str, Any], expected: list[str]) -> None:
    assert problems(doc) == expected


def test_bad_pool_name() -> None:
    doc = pool("A100_x")
    assert problems(doc) == [
        "pools.yaml[0]: NodePool/A100_x: metadata.name: invalid pool name 'A100_x': "
        "must be a lowercase DNS subdomain of at most 200 characters"
    ]


FIRST = "pools.yaml[0]: NodePool/a100"


def test_duplicate_pools_and_all_problems_reported() -> None:
    text = "\n---\n".join(json.dumps(d) for d in (pool(), with_spec(count=3), with_spec(count=-2)))
    with pytest.raises(InvalidInputError) as err:
        load_text(text, source="pools.yaml")
    duplicate = 'metadata.name: Duplicate value: "a100": NodePool a100 is also defined at ' + FIRST
    assert [str(p) for p in err.value.problems] == [
        "pools.yaml[1]: NodePool/a100: " + duplicate,
        "pools.yaml[2]: NodePool/a100: " + duplicate,
    ]
    with pytest.raises(InvalidInputError) as err:
        expand(pool(), with_spec(count=-2))
    assert [str(p) for p in err.value.problems] == [
        "pools.yaml[1]: NodePool/a100: spec.count: Invalid value: -2: must be greater than or equal to 0"
    ]


# --------------------------------------------------------------------------------------------------
# Models the catalogue does not know (the openb trace's G2, G3, P100)


def test_a_declared_model_publishes_its_name_memory_and_attributes() -> None:
    doc = pool(
        name="g2",
        count=1,
        gpu={
            "model": "G2",
            "count": 2,
            "memory": "16Gi",
            "attributes": {"architecture": {"string": "Volta"}, "example.com/rack": {"int": 7}},
        },
        sharing={"shares": 1000},
    )
    _, slices = expand(doc)
    (slice_,) = slices
    assert validate(slice_) == []
    assert schema_errors(to_dict(slice_)) == []
    device = slice_.spec.devices[0]
    assert device.attributes["productName"].string == "G2"
    assert device.attributes["architecture"].string == "Volta"
    assert device.attributes["example.com/rack"].int == 7
    assert "cudaComputeCapability" not in device.attributes  # not known, so not invented
    assert device.capacity["memory"].value == "16Gi"
    assert device.capacity["shares"].value == "1000"


def test_a_declared_product_name_and_catalogued_models_with_attributes() -> None:
    _, slices = expand(pool(count=1, gpu={"model": "P100", "count": 1, "memory": "16280Mi", "productName": "Tesla P100"}))
    assert slices[0].spec.devices[0].attributes["productName"].string == "Tesla P100"
    _, slices = expand(pool(count=1, gpu={"model": "T4", "count": 1, "attributes": {"zone": {"string": "a"}}}))
    attrs = slices[0].spec.devices[0].attributes
    assert attrs["productName"].string == "Tesla T4" and attrs["zone"].string == "a"
