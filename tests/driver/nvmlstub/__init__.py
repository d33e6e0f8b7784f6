"""The C stub of ``libnvidia-ml.so.1`` (``nvmlstub.c``), so the driver's tests run the real nvidia-ml-py over the
NVML C ABI: built by the test run with gcc, loaded in-process under pynvml, and told what node it is through a state
file the tests write (the format is in ``nvmlstub.c``'s header).

pynvml opens ``CDLL("libnvidia-ml.so.1")`` at its first ``nvmlInit``; :func:`load` opens the stub by absolute path
first, and since the stub's soname is ``libnvidia-ml.so.1`` the dynamic loader hands pynvml that same library
(already-loaded objects are matched by soname before any search path). Child processes get it through
``LD_LIBRARY_PATH`` (:meth:`NvmlStub.env`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

SOURCE = Path(__file__).with_name("nvmlstub.c")
LIBRARY = "libnvidia-ml.so.1"
ENV = "KUBEDRA_NVML_STUB"
CFLAGS = ["-shared", "-fPIC", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", f"-Wl,-soname,{LIBRARY}"]
NO_INSTANCE = 0xFFFFFFFF
XID_CRITICAL_ERROR = 0x8


def build(out: Path) -> Path:
    """``out/<source hash>/libnvidia-ml.so.1``, compiled unless already there (renamed into place whole)."""
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    target = out / digest / LIBRARY
    if target.exists():
        return target
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise FileNotFoundError("gcc (or cc) is not on PATH: the NVML stub cannot be built")
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{LIBRARY}.{os.getpid()}")
    subprocess.run([gcc, *CFLAGS, "-o", str(temp), str(SOURCE), "-lpthread"], check=True, capture_output=True)
    temp.replace(target)
    return target


def load(path: Path) -> ctypes.CDLL:
    """The stub, opened where pynvml will find it; its control functions typed."""
    lib = ctypes.CDLL(str(path))
    lib.kubedraStubInjectXid.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint]
    lib.kubedraStubInjectXid.restype = ctypes.c_int
    lib.kubedraStubRegistered.argtypes = [ctypes.c_char_p]
    lib.kubedraStubRegistered.restype = ctypes.c_ulonglong
    for name in ("kubedraStubInits", "kubedraStubShutdowns", "kubedraStubWaits"):
        getattr(lib, name).restype = ctypes.c_uint
    return lib


@dataclass(frozen=True)
class StubGpu:
    """One GPU as NVML reports it; ``mig`` -1 (not MIG-capable), 0 (MIG off) or 1 (on); ``memory`` None answers
    NOT_SUPPORTED; ``events`` False makes nvmlDeviceRegisterEvents answer NOT_SUPPORTED."""

    minor: int
    uuid: str
    name: str
    arch: int  # NVML_DEVICE_ARCH_*
    cc: str
    memory: int | None
    bus: str
    mig: int = -1
    model: str = ""  # the stub's MIG profile table: A100-SXM4-40GB or H100-SXM5-80GB
    brand: int = 14  # NVML_BRAND_NVIDIA
    events: bool = True

    def line(self) -> str:
        memory = "none" if self.memory is None else str(self.memory)
        fields = {
            "uuid": self.uuid,
            "name": self.name,
            "minor": self.minor,
            "brand": self.brand,
            "arch": self.arch,
            "cc": self.cc,
            "memory": memory,
            "bus": self.bus,
            "mig": self.mig,
            "model": self.model,
            "events": int(self.events),
        }
        return "\t".join(["gpu", *(f"{k}={v}" for k, v in fields.items())])


def a100(minor: int = 0, mig: int = 1) -> StubGpu:
    return StubGpu(
        minor,
        f"GPU-2f6a4c1e-0000-4000-8000-{minor:012d}",
        "NVIDIA A100-SXM4-40GB",
        7,
        "8.0",
        40 << 30,
        f"00000000:{7 + minor:02X}:00.0",
        mig,
        "A100-SXM4-40GB",
    )


def h100(minor: int = 1, mig: int = 0) -> StubGpu:
    return StubGpu(
        minor,
        f"GPU-2f6a4c1e-0000-4000-8000-{minor:012d}",
        "NVIDIA H100 80GB HBM3",
        9,
        "9.0",
        85520809984,
        f"00000000:{14 + minor:02X}:00.0",
        mig,
        "H100-SXM5-80GB",
    )


@dataclass(frozen=True)
class Instance:
    """A GPU instance and its compute instances, as the state file records them."""

    gpu: int
    gi: int
    profile: int
    start: int
    size: int
    cis: tuple[tuple[int, int, str], ...] = ()  # (CI id, CI profile index, MIG UUID)


@dataclass
class NvmlStub:
    """One test's node: the state file, the capabilities directory, the call log; and the library's controls."""

    lib: ctypes.CDLL
    root: Path
    gpus: list[StubGpu] = field(default_factory=lambda: [a100(0), h100(1)])
    driver: str = "550.54.15"
    cuda: int = 12040

    @property
    def path(self) -> Path:
        return self.root / "nvml-state"

    @property
    def caps(self) -> Path:
        """Stands for /proc/driver/nvidia/capabilities (``NvmlBackend(proc_caps=...)``)."""
        return self.root / "caps"

    @property
    def log(self) -> Path:
        return self.root / "nvml-calls"

    def write(self, instances: Sequence[Instance] = ()) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        lines = [f"system\tdriver={self.driver}\tcuda={self.cuda}\tcaps={self.caps}\tlog={self.log}"]
        lines += [g.line() for g in self.gpus]
        for i in instances:
            lines.append(f"gi\tgpu={i.gpu}\tid={i.gi}\tprofile={i.profile}\tstart={i.start}\tsize={i.size}")
            lines += [f"ci\tgpu={i.gpu}\tgi={i.gi}\tid={c}\tprofile={p}\tuuid={u}" for c, p, u in i.cis]
        self.path.write_text("\n".join(lines) + "\n")

    def set_gpu(self, index: int, **changes: object) -> None:
        """Change one GPU, keeping the MIG instances the stub has recorded."""
        instances = self.instances()
        self.gpus[index] = replace(self.gpus[index], **changes)  # type: ignore[arg-type]
        self.write(instances)

    def instances(self) -> list[Instance]:
        """The GPU and compute instances that exist now (the stub rewrites the file after every change)."""
        gis: dict[tuple[int, int], Instance] = {}
        for line in self.path.read_text().splitlines():
            kind, *rest = line.split("\t")
            values = dict(part.split("=", 1) for part in rest)
            if kind == "gi":
                key = (int(values["gpu"]), int(values["id"]))
                gis[key] = Instance(*key, int(values["profile"]), int(values["start"]), int(values["size"]))
            elif kind == "ci":
                key = (int(values["gpu"]), int(values["gi"]))
                ci = (int(values["id"]), int(values["profile"]), values["uuid"])
                gis[key] = replace(gis[key], cis=(*gis[key].cis, ci))
        return [gis[k] for k in sorted(gis)]

    def mig_uuids(self) -> set[str]:
        return {u for i in self.instances() for _, _, u in i.cis}

    def calls(self) -> list[str]:
        """Every MIG create and destroy so far, one line each (``nvmlGpuInstanceDestroy GPU-... gi=1``)."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def env(self, library: Path) -> dict[str, str]:
        """The environment a child process needs to load this stub for this node."""
        ld = os.environ.get("LD_LIBRARY_PATH")
        return {
            ENV: str(self.path),
            "LD_LIBRARY_PATH": f"{library.parent}{os.pathsep}{ld}" if ld else str(library.parent),
        }

    def inject_xid(self, uuid: str, xid: int, gi: int = NO_INSTANCE, ci: int = NO_INSTANCE) -> int:
        """The number of event sets the XID reached (-1: no such GPU, or no NVML session open)."""
        return int(self.lib.kubedraStubInjectXid(uuid.encode(), xid, gi, ci))

    def registered(self, uuid: str) -> int:
        return int(self.lib.kubedraStubRegistered(uuid.encode()))

    @property
    def sessions(self) -> int:
        """NVML sessions open now (nvmlInit minus nvmlShutdown)."""
        return int(self.lib.kubedraStubRefcount())

    @property
    def inits(self) -> int:
        return int(self.lib.kubedraStubInits())

    @property
    def shutdowns(self) -> int:
        return int(self.lib.kubedraStubShutdowns())

    @property
    def waits(self) -> int:
        return int(self.lib.kubedraStubWaits())

    @property
    def event_sets(self) -> int:
        return int(self.lib.kubedraStubEventSets())

    def reset(self) -> None:
        self.lib.kubedraStubReset()
