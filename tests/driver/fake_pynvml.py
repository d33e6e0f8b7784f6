# ruff: noqa: N802, N816 - the names are pynvml's
"""A stand-in for nvidia-ml-py's ``pynvml`` module: the functions, constants, errors and ctypes structures the NVML
backend uses, answering as NVML does for an A100-SXM4-40GB (MIG enabled) and an H100 80GB HBM3 (MIG off)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as real

NVML_GPU_INSTANCE_PROFILE_COUNT = real.NVML_GPU_INSTANCE_PROFILE_COUNT
NVML_DEVICE_MIG_ENABLE = real.NVML_DEVICE_MIG_ENABLE
NVMLError = real.NVMLError
NVMLError_NotSupported = real.NVMLError_NotSupported
c_nvmlGpuInstancePlacement_t = real.c_nvmlGpuInstancePlacement_t

# (NVML profile index, id, name, slices, instances, SMs, CE, dec, enc, jpeg, ofa, MiB, placements)
A100_PROFILES = [
    (0, 19, "MIG 1g.5gb", 1, 7, 14, 1, 0, 0, 0, 0, 4864, [(i, 1) for i in range(7)]),
    (1, 14, "MIG 2g.10gb", 2, 3, 28, 2, 1, 0, 0, 0, 9856, [(0, 2), (2, 2), (4, 2)]),
    (2, 9, "MIG 3g.20gb", 3, 2, 42, 3, 2, 0, 0, 0, 19968, [(0, 4), (4, 4)]),
    (4, 0, "MIG 7g.40gb", 7, 1, 98, 7, 5, 0, 1, 1, 40192, [(0, 8)]),
]


@dataclass
class Gpu:
    minor: int
    uuid: str
    name: str
    brand: int
    arch: int
    cc: tuple[int, int]
    memory: int | None
    bus_id: str
    mig: int | None  # None: not MIG-capable
    profiles: list[Any] = field(default_factory=list)


GPUS = [
    Gpu(
        0,
        "GPU-2f6a4c1e-0000-4000-8000-000000000000",
        "NVIDIA A100-SXM4-40GB",
        14,
        7,
        (8, 0),
        42949672960,
        "00000000:07:00.0",
        1,
        A100_PROFILES,
    ),
    Gpu(
        1,
        "GPU-2f6a4c1e-0000-4000-8000-000000000001",
        "NVIDIA H100 80GB HBM3",
        14,
        9,
        (9, 0),
        85520809984,
        "00000000:0F:00.0",
        0,
    ),
]


class FakeNvml:
    """Module-like: attributes are looked up as ``pynvml.<name>``."""

    def __init__(self, gpus: list[Gpu] | None = None, missing: bool = False) -> None:
        self.gpus = GPUS if gpus is None else gpus
        self.missing = missing
        self.initialised = 0
        self.shutdowns = 0
        for name in (
            "NVML_GPU_INSTANCE_PROFILE_COUNT",
            "NVML_DEVICE_MIG_ENABLE",
            "NVMLError",
            "NVMLError_NotSupported",
            "c_nvmlGpuInstancePlacement_t",
        ):
            setattr(self, name, globals()[name])

    def nvmlInit(self) -> None:
        if self.missing:
            raise real.NVMLError_LibraryNotFound(real.NVML_ERROR_LIBRARY_NOT_FOUND)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12040

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Gpu:
        return self.gpus[i]

    def nvmlDeviceGetMinorNumber(self, g: Gpu) -> int:
        return g.minor

    def nvmlDeviceGetUUID(self, g: Gpu) -> str:
        return g.uuid

    def nvmlDeviceGetName(self, g: Gpu) -> str:
        return g.name

    def nvmlDeviceGetBrand(self, g: Gpu) -> int:
        return g.brand

    def nvmlDeviceGetArchitecture(self, g: Gpu) -> int:
        return g.arch

    def nvmlDeviceGetCudaComputeCapability(self, g: Gpu) -> tuple[int, int]:
        return g.cc

    def nvmlDeviceGetMemoryInfo(self, g: Gpu) -> Any:
        if g.memory is None:
            raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(total=g.memory, free=g.memory, used=0)

    def nvmlDeviceGetPciInfo(self, g: Gpu) -> Any:
        return SimpleNamespace(busId=g.bus_id.encode())

    def nvmlDeviceGetMigMode(self, g: Gpu) -> tuple[int, int]:
        if g.mig is None:
            raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)
        return g.mig, g.mig

    def nvmlDeviceGetGpuInstanceProfileInfo(self, g: Gpu, index: int) -> Any:
        for p in g.profiles:
            if p[0] == index:
                _, pid, name, slices, count, sms, ce, dec, enc, jpeg, ofa, mib, _ = p
                return SimpleNamespace(
                    id=pid,
                    name=name.encode(),
                    sliceCount=slices,
                    instanceCount=count,
                    multiprocessorCount=sms,
                    copyEngineCount=ce,
                    decoderCount=dec,
                    encoderCount=enc,
                    jpegCount=jpeg,
                    ofaCount=ofa,
                    memorySizeMB=mib,
                )
        raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetGpuInstancePossiblePlacements(self, g: Gpu, pid: int, array: Any, count_ref: Any) -> int:
        [p] = [p for p in g.profiles if p[1] == pid]
        placements = p[12]
        for i, (start, size) in enumerate(placements):
            array[i].start, array[i].size = start, size
        count_ref._obj.value = len(placements)
        assert isinstance(count_ref._obj, ctypes.c_uint)
        return 0
