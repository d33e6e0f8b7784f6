"""The test control plane: etcd, kube-apiserver, kube-scheduler and kube-controller-manager v1.37.2 on 127.0.0.1.

The binaries come from ``tests/controlplane/build.sh`` (``scripts/test`` runs it where ``go`` exists). Every port
is a free one picked at start; credentials are generated in a temporary directory: a bearer token in group
``system:masters``, a service-account key pair (openssl), and the API server's own self-signed serving certificate
(``--cert-dir``), which the written kubeconfig trusts. Processes are started with a parent-death signal and stopped
by PID, so none outlives the test session.

Nothing runs pods here (no kubelet): Nodes are created with their status (:meth:`ControlPlane.create_node`), and
pods are finished or deleted by hand (:meth:`ControlPlane.finish_pod`, :meth:`ControlPlane.delete_pod`).

Use from tests through the session fixture ``control_plane`` (``tests/conftest.py``) and ``namespace`` (a fresh
namespace per test); the API below is what other suites build on, so keep it stable.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0
HTTP_CONFLICT = 409


class ControlPlaneError(Exception):
    """The control plane could not start (the message carries the failing component's log tail)."""


def go_available() -> bool:
    return shutil.which("go") is not None


def missing_binaries(bin_dir: Path = BIN) -> list[str]:
    return [name for name in BINARIES if not (bin_dir / name).is_file()]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGKILL when the test process dies, whatever kills it."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Component:
    """One running binary: its command line, its log file and its process."""

    name: str
    args: list[str]
    log: Path
    health_url: str
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        handle = self.log.open("ab")
        # The component dies with the test process. setpriv (util-linux) sets that in the child itself, so Popen
        # needs no preexec_fn: Python code between fork and exec, in a process whose gRPC threads may hold locks at
        # the fork, once killed etcd before it started ("epoll_wait error: Bad file descriptor").
        setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        try:
            if setpriv is not None:
                self.process = subprocess.Popen(
                    [setpriv, "--pdeathsig", "KILL", "--", *self.args],
                    stdin=subprocess.DEVNULL,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                )
            else:
                self.process = subprocess.Popen(
                    self.args,
                    stdin=subprocess.DEVNULL,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads are started between fork and exec
                )
        finally:
            handle.close()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM and a wait (then SIGKILL); ``graceful=False``: SIGKILL at once, as a crash."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        if not graceful:
            process.kill()
            process.wait(STOP_TIMEOUT)
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class ControlPlane:
    """A started control plane; ``kubeconfig`` is a file any client (lightkube, kubectl, kubedra) can use."""

    workdir: Path
    bin_dir: Path = BIN
    token: str = field(default_factory=lambda: secrets.token_hex(16))  # user "admin", group system:masters
    reader_token: str = field(default_factory=lambda: secrets.token_hex(16))  # user "reader", no rights until bound
    # more static tokens: (token, user, uid, group), e.g. a kubelet's (system:node:<name>, group system:nodes)
    tokens: Sequence[tuple[str, str, str, str]] = ()
    authorization_mode: str = "RBAC"  # "Node,RBAC" where a real kubelet runs with a node identity
    etcd_port: int = 0
    etcd_peer_port: int = 0
    apiserver_port: int = 0
    scheduler_port: int = 0
    controller_manager_port: int = 0
    apiserver_args: Sequence[str] = ()
    scheduler_args: Sequence[str] = ()  # more kube-scheduler flags (its deprecated ones have no config field)
    scheduler_config: Mapping[str, Any] = field(default_factory=dict)  # merged into KubeSchedulerConfiguration
    feature_gates: str = ""  # --feature-gates for kube-apiserver, kube-scheduler and kube-controller-manager
    controllers: Sequence[str] = ("resourceclaim-controller",)  # kube-controller-manager's --controllers
    only: Sequence[str] = BINARIES  # the components to start (etcd and kube-apiserver are always needed)
    components: dict[str, Component] = field(default_factory=dict)
    startup_seconds: float = 0.0
    restarts: int = 0

    # ------------------------------------------------------------------------------------------------ paths

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def cert_dir(self) -> Path:
        return self.workdir / "pki"

    # ------------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start every component and wait until each is healthy; stop what started if any fails."""
        began = time.monotonic()
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise ControlPlaneError(
                f"{', '.join(missing)} missing in {self.bin_dir}: run tests/controlplane/build.sh (scripts/test does)"
            )
        if shutil.which("openssl") is None:
            raise ControlPlaneError("openssl not found: it makes the service-account key pair")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.apiserver_port, self.scheduler_port, self.controller_manager_port = free_port(), free_port(), free_port()
        self._write_credentials()
        self._define_components()
        try:
            self._start_and_wait("etcd")
            self._start_and_wait("kube-apiserver")
            self._write_kubeconfig()
            for name in ("kube-scheduler", "kube-controller-manager"):
                if name in self.only:
                    self._start_and_wait(name)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        """Stop every component by PID, the last started first."""
        for name in reversed(list(self.components)):
            self.components[name].stop()

    def restart_apiserver(self, downtime: float = 0.0, *, graceful: bool = False) -> None:
        """Stop kube-apiserver (killed, as a crash, unless ``graceful``: open watches drop either way), wait
        ``downtime`` seconds, start it again on the same port and wait for /readyz. etcd keeps every object."""
        component = self.components["kube-apiserver"]
        component.stop(graceful=graceful)
        if downtime:
            time.sleep(downtime)
        self._start_and_wait("kube-apiserver")
        self.restarts += 1

    def pids(self) -> dict[str, int]:
        return {n: c.process.pid for n, c in self.components.items() if c.process is not None and c.running()}

    # ------------------------------------------------------------------------------------------------ clients

    def client(self, **kwargs: Any) -> Any:
        """A lightkube ``Client`` for the admin token (close it, or use it as a context manager)."""
        from lightkube import Client, KubeConfig

        return Client(KubeConfig.from_file(self.kubeconfig), trust_env=False, **kwargs)

    def create_namespace(self, prefix: str = "t") -> str:
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Namespace

        name = f"{prefix}-{secrets.token_hex(4)}"
        with self.client() as client:
            client.create(Namespace(metadata=ObjectMeta(name=name)))
        return name

    def create_node(
        self,
        name: str,
        *,
        cpu: str = "32",
        memory: str = "256Gi",
        pods: str = "110",
        extra_allocatable: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
    ) -> dict[str, Any]:
        """A Node with status as a kubelet would post it: capacity = allocatable, Ready=True. Returns the object."""
        allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra_allocatable or {})}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": [dict(t) for t in taints]} if taints else {},
            "status": {
                "capacity": allocatable,
                "allocatable": allocatable,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status (test fixture)",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
            },
        }
        return self.create(body)

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create any object from a plain manifest (``namespace`` taken from its metadata); returns the server's."""
        return self.request("POST", self._collection(body), body)

    def install_crds(self, crds: Sequence[Mapping[str, Any]], timeout: float = 60.0) -> list[str]:
        """Create CustomResourceDefinitions (one already there is kept) and wait until each is Established; their
        names, for the caller to delete."""
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        for crd in crds:
            names.append(str(crd["metadata"]["name"]))
            try:
                self.request("POST", path, {**crd, "metadata": {"name": names[-1]}})
            except urllib.error.HTTPError as error:
                if error.code != HTTP_CONFLICT:
                    raise

        def established() -> bool:
            for name in names:
                conditions = (self.get(f"{path}/{name}").get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    return False
            return True

        self.wait_for(established, timeout=timeout, what=f"CRDs {', '.join(names)} to be established")
        return names

    def finish_pod(self, name: str, namespace: str, phase: str = "Succeeded") -> dict[str, Any]:
        """What a kubelet writes when a pod's containers exited: ``status.phase`` Succeeded (or Failed)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        return self.request("PATCH", path, {"status": {"phase": phase}}, content_type="application/merge-patch+json")

    def delete_pod(self, name: str, namespace: str) -> None:
        """Delete a pod at once (``gracePeriodSeconds: 0``): with no kubelet, a graceful delete never ends."""
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", {"gracePeriodSeconds": 0})

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def wait_for(self, predicate: Any, timeout: float = 30.0, interval: float = 0.1, what: str = "condition") -> Any:
        """Poll ``predicate()`` until it returns something truthy; that value is returned."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    def scheduler_metrics(self, prefix: str, *labels: str) -> float:
        """The sum of kube-scheduler's samples whose line starts with ``prefix`` (a metric name and the start of
        its labels) and holds each of ``labels`` (``'result="unschedulable"'``), read from its /metrics."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.scheduler_port}/metrics"
        with urllib.request.urlopen(url, context=context, timeout=10) as response:
            text = response.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(prefix) and all(label in line for label in labels))

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> dict[str, Any]:
        """One authenticated API call (plain JSON in and out); raises ``urllib.error.HTTPError`` on failure."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._tls(), timeout=30) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise _detached(error) from None
        result: dict[str, Any] = json.loads(payload) if payload else {}
        return result

    # ------------------------------------------------------------------------------------------------ internals

    def _collection(self, body: Mapping[str, Any]) -> str:
        api_version, kind = str(body["apiVersion"]), str(body["kind"])
        plural = _PLURALS[kind]
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        namespace = body.get("metadata", {}).get("namespace")
        if kind in _NAMESPACED:
            return f"{prefix}/namespaces/{namespace or 'default'}/{plural}"
        return f"{prefix}/{plural}"

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert_dir / "apiserver.crt"))

    def _write_credentials(self) -> None:
        (self.workdir / "tokens.csv").write_text(
            f'{self.token},admin,admin-uid,"system:masters"\n{self.reader_token},reader,reader-uid\n'
            + "".join(f'{token},{user},{uid},"{group}"\n' for token, user, uid, group in self.tokens)
        )
        key, pub = self.workdir / "sa.key", self.workdir / "sa.pub"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)], check=True,
                       capture_output=True)
        self.cert_dir.mkdir(exist_ok=True)
        # One kubeconfig for the scheduler and the controller-manager, written before the serving cert exists:
        # they skip verification on loopback; clients get the verified one from _write_kubeconfig.
        components = self._kubeconfig_document({"insecure-skip-tls-verify": True})
        (self.workdir / "components.kubeconfig").write_text(yaml.safe_dump(components))
        scheduler = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {
                "kubeconfig": str(self.workdir / "components.kubeconfig"),
                "qps": 500,
                "burst": 1000,
            },
            **self.scheduler_config,
        }
        (self.workdir / "scheduler.yaml").write_text(yaml.safe_dump(scheduler))

    def kubeconfig_for(self, token: str, name: str) -> Path:
        """A kubeconfig like ``kubeconfig`` for another token (e.g. ``reader_token``), written once per name."""
        path = self.workdir / f"{name}.kubeconfig"
        config = self._kubeconfig_document({"certificate-authority": str(self.cert_dir / "apiserver.crt")}, token)
        path.write_text(yaml.safe_dump(config))
        return path

    def _kubeconfig_document(self, cluster: Mapping[str, Any], token: str | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": self.server, **cluster}}],
            "users": [{"name": "admin", "user": {"token": token or self.token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin", "namespace": "default"}}],
            "current-context": "test",
        }

    def _write_kubeconfig(self) -> None:
        # The serving certificate is self-signed, for 127.0.0.1 (the advertise address) and localhost.
        config = self._kubeconfig_document({"certificate-authority": str(self.cert_dir / "apiserver.crt")})
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def _define_components(self) -> None:
        w, b = self.workdir, self.bin_dir
        always_allow = "/healthz,/readyz,/livez,/metrics"
        self.components = {
            "etcd": Component(
                "etcd",
                [
                    str(b / "etcd"),
                    "--name", "test",
                    "--data-dir", str(w / "etcd"),
                    "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                    "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                    "--listen-peer-urls", f"http://127.0.0.1:{self.etcd_peer_port}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.etcd_peer_port}",
                    "--initial-cluster", f"test=http://127.0.0.1:{self.etcd_peer_port}",
                    "--unsafe-no-fsync",
                    "--log-level", "warn",
                ],
                w / "etcd.log",
                f"http://127.0.0.1:{self.etcd_port}/health",
            ),
            "kube-apiserver": Component(
                "kube-apiserver",
                [
                    str(b / "kube-apiserver"),
                    "--etcd-servers", f"http://127.0.0.1:{self.etcd_port}",
                    "--bind-address", "127.0.0.1",
                    "--advertise-address", "127.0.0.1",
                    "--secure-port", str(self.apiserver_port),
                    "--cert-dir", str(self.cert_dir),
                    "--token-auth-file", str(w / "tokens.csv"),
                    "--authorization-mode", self.authorization_mode,
                    "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                    "--service-account-key-file", str(w / "sa.pub"),
                    "--service-account-signing-key-file", str(w / "sa.key"),
                    "--service-cluster-ip-range", "10.0.0.0/24",
                    "--endpoint-reconciler-type", "none",
                    "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
                    "--profiling=false",
                    *self._gates(),
                    *self.apiserver_args,
                ],
                w / "kube-apiserver.log",
                f"https://127.0.0.1:{self.apiserver_port}/readyz",
            ),
            "kube-scheduler": Component(
                "kube-scheduler",
                [
                    str(b / "kube-scheduler"),
                    "--config", str(w / "scheduler.yaml"),
                    "--bind-address", "127.0.0.1",
                    "--secure-port", str(self.scheduler_port),
                    "--authorization-always-allow-paths", always_allow,
                    "--profiling=false",
                    *self._gates(),
                    *self.scheduler_args,
                ],
                w / "kube-scheduler.log",
                f"https://127.0.0.1:{self.scheduler_port}/readyz",
            ),
            "kube-controller-manager": Component(
                "kube-controller-manager",
                [
                    str(b / "kube-controller-manager"),
                    "--kubeconfig", str(w / "components.kubeconfig"),
                    "--controllers", ",".join(self.controllers),
                    "--leader-elect=false",
                    "--bind-address", "127.0.0.1",
                    "--secure-port", str(self.controller_manager_port),
                    "--authorization-always-allow-paths", always_allow,
                    "--profiling=false",
                    *self._gates(),
                ],
                w / "kube-controller-manager.log",
                f"https://127.0.0.1:{self.controller_manager_port}/healthz",
            ),
        }

    def _gates(self) -> list[str]:
        return ["--feature-gates", self.feature_gates] if self.feature_gates else []

    def _start_and_wait(self, name: str) -> None:
        component = self.components[name]
        component.start()
        deadline = time.monotonic() + READY_TIMEOUT
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        last = ""
        while time.monotonic() < deadline:
            if not component.running():
                raise ControlPlaneError(f"{name} exited during start-up:\n{component.log_tail()}")
            request = urllib.request.Request(component.health_url)
            if name == "kube-apiserver":
                request.add_header("Authorization", f"Bearer {self.token}")
            try:
                with urllib.request.urlopen(request, context=insecure, timeout=5) as response:
                    if response.status == 200:
                        return
            except urllib.error.HTTPError as exc:  # not ready yet (500): its socket is closed here, not by the GC
                exc.close()
                last = str(exc)
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} not healthy after {READY_TIMEOUT}s ({last}):\n{component.log_tail()}")


def _detached(error: urllib.error.HTTPError) -> urllib.error.HTTPError:
    """The same error with its body read and its connection closed: callers catch it to look at the code and
    ``read()`` the Status, and a connection left to the garbage collector is an unclosed-socket ResourceWarning
    in whichever later test the collection happens to run (pytest makes that a failure)."""
    with error:
        body = error.read()
    return urllib.error.HTTPError(error.url, error.code, error.msg, error.headers, io.BytesIO(body))


_PLURALS = {
    "Node": "nodes",
    "Pod": "pods",
    "Namespace": "namespaces",
    "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "DeviceTaintRule": "devicetaintrules",
}
_NAMESPACED = {"Pod", "ResourceClaim", "ResourceClaimTemplate"}


@contextlib.contextmanager
def running_control_plane(
    workdir: Path | None = None,
    *,
    apiserver_args: Sequence[str] = (),
    scheduler_args: Sequence[str] = (),
    only: Sequence[str] = BINARIES,
    scheduler_config: Mapping[str, Any] | None = None,
    tokens: Sequence[tuple[str, str, str, str]] = (),
    authorization_mode: str = "RBAC",
    feature_gates: str = "",
    controllers: Sequence[str] = ("resourceclaim-controller",),
) -> Iterator[ControlPlane]:
    """Start a control plane for the ``with`` block; everything is stopped (and the directory removed) after.

    ``apiserver_args`` are added to kube-apiserver's flags (e.g. ``--runtime-config`` to serve only the betas an
    older release served), ``scheduler_args`` to kube-scheduler's; ``only`` names the components to start; ``scheduler_config`` holds top-level fields
    of the scheduler's KubeSchedulerConfiguration (``profiles``, ``percentageOfNodesToScore``, ...); ``tokens``
    are more static bearer tokens, (token, user, uid, group) each; ``authorization_mode`` is kube-apiserver's;
    ``feature_gates`` go to kube-apiserver, kube-scheduler and kube-controller-manager alike; ``controllers`` are the
    controller-manager's (``podgroup-protection-controller`` for PodGroups).
    """
    own = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="kubedra-cp-")) if workdir is None else workdir
    plane = ControlPlane(
        directory,
        apiserver_args=list(apiserver_args),
        scheduler_args=list(scheduler_args),
        only=list(only),
        scheduler_config=dict(scheduler_config or {}),
        tokens=list(tokens),
        authorization_mode=authorization_mode,
        feature_gates=feature_gates,
        controllers=list(controllers),
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
        if own and not os.environ.get("KUBEDRA_KEEP_CONTROLPLANE"):
            shutil.rmtree(directory, ignore_errors=True)
