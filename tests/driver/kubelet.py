"""A kubelet emulator: what the kubelet's plugin manager and DRA manager do, over real gRPC on unix sockets.

It finds ``*-reg.sock`` in the registry directory, calls GetInfo, checks the type and picks the newest DRAPlugin
service the plugin advertises (v1 before v1beta1, as kubelet 1.34+ does), reports NotifyRegistrationStatus, then
calls NodePrepareResources / NodeUnprepareResources on the advertised endpoint and watches device health.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from kubedra.driver.protos import dra_health_v1alpha1_pb2 as health_pb
from kubedra.driver.protos import dra_v1_pb2 as v1
from kubedra.driver.protos import dra_v1beta1_pb2 as v1beta1
from kubedra.driver.protos import grpc_health_pb2 as ghealth
from kubedra.driver.protos import registration_pb2 as reg

TIMEOUT = 45.0  # the kubelet's per-call timeout


def _unary(channel: Any, path: str, request_cls: Any, response_cls: Any) -> Any:
    return channel.unary_unary(
        path, request_serializer=request_cls.SerializeToString, response_deserializer=response_cls.FromString
    )


@dataclass
class Registered:
    info: Any
    service: str  # "v1.DRAPlugin" or "v1beta1.DRAPlugin"
    channel: Any
    health_reports: list[Any] = field(default_factory=list)


class Kubelet:
    def __init__(self, registry_dir: Path, prefer: tuple[str, ...] = ("v1.DRAPlugin", "v1beta1.DRAPlugin")) -> None:
        self.registry_dir = registry_dir
        self.prefer = prefer
        self.plugins: dict[str, Registered] = {}  # by driver name: the instance registered last
        self.instances: dict[str, Registered] = {}  # by registration socket (rolling updates: several per driver)

    def register_all(self, accept: bool = True) -> dict[str, Registered]:
        for socket in sorted(self.registry_dir.glob("*-reg.sock")):
            with grpc.insecure_channel(f"unix://{socket}") as channel:
                info = _unary(channel, "/pluginregistration.Registration/GetInfo", reg.InfoRequest, reg.PluginInfo)(
                    reg.InfoRequest(), timeout=TIMEOUT
                )
                notify = _unary(
                    channel,
                    "/pluginregistration.Registration/NotifyRegistrationStatus",
                    reg.RegistrationStatus,
                    reg.RegistrationStatusResponse,
                )
                service = next((s for s in self.prefer if s in info.supported_versions), None)
                if info.type != "DRAPlugin" or service is None:
                    notify(reg.RegistrationStatus(plugin_registered=False, error="no supported version"))
                    continue
                notify(reg.RegistrationStatus(plugin_registered=accept, error="" if accept else "refused by test"))
                previous = self.instances.get(str(socket))
                if previous is not None:
                    previous.channel.close()
                registered = Registered(info, service, grpc.insecure_channel(f"unix://{info.endpoint}"))
                self.plugins[info.name] = self.instances[str(socket)] = registered
        return self.plugins

    def _plugin(self, driver: str, via: Path | None) -> Registered:
        return self.plugins[driver] if via is None else self.instances[str(via)]

    def _module(self, plugin: Registered) -> tuple[Any, str]:
        if plugin.service == "v1.DRAPlugin":
            return v1, "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
        return v1beta1, "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"

    def prepare(self, driver: str, claims: list[tuple[str, str, str]], via: Path | None = None) -> Any:
        """``claims``: (namespace, uid, name); ``via``: the registration socket of the instance to call."""
        plugin = self._plugin(driver, via)
        module, service = self._module(plugin)
        call = _unary(
            plugin.channel,
            f"/{service}/NodePrepareResources",
            module.NodePrepareResourcesRequest,
            module.NodePrepareResourcesResponse,
        )
        request = module.NodePrepareResourcesRequest(
            claims=[module.Claim(namespace=ns, uid=uid, name=name) for ns, uid, name in claims]
        )
        return call(request, timeout=TIMEOUT)

    def unprepare(self, driver: str, claims: list[tuple[str, str, str]], via: Path | None = None) -> Any:
        plugin = self._plugin(driver, via)
        module, service = self._module(plugin)
        call = _unary(
            plugin.channel,
            f"/{service}/NodeUnprepareResources",
            module.NodeUnprepareResourcesRequest,
            module.NodeUnprepareResourcesResponse,
        )
        request = module.NodeUnprepareResourcesRequest(
            claims=[module.Claim(namespace=ns, uid=uid, name=name) for ns, uid, name in claims]
        )
        return call(request, timeout=TIMEOUT)

    def watch_health(self, driver: str, reports: int, out: list[Any] | None = None) -> list[Any]:
        """The first ``reports`` messages of NodeWatchResources (in a thread; the caller may change health)."""
        plugin = self.plugins[driver]
        stream = plugin.channel.unary_stream(
            "/v1alpha1.DRAResourceHealth/NodeWatchResources",
            request_serializer=health_pb.NodeWatchResourcesRequest.SerializeToString,
            response_deserializer=health_pb.NodeWatchResourcesResponse.FromString,
        )(health_pb.NodeWatchResourcesRequest(), timeout=TIMEOUT)
        out = [] if out is None else out
        for message in stream:
            out.append(message)
            if len(out) == reports:
                stream.cancel()
                break
        return out

    def watch_health_async(self, driver: str, reports: int) -> tuple[threading.Thread, list[Any]]:
        out: list[Any] = []
        thread = threading.Thread(target=self.watch_health, args=(driver, reports, out), daemon=True)
        thread.start()
        return thread, out

    def health_check(self, target: str, service: str = "") -> Any:
        with grpc.insecure_channel(target) as channel:
            return _unary(
                channel, "/grpc.health.v1.Health/Check", ghealth.HealthCheckRequest, ghealth.HealthCheckResponse
            )(ghealth.HealthCheckRequest(service=service), timeout=10)

    def close(self) -> None:
        for plugin in {id(p): p for p in [*self.plugins.values(), *self.instances.values()]}.values():
            plugin.channel.close()
