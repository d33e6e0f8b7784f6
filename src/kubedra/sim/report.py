"""What a simulation tells its user: placements, pending pods with reasons, a summary, the final objects, a timeline.

The report is plain data (dicts and lists of strings and numbers) so the CLI can print it as a table, JSON or YAML
without knowing how it was computed. Final objects are real Kubernetes objects (claims with ``status.allocation`` and
``reservedFor``, pods with ``nodeName`` and ``phase``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubedra.allocator.results import result_label
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ResourceClaim, ResourceSlice, to_dict
from kubedra.sim.run import SimulationResult

REPORT_API_VERSION = "kubedra.io/v1alpha1"


def format_duration(seconds: float) -> str:
    """Go-style durations (``1h30m0s`` → shortened to ``1h30m``) for timeline readability."""
    if seconds == 0:
        return "0s"
    whole = int(seconds)
    millis = round((seconds - whole) * 1000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if secs or millis:
        parts.append(f"{secs}.{millis:03d}s".replace(".000s", "s") if millis else f"{secs}s")
    return "".join(parts)


@dataclass(frozen=True)
class PodLine:
    pod: str
    phase: str
    node: str
    devices: list[str]
    reason: str = ""


@dataclass
class Report:
    pods: list[PodLine]
    summary: dict[str, Any]
    objects: list[dict[str, Any]]
    events: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    def as_document(self) -> dict[str, Any]:
        return {
            "apiVersion": REPORT_API_VERSION,
            "kind": "SimulationReport",
            "summary": self.summary,
            "warnings": self.warnings,
            "items": self.objects,
            "events": self.events,
        }


class _DeviceCatalog:
    """Model and class of each device, for the per-model summary."""

    def __init__(self, slices: list[ResourceSlice]) -> None:
        self.model: dict[str, str] = {}
        for slice_ in slices:
            prefix = f"{slice_.spec.driver}/{slice_.spec.pool.name}/"
            for device in slice_.spec.devices:
                attrs = device.attributes
                product = attrs.get("productName") or attrs.get(f"{slice_.spec.driver}/productName")
                kind = attrs.get("type") or attrs.get(f"{slice_.spec.driver}/type")
                label = (product.string if product and product.string else slice_.spec.driver) or slice_.spec.driver
                if kind is not None and kind.string == "mig":
                    profile = attrs.get("profile")
                    label = f"{label} MIG {profile.string if profile and profile.string else ''}".rstrip()
                self.model[prefix + device.name] = label


def _pod_devices(record: PodRecord, claims: dict[str, ResourceClaim]) -> list[str]:
    devices: list[str] = []
    for key in record.claim_keys:
        claim = claims.get(key)
        if claim is None or claim.status.allocation is None:
            continue
        devices.extend(result_label(r) for r in claim.status.allocation.devices.results)
    return devices


def build_report(result: SimulationResult, warnings: list[str] | None = None) -> Report:
    state = result.state
    lines: list[PodLine] = []
    for key in result.order:
        record = state.pods[key]
        phase = record.phase
        devices = _pod_devices(record, state.claims) if phase == "Running" else []
        reason = record.pending_reason if phase == "Pending" else ""
        lines.append(PodLine(key, phase, record.pod.spec.node_name, devices, reason))
    return Report(
        pods=lines,
        summary=_summary(state, lines, result.end_time),
        objects=_objects(state, result.order),
        events=[
            {
                "time": format_duration(e.time),
                "seconds": e.time,
                "type": e.type,
                "object": e.object,
                **({"node": e.node} if e.node else {}),
                **({"message": e.message} if e.message else {}),
            }
            for e in result.events
        ],
        warnings=list(warnings or []),
    )


def _summary(state: ClusterState, lines: list[PodLine], end_time: float) -> dict[str, Any]:
    catalog = _DeviceCatalog(state.slices)
    totals = Counter(catalog.model.values())
    dedicated: Counter[str] = Counter()
    shared: dict[str, set[str]] = {}
    shares = 0
    claims_by_class: Counter[str] = Counter()
    for claim in state.claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for request in claim.spec.devices.requests:
            name = request.exactly.device_class_name if request.exactly else "firstAvailable"
            claims_by_class[name] += 1
        for r in allocation.devices.results:
            device_id = f"{r.driver}/{r.pool}/{r.device}"
            model = catalog.model.get(device_id, r.driver)
            if r.admin_access:
                continue
            if r.share_id:
                shares += 1
                shared.setdefault(model, set()).add(device_id)
            else:
                dedicated[model] += 1
    phases = Counter(line.phase for line in lines)
    allocated_claims = sum(1 for c in state.claims.values() if c.status.allocation is not None)
    return {
        "simulatedTime": format_duration(end_time),
        "pods": {
            "total": len(lines),
            "running": phases.get("Running", 0),
            "succeeded": phases.get("Succeeded", 0),
            "pending": phases.get("Pending", 0),
            "deleted": phases.get("Deleted", 0),
        },
        "claims": {"allocated": allocated_claims, "pending": len(state.claims) - allocated_claims},
        "devices": [
            {
                "model": model,
                "total": totals[model],
                "allocated": dedicated.get(model, 0),
                "sharedDevices": len(shared.get(model, set())),
            }
            for model in sorted(totals)
        ],
        "allocatedRequestsByClass": dict(sorted(claims_by_class.items())),
        "shares": shares,
    }


def _objects(state: ClusterState, order: list[str]) -> list[dict[str, Any]]:
    claims = [to_dict(c) for c in sorted(state.claims.values(), key=lambda c: (c.metadata.namespace, c.metadata.name))]
    pods = [to_dict(state.pods[key].pod) for key in order if not state.pods[key].deleted]
    return [*claims, *pods]
