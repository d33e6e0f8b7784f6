"""resource.k8s.io/v1 → v1beta2 or v1beta1, for clusters older than 1.34 (the reverse of ``objects.beta``).

``v1beta2`` has v1's shape for every kind: only ``apiVersion`` changes. ``v1beta1`` wraps a device's fields in
``basic:`` and puts an ``exactly`` request's fields directly on the request (``firstAvailable`` stays as it is).
``DeviceTaintRule`` has no v1beta1 at all (v1alpha3 until 1.35, v1beta2 from 1.36): asking for it is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GROUP = "resource.k8s.io"
TARGETS = ("v1", "v1beta2", "v1beta1")
DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule")


@dataclass
class Downgrade:
    document: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _request(request: Any) -> Any:
    if not isinstance(request, dict) or not isinstance(request.get("exactly"), dict):
        return request
    flat = {k: v for k, v in request.items() if k != "exactly"}
    return {**flat, **request["exactly"]}


def _claim_spec(spec: Any, out: Downgrade) -> Any:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list):
        return spec
    if any(isinstance(r, dict) and "exactly" in r for r in devices["requests"]):
        out.changes.append("requests[].exactly fields moved onto the request")
    return {**spec, "devices": {**devices, "requests": [_request(r) for r in devices["requests"]]}}


def _device(device: Any) -> Any:
    if not isinstance(device, dict):
        return device
    basic = {k: v for k, v in device.items() if k != "name"}
    return {"name": device.get("name"), "basic": basic} if basic else {"name": device.get("name"), "basic": {}}


def from_v1(kind: str, document: dict[str, Any], target: str) -> Downgrade:
    """``document`` (resource.k8s.io/v1 ``kind``) as ``resource.k8s.io/<target>``."""
    out = Downgrade(document=document)
    if target == "v1":
        return out
    if target == "v1beta1" and kind == "DeviceTaintRule":
        out.problems.append(("apiVersion", "Unsupported value: resource.k8s.io/v1beta1 has no DeviceTaintRule "
                                           "(v1alpha3 in 1.33-1.35, v1beta2 from 1.36): use --to v1beta2 or v1"))
        return out
    body = dict(document)
    spec = body.get("spec")
    if target == "v1beta1":
        if kind == "ResourceClaim":
            body["spec"] = _claim_spec(spec, out)
        elif kind == "ResourceClaimTemplate" and isinstance(spec, dict):
            body["spec"] = {**spec, "spec": _claim_spec(spec.get("spec"), out)}
        elif kind == "ResourceSlice" and isinstance(spec, dict) and isinstance(spec.get("devices"), list):
            body["spec"] = {**spec, "devices": [_device(d) for d in spec["devices"]]}
            out.changes.append("devices[] fields wrapped in basic")
        status = body.get("status")
        if kind == "ResourceClaim" and isinstance(status, dict):
            body["status"] = status  # results, config and reservedFor have the same shape
    if kind == "DeviceTaintRule":
        out.changes.append("served as v1beta2 from Kubernetes 1.36 only (v1alpha3 before)")
    out.document = {"apiVersion": f"{GROUP}/{target}", **{k: v for k, v in body.items() if k != "apiVersion"}}
    return out
