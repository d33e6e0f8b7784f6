"""The values that cross the kubelet's gRPC boundary, independent of the generated protobuf classes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """A claim as the kubelet names it in NodePrepareResources / NodeUnprepareResources."""

    namespace: str
    uid: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (uid {self.uid})"


@dataclass(frozen=True, slots=True)
class PreparedDevice:
    """One prepared device as returned to the kubelet (``Device`` in dra/v1/api.proto)."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    share_id: str | None = None


@dataclass(frozen=True, slots=True)
class PrepareResult:
    """A claim's entry in the response map: its devices, or an error (never both)."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


@dataclass(frozen=True, slots=True)
class DeviceHealth:
    """One device's health as DRAResourceHealth reports it."""

    pool_name: str
    device_name: str
    healthy: bool | None  # None: unknown
    last_updated: int  # unix seconds
    message: str = ""


@dataclass
class HealthReport:
    """The full list the health stream sends each time something changed."""

    devices: list[DeviceHealth] = field(default_factory=list)
