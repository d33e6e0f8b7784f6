"""Fragmentation and stranded capacity: how much free GPU capacity the waiting pods cannot use, and the FGD measure.

Worked out from a state: the final one at report time, and a few during the run (``Sampler``: one sample each time
simulated time passes another ``every`` seconds, after that instant's scheduling) for the series over time; never on
the per-pod path. Per GPU model and node pool (the ``kubedra.io/nodepool`` label NodePools put on their nodes):

* ``free``: GPUs nothing is allocated on;
* ``usable``: free GPUs on a node where the claims of at least one pending pod could be allocated now — the
  allocator's own answer (``scheduler.claims_fit.ClaimsFit``: the claims' existing allocations, then the allocator; the
  pod's node rules and cpu/memory are not asked), for one pod of each distinct shape;
* ``stranded``: free but not usable, counted only while pods are pending (free capacity with no demand waiting is
  idle, not stranded);
* ``migPartlyUsed``: MIG-capable GPUs whose memory slices are partly held; ``sharesLeft``: consumable shares not
  consumed on GPUs that are partly shared;
* ``fgd``: the fragmentation measure of Weng et al. (ATC'23), in GPUs, summed over nodes: F_n(M) for the
  distribution M of the run's pods' task shapes (``scheduler.fgd``, which the ``fgd`` policy descends).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubedra.cluster.devices import DeviceRecord
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.fgd import Shapes, TaskShape, claim_specs, cpu_milli, node_fragment
from kubedra.sim.gpus import SHARES_CAPACITY, Inventory, gpu_use

POOL_LABEL = "kubedra.io/nodepool"


class NodeFit(Protocol):
    """What the stranded count asks: could this pending pod's claims be allocated on this node now."""

    def key(self, record: PodRecord) -> str: ...

    def attempt(self, record: PodRecord) -> Any: ...

    def fits(self, attempt: Any, node: Any, key: str | None = None) -> bool: ...


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


class _Gpu:
    __slots__ = ("devices", "left", "model", "node")

    def __init__(self, model: str, node: str, left: float, first: DeviceRecord) -> None:
        self.model = model
        self.node = node
        self.left = left  # 1 - use
        self.devices = [first]


def _gpus(state: ClusterState, inventory: Inventory) -> dict[str, _Gpu]:
    """The node-local GPUs, in the inventory's order (one pass: a sample at 100,000 nodes walks 800,000 of them)."""
    use = gpu_use(state, inventory)
    gpus: dict[str, _Gpu] = {}
    by_key, models = state.devices.by_key, inventory.model
    for device_id, gpu in inventory.gpu_of.items():
        record = by_key.get(device_id)
        if record is None or record.node is None:
            continue
        entry = gpus.get(gpu)
        if entry is None:
            gpus[gpu] = _Gpu(models[gpu], record.node, 1.0 - use.get(gpu, 0.0), record)
        else:
            entry.devices.append(record)
    return gpus


class Memo:
    """What stays true of the run's pods between samples: each pod's shape for the fit check and the FGD task
    weights (pods keep their requests and claim specs; a Job's later pods change the count, and the weights are
    redone)."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.weights: Counter[TaskShape] | None = None
        self.weighed = -1  # pods the weights were counted over
        self.fgd: dict[tuple[tuple[float, ...], str, int], float] = {}  # F_n(M) of a node state, for these weights

    def weigh(self, state: ClusterState, records: list[PodRecord], shapes: Shapes) -> Counter[TaskShape]:
        """The run's task shapes, counted once per pod set."""
        if self.weights is None or self.weighed != len(records):
            # Pods of one workload share their template's claim spec objects: their shape is worked out once
            # (specs by identity: the objects stay alive for the count, and ``of`` reads only them and the cpu).
            alike: dict[tuple[int, tuple[int, ...]], TaskShape] = {}
            # Before that, by the very objects read (the cpu request, the pod's claim list, its namespace): a
            # workload's pods share them, so most pods cost one lookup, no claim walk, no cpu conversion.
            read: dict[tuple[int, int, str], TaskShape] = {}

            def shape(record: PodRecord) -> TaskShape:
                pod = record.pod
                quick = (id(record.requests.get("cpu")), id(pod.spec.resource_claims), pod.metadata.namespace)
                found = read.get(quick)
                if found is None:
                    specs = claim_specs(state, record)
                    key = (cpu_milli(record), tuple([id(spec) for spec in specs]))
                    found = alike.get(key)
                    if found is None:
                        found = alike[key] = shapes.of(key[0], specs)
                    read[quick] = found
                return found

            # Counted by shape object first (hashing a shape's value per pod costs more than the lookup), then
            # merged by value in the order each first came: what ``Counter(shape(r) for r in records)`` gives.
            by_object: dict[int, list[Any]] = {}
            for record in records:
                found = shape(record)
                counted = by_object.get(id(found))
                if counted is None:
                    by_object[id(found)] = [found, 1]
                else:
                    counted[1] += 1
            weights: Counter[TaskShape] = Counter()
            for found, count in by_object.values():
                weights[found] += count
            self.weights = weights
            self.weighed = len(records)
            self.fgd.clear()
        return self.weights

    def node_fgd(self, lefts: tuple[float, ...], model: str, cpu_left: int) -> float:
        """F_n(M) of one node state, for the weights ``weigh`` counted last."""
        state_key = (lefts, model, cpu_left)
        found = self.fgd.get(state_key)
        if found is None:
            weights = self.weights or Counter()
            total = sum(weights.values())
            found = self.fgd[state_key] = sum(
                w * node_fragment(lefts, model, cpu_left, t) for t, w in weights.items()) / total if total else 0.0
        return found

    def key(self, fit: NodeFit, record: PodRecord) -> str:
        """The pod's shape for ``fit`` (pods alike get the same answers), worked out once per pod."""
        found = self.keys.get(record.key)
        if found is None:
            found = self.keys[record.key] = fit.key(record)
        return found


def _usable_nodes(state: ClusterState, fit: NodeFit, pending: list[PodRecord], candidates: Sequence[str],
                  memo: Memo) -> set[str]:
    if not candidates:  # no node with a free GPU: the pending pods' shapes are not worked out
        return set()
    shapes: dict[str, PodRecord] = {}
    for record in pending:
        shapes.setdefault(memo.key(fit, record), record)
    attempts = [(key, a) for key, r in shapes.items() if (a := fit.attempt(r)) is not None]
    usable: set[str] = set()
    for name in candidates:
        node = state.nodes.get(name)
        if node is not None and any(fit.fits(a, node, key) for key, a in attempts):
            usable.add(name)
    return usable


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


def _by_node(gpus: dict[str, _Gpu]) -> tuple[dict[str, dict[str, list[_Gpu]]], set[str], dict[str, DeviceRecord]]:
    """The GPUs by node and model (in the inventory's order), the nodes with a free GPU, a device of each model."""
    free_nodes: set[str] = set()
    by_node: dict[str, dict[str, list[_Gpu]]] = {}
    samples: dict[str, DeviceRecord] = {}
    for gpu in gpus.values():
        node, model = gpu.node, gpu.model
        if gpu.left >= 1.0:
            free_nodes.add(node)
        on_node = by_node.get(node)
        if on_node is None:
            by_node[node] = {model: [gpu]}
        elif model in on_node:
            on_node[model].append(gpu)
        else:
            on_node[model] = [gpu]
        if model not in samples:
            samples[model] = gpu.devices[0]
    return by_node, free_nodes, samples


def fragmentation(state: ClusterState, inventory: Inventory, fit: NodeFit | None, pods: Iterable[PodRecord], *,
                  arrived_by: float | None = None, memo: Memo | None = None) -> dict[str, Any]:
    """The summary's ``fragmentation``: totals and one row per (pool, model); ``fit`` None skips the stranded
    count (no allocator to ask). ``arrived_by``: during a run, pods arriving later are not waiting yet (the FGD
    measure's task distribution is still every pod's)."""
    gpus = _gpus(state, inventory)
    records = list(pods)
    pending = [r for r in records if r.phase == "Pending" and (arrived_by is None or r.arrive_at <= arrived_by)]
    by_node, free_nodes, samples = _by_node(gpus)
    memo = memo if memo is not None else Memo()
    usable = _usable_nodes(state, fit, pending, sorted(free_nodes), memo) if fit is not None and pending else set()
    shapes = Shapes(state, samples)
    memo.weigh(state, records, shapes)
    rows: dict[tuple[str, str], Tally] = {}
    for node, models in by_node.items():
        pool = state.nodes[node].metadata.labels.get(POOL_LABEL, "") if node in state.nodes else ""
        cpu_left = _cpu_left(state, node) if node in state.nodes else 0
        for model in sorted(models) if len(models) > 1 else models:
            of_model = models[model]
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
            tally.fgd += memo.node_fgd(tuple([g.left for g in of_model]), model, cpu_left)
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


SERIES_FIELDS = ("pendingPods", "gpus", "free", "usable", "stranded", "migPartlyUsed", "sharesLeft", "fgd",
                 "fgdPercent")


def series_point(seconds: float, figures: dict[str, Any]) -> dict[str, Any]:
    """One point of the series: the totals and each pool's row, at ``seconds`` of simulated time."""
    return {"seconds": seconds, **{k: figures[k] for k in SERIES_FIELDS}, "pools": figures["pools"]}


class Sampler:
    """The fragmentation of a running simulation's state, every ``every`` seconds of simulated time (``sample`` is
    called after each instant; it samples the first instant at or past the next due time). The devices and the
    allocator's checks are the run's own; asking them changes no decision (the allocator is pure)."""

    def __init__(self, state: ClusterState, fit: NodeFit | None, every: float) -> None:
        self.state = state
        self.fit = fit
        self.every = every
        self.points: list[dict[str, Any]] = []
        self._inventory: Inventory | None = None
        self._memo = Memo()
        self._due = 0.0
        self._last: tuple[float, dict[str, Any]] | None = None  # the latest ``now``: when, and what

    @property
    def inventory(self) -> Inventory | None:
        """The GPU inventory of the state, once a sample has built it."""
        return self._inventory

    def last_at(self, seconds: float) -> dict[str, Any] | None:
        """What ``now`` gave at ``seconds`` if that was its latest call (the end of a run: the report's figures)."""
        return self._last[1] if self._last is not None and self._last[0] == seconds else None

    def now(self, seconds: float, pods: Iterable[PodRecord]) -> dict[str, Any]:
        """The summary's ``fragmentation`` of the state as it is at ``seconds``."""
        if self._inventory is None:
            self._inventory = Inventory.build(self.state.slices, self.state.nodes.values())
        found = fragmentation(self.state, self._inventory, self.fit, pods, arrived_by=seconds, memo=self._memo)
        self._last = (seconds, found)
        return found

    def sample(self, seconds: float, pods: Iterable[PodRecord], *, last: bool = False) -> None:
        """Record a point if one is due (``last``: the end of the run, recorded unless just sampled)."""
        if self.points and self.points[-1]["seconds"] == seconds:
            return
        if seconds < self._due and not last:
            return
        self.points.append(series_point(seconds, self.now(seconds, pods)))
        while self._due <= seconds:
            self._due += self.every if self.every > 0 else float("inf")
