"""A real node for tests: containerd v2.4.2 (runc from Debian), the test control plane, kubelet v1.37.2 and
``kubedra driver --backend fake``, as root, in one temporary directory.

``tests/kubelet/build.sh`` builds the binaries (``scripts/test`` runs it where ``go`` exists). What this kind of VM
needs, each set here (``../shared/reference/real-kubelet.md`` has the measurements behind them):

1. cgroup v1 hosts: ``failCgroupV1: false`` in the KubeletConfiguration;
2. root without CAP_SYS_RESOURCE: ``restrict_oom_score_adj = true`` in containerd (or every sandbox fails);
3. a non-loopback node IP (the address of the default route) for ``--node-ip`` and the kubelet's ``address``, and
   ``--kubelet-preferred-address-types InternalIP`` on kube-apiserver (pod logs reach the kubelet by IP);
4. a CNI config, else the node stays NotReady (hostNetwork pods only: no CNI plugin ever runs);
5. host device nodes for every ``deviceNodes.path`` of the driver's CDI specs (containerd stats the host's):
   fake ``/dev/nvidia*`` made with ``mknod``.

The kubelet runs with a real node identity (a static token of ``system:node:<node>`` in ``system:nodes``,
``--authorization-mode Node,RBAC``); the driver with the least-privilege ServiceAccount of
``deploy/driver-rbac.yaml``. Images are one-layer OCI archives made here from ``bin/kdimage`` (a static Go
program) and imported with ctr; pods use hostNetwork and ``imagePullPolicy: Never``.

What the kubelet and containerd change on the host is recorded before and undone by :meth:`Lab.stop`: sysctls the
kubelet sets (``vm.overcommit_memory``, ``kernel.panic``, ``kernel.panic_on_oops``), the device nodes made here, the
kubelet's hard-coded paths (``/var/lib/kubelet``, ``/var/log/containers``, ``/run/mount``), the ``kubepods``
cgroups, every mount under the lab directory (the kubelet bind-mounts its root dir onto itself; container rootfs
and shm mounts). Processes are stopped by PID; containers left behind are killed through ctr, and a shim or
container process that survived is found by the lab's own paths and cgroups, never by a program's name. One lab
runs per host at a time (a lock file): the kubelet's device-plugin socket and the cgroup names are host-wide.
The lab directory (every log: ``logs/``) is removed after a clean teardown, kept when something could not be undone
or with ``KUBEDRA_KEEP_LAB=1``. A test run killed outright (SIGKILL) takes the processes with it (parent-death
signal) but leaves the host changes; the next lab's teardown does not know them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from tests.controlplane import fixture as cp
from tests.controlplane.fixture import Component, ControlPlane, free_port
from tests.driver.helpers import write_inventory

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
BINARIES = ("kubelet", "containerd", "ctr", "containerd-shim-runc-v2", "kdimage")
DRIVER = "gpu.nvidia.com"
PAUSE_IMAGE = "registry.local/pause:3.10"
PROBE_IMAGE = "registry.local/probe:1"
LOCK = Path("/run/lock/kubedra-kubelet-lab.lock")
LOCK_WAIT = 600.0
STOP_TIMEOUT = 15.0
SYSCTLS = ("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops")
# paths the kubelet, containerd and mount(8) create whatever the configuration says
HOST_PATHS = (
    Path("/var/lib/kubelet"),
    Path("/var/log/containers"),
    Path("/run/mount"),
    Path("/run/containerd"),
    Path("/var/lib/containerd"),
    Path("/opt/containerd"),
    Path("/run/nri"),
)
# the fake GPUs' device nodes: (path, major, minor); 195 is NVIDIA's major, nvidia-uvm's is dynamic on real nodes
NVIDIA_MAJOR = 195
UVM_MAJOR = 510
DEVICE_NODES = (
    ("/dev/nvidia0", NVIDIA_MAJOR, 0),
    ("/dev/nvidia1", NVIDIA_MAJOR, 1),
    ("/dev/nvidiactl", NVIDIA_MAJOR, 255),
    ("/dev/nvidia-uvm", UVM_MAJOR, 0),
    ("/dev/nvidia-uvm-tools", UVM_MAJOR, 1),
)
GPUS = 2
T = TypeVar("T")


class LabError(Exception):
    """The lab could not start, or could not undo what it changed (the message says what)."""


def missing(bin_dir: Path = BIN) -> list[str]:
    """Why a lab cannot start here (empty when it can): not root, binaries or runc missing."""
    problems = []
    if os.geteuid() != 0:
        problems.append("not root (the kubelet and containerd need root)")
    absent = [name for name in BINARIES if not (bin_dir / name).is_file()]
    if absent:
        problems.append(f"{', '.join(absent)} missing in {bin_dir}: run tests/kubelet/build.sh (scripts/test does)")
    absent_cp = cp.missing_binaries()
    if absent_cp:
        problems.append(f"{', '.join(absent_cp)} missing: run tests/controlplane/build.sh (scripts/test does)")
    if runc() is None:
        problems.append("runc not found (apt-get install runc; .ci/run installs it)")
    if shutil.which("openssl") is None:
        problems.append("openssl not found (the control plane's keys)")
    return problems


def runc() -> str | None:
    for candidate in ("/usr/sbin/runc", "/usr/bin/runc"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("runc")


def node_ip() -> str:
    """The address of the default route (the kubelet refuses a loopback node IP). No packet is sent."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # TEST-NET-1; connect() on UDP only picks the route
        except OSError as exc:
            raise LabError(f"no IPv4 route to find a non-loopback node IP: {exc}") from exc
        address: str = probe.getsockname()[0]
    if address.startswith("127."):
        raise LabError(f"the default route's source address is {address}: the kubelet needs a non-loopback IP")
    return address


def cgroup_roots() -> list[Path]:
    """Where ``kubepods`` cgroups appear: each v1 controller's hierarchy, or the v2 root."""
    base = Path("/sys/fs/cgroup")
    if (base / "cgroup.controllers").exists():
        return [base]
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink() and (p / "cgroup.procs").exists())


def cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


def mounts_under(prefixes: Sequence[Path]) -> list[str]:
    """Mount points at or below any of ``prefixes``, deepest first (from /proc/self/mountinfo)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        for prefix in prefixes:
            if point == str(prefix) or point.startswith(f"{prefix}/"):
                found.append(point)
                break
    return sorted(found, key=lambda p: (-p.count("/"), p))


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------------- images


def _blob(blobs: dict[str, bytes], data: bytes, media_type: str) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def oci_archive(name: str, files: Mapping[str, bytes], entrypoint: Sequence[str]) -> bytes:
    """A one-layer OCI image layout as a tar, named ``name`` for ``ctr images import`` (io.containerd.image.name)."""
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    blobs: dict[str, bytes] = {}
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {"Entrypoint": list(entrypoint), "Env": ["PATH=/"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": _blob(blobs, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json"),
        "layers": [_blob(blobs, layer_bytes, "application/vnd.oci.image.layer.v1.tar")],
    }
    descriptor = _blob(blobs, json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")
    descriptor["platform"] = {"architecture": arch, "os": "linux"}
    descriptor["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1],
    }
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [descriptor]}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        entries = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": json.dumps(index).encode()}
        entries.update({f"blobs/sha256/{d}": data for d, data in blobs.items()})
        for path, data in entries.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


# ---------------------------------------------------------------------------------------------------- the lab


@dataclass
class HostState:
    """What the host looked like before the lab, so that :meth:`Lab.stop` can put it back."""

    sysctls: dict[str, str] = field(default_factory=dict)
    existing_paths: set[Path] = field(default_factory=set)
    created_nodes: list[str] = field(default_factory=list)
    kubepods_before: set[Path] = field(default_factory=set)

    @staticmethod
    def kubepods() -> set[Path]:
        return {p for root in cgroup_roots() for p in root.glob("kubepods*") if p.is_dir()}


@dataclass
class Lab:
    """One node: ``start()`` brings it up, ``stop()`` tears it down and restores the host (raising LabError if it
    could not). ``plane`` is the control plane; ``node`` the Node's name; ``root`` holds every file."""

    root: Path
    node: str = field(default_factory=lambda: f"kd-node-{secrets.token_hex(3)}")
    node_ip: str = ""
    plane: ControlPlane | None = None
    host: HostState = field(default_factory=HostState)
    components: dict[str, Component] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    kubelet_token: str = field(default_factory=lambda: secrets.token_hex(16))
    kubelet_port: int = 0
    kubelet_healthz_port: int = 0
    driver_kubeconfig: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _lock: Any = None

    # ------------------------------------------------------------------------------------------------ paths

    @property
    def sock(self) -> Path:
        return self.root / "run" / "containerd.sock"

    @property
    def kubelet_dir(self) -> Path:
        return self.root / "kubelet"

    @property
    def plugin_dir(self) -> Path:
        return self.kubelet_dir / "plugins" / DRIVER

    @property
    def registry_dir(self) -> Path:
        return self.kubelet_dir / "plugins_registry"

    @property
    def cdi_dir(self) -> Path:
        return self.root / "cdi"

    @property
    def checkpoint(self) -> Path:
        return self.plugin_dir / "checkpoint.json"

    @property
    def inventory(self) -> Path:
        return self.root / "inventory.yaml"

    @property
    def api(self) -> ControlPlane:
        assert self.plane is not None, "the lab is not started"
        return self.plane

    # ------------------------------------------------------------------------------------------------ up

    def start(self) -> None:
        """containerd, images, control plane, kubelet (Node Ready), driver (registered, slice published)."""
        problems = missing()
        if problems:
            raise LabError("; ".join(problems))
        began = time.monotonic()
        self._take_lock()
        try:
            self.node_ip = node_ip()
            self._record_host()
            self.root.mkdir(parents=True, exist_ok=True)
            self._start_containerd()
            self._import_images()
            self.timings["containerd"] = time.monotonic() - began
            self._start_control_plane()
            self.timings["control plane"] = self.api.startup_seconds
            self._make_device_nodes()
            started = time.monotonic()
            self.start_kubelet()
            self.timings["kubelet"] = time.monotonic() - started
            started = time.monotonic()
            self.api.create(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": DRIVER},
                    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
                }
            )
            write_inventory(self.inventory, GPUS)
            self.start_driver()
            self.timings["driver"] = time.monotonic() - started
        except BaseException:
            with contextlib.suppress(LabError):
                self.stop()
            raise
        self.timings["lab"] = time.monotonic() - began

    def _take_lock(self) -> None:
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        handle = LOCK.open("w")
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    handle.close()
                    raise LabError(f"another kubelet lab holds {LOCK} (one per host)") from None
                time.sleep(1)
        self._lock = handle

    def _record_host(self) -> None:
        self.host.sysctls = {name: (Path("/proc/sys") / name).read_text().strip() for name in SYSCTLS}
        self.host.existing_paths = {p for p in HOST_PATHS if p.exists() or p.is_symlink()}
        self.host.kubepods_before = HostState.kubepods()

    def _component(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> Component:
        component = Component(name, args, self.root / "logs" / f"{name}.log", "")
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        self.components[name] = component
        if env is not None:
            _start_with_env(component, env)
        else:
            component.start()
        return component

    def _start_containerd(self) -> None:
        r = self.root
        for sub in ("containerd/root", "containerd/state", "containerd/tmp", "containerd/opt", "run/s", "cni/net.d",
                    "cni/bin", "cdi", "images"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        # the CNI config alone makes NetworkReady=true: a 1.0.0 conflist runs no STATUS, hostNetwork pods no ADD
        (r / "cni" / "net.d" / "10-kubedra-lab.conflist").write_text(
            json.dumps({"cniVersion": "1.0.0", "name": "kubedra-lab", "plugins": [{"type": "loopback"}]})
        )
        runtime = "plugins.'io.containerd.cri.v1.runtime'"
        config = f"""version = 4
root = '{r}/containerd/root'
state = '{r}/containerd/state'
temp = '{r}/containerd/tmp'
imports = []

[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = '{self.sock}'
  [plugins.'io.containerd.server.v1.ttrpc']
    address = '{self.sock}.ttrpc'
  [plugins.'io.containerd.server.v1.debug']
    address = '{r}/run/containerd-debug.sock'
  [plugins.'io.containerd.internal.v1.opt']
    path = '{r}/containerd/opt'
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = '{r}/run/s'
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{PAUSE_IMAGE}'
  [{runtime}]
    cdi_spec_dirs = ['{self.cdi_dir}']
    restrict_oom_score_adj = true
    [{runtime}.containerd]
      default_runtime_name = 'runc'
      [{runtime}.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [{runtime}.containerd.runtimes.runc.options]
          BinaryName = '{runc()}'
          Root = '{r}/run/runc'
          SystemdCgroup = false
    [{runtime}.cni]
      bin_dirs = ['{r}/cni/bin']
      conf_dir = '{r}/cni/net.d'
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '{free_port()}'
"""
        (r / "containerd" / "config.toml").write_text(config)
        env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
        component = self._component(
            "containerd", [str(BIN / "containerd"), "--config", str(r / "containerd" / "config.toml")], env
        )

        def ready() -> bool:
            if not component.running():
                raise LabError(f"containerd exited during start-up:\n{component.log_tail()}")
            return self.sock.exists() and self.ctr("version", check=False).returncode == 0

        wait_for(ready, 60, "containerd")

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """ctr in the CRI's namespace (k8s.io)."""
        return subprocess.run(
            [str(BIN / "ctr"), "--address", str(self.sock), "--namespace", "k8s.io", *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def _import_images(self) -> None:
        program = (BIN / "kdimage").read_bytes()
        for name, entry in ((PAUSE_IMAGE, "pause"), (PROBE_IMAGE, "probe")):
            archive = self.root / "images" / f"{entry}.tar"
            archive.write_bytes(oci_archive(name, {entry: program}, [f"/{entry}"]))
            self.ctr("images", "import", "--platform", _platform(), str(archive))

    def _start_control_plane(self) -> None:
        from tests.driver.test_controlplane import driver_kubeconfig

        self.plane = self._stack.enter_context(
            cp.running_control_plane(
                self.root / "cp",
                apiserver_args=["--kubelet-preferred-address-types", "InternalIP"],
                authorization_mode="Node,RBAC",
                tokens=[(self.kubelet_token, f"system:node:{self.node}", f"kubelet-{self.node}", "system:nodes")],
            )
        )
        self.driver_kubeconfig = driver_kubeconfig(self.plane)

    def _make_device_nodes(self) -> None:
        for path, major, minor in DEVICE_NODES:
            if os.path.lexists(path):
                continue
            os.mknod(path, 0o666 | 0o020000, os.makedev(major, minor))  # S_IFCHR
            os.chmod(path, 0o666)
            self.host.created_nodes.append(path)

    # ------------------------------------------------------------------------------------------------ kubelet

    def start_kubelet(self, timeout: float = 60.0) -> None:
        """Start the kubelet (the same configuration each time) and wait until the Node is Ready and, on a
        restart, the driver is connected again (a new ``Connection changed ... connected=true``)."""
        first = not self.kubelet_port
        if first:
            self.kubelet_port, self.kubelet_healthz_port = free_port(), free_port()
            self._write_kubelet_config()
        connected_before = self.kubelet_log().count("connected=true")
        kubelet = self._component(
            "kubelet",
            [
                str(BIN / "kubelet"),
                "--config", str(self.kubelet_dir / "config.yaml"),
                "--kubeconfig", str(self.kubelet_dir / "kubeconfig"),
                "--root-dir", str(self.kubelet_dir),
                "--cert-dir", str(self.kubelet_dir / "pki"),
                "--hostname-override", self.node,
                "--node-ip", self.node_ip,
                "--v", "2",
            ],
        )

        def healthy() -> bool:
            if not kubelet.running():
                raise LabError(f"the kubelet exited during start-up:\n{kubelet.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.kubelet_healthz_port}/healthz", timeout=5) as r:
                    return bool(r.status == 200)
            except urllib.error.HTTPError as exc:
                exc.close()
                return False
            except (urllib.error.URLError, OSError):
                return False

        wait_for(healthy, timeout, "the kubelet's /healthz")
        wait_for(self.node_ready, timeout, f"Node {self.node} to be Ready")
        if not first and self.running("driver"):
            wait_for(
                lambda: self.kubelet_log().count("connected=true") > connected_before,
                timeout,
                "the restarted kubelet to connect to the driver again",
            )

    def _write_kubelet_config(self) -> None:
        k = self.kubelet_dir
        for sub in ("pki", "manifests"):
            (k / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "pod-logs").mkdir(exist_ok=True)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,  # cgroup v1 hosts: kubelet >= 1.35 refuses them otherwise
            "cgroupDriver": "cgroupfs",  # a fallback: 1.37 takes the driver from containerd (SystemdCgroup=false)
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            "imageServiceEndpoint": f"unix://{self.sock}",
            "staticPodPath": str(k / "manifests"),
            "podLogsDir": str(self.root / "pod-logs"),
            "failSwapOn": False,
            "address": self.node_ip,
            "port": self.kubelet_port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.kubelet_healthz_port,
            # the apiserver has no kubelet client certificate: the kubelet's API is open (test only)
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "registerNode": True,
            "serializeImagePulls": False,
        }
        (k / "config.yaml").write_text(yaml.safe_dump(config))
        kubeconfig = self.api.kubeconfig_for(self.kubelet_token, "kubelet")
        shutil.copyfile(kubeconfig, k / "kubeconfig")

    def stop_kubelet(self) -> None:
        self._stop_component("kubelet")

    def restart_kubelet(self) -> None:
        self.stop_kubelet()
        self.start_kubelet()

    def kubelet_log(self) -> str:
        return _read(self.root / "logs" / "kubelet.log")

    def node_ready(self) -> dict[str, Any] | None:
        try:
            node = self.api.get(f"/api/v1/nodes/{self.node}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
        return node if ready and ready[0]["status"] == "True" else None

    # ------------------------------------------------------------------------------------------------ driver

    def driver_args(self, *extra: str) -> list[str]:
        assert self.driver_kubeconfig is not None
        return [
            sys.executable, "-m", "kubedra", "driver",
            "--node", self.node,
            "--backend", "fake",
            "--inventory", str(self.inventory),
            "--plugin-dir", str(self.plugin_dir),
            "--registry-dir", str(self.registry_dir),
            "--cdi-root", str(self.cdi_dir),
            "--kubeconfig", str(self.driver_kubeconfig),
            *extra,
        ]  # fmt: skip

    def driver_log(self) -> str:
        return _read(self.root / "logs" / "driver.log")

    def start_driver(self, *extra: str, timeout: float = 60.0) -> None:
        """Start ``kubedra driver`` (with ``extra`` flags) and wait until the kubelet accepted its registration (a
        new "registered with the kubelet" in its log and "connected=true" in the kubelet's) and its slice is
        published."""
        registered = self.driver_log().count("registered with the kubelet")
        connected = self.kubelet_log().count("connected=true")
        driver = self._component("driver", self.driver_args(*extra), {**os.environ, "PYTHONUNBUFFERED": "1"})

        def up() -> bool:
            if not driver.running():
                raise LabError(f"kubedra driver exited during start-up:\n{driver.log_tail()}")
            return (
                self.driver_log().count("registered with the kubelet") > registered
                and self.kubelet_log().count("connected=true") > connected
            )

        wait_for(up, timeout, "the kubelet to register kubedra driver")
        wait_for(self.slices, timeout, "the driver's ResourceSlice")

    def stop_driver(self) -> int | None:
        """SIGTERM and wait; the driver's exit status (None if it was not running)."""
        component = self.components.get("driver")
        process = component.process if component is not None else None
        self._stop_component("driver")
        return None if process is None else process.returncode

    def run_driver_to_exit(self, timeout: float = 30.0) -> tuple[int, str]:
        """Start the driver and wait for it to exit by itself (a driver that refuses to start): its exit status
        and output. Raises LabError if it is still running after ``timeout`` (then it is stopped)."""
        with (self.root / "logs" / "driver.log").open("a") as log:
            log.write("---- run_driver_to_exit\n")
        try:
            result = subprocess.run(
                self.driver_args(),
                check=False,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                preexec_fn=cp._die_with_parent,
            )
        except subprocess.TimeoutExpired as exc:
            raise LabError(f"kubedra driver still running after {timeout:g} s; it was expected to refuse") from exc
        output = result.stdout + result.stderr
        with (self.root / "logs" / "driver.log").open("a") as log:
            log.write(output)
        return result.returncode, output

    def slices(self) -> list[dict[str, Any]]:
        selector = f"spec.driver={DRIVER},spec.nodeName={self.node}"
        items: list[dict[str, Any]] = self.api.get(
            f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector={selector}"
        )["items"]
        return items

    def running(self, name: str) -> bool:
        component = self.components.get(name)
        return component is not None and component.running()

    # ------------------------------------------------------------------------------------------------ pods

    def namespace(self) -> str:
        name = self.api.create_namespace("kl")
        self.namespaces.append(name)
        return name

    def logs(self, namespace: str, pod: str, container: str = "probe", timeout: float = 30.0) -> str:
        """The container's log through the API server (which reads it from the kubelet, at the node's IP). A
        kubelet that has just started answers 404 until it has synced the pod: that is retried."""
        request = urllib.request.Request(
            f"{self.api.server}/api/v1/namespaces/{namespace}/pods/{pod}/log?container={container}"
        )
        request.add_header("Authorization", f"Bearer {self.api.token}")
        context = ssl.create_default_context(cafile=str(self.api.cert_dir / "apiserver.crt"))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(request, context=context, timeout=30) as response:
                    return str(response.read().decode())
            except urllib.error.HTTPError as exc:
                exc.close()
                if exc.code != 404 or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def delete_pods(self, namespace: str, timeout: float = 60.0) -> None:
        """Delete every pod of ``namespace`` gracefully (the kubelet stops them and unprepares their claims) and
        wait until they are gone."""
        path = f"/api/v1/namespaces/{namespace}/pods"
        for item in self.api.get(path)["items"]:
            with contextlib.suppress(urllib.error.HTTPError):
                self.api.request("DELETE", f"{path}/{item['metadata']['name']}")
        wait_for(lambda: not self.api.get(path)["items"], timeout, f"the pods of {namespace} to be gone")

    def tasks(self) -> dict[str, tuple[int, str]]:
        """containerd's tasks: container ID -> (PID, status)."""
        out: dict[str, tuple[int, str]] = {}
        for line in self.ctr("tasks", "ls").stdout.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 3:
                out[parts[0]] = (int(parts[1]), parts[2])
        return out

    def cdi_specs(self) -> dict[str, dict[str, Any]]:
        """The driver's claim specs on disk: claim UID -> the spec."""
        specs = {}
        for path in sorted(self.cdi_dir.glob("k8s.gpu.nvidia.com-claim_*.yaml")):
            uid = path.name.removeprefix("k8s.gpu.nvidia.com-claim_").removesuffix(".yaml")
            specs[uid] = yaml.safe_load(path.read_text())
        return specs

    # ------------------------------------------------------------------------------------------------ down

    def _stop_component(self, name: str) -> None:
        component = self.components.get(name)
        if component is None:
            return
        process = component.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT)
        component.process = None

    def stop(self) -> None:
        """Tear everything down and restore the host; LabError lists what could not be undone."""
        problems: list[str] = []

        def attempt(what: str, step: Callable[[], None]) -> None:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - every step runs; what failed is reported at the end
                problems.append(f"{what}: {exc}")

        def delete_all_pods() -> None:
            for namespace in self.namespaces:
                self.delete_pods(namespace, 30)

        if self.plane is not None and self.running("kubelet"):
            attempt("deleting the pods", delete_all_pods)
        attempt("stopping kubedra driver", lambda: self._stop_component("driver"))
        attempt("stopping the kubelet", lambda: self._stop_component("kubelet"))
        if self.running("containerd"):
            attempt("removing containers left behind", self._remove_containers)
        attempt("stopping the control plane", self._stack.close)
        attempt("stopping containerd", lambda: self._stop_component("containerd"))
        attempt("killing processes left behind", self._kill_leftovers)
        attempt("unmounting", self._unmount)
        attempt("removing kubepods cgroups", self._remove_cgroups)
        attempt("restoring the host", self._restore_host)
        if not problems and not os.environ.get("KUBEDRA_KEEP_LAB"):
            shutil.rmtree(self.root, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if problems:
            raise LabError("the kubelet lab could not undo everything:\n" + "\n".join(problems))

    def _remove_containers(self) -> None:
        for task in self.tasks():
            self.ctr("tasks", "kill", "--signal", "SIGKILL", task, check=False)
        deadline = time.monotonic() + 10
        while self.tasks() and time.monotonic() < deadline:
            for task in self.tasks():
                self.ctr("tasks", "delete", "--force", task, check=False)
            time.sleep(0.2)
        for line in self.ctr("containers", "ls", "--quiet").stdout.split():
            self.ctr("containers", "delete", line, check=False)

    def _kill_leftovers(self) -> None:
        """Shims (their command line names this lab's containerd socket) and any process still in a kubepods
        cgroup the lab created; both are this lab's, found by its own paths."""
        marker = str(self.root).encode()
        pids: set[int] = set()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (proc / "cmdline").read_bytes():
                    pids.add(int(proc.name))
        for group in HostState.kubepods() - self.host.kubepods_before:
            for procs in group.rglob("cgroup.procs"):
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in procs.read_text().split())
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if pids:
            time.sleep(0.5)

    def _unmount(self) -> None:
        prefixes = [self.root, Path("/var/lib/kubelet")]
        for _ in range(10):  # the kubelet bind-mounts its root dir once per start: mounts may be stacked
            points = mounts_under(prefixes)
            if not points:
                return
            for point in points:
                result = subprocess.run(["umount", point], capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
        left = mounts_under(prefixes)
        if left:
            raise LabError(f"still mounted: {', '.join(left)}")

    def _remove_cgroups(self) -> None:
        left = []
        for group in sorted(HostState.kubepods() - self.host.kubepods_before):
            for directory, _subdirs, _files in os.walk(group, topdown=False):  # children first
                for attempt in range(20):  # a cgroup whose last process just exited may be busy a moment
                    try:
                        os.rmdir(directory)
                        break
                    except OSError as exc:
                        if attempt == 19:
                            left.append(f"{directory} ({exc.strerror})")
                        time.sleep(0.1)
        if left:
            raise LabError(f"cgroups left: {', '.join(left)}")

    def _restore_host(self) -> None:
        for path in self.host.created_nodes:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.host.created_nodes = []
        for name, value in self.host.sysctls.items():
            target = Path("/proc/sys") / name
            if target.read_text().strip() != value:
                target.write_text(value)
        for path in HOST_PATHS:
            if path in self.host.existing_paths or not (path.exists() or path.is_symlink()):
                continue
            if mounts_under([path]):
                raise LabError(f"{path} has mounts; not removed")
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _platform() -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"linux/{arch}"


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _start_with_env(component: Component, env: Mapping[str, str]) -> None:
    handle = component.log.open("ab")
    try:
        component.process = subprocess.Popen(
            component.args,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(env),
            preexec_fn=cp._die_with_parent,  # noqa: PLW1509 - no threads are started between fork and exec
        )
    finally:
        handle.close()


@contextlib.contextmanager
def running_lab(root: Path | None = None) -> Iterator[Lab]:
    """A started lab for the ``with`` block, stopped (and the host restored) after."""
    directory = Path(tempfile.mkdtemp(prefix="kdl-", dir="/tmp")) if root is None else root
    lab = Lab(directory)
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()
