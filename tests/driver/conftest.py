"""Fixtures of the driver tests: short directories (unix socket paths are limited to 107 bytes), and the C stub of
libnvidia-ml.so.1 that the real nvidia-ml-py runs over (built once per session)."""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.driver import nvmlstub
from tests.driver.helpers import DRIVER, StaticClaims, write_inventory
from tests.driver.kubelet import Kubelet

from kubedra.driver import grpcservice
from kubedra.driver.fake import FakeBackend
from kubedra.driver.node import NodeConfig, NodeDriver
from kubedra.driver.sharing import RecordingRunner


@dataclass
class Dirs:
    root: Path

    @property
    def plugin(self) -> Path:
        return self.root / "plugins" / DRIVER

    @property
    def registry(self) -> Path:
        return self.root / "registry"

    @property
    def cdi(self) -> Path:
        return self.root / "cdi"

    @property
    def boot_id(self) -> Path:
        return self.root / "boot_id"

    @property
    def proc_stat(self) -> Path:
        """Stands for /proc/stat: ``btime``, when this boot began (long before any file a test writes)."""
        return self.root / "stat"

    def boot(self, boot_id: str, at: float) -> None:
        """The node (re)booted at ``at`` with a new boot ID."""
        self.boot_id.write_text(boot_id + "\n")
        self.proc_stat.write_text(f"cpu  1 2 3 4\nbtime {int(at)}\n")

    def config(self, node: str = "node-1", *, recover: bool = False) -> NodeConfig:
        return NodeConfig(
            node,
            DRIVER,
            self.plugin,
            self.cdi,
            boot_id_path=self.boot_id,
            proc_stat_path=self.proc_stat,
            recover_checkpoint=recover,
        )


@pytest.fixture
def dirs() -> Iterator[Dirs]:
    root = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
    d = Dirs(root)
    d.boot("boot-1", at=1_000_000_000)
    yield d
    shutil.rmtree(root, ignore_errors=True)


def make_driver(
    dirs: Dirs, claims: StaticClaims, runner: RecordingRunner | None = None, count: int = 2, node: str = "node-1"
) -> NodeDriver:
    inventory = FakeBackend(write_inventory(dirs.root / "inventory.yaml", count)).discover()
    return NodeDriver(dirs.config(node), inventory, claims, runner or RecordingRunner())


@dataclass(frozen=True)
class StubLibrary:
    path: Path
    lib: ctypes.CDLL


@pytest.fixture(scope="session")
def nvml_library(tmp_path_factory: pytest.TempPathFactory) -> StubLibrary:
    """The stub, compiled for this run and opened where pynvml finds it; proven to be what pynvml talks to."""
    import pynvml

    try:
        path = nvmlstub.build(tmp_path_factory.mktemp("nvmlstub"))
    except FileNotFoundError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{exc}; CI must run the NVML tests")
        pytest.skip(str(exc))
    lib = nvmlstub.load(path)
    probe = nvmlstub.NvmlStub(lib, tmp_path_factory.mktemp("nvmlprobe"))
    probe.write()
    before = probe.inits
    os.environ[nvmlstub.ENV] = str(probe.path)
    try:
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    finally:
        del os.environ[nvmlstub.ENV]
    if probe.inits != before + 1:  # pragma: no cover - a real libnvidia-ml.so.1 was loaded first
        pytest.fail("pynvml is bound to another libnvidia-ml.so.1 than the stub")
    probe.reset()
    return StubLibrary(path, lib)


@pytest.fixture
def nvml(nvml_library: StubLibrary, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> Iterator[nvmlstub.NvmlStub]:
    """This test's node for the stub: an A100-SXM4-40GB with MIG on (gpu-0) and an H100 with MIG off (gpu-1)."""
    stub = nvmlstub.NvmlStub(nvml_library.lib, dirs.root / "nvml")
    stub.write()
    monkeypatch.setenv(nvmlstub.ENV, str(stub.path))
    stub.reset()
    yield stub
    left_open = stub.sessions
    stub.reset()
    assert left_open == 0, f"{left_open} NVML session(s) left open: an nvmlInit without its nvmlShutdown"


@dataclass
class Served:
    driver: NodeDriver
    claims: StaticClaims
    runner: RecordingRunner
    kubelet: Kubelet
    registration: grpcservice.RegistrationState
    servers: list[object]


@pytest.fixture
def served(dirs: Dirs) -> Iterator[Served]:
    """A NodeDriver behind the real sockets, and a kubelet that registered it."""
    claims, runner = StaticClaims(), RecordingRunner()
    driver = make_driver(dirs, claims, runner, count=2)
    state = grpcservice.RegistrationState()
    dra = dirs.plugin / "dra.sock"
    health = grpcservice.health_handler(lambda: grpcservice.probe(dirs.registry / f"{DRIVER}-reg.sock", dra))
    servers = [
        grpcservice.unix_server(dra, [*grpcservice.dra_handlers(driver), health]),
        grpcservice.unix_server(
            dirs.registry / f"{DRIVER}-reg.sock", [grpcservice.registration_handler(DRIVER, str(dra), state)]
        ),
    ]
    kubelet = Kubelet(dirs.registry)
    kubelet.register_all()
    yield Served(driver, claims, runner, kubelet, state, servers)
    kubelet.close()
    for s in servers:
        s.stop(grace=None)  # type: ignore[attr-defined]
