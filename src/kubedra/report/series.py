"""What the report draws, as plain data from one run: who held which device when, why pods waited over time, GPUs in
use by model and pool, and how long each pod waited. Each is one pass over the run's events and records, so a
100,000-pod run costs a fraction of the run itself.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from kubedra.sim.gpus import Inventory
from kubedra.sim.run import SimulationResult

Series = list[tuple[float, float]]  # (seconds, value) steps: the value holds from that time until the next point
POOL_LABELS = ("kubedra.io/node-pool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
               "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool", "node.kubernetes.io/instance-type")
"""Labels that name a node's pool, first found wins; without one, the name less its ``-N`` (a NodePool's nodes)."""


@dataclass(frozen=True)
class Hold:
    """One claim holding one device from ``start`` to ``end`` (the run's end if it still holds it)."""

    node: str
    device: str  # the device's name in its pool: gpu-0, gpu-0-mig-1g.10gb-0 ...
    claim: str  # namespace/name
    start: float
    end: float
    shared: bool  # a device published for several claims at once (allowMultipleAllocations: consumable shares)


def pool_of(name: str, labels: dict[str, str]) -> str:
    for label in POOL_LABELS:
        if labels.get(label):
            return labels[label]
    return re.sub(r"-\d+$", "", name)


def holds(result: SimulationResult) -> list[Hold]:
    """Every (claim, device) interval of the run; claims allocated in the input hold theirs from 0."""
    open_at: dict[tuple[str, str], tuple[float, str]] = {}  # (claim, device id) -> (start, node)
    found: list[tuple[str, str, str, float, float]] = []
    allocated_by_events: set[str] = set()
    for event in result.events:
        if event.type not in ("Allocated", "Deallocated"):
            continue
        claim = event.object.removeprefix("ResourceClaim ")
        if event.type == "Allocated":
            allocated_by_events.add(claim)
            for device in event.devices:
                open_at[(claim, device)] = (event.time, event.node)
        else:
            for device in event.devices:
                start, node = open_at.pop((claim, device), (0.0, event.node))
                found.append((node, device, claim, start, event.time))
    for key, claim_object in result.state.claims.items():
        allocation = claim_object.status.allocation
        if allocation is None or key in allocated_by_events:
            continue
        for r in allocation.devices.results:
            if not r.admin_access:
                open_at.setdefault((key, f"{r.driver}/{r.pool}/{r.device}"), (0.0, _node_of(result, r.pool)))
    for (claim, device), (start, node) in open_at.items():
        found.append((node, device, claim, start, result.end_time))
    shared = {f"{s.spec.driver}/{s.spec.pool.name}/{d.name}" for s in result.state.slices for d in s.spec.devices
              if d.allow_multiple_allocations}
    natural = {name: _natural(name) for name in {device.rsplit("/", 1)[-1] for _, device, _, _, _ in found}}
    return sorted((Hold(node, device.rsplit("/", 1)[-1], claim, start, end, device in shared)
                   for node, device, claim, start, end in found),
                  key=lambda h: (h.node, natural[h.device], h.start, h.claim))


def _natural(name: str) -> list[tuple[int, str]]:
    """gpu-2 before gpu-10."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", name)]


def _node_of(result: SimulationResult, pool: str) -> str:
    """A slice's pool is its node's name for node-local devices (NVIDIA's driver names pools after nodes)."""
    return pool if pool in result.state.nodes else ""


def reason_group(message: str) -> str:
    """A scheduler message without its counts, so one reason is one series however many nodes a cluster has:
    ``0/5000 nodes are available: 4990 cannot allocate all claims, 10 Insufficient cpu.`` ->
    ``cannot allocate all claims, Insufficient cpu``."""
    text = re.sub(r"^0/\d+ nodes are available: ", "", message).rstrip(".")
    text = re.sub(r"(^|, )\d+ ", r"\1", text)
    return re.sub(r"\. preemption: .*$", "", text) or "pending"


def pending_by_reason(result: SimulationResult) -> dict[str, Series]:
    """Pods pending at each instant, by the reason they wait for (a pod that waits for no reason the scheduler gave
    yet, e.g. between arrival and its first attempt, counts as ``queued``)."""
    changes: list[tuple[float, str, int]] = []
    current: dict[str, str] = {}  # pod -> reason group it is counted under
    for event in result.events:
        if not event.object.startswith("Pod "):
            continue
        pod = event.object[4:]
        if event.type in ("Pending", "Failed"):
            group = reason_group(event.message)
            previous = current.get(pod)
            if previous == group:
                continue
            if previous is not None:
                changes.append((event.time, previous, -1))
            else:
                record = result.state.pods.get(pod)
                arrived = record.arrive_at if record is not None else event.time
                if arrived < event.time:
                    changes += [(arrived, "queued", 1), (event.time, "queued", -1)]
            changes.append((event.time, group, 1))
            current[pod] = group
        elif event.type in ("Scheduled", "Deleted") and pod in current:
            changes.append((event.time, current.pop(pod), -1))
    return _grouped([(t, g, d) for t, g, d in changes])


def _steps(changes: list[tuple[float, int]]) -> Series:
    """Cumulative sums of (time, delta), one point per instant, only where the value changes."""
    points: Series = [(0.0, 0.0)]
    value = 0.0
    for time, delta in sorted(changes, key=lambda c: c[0]):
        value += delta
        if points[-1][0] == time:
            points[-1] = (time, value)
        else:
            points.append((time, value))
    compact: Series = []
    for point in points:
        if not compact or point[1] != compact[-1][1]:
            compact.append(point)
    return compact


def gpu_use(result: SimulationResult) -> tuple[dict[str, Series], dict[str, Series], Counter[str]]:
    """Physical GPUs in use over time by model and by pool (a GPU counts once however many MIG devices or shares it
    serves; device-plugin GPUs included), and each model's total."""
    state = result.state
    inventory = Inventory.build(state.slices, state.nodes.values())
    node_of_gpu: dict[str, str] = {}
    for slice_ in state.slices:
        prefix = f"{slice_.spec.driver}/{slice_.spec.pool.name}/"
        for device in slice_.spec.devices:
            gpu = inventory.gpu_of.get(prefix + device.name)
            if gpu is not None:
                node_of_gpu[gpu] = slice_.spec.node_name or slice_.spec.pool.name
    pools = {name: pool_of(name, node.metadata.labels) for name, node in state.nodes.items()}
    by_model: list[tuple[float, str, int]] = []
    by_pool: list[tuple[float, str, int]] = []
    on_gpu: Counter[str] = Counter()
    for time, device_id, sign in _device_changes(result):
        gpu = inventory.gpu_of.get(device_id)
        if gpu is None:
            continue
        before = on_gpu[gpu] > 0
        on_gpu[gpu] += sign
        if before != (on_gpu[gpu] > 0):  # the first hold of a GPU takes it, the last release frees it
            delta = 1 if on_gpu[gpu] > 0 else -1
            node = node_of_gpu.get(gpu, "")
            by_model.append((time, inventory.model[gpu], delta))
            by_pool.append((time, pools.get(node, node or "network-attached"), delta))
    for record in state.pods.values():
        node = record.pod.spec.node_name
        if node not in inventory.plugin or record.started_at is None:
            continue
        resource, model, total = inventory.plugin[node]
        quantity = record.requests.get(resource)
        count = min(int(quantity.as_int64()) if quantity is not None else 0, total)
        if count:
            spans = [(record.started_at, count)]
            if record.finished_at is not None:
                spans.append((record.finished_at, -count))
            for time, delta in spans:
                by_model.append((time, model, delta))
                by_pool.append((time, pools.get(node, node), delta))
    return _grouped(by_model), _grouped(by_pool), inventory.totals()


def _grouped(changes: list[tuple[float, str, int]]) -> dict[str, Series]:
    """One step series per name, in name order, from (time, name, delta) changes (one pass, however many names)."""
    per_name: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for time, name, delta in changes:
        per_name[name].append((time, delta))
    return {name: _steps(per_name[name]) for name in sorted(per_name)}


def _device_changes(result: SimulationResult) -> list[tuple[float, str, int]]:
    """(time, device id, +1/-1) of every allocation and release in time order, after what was held at the start:
    the end undone (what claims hold at the end, less what the events allocated, plus what they freed), which also
    covers claims allocated in the input."""
    held_at_start: Counter[str] = Counter(
        f"{r.driver}/{r.pool}/{r.device}" for claim in result.state.claims.values()
        if claim.status.allocation is not None for r in claim.status.allocation.devices.results if not r.admin_access)
    changes: list[tuple[float, str, int]] = []
    for event in result.events:
        if event.type in ("Allocated", "Deallocated"):
            sign = 1 if event.type == "Allocated" else -1
            for device in event.devices:
                changes.append((event.time, device, sign))
                held_at_start[device] -= sign
    return [(0.0, device, count) for device, count in sorted(held_at_start.items()) if count > 0] + changes


def waits(result: SimulationResult) -> list[tuple[str, float, bool]]:
    """(pod, seconds from arrival to binding, still pending) for every pod; a pending pod waits until the end."""
    out = []
    for key in result.order:
        record = result.state.pods[key]
        started = record.started_at
        end = started if started is not None else result.end_time
        out.append((key, max(end - record.arrive_at, 0.0), started is None and not record.deleted))
    return out
