"""What one ResourceClaim asks of this node's driver: pure, on the claim's API JSON.

The checks are the kubelet-plugin helper's (``getResourceClaims`` in draplugin.go: "not allocated", "got
replaced") plus NVIDIA's: only results for this driver and this node's pool are prepared, and a claim with none is
refused. Opaque configs are collected as NVIDIA's ``GetOpaqueDeviceConfigs`` does: class configs before claim
configs, later entries win, only ``opaque.driver == <driver>``, an empty ``requests`` list applies to all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubedra.driver.types import ClaimRef


class ClaimRefusedError(Exception):
    """The claim cannot be prepared here; the message goes into the claim's entry of the response."""


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One allocation result for this driver and pool."""

    request: str  # as allocated, possibly "request/subrequest"
    pool: str
    device: str
    share_id: str | None = None
    admin_access: bool = False

    @property
    def base_request(self) -> str:
        """``resourceclaim.BaseRequestRef``: the request name without its subrequest."""
        return self.request.split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    """An opaque config for this driver: the requests it applies to (empty: all) and its parameters."""

    source: str  # FromClass or FromClaim
    requests: tuple[str, ...]
    parameters: Any

    def applies_to(self, request: str) -> bool:
        base = request.split("/", 1)[0]
        return not self.requests or request in self.requests or base in self.requests


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """Exactly what to prepare for one claim."""

    ref: ClaimRef
    devices: tuple[AllocatedDevice, ...]
    configs: tuple[OpaqueConfig, ...]

    def configs_for(self, device: AllocatedDevice) -> list[OpaqueConfig]:
        """Configs of ``device``'s request in precedence order (the last one wins)."""
        ordered = [c for c in self.configs if c.source == "FromClass"] + [
            c for c in self.configs if c.source != "FromClass"
        ]
        return [c for c in ordered if c.applies_to(device.request)]


def plan_claim(claim: dict[str, Any], ref: ClaimRef, driver: str, pool: str) -> ClaimPlan:
    """The plan for ``claim`` (as read from the API), or ClaimRefusedError with the message the kubelet gets."""
    metadata = claim.get("metadata") or {}
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        raise ClaimRefusedError(f"claim {ref.namespace}/{ref.name} not allocated")
    if metadata.get("uid") != ref.uid:
        raise ClaimRefusedError(f"claim {ref.namespace}/{ref.name} got replaced")
    devices_part = allocation.get("devices") or {}
    devices = tuple(
        AllocatedDevice(
            request=str(r.get("request", "")),
            pool=str(r.get("pool", "")),
            device=str(r.get("device", "")),
            share_id=r.get("shareID") or None,
            admin_access=bool(r.get("adminAccess")),
        )
        for r in devices_part.get("results") or []
        if r.get("driver") == driver and r.get("pool") == pool
    )
    if not devices:
        raise ClaimRefusedError(
            f"claim {ref.namespace}/{ref.name}: no device is allocated by driver {driver} on node {pool}"
        )
    configs = tuple(
        OpaqueConfig(str(c.get("source", "")), tuple(c.get("requests") or ()), c["opaque"].get("parameters"))
        for c in devices_part.get("config") or []
        if isinstance(c.get("opaque"), dict) and c["opaque"].get("driver") == driver
    )
    return ClaimPlan(ref, devices, configs)
