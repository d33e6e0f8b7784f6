# ruff: noqa: N802, N815, N816 - the names are pynvml's
"""A stand-in for nvidia-ml-py's ``pynvml`` module: the functions, constants, errors and ctypes structures the NVML
backend uses, answering as NVML does for an A100-SXM4-40GB (MIG enabled) and an H100 80GB HBM3 (MIG off)."""

from __future__ import annotations

import ctypes
import queue
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as real

NVML_GPU_INSTANCE_PROFILE_COUNT = real.NVML_GPU_INSTANCE_PROFILE_COUNT
NVML_DEVICE_MIG_ENABLE = real.NVML_DEVICE_MIG_ENABLE
NVMLError = real.NVMLError
NVMLError_NotSupported = real.NVMLError_NotSupported
c_nvmlGpuInstancePlacement_t = real.c_nvmlGpuInstancePlacement_t
NVMLError_NotFound = real.NVMLError_NotFound
NVML_COMPUTE_INSTANCE_PROFILE_COUNT = real.NVML_COMPUTE_INSTANCE_PROFILE_COUNT
NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = real.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
CI_PROFILE_SLICES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 5: 8, 6: 6}  # NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE indices

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
    instances: dict[int, dict[str, Any]] = field(default_factory=dict)  # GI id → profile, placement, CIs


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
        self.calls: list[tuple[Any, ...]] = []  # MIG creates and destroys, as (function, arguments...)
        self.unmonitored: set[str] = set()  # GPUs whose nvmlDeviceRegisterEvents answers NOT_SUPPORTED
        self.waits = 0
        self.event_set: Any = None
        for gpu in self.gpus:
            gpu.instances = {}
        for name in (
            "NVML_GPU_INSTANCE_PROFILE_COUNT",
            "NVML_DEVICE_MIG_ENABLE",
            "NVMLError",
            "NVMLError_NotSupported",
            "c_nvmlGpuInstancePlacement_t",
            "NVMLError_NotFound",
            "NVML_COMPUTE_INSTANCE_PROFILE_COUNT",
            "NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED",
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

    def nvmlDeviceGetUUID(self, g: Any) -> str:
        if isinstance(g, SimpleNamespace):  # a MIG device handle
            return mig_uuid(g.gpu.uuid, g.gi, g.ci)
        return str(g.uuid)

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

    # ------------------------------------------------------------------------------------- MIG management

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Gpu:
        for g in self.gpus:
            if g.uuid == uuid:
                return g
        raise real.NVMLError_NotFound(real.NVML_ERROR_NOT_FOUND)

    def _profile(self, g: Gpu, pid: int) -> Any:
        for p in g.profiles:
            if p[1] == pid:
                return p
        raise real.NVMLError_InvalidArgument(real.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceCreateGpuInstanceWithPlacement(self, g: Gpu, pid: int, placement: Any) -> Any:
        if g.mig != NVML_DEVICE_MIG_ENABLE:
            raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)
        profile = self._profile(g, pid)
        start, size = int(placement.start), int(placement.size)
        if (start, size) not in profile[12]:
            raise real.NVMLError_InvalidArgument(real.NVML_ERROR_INVALID_ARGUMENT)
        for gi in g.instances.values():
            if gi["start"] < start + size and start < gi["start"] + gi["size"]:
                raise real.NVMLError_InsufficientResources(real.NVML_ERROR_INSUFFICIENT_RESOURCES)
        gi_id = min(set(range(1, len(g.instances) + 2)) - set(g.instances))
        g.instances[gi_id] = {"profile": pid, "slices": profile[3], "start": start, "size": size, "cis": {}}
        self.calls.append(("nvmlDeviceCreateGpuInstanceWithPlacement", g.uuid, pid, start, size))
        return SimpleNamespace(gpu=g, id=gi_id)

    def nvmlGpuInstanceGetInfo(self, gi: Any) -> Any:
        data = gi.gpu.instances[gi.id]
        placement = SimpleNamespace(start=data["start"], size=data["size"])
        return SimpleNamespace(id=gi.id, profileId=data["profile"], placement=placement)

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(self, gi: Any, index: int, engine: int) -> Any:
        slices = CI_PROFILE_SLICES.get(index)
        if slices is None or slices > gi.gpu.instances[gi.id]["slices"] or engine != 0:
            raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(id=index, sliceCount=slices)

    def nvmlGpuInstanceCreateComputeInstance(self, gi: Any, ci_profile: int) -> Any:
        cis = gi.gpu.instances[gi.id]["cis"]
        ci_id = min(set(range(len(cis) + 1)) - set(cis))
        cis[ci_id] = ci_profile
        self.calls.append(("nvmlGpuInstanceCreateComputeInstance", gi.gpu.uuid, gi.id, ci_profile))
        return SimpleNamespace(gi=gi, id=ci_id)

    def nvmlComputeInstanceGetInfo(self, ci: Any) -> Any:
        return SimpleNamespace(id=ci.id)

    def nvmlDeviceGetGpuInstanceById(self, g: Gpu, gi_id: int) -> Any:
        if gi_id not in g.instances:
            raise real.NVMLError_NotFound(real.NVML_ERROR_NOT_FOUND)
        return SimpleNamespace(gpu=g, id=gi_id)

    def nvmlGpuInstanceGetComputeInstanceById(self, gi: Any, ci_id: int) -> Any:
        if ci_id not in gi.gpu.instances[gi.id]["cis"]:
            raise real.NVMLError_NotFound(real.NVML_ERROR_NOT_FOUND)
        return SimpleNamespace(gi=gi, id=ci_id)

    def nvmlComputeInstanceDestroy(self, ci: Any) -> None:
        del ci.gi.gpu.instances[ci.gi.id]["cis"][ci.id]
        self.calls.append(("nvmlComputeInstanceDestroy", ci.gi.gpu.uuid, ci.gi.id, ci.id))

    def nvmlGpuInstanceDestroy(self, gi: Any) -> None:
        if gi.gpu.instances[gi.id]["cis"]:
            raise real.NVMLError_InUse(real.NVML_ERROR_IN_USE)
        del gi.gpu.instances[gi.id]
        self.calls.append(("nvmlGpuInstanceDestroy", gi.gpu.uuid, gi.id))

    def nvmlDeviceGetMaxMigDeviceCount(self, g: Gpu) -> int:
        return 7 if g.mig is not None else 0

    def _mig_handles(self, g: Gpu) -> list[Any]:
        return [
            SimpleNamespace(gpu=g, gi=gi_id, ci=ci_id)
            for gi_id, data in sorted(g.instances.items())
            for ci_id in sorted(data["cis"])
        ]

    def nvmlDeviceGetMigDeviceHandleByIndex(self, g: Gpu, index: int) -> Any:
        handles = self._mig_handles(g)
        if index >= len(handles):
            raise real.NVMLError_NotFound(real.NVML_ERROR_NOT_FOUND)
        return handles[index]

    def nvmlDeviceGetGpuInstanceId(self, mig: Any) -> int:
        return int(mig.gi)

    def nvmlDeviceGetComputeInstanceId(self, mig: Any) -> int:
        return int(mig.ci)

    # ------------------------------------------------------------------------------------- XID events

    nvmlEventTypeXidCriticalError = real.nvmlEventTypeXidCriticalError
    NVMLError_Timeout = real.NVMLError_Timeout

    def nvmlEventSetCreate(self) -> Any:
        self.event_set = SimpleNamespace(queue=queue.Queue(), registered=[], freed=False)
        return self.event_set

    def nvmlDeviceRegisterEvents(self, g: Gpu, types: int, events: Any) -> None:
        if g.uuid in self.unmonitored:
            raise real.NVMLError_NotSupported(real.NVML_ERROR_NOT_SUPPORTED)
        events.registered.append((g.uuid, types))

    def nvmlEventSetWait_v2(self, events: Any, timeout_ms: int) -> Any:
        self.waits += 1
        try:
            return events.queue.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            raise real.NVMLError_Timeout(real.NVML_ERROR_TIMEOUT) from None

    def nvmlEventSetFree(self, events: Any) -> None:
        events.freed = True

    def emit_xid(self, uuid: str, xid: int, gi: int = 0xFFFFFFFF, ci: int = 0xFFFFFFFF) -> None:
        """An XID as the GPU raises it: delivered to the event set's next wait."""
        [gpu] = [g for g in self.gpus if g.uuid == uuid]
        event = SimpleNamespace(
            device=gpu,
            eventType=real.nvmlEventTypeXidCriticalError,
            eventData=xid,
            gpuInstanceId=gi,
            computeInstanceId=ci,
        )
        self.event_set.queue.put(event)


def mig_uuid(parent: str, gi: int, ci: int) -> str:
    return f"MIG-{parent[4:12]}-{gi:04d}-{ci:04d}"


def write_caps(root: Any, minor: int, gi: int, ci: int, gi_cap: int, ci_cap: int) -> None:
    """/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<GI>/[ci<CI>/]access, as the NVIDIA driver writes them."""
    base = root / f"gpu{minor}" / "mig" / f"gi{gi}"
    (base / f"ci{ci}").mkdir(parents=True, exist_ok=True)
    (base / "access").write_text(f"DeviceFileMinor: {gi_cap}\nDeviceFileMode: 292\nDeviceFileModify: 1\n")
    (base / f"ci{ci}" / "access").write_text(f"DeviceFileMinor: {ci_cap}\nDeviceFileMode: 292\nDeviceFileModify: 1\n")
