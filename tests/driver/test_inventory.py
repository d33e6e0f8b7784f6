"""The inventory file and the devices built from it (through the simulator's own builder)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.driver.helpers import inventory

from kubedra.cluster.catalogue import lookup
from kubedra.cluster.gpuslices import GpuIdentity, GpuNodeLayout, SliceFactory
from kubedra.driver.devices import Sharing, pool_specs
from kubedra.driver.inventory import DriverError, parse_inventory


def _parse(data: Any) -> Any:
    return parse_inventory(data, "inv.yaml")


def test_the_documented_shape_parses() -> None:
    parsed = _parse(inventory(2))
    assert [g.device_name for g in parsed.gpus] == ["gpu-0", "gpu-1"]
    assert parsed.gpus[0].memory_bytes == 40 << 30


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("gpus"), "inv.yaml: gpus: required, a list"),
        (lambda d: d["gpus"][1].update(minor=0), "inv.yaml: gpus[1].minor: 0 repeats gpus[0]"),
        (lambda d: d["gpus"][0].update(memory="lots"), "inv.yaml: gpus[0].memory: not a quantity"),
        # found by tests/driver/test_fuzz_driver.py in CI: past int64 was a traceback
        (lambda d: d["gpus"][0].update(memory="1e30"), "inv.yaml: gpus[0].memory: 1e30: too large"),
        (lambda d: d["gpus"][0].pop("uuid"), "inv.yaml: gpus[0].uuid: required, a string"),
        (lambda d: d.update(cudaDriverVersion="twelve"), "inv.yaml: cudaDriverVersion: 'twelve' is not a version"),
        (lambda d: d["gpus"][0].update(migProfiles=[{"profile": "1g.5gb"}]), "inv.yaml: gpus[0].migProfiles[0].count"),
        (lambda d: d["gpus"][0].update(minor=-1), "inv.yaml: gpus[0].minor: required, a non-negative integer"),
    ],
)
def test_bad_inventories_name_the_file_and_field(mutate: Any, message: str) -> None:
    data = inventory(2)
    mutate(data)
    with pytest.raises(DriverError) as info:
        _parse(data)
    assert str(info.value).startswith(message)


def test_the_driver_builds_a_gpu_exactly_as_the_simulator_does() -> None:
    """One way to build a GPU's device: the same model and identity give the same Device."""
    model = lookup("A100-40GB")
    gpu = {
        "minor": 3,
        "uuid": "GPU-1",
        "productName": model.product_name,
        "brand": model.brand,
        "architecture": model.architecture,
        "cudaComputeCapability": model.compute_capability,
        "memory": f"{model.memory_mib}Mi",
        "pciBusID": "0000:41:00.0",
        "pcieRoot": "pci0000:40",
        "numaNode": 1,
    }
    parsed = _parse({"driverVersion": "550.54.15", "cudaDriverVersion": "12.4", "gpus": [gpu]})
    [(devices, _)] = pool_specs(parsed, "n1")
    layout = GpuNodeLayout(model, 1, "550.54.15", "12.4.0")
    [expected] = SliceFactory(layout).gpu_devices("n1", 3, GpuIdentity("GPU-1", "0000:41:00.0", "pci0000:40", 1))
    assert devices == [expected]
    assert sorted(expected.attributes) == [
        "architecture",
        "brand",
        "cudaComputeCapability",
        "cudaDriverVersion",
        "driverVersion",
        "productName",
        "resource.kubernetes.io/numaNode",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "type",
        "uuid",
    ]


def test_consumable_shares() -> None:
    parsed = _parse(inventory(1))
    [(shares, _)] = pool_specs(parsed, "n", Sharing.parse("4"))
    assert shares[0].allow_multiple_allocations is True
    assert shares[0].capacity["shares"].value == "4"
    assert shares[0].capacity["memory"].request_policy.default == "0"
    [(memory, _)] = pool_specs(parsed, "n", Sharing.parse("memory"))
    assert memory[0].allow_multiple_allocations is True
    assert "shares" not in memory[0].capacity
    assert memory[0].capacity["memory"].request_policy.default == "40Gi"
    with pytest.raises(ValueError, match="neither a positive integer nor 'memory'"):
        Sharing.parse("lots")


def test_mig_profiles_without_placements_are_laid_side_by_side() -> None:
    mig = [
        {"profile": "1g.5gb", "profileID": 19, "count": 7, "memory": "4864Mi", "multiprocessors": 14},
        {"profile": "3g.20gb", "profileID": 9, "count": 2, "memory": "19968Mi", "multiprocessors": 42},
    ]
    parsed = _parse(inventory(1, migProfiles=mig))
    profiles = parsed.gpus[0].mig_profiles
    assert profiles[0].placements == tuple((i, 1) for i in range(7))
    assert profiles[1].placements == ((0, 3), (3, 3))
    specs = pool_specs(parsed, "n")
    assert [c.name for _, sets in specs for c in sets] == ["gpu-0-counter-set"]
    names = [d.name for devices, _ in specs for d in devices]
    assert names[:2] == ["gpu-0-mig-1g5gb-19-0", "gpu-0-mig-1g5gb-19-1"]


def test_more_than_128_devices_split_into_slices() -> None:
    specs = pool_specs(_parse(inventory(300)), "n")
    assert [len(devices) for devices, _ in specs] == [128, 128, 44]
    assert [d.name for d in specs[1][0]][:1] == ["gpu-128"]
