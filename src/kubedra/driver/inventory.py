"""A node's GPUs as NVML describes them, behind one small interface with two backends (NVML and a YAML file).

Pure: the dataclasses, the YAML shape's reader (``parse_inventory``) and the conversion to the simulator's
catalogue types, so :mod:`kubedra.cluster.gpuslices` builds the driver's devices exactly as it builds the
simulator's. Reading the file and calling NVML are the backends' business (:mod:`.fake`, :mod:`.nvml`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubedra.cluster.catalogue import MigProfile
from kubedra.objects.errors import KubedraError
from kubedra.objects.quantity import QuantityError, parse_quantity

MIB = 1024 * 1024


class DriverError(KubedraError):
    """The driver cannot start or go on: a bad inventory, NVML missing, a socket path taken."""


@dataclass(frozen=True, slots=True)
class MigProfileInfo:
    """One MIG GPU-instance profile of a GPU: NVML's profile info and its possible placements."""

    profile: str
    profile_id: int
    count: int
    memory_bytes: int
    multiprocessors: int
    placements: tuple[tuple[int, int], ...]  # (start, size) in memory slices
    copy_engines: int = 0
    decoders: int = 0
    encoders: int = 0
    jpeg_engines: int = 0
    ofa_engines: int = 0

    def catalogue(self) -> MigProfile:
        return MigProfile(
            self.profile,
            self.profile_id,
            self.memory_bytes // MIB,
            self.multiprocessors,
            self.copy_engines,
            self.decoders,
            self.encoders,
            self.jpeg_engines,
            self.ofa_engines,
            self.placements,
        )


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One physical GPU."""

    minor: int
    uuid: str
    product_name: str
    brand: str
    architecture: str
    cuda_compute_capability: str  # "8.0"
    memory_bytes: int | None  # None: NVML reports NOT_SUPPORTED (no memory capacity is published)
    pci_bus_id: str  # "0000:07:00.0"
    mig_profiles: tuple[MigProfileInfo, ...] = ()
    pcie_root: str | None = None  # "pci0000:00", from sysfs; None where unknown (then not published)
    numa_node: int | None = None
    healthy: bool = True

    @property
    def device_name(self) -> str:
        return f"gpu-{self.minor}"


@dataclass(frozen=True, slots=True)
class Inventory:
    driver_version: str  # "550.54.15"
    cuda_driver_version: str  # "12.4"
    gpus: tuple[GpuInfo, ...] = field(default=())

    def by_device_name(self) -> dict[str, GpuInfo]:
        return {g.device_name: g for g in self.gpus}


class Backend(Protocol):
    """Where the inventory comes from."""

    def discover(self) -> Inventory: ...


@dataclass(frozen=True, slots=True)
class MigDevice:
    """A MIG device that exists on a GPU: its GPU instance (profile and placement) and compute instance, its UUID
    and the minors of the ``/dev/nvidia-caps/nvidia-cap<N>`` nodes that grant access to the GI and the CI."""

    parent_uuid: str
    profile_id: int
    start: int
    size: int
    gi: int
    ci: int
    uuid: str
    gi_cap: int
    ci_cap: int

    def to_json(self) -> dict[str, Any]:
        return {
            "parentUUID": self.parent_uuid,
            "profileID": self.profile_id,
            "start": self.start,
            "size": self.size,
            "gi": self.gi,
            "ci": self.ci,
            "uuid": self.uuid,
            "giCap": self.gi_cap,
            "ciCap": self.ci_cap,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MigDevice:
        return cls(
            str(data["parentUUID"]),
            int(data["profileID"]),
            int(data["start"]),
            int(data["size"]),
            int(data["gi"]),
            int(data["ci"]),
            str(data["uuid"]),
            int(data["giCap"]),
            int(data["ciCap"]),
        )


@runtime_checkable
class MigBackend(Protocol):
    """Dynamic MIG, as NVIDIA's driver does it with its DynamicMIG gate: a GPU instance with the allocated
    profile and placement and one compute instance spanning it, created at prepare and destroyed at unprepare."""

    def create_mig(self, parent_uuid: str, profile_id: int, start: int, size: int) -> MigDevice: ...

    def destroy_mig(self, device: MigDevice) -> None: ...

    def mig_devices(self, parent_uuid: str) -> list[MigDevice]: ...


def version_value(text: str) -> str:
    """NVIDIA publishes driver and CUDA versions and compute capabilities as semantic versions: ``12.4`` →
    ``12.4.0``, ``550.54.15`` stays (go-nvlib pads to three parts and drops leading zeros)."""
    parts = text.strip().split(".")
    parts += ["0"] * (3 - len(parts))
    return ".".join(str(int(p)) for p in parts[:3])


# ------------------------------------------------------------------------------------------ the YAML shape


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> DriverError:
        return DriverError(f"{self.source}: {path}: {message}")

    def string(self, data: dict[str, Any], key: str, path: str, *, required: bool = True) -> str:
        value = data.get(key)
        if value is None and not required:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or str(value) == "":
            raise self.fail(f"{path}.{key}" if path else key, "required, a string")
        return str(value)

    def integer(self, data: dict[str, Any], key: str, path: str, *, default: int | None = None) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"{path}.{key}", "required, a non-negative integer")
        return value

    def quantity(self, data: dict[str, Any], key: str, path: str) -> int:
        value = data.get(key)
        try:
            parsed = parse_quantity(str(value))
        except QuantityError as exc:
            raise self.fail(f"{path}.{key}", f"not a quantity ({exc})") from exc
        if value is None or not parsed.is_integer() or parsed.sign() < 0:
            raise self.fail(f"{path}.{key}", "required, a quantity of bytes such as 40Gi")
        try:
            return parsed.as_int64()
        except QuantityError as exc:  # past int64: no GPU has that many bytes, and NVML could not say it
            raise self.fail(f"{path}.{key}", f"{value}: too large (more than 2^63-1 bytes)") from exc

    def version(self, data: dict[str, Any], key: str, path: str) -> str:
        text = self.string(data, key, path)
        parts = text.split(".")
        if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() for p in parts):
            raise self.fail(f"{path}.{key}" if path else key, f"{text!r} is not a version such as 12.4")
        return text


def _placements(profiles: list[dict[str, Any]]) -> int:
    return max((int(p.get("count", 0)) for p in profiles if isinstance(p.get("count"), int)), default=0)


def _mig_profile(reader: _Reader, data: Any, path: str, slices: int) -> MigProfileInfo:
    if not isinstance(data, dict):
        raise reader.fail(path, "must be a mapping with profile, count, memory, multiprocessors")
    count = reader.integer(data, "count", path)
    if count == 0:
        raise reader.fail(f"{path}.count", "must be at least 1")
    placements_data = data.get("placements")
    if placements_data is None:
        # NVML's GetGpuInstancePossiblePlacements, when the file does not list them: count placements of equal
        # size side by side over the GPU's memory slices (the largest count of any profile).
        size = max(1, slices // count)
        placements = tuple((i * size, size) for i in range(count))
    elif isinstance(placements_data, list):
        found = []
        for i, p in enumerate(placements_data):
            where = f"{path}.placements[{i}]"
            if not isinstance(p, dict):
                raise reader.fail(where, "must be {start, size}")
            found.append((reader.integer(p, "start", where), reader.integer(p, "size", where)))
        placements = tuple(found)
    else:
        raise reader.fail(f"{path}.placements", "must be a list of {start, size}")
    return MigProfileInfo(
        profile=reader.string(data, "profile", path),
        profile_id=reader.integer(data, "profileID", path, default=0),
        count=count,
        memory_bytes=reader.quantity(data, "memory", path),
        multiprocessors=reader.integer(data, "multiprocessors", path),
        placements=placements,
        copy_engines=reader.integer(data, "copyEngines", path, default=0),
        decoders=reader.integer(data, "decoders", path, default=0),
        encoders=reader.integer(data, "encoders", path, default=0),
        jpeg_engines=reader.integer(data, "jpegEngines", path, default=0),
        ofa_engines=reader.integer(data, "ofaEngines", path, default=0),
    )


def _gpu(reader: _Reader, data: Any, path: str) -> GpuInfo:
    if not isinstance(data, dict):
        raise reader.fail(path, "must be a mapping")
    profiles_data = data.get("migProfiles") or []
    if not isinstance(profiles_data, list):
        raise reader.fail(f"{path}.migProfiles", "must be a list")
    slices = _placements(profiles_data)
    profiles = tuple(_mig_profile(reader, p, f"{path}.migProfiles[{i}]", slices) for i, p in enumerate(profiles_data))
    healthy = data.get("healthy", True)
    if not isinstance(healthy, bool):
        raise reader.fail(f"{path}.healthy", "must be true or false")
    return GpuInfo(
        minor=reader.integer(data, "minor", path),
        uuid=reader.string(data, "uuid", path),
        product_name=reader.string(data, "productName", path),
        brand=reader.string(data, "brand", path),
        architecture=reader.string(data, "architecture", path),
        cuda_compute_capability=reader.version(data, "cudaComputeCapability", path),
        memory_bytes=reader.quantity(data, "memory", path),
        pci_bus_id=reader.string(data, "pciBusID", path),
        mig_profiles=profiles,
        pcie_root=reader.string(data, "pcieRoot", path, required=False) or None,
        numa_node=data.get("numaNode") if isinstance(data.get("numaNode"), int) else None,
        healthy=healthy,
    )


def parse_inventory(data: Any, source: str) -> Inventory:
    """The inventory file's shape (see ``kubedra driver --help``); every error names the file and the field."""
    reader = _Reader(source)
    if not isinstance(data, dict):
        raise reader.fail("(top)", "must be a mapping with driverVersion, cudaDriverVersion and gpus")
    gpus_data = data.get("gpus")
    if not isinstance(gpus_data, list):
        raise reader.fail("gpus", "required, a list")
    gpus = tuple(_gpu(reader, g, f"gpus[{i}]") for i, g in enumerate(gpus_data))
    seen: dict[int, int] = {}
    uuids: dict[str, int] = {}
    for i, gpu in enumerate(gpus):
        if gpu.minor in seen:
            raise reader.fail(f"gpus[{i}].minor", f"{gpu.minor} repeats gpus[{seen[gpu.minor]}]")
        if gpu.uuid in uuids:
            raise reader.fail(f"gpus[{i}].uuid", f"{gpu.uuid} repeats gpus[{uuids[gpu.uuid]}]")
        seen[gpu.minor], uuids[gpu.uuid] = i, i
    return Inventory(
        driver_version=reader.version(data, "driverVersion", ""),
        cuda_driver_version=reader.version(data, "cudaDriverVersion", ""),
        gpus=gpus,
    )


# ------------------------------------------------------------------------------------------ XID health

# XIDs NVIDIA's driver leaves out of device health by default (application errors, not the GPU's): its taints for
# them have effect None. 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing,
# 45 preemptive cleanup, 68 video processor exception, 109 context switch timeout.
IGNORED_XIDS = frozenset({13, 31, 43, 45, 68, 109})
NO_INSTANCE = 0xFFFFFFFF  # NVML's GPU/compute instance ID of an event on the whole GPU
XID_TAINT_KEY = "gpu.nvidia.com/xid"


@dataclass(frozen=True, slots=True)
class XidEvent:
    """``nvmlEventTypeXidCriticalError`` on a GPU (or one of its MIG devices: GI and CI IDs)."""

    uuid: str
    xid: int
    gi: int = NO_INSTANCE
    ci: int = NO_INSTANCE

    @property
    def critical(self) -> bool:
        return self.xid not in IGNORED_XIDS


@runtime_checkable
class XidSource(Protocol):
    """A backend that reports XID events: ``watch_xids`` blocks, calling ``on_event`` for each, until ``stop``."""

    def watch_xids(self, on_event: Callable[[XidEvent], None], stop: threading.Event) -> None: ...
