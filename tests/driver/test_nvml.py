"""The NVML backend through a faked pynvml module (no GPU here): NVML's answers become NVIDIA's devices."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.driver.fake_pynvml import FakeNvml, Gpu

from kubedra.driver.devices import pool_specs
from kubedra.driver.inventory import DriverError
from kubedra.driver.nvml import NvmlBackend


def _sysfs(tmp_path: Path) -> Path:
    """/sys/bus/pci/devices/<bus id> as links into the PCI tree, with numa_node files."""
    root = tmp_path / "devices"
    root.mkdir()
    for bus, parent, numa in (("0000:07:00.0", "pci0000:00", "0"), ("0000:0f:00.0", "pci0000:0e", "-1")):
        real = tmp_path / "devices-tree" / parent / "0000:00:01.0" / bus
        real.mkdir(parents=True)
        (real / "numa_node").write_text(numa + "\n")
        (root / bus).symlink_to(real)
    return root


def test_discovery_reads_what_nvidias_driver_reads(tmp_path: Path) -> None:
    fake = FakeNvml()
    inventory = NvmlBackend(fake, sysfs=_sysfs(tmp_path)).discover()
    assert (fake.initialised, fake.shutdowns) == (1, 1)  # init and shutdown per discovery
    assert (inventory.driver_version, inventory.cuda_driver_version) == ("550.54.15", "12.4")
    a100, h100 = inventory.gpus
    assert (a100.minor, a100.uuid, a100.product_name, a100.brand, a100.architecture) == (
        0,
        "GPU-2f6a4c1e-0000-4000-8000-000000000000",
        "NVIDIA A100-SXM4-40GB",
        "Nvidia",
        "Ampere",
    )
    assert (a100.cuda_compute_capability, a100.memory_bytes, a100.pci_bus_id) == ("8.0", 40 << 30, "0000:07:00.0")
    assert (a100.pcie_root, a100.numa_node) == ("pci0000:00", 0)
    assert (h100.architecture, h100.pci_bus_id, h100.pcie_root, h100.numa_node) == (
        "Hopper",
        "0000:0f:00.0",
        "pci0000:0e",
        None,
    )
    assert [(p.profile, p.profile_id, p.count, p.memory_bytes >> 20, p.placements[:2]) for p in a100.mig_profiles] == [
        ("1g.5gb", 19, 7, 4864, ((0, 1), (1, 1))),
        ("2g.10gb", 14, 3, 9856, ((0, 2), (2, 2))),
        ("3g.20gb", 9, 2, 19968, ((0, 4), (4, 4))),
        ("7g.40gb", 0, 1, 40192, ((0, 8),)),
    ]
    assert h100.mig_profiles == ()  # MIG mode off: published whole


def test_nvml_devices_are_nvidias(tmp_path: Path) -> None:
    inventory = NvmlBackend(FakeNvml(), sysfs=_sysfs(tmp_path)).discover()
    specs = pool_specs(inventory, "node-1")
    counters = [c.name for devices, sets in specs for c in sets]
    assert counters == ["gpu-0-counter-set"]
    names = [d.name for devices, _ in specs for d in devices]
    assert "gpu-0" not in names  # Ampere in MIG mode
    assert "gpu-0-mig-1g5gb-19-6" in names
    assert "gpu-1" in names
    h100 = next(d for devices, _ in specs for d in devices if d.name == "gpu-1")
    assert h100.attributes["resource.kubernetes.io/pcieRoot"].string == "pci0000:0e"
    assert h100.attributes["cudaComputeCapability"].version == "9.0.0"
    assert h100.capacity["memory"].value == "81559Mi"


def test_memory_not_supported_publishes_no_memory_capacity(tmp_path: Path) -> None:
    gpu = Gpu(3, "GPU-x", "NVIDIA GH200", 14, 9, (9, 0), None, "00000000:09:00.0", None)
    inventory = NvmlBackend(FakeNvml([gpu]), sysfs=tmp_path).discover()
    [(devices, _)] = pool_specs(inventory, "n")
    assert devices[0].capacity == {}
    assert inventory.gpus[0].memory_bytes is None


def test_missing_nvml_fails_clearly() -> None:
    with pytest.raises(DriverError, match=r"NVML cannot be initialised .*no NVIDIA driver .*--backend fake"):
        NvmlBackend(FakeNvml(missing=True)).discover()


def test_the_real_module_without_a_driver_fails_the_same_way() -> None:
    """On this machine (no libnvidia-ml.so) nvidia-ml-py itself raises LibraryNotFound."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        pass
    else:  # pragma: no cover - a machine with a GPU driver
        pynvml.nvmlShutdown()
        pytest.skip("NVML is present here")
    with pytest.raises(DriverError, match="NVML cannot be initialised"):
        NvmlBackend().discover()
