"""resource.k8s.io betas (and v1alpha3) → the v1 shape, as the API server's conversion does.

* ``v1beta2`` has the v1 shape for every kind (DeviceClass, ResourceClaim, ResourceClaimTemplate,
  ResourceSlice, DeviceTaintRule): only ``apiVersion`` changes.
* ``v1beta1`` (and the ``v1alpha3`` of 1.31-1.33) wraps a device's fields in ``basic:`` and puts a
  request's fields (deviceClassName, selectors, allocationMode, count, adminAccess, tolerations,
  capacity, derivedAttributes) directly on the request; v1 moves them under ``exactly:`` unless the
  request uses ``firstAvailable``. Kubernetes 1.31-1.32 wrote capacities as plain quantities
  (``memory: 40Gi``); 1.33+ as ``{value: 40Gi}``: both are read.
* ``DeviceTaintRule`` exists as v1alpha3, v1beta2 and v1, all of the same shape.

Each converted object yields one warning (code ``beta-version``); problems that make a document
impossible to convert are returned as (field, message) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

V1 = "resource.k8s.io/v1"
DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule")

# Which versions serve which kind (Kubernetes 1.37; v1alpha3 read for 1.31-1.33 manifests).
SERVED: dict[str, tuple[str, ...]] = {
    "DeviceClass": ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    "ResourceClaim": ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    "ResourceClaimTemplate": ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    "ResourceSlice": ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    "DeviceTaintRule": ("v1", "v1beta2", "v1alpha3"),
}

# The request fields that v1 moved under ``exactly``.
FLAT_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
    "derivedAttributes",
)


@dataclass
class BetaConversion:
    """The v1 document, what changed (for the warning) and the problems that stopped parts of it."""

    document: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _flatten_device(device: Any, path: str, out: BetaConversion) -> Any:
    if not isinstance(device, dict) or "basic" not in device:
        return device
    basic = device["basic"]
    if basic is None:
        basic = {}
    if not isinstance(basic, dict):
        out.problems.append((f"{path}.basic", "Invalid value: must be an object"))
        return device
    flat = {k: v for k, v in device.items() if k != "basic"}
    for key, value in basic.items():
        if key in flat:
            out.problems.append((f"{path}.{key}", "Invalid value: set both in basic and beside it"))
        flat[key] = value
    capacity = flat.get("capacity")
    if isinstance(capacity, dict):
        plain = [k for k, v in capacity.items() if isinstance(v, str | int | float) and not isinstance(v, bool)]
        if plain:
            flat["capacity"] = {k: ({"value": v} if k in plain else v) for k, v in capacity.items()}
            out.changes.append("capacities written as plain quantities (1.31-1.32) read as {value: …}")
    return flat


def _exactly_request(request: Any, path: str, out: BetaConversion) -> Any:
    if not isinstance(request, dict):
        return request
    flat = {k: request[k] for k in FLAT_REQUEST_FIELDS if k in request}
    if request.get("firstAvailable"):
        for key in flat:
            out.problems.append(
                (f"{path}.{key}", "Forbidden: must not be set when firstAvailable is set (v1beta1 request)")
            )
        return {k: v for k, v in request.items() if k not in flat}
    if "exactly" in request:  # a v1 request in a beta document
        out.problems.append(
            (
                f"{path}.exactly",
                f'unknown field "{path}.exactly" (v1beta1 requests have no exactly: '
                "use apiVersion resource.k8s.io/v1 or put its fields on the request)",
            )
        )
        return request
    rest = {k: v for k, v in request.items() if k not in flat and k != "firstAvailable"}
    return {**rest, "exactly": flat}


def _claim_spec(spec: Any, path: str, out: BetaConversion) -> Any:
    if not isinstance(spec, dict):
        return spec
    devices = spec.get("devices")
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list):
        return spec
    requests = [_exactly_request(r, f"{path}.devices.requests[{i}]", out) for i, r in enumerate(devices["requests"])]
    out.changes.append("requests[] fields moved under exactly")
    return {**spec, "devices": {**devices, "requests": requests}}


def _v1beta1_body(kind: str, doc: dict[str, Any], out: BetaConversion) -> dict[str, Any]:
    spec = doc.get("spec")
    if kind == "ResourceSlice" and isinstance(spec, dict) and isinstance(spec.get("devices"), list):
        devices = [_flatten_device(d, f"spec.devices[{i}]", out) for i, d in enumerate(spec["devices"])]
        if any(isinstance(d, dict) and "basic" in d for d in spec["devices"]):
            out.changes.append("devices[].basic flattened")
        return {**doc, "spec": {**spec, "devices": devices}}
    if kind == "ResourceClaim":
        return {**doc, "spec": _claim_spec(spec, "spec", out)}
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        return {**doc, "spec": {**spec, "spec": _claim_spec(spec.get("spec"), "spec.spec", out)}}
    return doc


def to_v1(kind: str, version: str, doc: dict[str, Any]) -> BetaConversion:
    """``doc`` (a ``resource.k8s.io/<version>`` object of ``kind``) in the v1 shape."""
    out = BetaConversion(document=doc)
    body = doc
    if version in ("v1beta1", "v1alpha3") and kind != "DeviceTaintRule":
        body = _v1beta1_body(kind, doc, out)
    out.document = {**body, "apiVersion": V1}
    return out


def describe(kind: str, version: str, changes: list[str]) -> tuple[str, str, str]:
    """(written, today, assumed) for the conversion warning."""
    written = f"resource.k8s.io/{version} {kind}"
    if version == "v1beta2":
        today = f"{V1} {kind}: the same fields (v1beta2 is deprecated since Kubernetes 1.34)"
    elif version == "v1alpha3" and kind == "DeviceTaintRule":
        today = f"{V1} {kind}: the same fields (v1alpha3 was the 1.33-1.35 alpha)"
    else:
        steps = "; ".join(dict.fromkeys(changes)) or "the same fields"
        today = f"{V1} {kind}: {steps}"
    return written, today, "converted as the API server converts stored objects; no field lost"
