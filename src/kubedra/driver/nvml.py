"""The NVML backend (nvidia-ml-py's ``pynvml``): the calls NVIDIA's ``getGpuInfo`` makes, init/shutdown per
discovery. pynvml hands most arguments to C without ctypes argtypes, so what is passed must already be what the C
function wants: pointers as ``ctypes.byref``, arrays as large as NVML will fill. Tested through the real pynvml over
a C stub of libnvidia-ml.so.1 (``tests/driver/nvmlstub``) that checks pointers, versions and sizes; no GPU was
available where this was written.

pcieRoot and numaNode come from sysfs (``/sys/bus/pci/devices/<bus id>``: the root is the ``pci<domain>:<bus>``
component of the device's real path; ``numa_node``), as upstream's ``deviceattribute`` helpers read them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubedra.driver.inventory import DriverError, GpuInfo, Inventory, MigDevice, MigProfileInfo, XidEvent

log = logging.getLogger("kubedra.driver")
SYSFS_PCI = Path("/sys/bus/pci/devices")
EVENT_WAIT_MS = 5000  # NVIDIA's eventSet.Wait(5000)
PROC_CAPS = Path("/proc/driver/nvidia/capabilities")  # gpu<minor>/mig/gi<GI>/[ci<CI>/]access: DeviceFileMinor
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


def _cap_minor(path: Path) -> int:
    """``DeviceFileMinor: N`` of an nvidia-caps ``access`` file (the N of ``/dev/nvidia-caps/nvidia-cap<N>``)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise DriverError(f"{path}: cannot read the MIG capability ({exc.strerror or exc})") from exc
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "DeviceFileMinor":
            return int(value.strip())
    raise DriverError(f"{path}: no DeviceFileMinor")


class NvmlBackend:
    def __init__(
        self, module: Any = None, sysfs: Path = SYSFS_PCI, proc_caps: Path = PROC_CAPS, wait_ms: int = EVENT_WAIT_MS
    ) -> None:
        self._module = module
        self.sysfs = sysfs
        self.proc_caps = proc_caps
        self.wait_ms = wait_ms

    # ------------------------------------------------------------------------------------- XID events

    def watch_xids(self, on_event: Callable[[XidEvent], None], stop: threading.Event) -> None:
        """NVIDIA's device-health loop: one event set with ``nvmlEventTypeXidCriticalError`` registered on every
        GPU (a GPU that cannot is logged as unmonitored), ``nvmlEventSetWait`` in a loop until ``stop``."""
        nvml = self._nvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            log.error("XID events: NVML cannot be initialised (%s); devices are unmonitored", exc)
            return
        events = None
        try:
            events = nvml.nvmlEventSetCreate()
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                try:
                    nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events)
                except nvml.NVMLError as exc:
                    log.warning("XID events: GPU %s is unmonitored (%s)", _text(nvml.nvmlDeviceGetUUID(handle)), exc)
            while not stop.is_set():
                try:
                    data = nvml.nvmlEventSetWait_v2(events, self.wait_ms)
                except nvml.NVMLError_Timeout:
                    continue
                except nvml.NVMLError as exc:
                    log.error("XID events: nvmlEventSetWait: %s", exc)
                    stop.wait(1.0)
                    continue
                if int(data.eventType) != int(nvml.nvmlEventTypeXidCriticalError):
                    continue
                uuid = _text(nvml.nvmlDeviceGetUUID(data.device))
                on_event(XidEvent(uuid, int(data.eventData), int(data.gpuInstanceId), int(data.computeInstanceId)))
        except nvml.NVMLError as exc:
            log.error("XID events: %s; devices are unmonitored", exc)
        finally:
            if events is not None:
                with contextlib.suppress(Exception):
                    nvml.nvmlEventSetFree(events)
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()

    @contextlib.contextmanager
    def _session(self, what: str) -> Iterator[Any]:
        """nvmlInit ... nvmlShutdown around one operation (NVIDIA's driver without a long-lived session);
        NVML errors become DriverErrors that say what was being done."""
        nvml = self._nvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise DriverError(f"NVML cannot be initialised ({exc})") from exc
        try:
            yield nvml
        except nvml.NVMLError as exc:
            raise DriverError(f"NVML: {what}: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()

    # ------------------------------------------------------------------------------------- dynamic MIG

    def create_mig(self, parent_uuid: str, profile_id: int, start: int, size: int) -> MigDevice:
        """A GPU instance of ``profile_id`` at the placement, then the one compute instance that spans it (the
        compute-instance profile with the most slices the GPU instance supports), as NVIDIA's createMigDevice."""
        with self._session(f"creating MIG profile {profile_id} at {start} on {parent_uuid}") as nvml:
            handle = nvml.nvmlDeviceGetHandleByUUID(parent_uuid)
            placement = nvml.c_nvmlGpuInstancePlacement_t()
            placement.start, placement.size = start, size
            # const nvmlGpuInstancePlacement_t *: the structure itself would be passed by value (garbage there)
            gi = nvml.nvmlDeviceCreateGpuInstanceWithPlacement(handle, profile_id, ctypes.byref(placement))
            ci = None
            try:
                gi_id = int(nvml.nvmlGpuInstanceGetInfo(gi).id)
                ci = nvml.nvmlGpuInstanceCreateComputeInstance(gi, self._full_compute_profile(nvml, gi))
                ci_id = int(nvml.nvmlComputeInstanceGetInfo(ci).id)
                minor = int(nvml.nvmlDeviceGetMinorNumber(handle))
                found = [m for m in self._list(nvml, handle, parent_uuid, minor) if (m.gi, m.ci) == (gi_id, ci_id)]
                if not found:
                    raise DriverError(f"NVML: the MIG device GI {gi_id} CI {ci_id} of {parent_uuid} did not appear")
            except BaseException:  # nothing half-made stays behind: a MIG device nobody can be handed
                if ci is not None:
                    with contextlib.suppress(Exception):
                        nvml.nvmlComputeInstanceDestroy(ci)
                with contextlib.suppress(Exception):
                    nvml.nvmlGpuInstanceDestroy(gi)
                raise
            return found[0]

    def _full_compute_profile(self, nvml: Any, gi: Any) -> int:
        best: tuple[int, int] | None = None
        for index in range(nvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
            try:
                info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                    gi, index, nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
                )
            except nvml.NVMLError:
                continue
            if best is None or int(info.sliceCount) > best[0]:
                best = (int(info.sliceCount), int(info.id))
        if best is None:
            raise DriverError("NVML: the GPU instance supports no compute-instance profile")
        return best[1]

    def destroy_mig(self, device: MigDevice) -> None:
        """Compute instance, then GPU instance; one already gone is not an error (unprepare is idempotent)."""
        with self._session(f"destroying MIG device {device.uuid}") as nvml:
            handle = nvml.nvmlDeviceGetHandleByUUID(device.parent_uuid)
            try:
                gi = nvml.nvmlDeviceGetGpuInstanceById(handle, device.gi)
            except nvml.NVMLError_NotFound:
                return
            with contextlib.suppress(nvml.NVMLError_NotFound):
                nvml.nvmlComputeInstanceDestroy(nvml.nvmlGpuInstanceGetComputeInstanceById(gi, device.ci))
            nvml.nvmlGpuInstanceDestroy(gi)

    def mig_devices(self, parent_uuid: str) -> list[MigDevice]:
        with self._session(f"listing the MIG devices of {parent_uuid}") as nvml:
            handle = nvml.nvmlDeviceGetHandleByUUID(parent_uuid)
            return self._list(nvml, handle, parent_uuid, int(nvml.nvmlDeviceGetMinorNumber(handle)))

    def _list(self, nvml: Any, handle: Any, parent_uuid: str, minor: int) -> list[MigDevice]:
        found = []
        for index in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
            except nvml.NVMLError_NotFound:
                continue
            gi_id = int(nvml.nvmlDeviceGetGpuInstanceId(mig))
            ci_id = int(nvml.nvmlDeviceGetComputeInstanceId(mig))
            info = nvml.nvmlGpuInstanceGetInfo(nvml.nvmlDeviceGetGpuInstanceById(handle, gi_id))
            caps = self.proc_caps / f"gpu{minor}" / "mig" / f"gi{gi_id}"
            found.append(
                MigDevice(
                    parent_uuid,
                    int(info.profileId),
                    int(info.placement.start),
                    int(info.placement.size),
                    gi_id,
                    ci_id,
                    _text(nvml.nvmlDeviceGetUUID(mig)),
                    _cap_minor(caps / "access"),
                    _cap_minor(caps / f"ci{ci_id}" / "access"),
                )
            )
        return found

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

    def _placements(self, nvml: Any, handle: Any, profile_id: int) -> tuple[tuple[int, int], ...]:
        """Asked twice, as go-nvml does: NULL for the count, then an array that large. NVML writes every possible
        placement, which can be more than the profile's instance count (1g.5gb+me: one instance, seven places)."""
        count = ctypes.c_uint(0)
        nvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, profile_id, None, ctypes.byref(count))
        if count.value == 0:
            return ()
        array = (nvml.c_nvmlGpuInstancePlacement_t * count.value)()
        nvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, profile_id, array, ctypes.byref(count))
        return tuple((int(array[i].start), int(array[i].size)) for i in range(count.value))

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
            placements = self._placements(nvml, handle, int(info.id))
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
