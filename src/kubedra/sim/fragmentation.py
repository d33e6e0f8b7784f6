"""Fragmentation and stranded capacity: how much free GPU capacity the waiting pods cannot use, and the FGD measure.

Worked out at report time from the final state (nothing on the per-pod path). Per GPU model and node pool (the
``kubedra.io/nodepool`` label NodePools put on their nodes):

* ``free``: GPUs nothing is allocated on;
* ``usable``: free GPUs on a node where the claims of at least one pending pod could be allocated now — the
  allocator's own answer (``scheduler.explain.ClaimsFit``: the claims' existing allocations, then the allocator; the
  pod's node rules and cpu/memory are not asked), for one pod of each distinct shape;
* ``stranded``: free but not usable, counted only while pods are pending (free capacity with no demand waiting is
  idle, not stranded);
* ``migPartlyUsed``: MIG-capable GPUs whose memory slices are partly held; ``sharesLeft``: consumable shares not
  consumed on GPUs that are partly shared;
* ``fgd``: the fragmentation measure of Weng et al. (ATC'23), in GPUs: for every node and every task shape m of the
  run's pods, weighted by its share p_m of them, the node's idle GPU capacity that m could not use — all of it when m
  asks no GPU, cannot have the node's model or does not fit (GPUs or cpu), else the idle part of each GPU with less
  left than m asks of one GPU. A task's shape is its cpu request and its first device request: the count, the
  fraction of one device each asks (consumable capacity asked / the device's, 1 for a whole device) and the models
  its class and selectors accept (evaluated on one device of each model).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubedra.cel import CelError, CompileCache, DeviceView
from kubedra.cluster.devices import DeviceRecord
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ExactDeviceRequest, ResourceClaim, to_dict
from kubedra.objects.quantity import Quantity
from kubedra.sim.gpus import SHARES_CAPACITY, Inventory, gpu_use

POOL_LABEL = "kubedra.io/nodepool"


class NodeFit(Protocol):
    """What the stranded count asks: could this pending pod's claims be allocated on this node now."""

    def attempt(self, record: PodRecord) -> Any: ...

    def fits(self, attempt: Any, node: Any) -> bool: ...


@dataclass
class Tally:
    """One (pool, model)'s figures."""

    gpus: int = 0
    free: int = 0
    usable: int = 0
    mig_partly_used: int = 0
    shares_left: int = 0
    fgd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"gpus": self.gpus, "free": self.free, "usable": self.usable, "migPartlyUsed": self.mig_partly_used,
                "sharesLeft": self.shares_left, "fgd": round(self.fgd, 4)}


@dataclass(frozen=True)
class TaskShape:
    """A task as the FGD measure sees it."""

    cpu_milli: int
    count: int  # devices asked (0: no GPU)
    fraction: float  # of one device, each
    models: frozenset[str] | None  # models it can have; None: any


@dataclass
class _Gpu:
    model: str
    node: str
    left: float  # 1 - use
    devices: list[DeviceRecord] = field(default_factory=list)


def _gpus(state: ClusterState, inventory: Inventory) -> dict[str, _Gpu]:
    use = gpu_use(state, inventory)
    gpus: dict[str, _Gpu] = {}
    for device_id, gpu in inventory.gpu_of.items():
        record = state.devices.by_key.get(device_id)
        if record is None or record.node is None:
            continue
        entry = gpus.get(gpu)
        if entry is None:
            entry = gpus[gpu] = _Gpu(inventory.model[gpu], record.node, 1.0 - use.get(gpu, 0.0))
        entry.devices.append(record)
    return gpus


def _shape_key(state: ClusterState, record: PodRecord) -> str:
    """Pods alike for fitting: the same requests, node rules and claim specs."""
    claims = [to_dict(c.spec) if (c := state.claims.get(k)) is not None else k for k in record.claim_keys]
    spec = record.pod.spec
    return json.dumps([str(record.requests_key), spec.node_selector, to_dict(spec.affinity) if spec.affinity else None,
                       [to_dict(t) for t in spec.tolerations], claims], sort_keys=True, default=str)


def _usable_nodes(state: ClusterState, fit: NodeFit, pending: list[PodRecord], candidates: Iterable[str]) -> set[str]:
    shapes: dict[str, PodRecord] = {}
    for record in pending:
        shapes.setdefault(_shape_key(state, record), record)
    attempts = [a for r in shapes.values() if (a := fit.attempt(r)) is not None]
    usable: set[str] = set()
    for name in candidates:
        node = state.nodes.get(name)
        if node is not None and any(fit.fits(a, node) for a in attempts):
            usable.add(name)
    return usable


class _Shapes:
    """Task shapes of the run's pods, with the models each accepts (CEL on one device per model)."""

    def __init__(self, state: ClusterState, gpus: dict[str, _Gpu]) -> None:
        self.state = state
        self.sample: dict[str, DeviceRecord] = {}
        for gpu in gpus.values():
            if gpu.model not in self.sample and gpu.devices:
                self.sample[gpu.model] = gpu.devices[0]
        self.cel = CompileCache()

    def _accepts(self, request: ExactDeviceRequest, claim: ResourceClaim) -> frozenset[str] | None:
        device_class = self.state.classes.get(request.device_class_name)
        expressions = [s.cel.expression for s in (device_class.spec.selectors if device_class else []) if s.cel]
        expressions += [s.cel.expression for s in request.selectors if s.cel]
        if not expressions:
            return None
        models = set()
        for model, record in self.sample.items():
            view = DeviceView(record.id.driver, record.device)
            try:
                if all(self.cel.compile(e).evaluate(view) for e in expressions):
                    models.add(model)
            except CelError:
                continue
        del claim
        return frozenset(models)

    def _fraction(self, request: ExactDeviceRequest, models: frozenset[str] | None) -> float:
        if request.capacity is None or not request.capacity.requests:
            return 1.0
        sample = next((r for m, r in self.sample.items() if models is None or m in models), None)
        if sample is None:
            return 1.0
        most = 0.0
        for name, text in request.capacity.requests.items():
            capacity = sample.device.capacity.get(name)
            if capacity is not None:
                total = Quantity.parse(capacity.value).nanos
                if total > 0:
                    most = max(most, Quantity.parse(text).nanos / total)
        return min(most, 1.0) if most else 1.0

    def of(self, record: PodRecord) -> TaskShape:
        cpu = record.requests.get("cpu")
        cpu_milli = cpu.milli_value() if cpu is not None else 0
        for key in record.claim_keys:
            claim = self.state.claims.get(key)
            if claim is None:
                continue
            for request in claim.spec.devices.requests:
                exact = request.exactly or (request.first_available[0] if request.first_available else None)
                if exact is None:
                    continue
                models = self._accepts(exact, claim)  # type: ignore[arg-type]
                count = exact.count or 1
                return TaskShape(cpu_milli, count, self._fraction(exact, models), models)  # type: ignore[arg-type]
        return TaskShape(cpu_milli, 0, 0.0, None)


def _node_fragment(lefts: list[float], model: str, cpu_left: int, task: TaskShape) -> float:
    idle = sum(lefts)
    if task.count == 0 or (task.models is not None and model not in task.models):
        return idle
    enough = sum(1 for left in lefts if left >= task.fraction - 1e-9)
    if enough < task.count or cpu_left < task.cpu_milli:
        return idle
    return sum(left for left in lefts if left < task.fraction - 1e-9)


def _cpu_left(state: ClusterState, node: str) -> int:
    allocatable = state.nodes[node].status.allocatable.get("cpu")
    if allocatable is None:
        return 0
    used = state.usage[node].requested.get("cpu") if node in state.usage else None
    return Quantity.parse(allocatable).milli_value() - (used.milli_value() if used is not None else 0)


def _shares_left(gpu: _Gpu, state: ClusterState) -> int:
    left = 0
    for record in gpu.devices:
        consumed = state.devices.allocated.aggregated_capacity.get(record.id)
        capacity = record.device.capacity.get(SHARES_CAPACITY)
        if consumed and capacity is not None:
            used = consumed.get(SHARES_CAPACITY)
            left += Quantity.parse(capacity.value).as_int64() - (used.as_int64() if used is not None else 0)
    return left


def fragmentation(state: ClusterState, inventory: Inventory, fit: NodeFit | None, pods: Iterable[PodRecord]
                  ) -> dict[str, Any]:
    """The summary's ``fragmentation``: totals and one row per (pool, model); ``fit`` None skips the stranded
    count (no allocator to ask)."""
    gpus = _gpus(state, inventory)
    records = list(pods)
    pending = [r for r in records if r.phase == "Pending"]
    free_nodes = {g.node for g in gpus.values() if g.left >= 1.0}
    usable = _usable_nodes(state, fit, pending, sorted(free_nodes)) if fit is not None and pending else set()
    by_node: dict[str, list[_Gpu]] = {}
    for gpu in gpus.values():
        by_node.setdefault(gpu.node, []).append(gpu)
    shapes = _Shapes(state, gpus)
    weights: Counter[TaskShape] = Counter(shapes.of(r) for r in records)
    total_weight = sum(weights.values())
    rows: dict[tuple[str, str], Tally] = {}
    for node, on_node in by_node.items():
        pool = state.nodes[node].metadata.labels.get(POOL_LABEL, "") if node in state.nodes else ""
        cpu_left = _cpu_left(state, node) if node in state.nodes else 0
        for model in sorted({g.model for g in on_node}):
            of_model = [g for g in on_node if g.model == model]
            tally = rows.setdefault((pool, model), Tally())
            tally.gpus += len(of_model)
            for gpu in of_model:
                if gpu.left >= 1.0:
                    tally.free += 1
                    tally.usable += node in usable
                elif gpu.left > 0.0:
                    if any(d.device.consumes_counters for d in gpu.devices) and any(
                        str(d.id) in inventory.mig for d in gpu.devices
                    ):
                        tally.mig_partly_used += 1
                    tally.shares_left += _shares_left(gpu, state)
            if total_weight:
                lefts = [g.left for g in of_model]
                tally.fgd += sum(w * _node_fragment(lefts, model, cpu_left, t) for t, w in weights.items()
                                 ) / total_weight
    waiting = bool(pending)
    items = []
    for (pool, model), tally in sorted(rows.items()):
        row = {"pool": pool, "model": model, **tally.as_dict()}
        row["stranded"] = tally.free - tally.usable if waiting else 0
        items.append(row)
    totals = Tally()
    for tally in rows.values():
        totals.gpus += tally.gpus
        totals.free += tally.free
        totals.usable += tally.usable
        totals.mig_partly_used += tally.mig_partly_used
        totals.shares_left += tally.shares_left
        totals.fgd += tally.fgd
    summary = {"pendingPods": len(pending), **totals.as_dict(),
               "stranded": totals.free - totals.usable if waiting else 0}
    summary["fgdPercent"] = round(100 * totals.fgd / totals.gpus, 2) if totals.gpus else 0.0
    summary["pools"] = items
    return summary
