"""What a simulation tells its user: placements, pending pods with reasons, a summary, the final objects, a timeline.

The report is plain data (dicts and lists of strings and numbers) so the CLI can print it as a table, JSON or YAML
without knowing how it was computed. Final objects are real Kubernetes objects (claims with ``status.allocation`` and
``reservedFor``, pods with ``nodeName`` and ``phase``). The summary counts physical GPUs (``sim.gpus``), their peak
use, and how long pods waited to be scheduled.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubedra.allocator.results import result_label
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects import durations
from kubedra.objects.model import ResourceSlice, to_dict
from kubedra.sim.gates import GATED_MESSAGE, GATED_REASON
from kubedra.sim.gpus import Inventory, capacity_in_use, final_usage, held_whole, peak_usage, share_totals
from kubedra.sim.run import SimulationResult

REPORT_API_VERSION = "kubedra.io/v1alpha1"
format_duration = durations.format_duration  # written once, in objects; the report's readers find it here too


LONGEST_WAITERS = 5


@dataclass(frozen=True)
class PodLine:
    """One pod as the table shows it; ``waited`` is seconds from arrival to binding (to the end if still pending)."""

    pod: str  # namespace/name
    phase: str
    node: str
    devices: list[str]  # result labels: driver/pool/device, marked (share N) or (admin)
    reason: str = ""
    waited: float = 0.0
    arrived: float = 0.0
    started: float | None = None
    finished: float | None = None
    claims: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)  # the devices alone, "gpu-0", for narrow columns

    @property
    def namespace(self) -> str:
        return self.pod.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.pod.split("/", 1)[1]


@dataclass
class Report:
    """What a run shows. ``objects`` and ``events`` are worked out when first read: only ``-o json|yaml`` and the
    HTML page read them, and turning every pod and claim back into a document is most of a table run's report."""

    pods: list[PodLine]
    summary: dict[str, Any]
    result: SimulationResult = field(repr=False)
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def objects(self) -> list[dict[str, Any]]:
        return _objects(self.result.state, self.result.order)

    @functools.cached_property
    def events(self) -> list[dict[str, Any]]:
        return [
            {
                "time": format_duration(e.time),
                "seconds": e.time,
                "type": e.type,
                "object": e.object,
                **({"node": e.node} if e.node else {}),
                **({"message": e.message} if e.message else {}),
            }
            for e in self.result.events
        ]

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


def _pod_devices(record: PodRecord, state: ClusterState) -> tuple[list[str], list[str]]:
    """(result labels, short names): ``gpu-0``, ``gpu-0(share)``, ``gpu-0(admin)`` — no spaces, for columns. A share
    that takes all of a device (1000 of 1000 shares) holds it whole and is not marked."""
    labels: list[str] = []
    names: list[str] = []
    for key in record.claim_keys:
        claim = state.claims.get(key)
        if claim is None or claim.status.allocation is None:
            continue
        for r in claim.status.allocation.devices.results:
            labels.append(result_label(r))
            share = bool(r.share_id) and not held_whole(state, r)
            names.append(r.device + ("(share)" if share else "") + ("(admin)" if r.admin_access else ""))
    return labels, names


def _pod_line(record: PodRecord, state: ClusterState, end_time: float) -> PodLine:
    phase = record.phase
    labels, names = _pod_devices(record, state) if phase == "Running" else ([], [])
    waited = (record.started_at if record.started_at is not None else end_time) - record.arrive_at
    return PodLine(
        pod=record.key,
        phase=phase,
        node=record.pod.spec.node_name,
        devices=labels,
        reason=record.pending_reason if phase == "Pending" else record.end_reason if record.deleted else "",
        waited=max(waited, 0.0),
        arrived=record.arrive_at,
        started=record.started_at,
        finished=record.finished_at,
        claims=[key.split("/", 1)[1] for key in record.claim_keys],
        device_names=names,
    )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of sorted ``values`` (the smallest value at or above ``fraction`` of them)."""
    if not values:
        return 0.0
    return values[max(math.ceil(fraction * len(values)) - 1, 0)]


def _pending_time(lines: list[PodLine]) -> dict[str, Any]:
    """How long pods waited from arrival to binding, over the pods that were bound; those never bound (still pending
    at the end) are counted apart, ``neverScheduled``: their wait has no end, so it is in no percentile (the longest
    waiters list them with their wait up to the end)."""
    waits = sorted(line.waited for line in lines if line.phase != "Pending")
    never = sum(1 for line in lines if line.phase == "Pending")
    p50, p99, longest = percentile(waits, 0.5), percentile(waits, 0.99), waits[-1] if waits else 0.0
    waiters = sorted((line for line in lines if line.waited > 0), key=lambda line: (-line.waited, line.pod))
    return {
        "pods": len(waits),
        "neverScheduled": never,
        "p50": format_duration(p50),
        "p99": format_duration(p99),
        "max": format_duration(longest),
        "p50Seconds": p50,
        "p99Seconds": p99,
        "maxSeconds": longest,
        "longest": [
            {
                "pod": line.pod,
                "waited": format_duration(line.waited),
                "seconds": line.waited,
                "stillPending": line.phase == "Pending",
            }
            for line in waiters[:LONGEST_WAITERS]
        ],
    }


def _kueue_wait(result: SimulationResult) -> dict[str, Any] | None:
    """How long workloads waited in Kueue's queues, from Queued to Admitted (what ``kueue_admission_wait_time_seconds``
    observes): their pods do not exist meanwhile, so the pods' pending time cannot show it. None where nothing was
    queued."""
    queued: dict[str, float] = {}
    admitted: dict[str, float] = {}
    for event in result.events:
        if event.type == "Queued":
            queued.setdefault(event.object, event.time)
        elif event.type == "Admitted" and event.object in queued:
            admitted.setdefault(event.object, event.time - queued[event.object])
    if not queued:
        return None
    waits = sorted(admitted.values())
    longest = max(admitted, key=lambda w: (admitted[w], w), default="")
    if not admitted or admitted[longest] == 0:
        longest = ""  # nothing waited: no workload to name
    return {
        "queued": len(queued),
        "admitted": len(admitted),
        "neverAdmitted": sorted(w for w in queued if w not in admitted),
        "p50": format_duration(percentile(waits, 0.5)),
        "p99": format_duration(percentile(waits, 0.99)),
        "max": format_duration(waits[-1] if waits else 0.0),
        "longest": longest,
    }


def _inventory(result: SimulationResult) -> Inventory:
    """The run's GPU inventory: the sampler's where it built one (the same slices and nodes), else built now."""
    if result.inventory is not None:
        return result.inventory
    return Inventory.build(result.state.slices, result.state.nodes.values())


def _gpus(result: SimulationResult) -> dict[str, Any]:
    """Physical GPUs per model: how many, in use at the end and how (whole, MIG, shares), and the run's peak."""
    state = result.state
    inventory = _inventory(result)
    final, held_as = final_usage(state, inventory)
    peak = peak_usage(state, result.events, inventory, final, result.end_time)
    whole, mig = held_as.whole, held_as.mig
    shared = held_as.shared - mig - whole
    capacity = capacity_in_use(state, inventory)
    totals = inventory.totals()
    plugin_total: Counter[str] = Counter()
    plugin_whole: Counter[str] = Counter()
    for node, (_, model, count) in inventory.plugin.items():
        plugin_total[model] += count
        plugin_whole[model] += min(final.plugin_used[node], count)

    def of_model(gpus: Iterable[str], model: str) -> int:
        return sum(1 for gpu in gpus if inventory.model[gpu] == model)

    models = [
        {
            "model": model,
            "total": totals[model],
            "inUse": final.in_use[model],
            "whole": of_model(whole, model) + plugin_whole[model],
            "migPartitioned": of_model(mig, model),
            "shared": of_model(shared, model),
            "migCapable": of_model(inventory.mig_capable, model),
            "devicePlugin": plugin_total[model],
            "peakInUse": peak.by_model.get(model, 0),
            "capacityInUse": round(capacity.get(model, 0.0) + plugin_whole[model], 6),
        }
        for model in sorted(totals)
    ]
    total = sum(totals.values())
    in_use = round(sum(capacity.values()) + sum(plugin_whole.values()), 6)
    return {
        "total": total,
        "inUse": sum(final.in_use.values()),
        "capacityInUse": in_use,
        "capacityInUsePercent": round(100 * in_use / total, 2) if total else 0.0,
        "whole": sum(m["whole"] for m in models),
        "migPartitioned": len(mig),
        "shared": len(shared),
        "peakInUse": peak.gpus,
        "peakTime": format_duration(peak.seconds),
        "peakSeconds": peak.seconds,
        "gpuHours": round(peak.gpu_seconds / 3600, 4),
        "meanInUse": round(peak.gpu_seconds / result.end_time, 4) if result.end_time > 0 else float(peak.gpus),
        "models": models,
    }


def _fragmentation(result: SimulationResult) -> dict[str, Any]:
    from kubedra.scheduler.claims_fit import ClaimsFit
    from kubedra.sim.fragmentation import fragmentation

    if result.fragmentation_end is not None:  # the run's sampler took them at its end already
        return result.fragmentation_end
    state = result.state
    inventory = _inventory(result)
    fit = ClaimsFit(state, result.allocator) if result.allocator is not None else None
    return fragmentation(state, inventory, fit, (state.pods[key] for key in result.order))


def build_report(result: SimulationResult, warnings: list[str] | None = None) -> Report:
    state = result.state
    lines = [_pod_line(state.pods[key], state, result.end_time) for key in result.order]
    summary = _summary(state, lines, result.end_time)
    summary["gpus"] = _gpus(result)
    summary["pendingTime"] = _pending_time(lines)
    if (kueue := _kueue_wait(result)) is not None:
        summary["kueueAdmission"] = kueue
    summary["fragmentation"] = {**_fragmentation(result), "series": result.fragmentation_series}
    return Report(pods=lines, summary=summary, result=result, warnings=list(warnings or []))


def _summary(state: ClusterState, lines: list[PodLine], end_time: float) -> dict[str, Any]:
    catalog = _DeviceCatalog(state.slices)
    totals = Counter(catalog.model.values())
    dedicated: Counter[str] = Counter()
    shared: dict[str, set[str]] = {}
    shares = 0
    claims_by_class: Counter[str] = Counter()
    allocated_claims = 0
    for claim in state.claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        allocated_claims += 1
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
            if r.share_id and not held_whole(state, r):
                shared.setdefault(model, set()).add(device_id)
            else:
                dedicated[model] += 1  # a device, or a share holding all of one
    phases = Counter(line.phase for line in lines)
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
        "shares": {"allocations": shares, **share_totals(state)},
    }


def _objects(state: ClusterState, order: list[str]) -> list[dict[str, Any]]:
    claims = [to_dict(c) for c in sorted(state.claims.values(), key=lambda c: (c.metadata.namespace, c.metadata.name))]
    pods = [_pod_document(state.pods[key]) for key in order if not state.pods[key].deleted]
    return [*claims, *pods]


def _pod_document(record: Any) -> dict[str, Any]:
    """The pod as the API would show it, with the ``PodScheduled`` condition: ``True`` once bound (the binding
    subresource sets it), ``False`` with kube-scheduler's reason (``Unschedulable``, or ``SchedulerError``) and
    message while it was tried and did not fit; none for a pod the scheduler has not tried (waiting for its claim)."""
    document = to_dict(record.pod)
    condition: dict[str, Any] | None = None
    if record.pod.spec.node_name:
        condition = {"type": "PodScheduled", "status": "True"}
    elif record.pending_reason:
        failed = record.pending_reason.startswith("error: ")
        reason = GATED_REASON if record.pending_reason == GATED_MESSAGE else "SchedulerError" if failed else (
            "Unschedulable")
        condition = {"type": "PodScheduled", "status": "False", "reason": reason,
                     "message": record.pending_reason.removeprefix("error: ")}
    if condition is not None:
        status = document.setdefault("status", {})
        kept = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
        status["conditions"] = [*kept, condition]
    return document
