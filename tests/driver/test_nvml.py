"""The NVML backend through the real nvidia-ml-py over the C stub of libnvidia-ml.so.1 (no GPU here): NVML's answers
become NVIDIA's devices."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.driver.conftest import StubLibrary
from tests.driver.nvmlstub import NvmlStub, StubGpu

from kubedra.driver.devices import pool_specs
from kubedra.driver.inventory import DriverError
from kubedra.driver.nvml import NvmlBackend

ROOT = Path(__file__).resolve().parents[2]


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


def test_discovery_reads_what_nvidias_driver_reads(nvml: NvmlStub, tmp_path: Path) -> None:
    inventory = NvmlBackend(sysfs=_sysfs(tmp_path)).discover()
    assert (nvml.inits, nvml.shutdowns) == (1, 1)  # init and shutdown per discovery
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
    # every profile NVML offers, in NVML's profile-index order, with all its placements: 1g.5gb+me has one
    # instance but seven possible placements (an array sized by the instance count is too short)
    assert [(p.profile, p.profile_id, p.count, p.memory_bytes >> 20, p.placements) for p in a100.mig_profiles] == [
        ("1g.5gb", 19, 7, 4864, tuple((i, 1) for i in range(7))),
        ("2g.10gb", 14, 3, 9856, ((0, 2), (2, 2), (4, 2))),
        ("3g.20gb", 9, 2, 19968, ((0, 4), (4, 4))),
        ("4g.20gb", 5, 1, 19968, ((0, 4),)),
        ("7g.40gb", 0, 1, 40192, ((0, 8),)),
        ("1g.5gb+me", 20, 1, 4864, tuple((i, 1) for i in range(7))),
        ("1g.10gb", 15, 4, 9856, ((0, 2), (2, 2), (4, 2), (6, 2))),
    ]
    seven = a100.mig_profiles[4]
    assert (seven.multiprocessors, seven.copy_engines, seven.decoders, seven.jpeg_engines, seven.ofa_engines) == (
        98,
        7,
        5,
        1,
        1,
    )
    assert h100.mig_profiles == ()  # MIG mode off: published whole


def test_nvml_devices_are_nvidias(nvml: NvmlStub, tmp_path: Path) -> None:
    inventory = NvmlBackend(sysfs=_sysfs(tmp_path)).discover()
    specs = pool_specs(inventory, "node-1")
    counters = [c.name for devices, sets in specs for c in sets]
    assert counters == ["gpu-0-counter-set"]
    names = [d.name for devices, _ in specs for d in devices]
    assert "gpu-0" not in names  # Ampere in MIG mode
    assert {"gpu-0-mig-1g5gb-19-6", "gpu-0-mig-1g5gb-me-20-6", "gpu-0-mig-7g40gb-0-0"} <= set(names)
    assert "gpu-1" in names
    h100 = next(d for devices, _ in specs for d in devices if d.name == "gpu-1")
    assert h100.attributes["resource.kubernetes.io/pcieRoot"].string == "pci0000:0e"
    assert h100.attributes["cudaComputeCapability"].version == "9.0.0"
    assert h100.capacity["memory"].value == "81559Mi"


def test_an_h100_in_mig_mode_publishes_its_profiles(nvml: NvmlStub) -> None:
    nvml.set_gpu(1, mig=1)
    inventory = NvmlBackend().discover()
    h100 = inventory.gpus[1]
    assert [(p.profile, p.profile_id) for p in h100.mig_profiles] == [
        ("1g.10gb", 19),
        ("2g.20gb", 14),
        ("3g.40gb", 9),
        ("4g.40gb", 5),
        ("7g.80gb", 0),
        ("1g.10gb+me", 20),
        ("1g.20gb", 15),
    ]
    assert h100.mig_profiles[4].multiprocessors == 132


def test_memory_not_supported_publishes_no_memory_capacity(nvml: NvmlStub, tmp_path: Path) -> None:
    nvml.gpus = [StubGpu(3, "GPU-x", "NVIDIA GH200 480GB", 9, "9.0", None, "00000000:09:00.0")]
    nvml.write()
    inventory = NvmlBackend(sysfs=tmp_path).discover()
    [(devices, _)] = pool_specs(inventory, "n")
    assert devices[0].capacity == {}
    assert inventory.gpus[0].memory_bytes is None
    assert inventory.gpus[0].mig_profiles == ()  # not MIG-capable: nvmlDeviceGetMigMode is NOT_SUPPORTED


def test_a_library_without_its_kernel_driver_fails_clearly(nvml: NvmlStub, monkeypatch: pytest.MonkeyPatch) -> None:
    """libnvidia-ml.so.1 is there but the kernel module is not: nvmlInit answers DRIVER_NOT_LOADED."""
    monkeypatch.setenv("KUBEDRA_NVML_STUB", str(nvml.root / "no-such-node"))
    with pytest.raises(DriverError, match=r"NVML cannot be initialised \(Driver Not Loaded\).*--backend fake"):
        NvmlBackend().discover()


def test_no_library_at_all_fails_clearly() -> None:
    """A fresh interpreter where no libnvidia-ml.so.1 can be found (the stub is only loaded in this test process):
    nvidia-ml-py raises LibraryNotFound, the driver says what to do."""
    script = "from kubedra.driver.nvml import NvmlBackend\nNvmlBackend().discover()\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode == 0:  # pragma: no cover - a machine with an NVIDIA driver
        pytest.skip("a libnvidia-ml.so.1 is installed here")
    assert "DriverError: NVML cannot be initialised (NVML Shared Library Not Found)" in done.stderr, done.stderr


def test_a_child_process_loads_the_stub_by_its_library_path(nvml: NvmlStub, nvml_library: StubLibrary) -> None:
    """What a driver process on a node does: pynvml's own dlopen("libnvidia-ml.so.1") through the search path."""
    script = "from kubedra.driver.nvml import NvmlBackend\nprint([g.uuid for g in NvmlBackend().discover().gpus])\n"
    env = {**nvml.env(nvml_library.path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([g.uuid for g in nvml.gpus])
