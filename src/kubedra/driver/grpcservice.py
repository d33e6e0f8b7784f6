"""The kubelet's side of the wire: registration, DRAPlugin v1 and v1beta1, DRAResourceHealth, gRPC health.

Services are registered by hand (generic method handlers over the generated message classes), so the gRPC paths
are exactly ``/<proto package>.<Service>/<Method>`` of upstream's protos. Both DRAPlugin versions and the health
stream share ``<plugin dir>/dra.sock``; registration lives on ``<registry dir>/<driver>-reg.sock``, as the
kubelet-plugin helper of k8s.io/dynamic-resource-allocation lays them out. Stale sockets are removed before
listening and socket files are made 0600.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc

from kubedra.driver.protos import dra_health_v1alpha1_pb2 as health_pb
from kubedra.driver.protos import dra_v1_pb2 as v1
from kubedra.driver.protos import dra_v1beta1_pb2 as v1beta1
from kubedra.driver.protos import grpc_health_pb2 as ghealth
from kubedra.driver.protos import registration_pb2 as reg
from kubedra.driver.types import ClaimRef, HealthReport, PrepareResult

log = logging.getLogger("kubedra.driver")

DRA_V1_SERVICE = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
DRA_V1BETA1_SERVICE = "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"
HEALTH_STREAM_SERVICE = "v1alpha1.DRAResourceHealth"
GRPC_HEALTH_SERVICE = "grpc.health.v1.Health"
REGISTRATION_SERVICE = "pluginregistration.Registration"
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth")
PLUGIN_TYPE = "DRAPlugin"
SOCKET_MODE = 0o600
# gRPC's sync server runs every call on a worker thread, a streaming one for as long as it streams, while idle
# connections hold none. Health Watch streams are therefore capped below the worker count and ended after a while
# (clients of the health protocol re-watch), so Check — the liveness probe — always finds a free worker.
HEALTH_PORT_WORKERS = 4
MAX_HEALTH_WATCHERS = 2
HEALTH_WATCH_LIMIT = 300.0  # seconds one Watch stream may last


class Plugin(Protocol):
    """What the servers call: the driver proper (:class:`kubedra.driver.node.NodeDriver`)."""

    def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]: ...

    def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]: ...

    def watch_health(self, active: Callable[[], bool]) -> Iterator[HealthReport]: ...


def _refs(claims: Any, context: Any) -> list[ClaimRef]:
    """The request's claims; a UID that is not one (it would name files) fails the whole call with
    INVALID_ARGUMENT, as nothing but a broken or hostile caller sends one."""
    refs = [ClaimRef(c.namespace, c.uid, c.name) for c in claims]
    for ref in refs:
        problem = ref.uid_problem()
        if problem is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{problem}; no claim of this call was touched")
    return refs


def _prepare_response(module: Any, results: dict[str, PrepareResult], with_share_id: bool) -> Any:
    response = module.NodePrepareResourcesResponse()
    for uid, result in results.items():
        entry = response.claims[uid]
        entry.error = result.error
        for d in result.devices:
            device = entry.devices.add(
                request_names=list(d.request_names),
                pool_name=d.pool_name,
                device_name=d.device_name,
                cdi_device_ids=list(d.cdi_device_ids),
            )
            if with_share_id and d.share_id:
                device.share_id = d.share_id
    return response


def _unprepare_response(module: Any, results: dict[str, str]) -> Any:
    response = module.NodeUnprepareResourcesResponse()
    for uid, error in results.items():
        response.claims[uid].error = error
    return response


def _parser(request_cls: Any) -> Callable[[bytes], Any]:
    """``request_cls.FromString`` that refuses bytes that are no such message with one log line: grpc then answers
    INTERNAL ("Exception deserializing request!") as it does for any deserializer failure, without logging a
    traceback for what is the caller's bad input."""
    from google.protobuf.message import DecodeError

    def parse(data: bytes) -> Any:
        try:
            return request_cls.FromString(data)
        except DecodeError as exc:
            log.warning("refused a request that is not a %s: %s", request_cls.DESCRIPTOR.full_name, exc)
            return None

    return parse


def _unary(method: Callable[[Any, Any], Any], request_cls: Any, response_cls: Any) -> Any:
    return grpc.unary_unary_rpc_method_handler(
        method, request_deserializer=_parser(request_cls), response_serializer=response_cls.SerializeToString
    )


def dra_handlers(plugin: Plugin) -> list[Any]:
    """Generic handlers for both DRAPlugin versions and the device-health stream."""
    handlers = []
    for service, module, share in ((DRA_V1_SERVICE, v1, True), (DRA_V1BETA1_SERVICE, v1beta1, False)):

        def prepare(request: Any, context: Any, module: Any = module, share: bool = share) -> Any:
            return _prepare_response(module, plugin.prepare(_refs(request.claims, context)), share)

        def unprepare(request: Any, context: Any, module: Any = module) -> Any:
            return _unprepare_response(module, plugin.unprepare(_refs(request.claims, context)))

        handlers.append(
            grpc.method_handlers_generic_handler(
                service,
                {
                    "NodePrepareResources": _unary(
                        prepare, module.NodePrepareResourcesRequest, module.NodePrepareResourcesResponse
                    ),
                    "NodeUnprepareResources": _unary(
                        unprepare, module.NodeUnprepareResourcesRequest, module.NodeUnprepareResourcesResponse
                    ),
                },
            )
        )

    def watch(_request: Any, context: Any) -> Iterator[Any]:
        for report in plugin.watch_health(context.is_active):
            yield health_pb.NodeWatchResourcesResponse(
                devices=[
                    health_pb.DeviceHealth(
                        device=health_pb.DeviceIdentifier(pool_name=d.pool_name, device_name=d.device_name),
                        health=(
                            health_pb.UNKNOWN
                            if d.healthy is None
                            else health_pb.HEALTHY
                            if d.healthy
                            else health_pb.UNHEALTHY
                        ),
                        last_updated_time=d.last_updated,
                        message=d.message[:1024],
                    )
                    for d in report.devices
                ]
            )

    handlers.append(
        grpc.method_handlers_generic_handler(
            HEALTH_STREAM_SERVICE,
            {
                "NodeWatchResources": grpc.unary_stream_rpc_method_handler(
                    watch,
                    request_deserializer=_parser(health_pb.NodeWatchResourcesRequest),
                    response_serializer=health_pb.NodeWatchResourcesResponse.SerializeToString,
                )
            },
        )
    )
    return handlers


@dataclass
class RegistrationState:
    """What the kubelet told us in NotifyRegistrationStatus."""

    registered: bool = False
    error: str = ""
    notified: threading.Event | None = None

    def __post_init__(self) -> None:
        self.notified = threading.Event()


def registration_handler(driver_name: str, endpoint: str, state: RegistrationState) -> Any:
    def get_info(_request: Any, _context: Any) -> Any:
        return reg.PluginInfo(
            type=PLUGIN_TYPE, name=driver_name, endpoint=endpoint, supported_versions=list(SUPPORTED_VERSIONS)
        )

    def notify(request: Any, context: Any) -> Any:
        state.registered, state.error = request.plugin_registered, request.error
        assert state.notified is not None
        state.notified.set()
        if request.plugin_registered:
            log.info("registered with the kubelet")
        else:
            log.error("the kubelet refused the registration: %s", request.error)
            context.abort(grpc.StatusCode.UNKNOWN, f"plugin registration failed: {request.error}")
        return reg.RegistrationStatusResponse()

    return grpc.method_handlers_generic_handler(
        REGISTRATION_SERVICE,
        {
            "GetInfo": _unary(get_info, reg.InfoRequest, reg.PluginInfo),
            "NotifyRegistrationStatus": _unary(notify, reg.RegistrationStatus, reg.RegistrationStatusResponse),
        },
    )


def health_handler(
    check: Callable[[], bool], *, max_watchers: int = MAX_HEALTH_WATCHERS, watch_limit: float = HEALTH_WATCH_LIMIT
) -> Any:
    """The standard ``grpc.health.v1.Health``: ``""`` and the DRA services answer SERVING when ``check()``. At most
    ``max_watchers`` Watch streams at once (more are refused with RESOURCE_EXHAUSTED, not queued), each ended after
    ``watch_limit`` seconds; one handler per server, so each server's cap is its own."""
    known = {"", DRA_V1_SERVICE, DRA_V1BETA1_SERVICE, HEALTH_STREAM_SERVICE}
    slots = threading.BoundedSemaphore(max_watchers)

    def status(service: str) -> Any:
        if service not in known:
            return ghealth.HealthCheckResponse.SERVICE_UNKNOWN
        return ghealth.HealthCheckResponse.SERVING if check() else ghealth.HealthCheckResponse.NOT_SERVING

    def check_rpc(request: Any, context: Any) -> Any:
        if request.service not in known:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service}")
        return ghealth.HealthCheckResponse(status=status(request.service))

    def watch(request: Any, context: Any) -> Iterator[Any]:
        if not slots.acquire(blocking=False):
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"at most {max_watchers} health Watch streams at once on this server; use Check",
            )
        try:
            last = None
            ends = time.monotonic() + watch_limit
            while context.is_active() and (left := ends - time.monotonic()) > 0:
                current = status(request.service)
                if current != last:
                    yield ghealth.HealthCheckResponse(status=current)
                    last = current
                threading.Event().wait(min(1.0, left))
        finally:
            slots.release()

    return grpc.method_handlers_generic_handler(
        GRPC_HEALTH_SERVICE,
        {
            "Check": _unary(check_rpc, ghealth.HealthCheckRequest, ghealth.HealthCheckResponse),
            "Watch": grpc.unary_stream_rpc_method_handler(
                watch,
                request_deserializer=_parser(ghealth.HealthCheckRequest),
                response_serializer=ghealth.HealthCheckResponse.SerializeToString,
            ),
        },
    )


def remove_stale_socket(path: Path) -> None:
    """A socket left by a previous run (or anything else at the path that is not a directory) goes away."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir():
            raise OSError(f"{path}: is a directory, cannot listen there")
        path.unlink()


def unix_server(path: Path, handlers: Sequence[Any], workers: int = 8) -> Any:
    """A started gRPC server on a fresh unix socket at ``path``, mode 0600 from the moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_socket(path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), handlers=list(handlers))
    old = os.umask(0o177)
    try:
        server.add_insecure_port(f"unix://{path}")
    finally:
        os.umask(old)
    server.start()
    os.chmod(path, SOCKET_MODE)
    return server


def tcp_server(
    port: int, handlers: Sequence[Any], host: str = "[::]", workers: int = HEALTH_PORT_WORKERS
) -> tuple[Any, int]:
    """A started gRPC server on TCP; returns it and the bound port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), handlers=list(handlers))
    bound = server.add_insecure_port(f"{host}:{port}")
    server.start()
    return server, bound


def health_port_server(port: int, check: Callable[[], bool], host: str = "[::]") -> tuple[Any, int]:
    """The liveness probe's health port: its own health handler, more workers than Watch streams may hold."""
    assert MAX_HEALTH_WATCHERS < HEALTH_PORT_WORKERS
    return tcp_server(port, [health_handler(check)], host)


def probe(registration_socket: Path, dra_socket: Path, timeout: float = 5.0) -> bool:
    """What NVIDIA's liveness check does: GetInfo on the registration socket and an empty NodePrepareResources
    on dra.sock, over real connections."""
    try:
        with grpc.insecure_channel(f"unix://{registration_socket}") as channel:
            get_info = channel.unary_unary(
                f"/{REGISTRATION_SERVICE}/GetInfo",
                request_serializer=reg.InfoRequest.SerializeToString,
                response_deserializer=reg.PluginInfo.FromString,
            )
            get_info(reg.InfoRequest(), timeout=timeout)
        with grpc.insecure_channel(f"unix://{dra_socket}") as channel:
            prepare = channel.unary_unary(
                f"/{DRA_V1_SERVICE}/NodePrepareResources",
                request_serializer=v1.NodePrepareResourcesRequest.SerializeToString,
                response_deserializer=v1.NodePrepareResourcesResponse.FromString,
            )
            prepare(v1.NodePrepareResourcesRequest(), timeout=timeout)
    except grpc.RpcError as exc:
        log.warning("health probe failed: %s", exc)
        return False
    return True
