"""The NVML backend (nvidia-ml-py's ``pynvml``): the calls NVIDIA's ``getGpuInfo`` makes, init/shutdown per
discovery. Tested through a faked ``pynvml`` module; no GPU was available where this was written.

pcieRoot and numaNode come from sysfs (``/sys/bus/pci/devices/<bus id>``: the root is the ``pci<domain>:<bus>``
component of the device's real path; ``numa_node``), as upstream's ``deviceattribute`` helpers read them.
"""

from __future__ import annotations

import contextlib
import ctypes
from pathlib import Path
from typing import Any

from kubedra.driver.inventory import DriverError, GpuInfo, Inventory, MigProfileInfo

SYSFS_PCI = Path("/sys/bus/pci/devices")
# nvmlDeviceGetArchitecture values (nvml.h NVML_DEVICE_ARCH_*) → go-nvlib's names
ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
}
# nvmlDeviceGetBrand values (NVML_BRAND_*) → go-nvlib's names
BRANDS = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NvidiaVApps",
    8: "NvidiaVPC",
    9: "NvidiaVCS",
    10: "NvidiaVWS",
    11: "NvidiaCloudGaming",
    12: "QuadroRTX",
    13: "NvidiaRTX",
    14: "Nvidia",
    15: "GeForceRTX",
    16: "TitanRTX",
}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _sysfs(bus_id: str, root: Path) -> tuple[str | None, int | None]:
    device = root / bus_id.lower()
    pcie_root = None
    with contextlib.suppress(OSError):
        for part in device.resolve().parts:
            if part.startswith("pci") and ":" in part:
                pcie_root = part
                break
    numa = None
    with contextlib.suppress(OSError, ValueError):
        value = int((device / "numa_node").read_text().strip())
        numa = value if value >= 0 else None
    return pcie_root, numa


def _normal_bus_id(raw: str) -> str:
    """NVML's ``00000000:07:00.0`` → the 4-digit-domain form Kubernetes' standard attribute uses."""
    domain, _, rest = raw.lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}" if rest else raw.lower()


class NvmlBackend:
    def __init__(self, module: Any = None, sysfs: Path = SYSFS_PCI) -> None:
        self._module = module
        self.sysfs = sysfs

    def _nvml(self) -> Any:
        if self._module is not None:
            return self._module
        try:
            import pynvml
        except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a dependency
            raise DriverError("NVML: the nvidia-ml-py package is not installed") from exc
        return pynvml

    def discover(self) -> Inventory:
        nvml = self._nvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise DriverError(
                f"NVML cannot be initialised ({exc}): no NVIDIA driver (libnvidia-ml.so) on this node; "
                "use --backend fake --inventory FILE to run without GPUs"
            ) from exc
        try:
            driver = _text(nvml.nvmlSystemGetDriverVersion())
            cuda = nvml.nvmlSystemGetCudaDriverVersion()
            gpus = tuple(self._gpu(nvml, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(nvml.nvmlDeviceGetCount()))
        except nvml.NVMLError as exc:
            raise DriverError(f"NVML: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()
        return Inventory(driver, f"{cuda // 1000}.{cuda % 1000 // 10}", gpus)

    def _gpu(self, nvml: Any, handle: Any) -> GpuInfo:
        try:
            memory: int | None = int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
        except nvml.NVMLError_NotSupported:
            memory = None
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        bus_id = _normal_bus_id(_text(nvml.nvmlDeviceGetPciInfo(handle).busId))
        root, numa = _sysfs(bus_id, self.sysfs)
        return GpuInfo(
            minor=int(nvml.nvmlDeviceGetMinorNumber(handle)),
            uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
            product_name=_text(nvml.nvmlDeviceGetName(handle)),
            brand=BRANDS.get(int(nvml.nvmlDeviceGetBrand(handle)), "Unknown"),
            architecture=ARCHITECTURES.get(int(nvml.nvmlDeviceGetArchitecture(handle)), "Unknown"),
            cuda_compute_capability=f"{major}.{minor}",
            memory_bytes=memory,
            pci_bus_id=bus_id,
            mig_profiles=self._mig_profiles(nvml, handle),
            pcie_root=root,
            numa_node=numa,
        )

    def _mig_profiles(self, nvml: Any, handle: Any) -> tuple[MigProfileInfo, ...]:
        """Every GPU-instance profile the GPU supports, with its possible placements (MIG-capable GPUs only)."""
        try:
            current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        except nvml.NVMLError:
            return ()  # not MIG-capable
        if current != nvml.NVML_DEVICE_MIG_ENABLE:
            return ()  # MIG mode off: the GPU is published whole, as NVIDIA does without DynamicMIG
        profiles = []
        for index in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, index)
            except nvml.NVMLError:
                continue  # NOT_SUPPORTED / INVALID_ARGUMENT: profile absent on this GPU
            count = ctypes.c_uint(int(info.instanceCount))
            array = (nvml.c_nvmlGpuInstancePlacement_t * max(1, int(info.instanceCount)))()
            nvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, info.id, array, ctypes.byref(count))
            placements = tuple((int(array[i].start), int(array[i].size)) for i in range(count.value))
            slices = int(info.memorySizeMB)
            written = _text(getattr(info, "name", b"")).removeprefix("MIG ").strip()
            name = written or f"{int(info.sliceCount)}g.{round(slices / 1024)}gb"
            profiles.append(
                MigProfileInfo(
                    profile=name,
                    profile_id=int(info.id),
                    count=int(info.instanceCount),
                    memory_bytes=slices * 1024 * 1024,
                    multiprocessors=int(info.multiprocessorCount),
                    placements=placements,
                    copy_engines=int(info.copyEngineCount),
                    decoders=int(info.decoderCount),
                    encoders=int(info.encoderCount),
                    jpeg_engines=int(info.jpegCount),
                    ofa_engines=int(info.ofaCount),
                )
            )
        return tuple(profiles)
