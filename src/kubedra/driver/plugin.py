"""``kubedra driver``: wires the backend, the API client, the NodeDriver, the sockets and the publisher; runs in
the foreground until SIGTERM or SIGINT, then removes its sockets.

Start order: inventory (fails clearly without NVML), checkpoint recovery (a checkpoint that cannot be trusted stops
the driver here, before anything on the node is touched), DRA socket, registration socket (the
kubelet may call as soon as it sees it), health port, then ResourceSlices in a background thread that retries
until the API server answers and reconciles every ``resync`` seconds, and at once when another thread watching the
pool's slices sees one deleted: the kubelet deletes every ResourceSlice of its node when it starts (and a driver's
when it has been unregistered for 30 s), and the node's GPUs must not stay unschedulable until the next resync.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from kubedra.driver import grpcservice
from kubedra.driver.devices import Sharing
from kubedra.driver.inventory import Backend, DriverError, MigBackend, XidEvent, XidSource
from kubedra.driver.node import NodeConfig, NodeDriver
from kubedra.driver.publish import KubeClaims, SlicePublisher, check_resource_api_version, publish_with_retry
from kubedra.driver.sharing import CommandRunner, RecordingRunner, SubprocessRunner

log = logging.getLogger("kubedra.driver")
_SAFE_UID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
UNIX_PATH_MAX = 108  # AF_UNIX sun_path on Linux, as the kubelet-plugin helper counts it


def rolling_update_registration_socket(registry_dir: Path, driver: str, pod_uid: str) -> Path:
    """The registration socket of one driver pod during a rolling update, named as the kubelet-plugin helper's
    ``RollingUpdateRegistrarSocketFile`` names it: ``<driver>-<uid>-reg.sock``; when that path is too long,
    ``<driver>-<base64url(sha256(uid)[:8])>-reg.sock``; else ``dra-<base64url(sha256(driver NUL uid)[:16])>-reg.sock``.
    """

    def b64(data: str, size: int) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data.encode()).digest()[:size]).decode().rstrip("=")

    candidates = [
        f"{driver}-{pod_uid}-reg.sock",
        f"{driver}-{b64(pod_uid, 8)}-reg.sock",
        f"dra-{b64(driver + chr(0) + pod_uid, 16)}-reg.sock",
    ]
    for name in candidates:
        if len(str(registry_dir / name)) <= UNIX_PATH_MAX:
            return registry_dir / name
    return registry_dir / candidates[-1]


@dataclass
class DriverOptions:
    node: str
    backend: str = "nvml"
    inventory: Path | None = None
    driver_name: str = "gpu.nvidia.com"
    plugin_dir: Path | None = None
    registry_dir: Path = Path("/var/lib/kubelet/plugins_registry")
    cdi_root: Path = Path("/var/run/cdi")
    kubeconfig: str | None = None
    consumable_shares: str | None = None
    health_port: int | None = None
    resource_api_version: str = "v1"  # resource.k8s.io version of slices and claims: v1, v1beta2 (1.33), v1beta1 (1.32)
    xid_taints: bool = False  # XIDs also taint the device in its ResourceSlice (gpu.nvidia.com/xid=<xid>)
    pod_uid: str | None = None  # rolling updates: per-pod socket names, so two driver pods can overlap
    recover_checkpoint: bool = False  # adopt what CDI specs and NVML prove instead of refusing an untrusted checkpoint
    resync: float = 30.0

    @property
    def plugin_path(self) -> Path:
        """Absolute: the kubelet dials the endpoint exactly as advertised."""
        return (self.plugin_dir or Path("/var/lib/kubelet/plugins") / self.driver_name).absolute()

    @property
    def dra_socket(self) -> Path:
        """``dra.sock``, or ``dra-<pod uid>.sock`` with ``--pod-uid`` (the kubelet-plugin helper's names)."""
        return self.plugin_path / (f"dra-{self.pod_uid}.sock" if self.pod_uid else "dra.sock")

    @property
    def registration_socket(self) -> Path:
        registry = self.registry_dir.absolute()
        if self.pod_uid:
            return rolling_update_registration_socket(registry, self.driver_name, self.pod_uid)
        return registry / f"{self.driver_name}-reg.sock"


def make_backend(options: DriverOptions) -> tuple[Backend, CommandRunner]:
    if options.backend == "fake":
        if options.inventory is None:
            raise DriverError("--backend fake needs --inventory FILE")
        from kubedra.driver.fake import FakeBackend

        return FakeBackend(options.inventory, state=options.plugin_path / "fake-mig.json"), RecordingRunner()
    if options.backend == "nvml":
        from kubedra.driver.nvml import NvmlBackend

        return NvmlBackend(), SubprocessRunner()
    raise DriverError(f"--backend: {options.backend!r} is not one of nvml, fake")


class RunningDriver:
    """The started driver; ``stop()`` shuts servers down and removes the sockets."""

    def __init__(self, options: DriverOptions, client: Any = None) -> None:
        from kubedra.driver.inventory import DriverError as _DriverError
        from kubedra.objects.formats import driver_name

        problems = driver_name(options.driver_name)
        if problems:
            raise _DriverError(f"--driver-name {options.driver_name!r}: {problems[0]}")
        if options.pod_uid is not None and not _SAFE_UID.fullmatch(options.pod_uid):
            raise _DriverError(f"--pod-uid {options.pod_uid!r}: not a pod UID (letters, digits, '-', '_', '.')")
        check_resource_api_version(options.resource_api_version)
        try:
            self.sharing = Sharing.parse(options.consumable_shares)
        except ValueError as exc:
            raise _DriverError(str(exc)) from exc
        self.options = options
        backend, runner = make_backend(options)
        self.backend = backend
        self.inventory = backend.discover()
        self.owns_client = client is None
        if client is None:
            from kubedra.kube.api import connect

            client = connect(options.kubeconfig)
        self.client = client
        self.driver = NodeDriver(
            NodeConfig(
                options.node,
                options.driver_name,
                options.plugin_path,
                options.cdi_root,
                recover_checkpoint=options.recover_checkpoint,
            ),
            self.inventory,
            KubeClaims(client, options.resource_api_version),
            runner,
            mig=backend if isinstance(backend, MigBackend) else None,
        )
        self.stopping = threading.Event()
        self.registration = grpcservice.RegistrationState()
        health = grpcservice.health_handler(self.healthy)
        self.dra_server = grpcservice.unix_server(options.dra_socket, [*grpcservice.dra_handlers(self.driver), health])
        self.registration_server = grpcservice.unix_server(
            options.registration_socket,
            [grpcservice.registration_handler(options.driver_name, str(options.dra_socket), self.registration)],
            workers=2,
        )
        self.health_server = None
        self.health_port: int | None = None
        if options.health_port is not None:
            self.health_server, self.health_port = grpcservice.health_port_server(options.health_port, self.healthy)
        self.publisher = SlicePublisher(
            client, options.driver_name, options.node, self.sharing, options.resource_api_version
        )
        self.published = threading.Event()
        self.republish = threading.Event()  # wakes the publisher before the next resync (a new taint)
        self.publish_error: DriverError | None = None
        self.thread = threading.Thread(target=self._publish_loop, name="resourceslices", daemon=True)
        self.thread.start()
        self.watch_thread = threading.Thread(target=self._watch_slices, name="resourceslice-watch", daemon=True)
        self.watch_thread.start()
        self.xid_thread: threading.Thread | None = None
        if isinstance(backend, XidSource):
            self.xid_thread = threading.Thread(
                target=backend.watch_xids, args=(self._on_xid, self.stopping), name="xid-events", daemon=True
            )
            self.xid_thread.start()
        log.info(
            "driver %s on node %s: %d GPU(s), DRA socket %s, registration %s",
            options.driver_name,
            options.node,
            len(self.inventory.gpus),
            options.dra_socket,
            options.registration_socket,
        )

    def healthy(self) -> bool:
        return not self.stopping.is_set() and grpcservice.probe(
            self.options.registration_socket, self.options.dra_socket
        )

    def _rediscover(self) -> None:
        """Every resync: the backend is asked again, so added GPUs are published (generation bumped) and health
        changes reach the kubelet."""
        try:
            inventory = self.backend.discover()
        except DriverError as exc:
            log.error("rediscovery failed, keeping the last inventory: %s", exc)
            return
        if inventory != self.inventory:
            log.info("inventory changed: %d GPU(s)", len(inventory.gpus))
            self.inventory = inventory
            self.driver.update_inventory(inventory)

    def _on_xid(self, event: XidEvent) -> None:
        if self.driver.record_xid(event) is not None and self.options.xid_taints:
            self.republish.set()

    def _taints(self) -> dict[str, Any]:
        return self.driver.device_taints() if self.options.xid_taints else {}

    def _publish_loop(self) -> None:
        first = True
        while not self.stopping.is_set():
            if not first:
                self._rediscover()
            first = False
            try:
                result = publish_with_retry(
                    lambda: self.publisher.publish(self.inventory, self._taints()), self.stopping
                )
            except DriverError as exc:
                self.publish_error = exc
                log.error("%s", exc)
                return
            if result is not None:
                self.published.set()
            self.republish.wait(self.options.resync)
            self.republish.clear()

    def _watch_slices(self) -> None:
        """Wake the publisher when one of the pool's slices is deleted (as the kubelet-plugin helper's slice
        controller does, through its informer); after a failed watch, list again and publish once more, since a
        deletion in the gap would be missed."""
        from kubedra.kube import api
        from kubedra.kube.kinds import RESOURCE_SLICE

        fields = {"spec.driver": self.options.driver_name, "spec.nodeName": self.options.node}
        failures = 0
        while not self.stopping.is_set():
            try:
                for event, document in api.watch_selected(
                    self.client, RESOURCE_SLICE, self.options.resource_api_version, fields
                ):
                    if self.stopping.is_set():
                        return
                    failures = 0
                    if event == "DELETED":
                        name = document["metadata"]["name"]
                        log.info("ResourceSlice %s was deleted: publishing the pool again", name)
                        self.republish.set()
            except Exception as exc:  # noqa: BLE001 - API down, 410 Gone, a closed client: list and watch again
                if self.stopping.is_set():
                    return
                failures += 1
                log.warning("watching ResourceSlices failed (%d): %s", failures, api.describe_error(exc, "API"))
                if self.stopping.wait(min(2.0**failures, 30.0)):
                    return
                self.republish.set()

    def stop(self) -> None:
        self.stopping.set()
        self.republish.set()
        for server in (self.registration_server, self.dra_server, self.health_server):
            if server is not None:
                server.stop(grace=1.0).wait()
        for path in (self.options.registration_socket, self.options.dra_socket):
            grpcservice.remove_stale_socket(path)
        self.thread.join(timeout=5)
        if self.xid_thread is not None:
            self.xid_thread.join(timeout=6)  # NVML's event wait returns within 5 s
        if self.owns_client:
            self.client.close()  # ends the slice watch's stream too
        self.watch_thread.join(timeout=2)  # a daemon: with a caller's client it ends when the watch next returns
        log.info("stopped; sockets removed")


def run(options: DriverOptions) -> int:
    """Foreground run: 0 after SIGTERM/SIGINT; DriverError/KubeError propagate to the CLI (exit 2)."""
    done = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        done.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        running = RunningDriver(options)
        try:
            while not done.wait(0.5):
                if running.publish_error is not None:
                    raise running.publish_error
        finally:
            running.stop()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0
