"""The values that cross the kubelet's gRPC boundary, independent of the generated protobuf classes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# What the API server assigns as metadata.uid (a UUID, 8-4-4-4-12 hexadecimal digits). Claim UIDs become file names
# (CDI specs, MPS directories), so nothing else may pass: no "..", no "/", nothing empty or overlong.
_UID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """A claim as the kubelet names it in NodePrepareResources / NodeUnprepareResources."""

    namespace: str
    uid: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (uid {self.uid})"

    def uid_problem(self) -> str | None:
        """Why this claim's UID cannot be used, or None: it names files, so only a UID the API server could
        have assigned passes."""
        if _UID.fullmatch(self.uid):
            return None
        shown = self.uid if len(self.uid) <= 64 else f"{self.uid[:64]}... ({len(self.uid)} characters)"
        return (
            f"claim {self.namespace}/{self.name}: UID {shown!r} is not a UID (36 characters, 8-4-4-4-12 "
            "hexadecimal digits, as the API server assigns them)"
        )


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
