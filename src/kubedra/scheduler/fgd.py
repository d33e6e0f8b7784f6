"""The FGD artifact's policies on DRA devices: ``fgd`` (fragmentation gradient descent), ``best-fit``, ``random``.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX
ATC'23). A task is seen as the paper sees it (``TaskShape``): its cpu request and its first device request — how many
devices, the fraction of one device each asks (consumable capacity asked / the device's; 1 for a whole device) and
the GPU models its class and selectors accept (CEL on one device of each model). A node is its GPUs' idle fractions
(1 - use, in device order), its model and its cpu left.

* A node's fragmentation for a task m (``node_fragment``): all its idle GPU capacity when m asks no GPU, cannot have
  the node's model, or does not fit (GPUs or cpu); otherwise the idle part of each GPU with less left than m asks of
  one. For a distribution M of tasks (the run's pods, each shape weighted by its share), F_n(M) = sum p_m F_n(m).
* ``fgd`` places a pod where F_n(M) grows least, as the artifact's FGDScore scores it: 100 x sigmoid(F_n(M) before
  minus after, in GPUs), truncated to an integer (kube-scheduler's score range; nodes on the same integer tie). A
  task asking part of one GPU is tried on each GPU of the node with room for it; the node's score is the best of
  them, and that GPU is the one it takes (``prefer``: the allocator tries it first; the first GPU in the node's order
  wins a tie). Whole GPUs are the first free ones in the node's order (all free GPUs are alike).
* ``best-fit``: the node left with the least, 0.5 x cpu left / the largest node's cpu + 0.5 x GPU left / the largest
  node's GPUs, after the pod (the artifact's weights and normalisation).
* ``random``: a feasible node drawn uniformly.

Every feasible node is scored (the artifact runs with ``percentageOfNodesToScore: 100``), and a tie goes to the
node with the smallest name: the artifact's scheduler (a fork of kube-scheduler v1.20.5) replaced selectHost's
reservoir sampling with that, "for reproducibility" — with integer scores, the packing it causes is worth several
points on share-heavy workloads. ``random`` draws from the run's seeded generator. Pure: state in, a choice out.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubedra.allocator.state import DeviceID
from kubedra.cel import CelError, CompileCache, DeviceView
from kubedra.cluster.devices import USE_SCALE, DeviceRecord
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ExactDeviceRequest, ResourceClaimSpec
from kubedra.objects.quantity import Quantity

EPSILON = 1e-9
MEMO_SIZE = 200_000


@dataclass(frozen=True)
class TaskShape:
    """A task as the FGD paper sees it."""

    cpu_milli: int
    count: int  # devices asked (0: no GPU)
    fraction: float  # of one device, each
    models: frozenset[str] | None  # models it can have; None: any


def node_fragment(lefts: Sequence[float], model: str, cpu_left: int, task: TaskShape) -> float:
    """The node's idle GPU capacity (in GPUs) that ``task`` could not use."""
    idle = sum(lefts)
    if task.count == 0 or (task.models is not None and model not in task.models):
        return idle
    enough = sum(1 for left in lefts if left >= task.fraction - EPSILON)
    if enough < task.count or cpu_left < task.cpu_milli:
        return idle
    return sum(left for left in lefts if left < task.fraction - EPSILON)


def fragmentation(lefts: Sequence[float], model: str, cpu_left: int, tasks: Iterable[tuple[TaskShape, float]]) -> float:
    """F_n(M): ``node_fragment`` weighted by each shape's share."""
    return sum(weight * node_fragment(lefts, model, cpu_left, task) for task, weight in tasks)


def fgd_score(before: float, after: float) -> int:
    """The artifact's FGDScore of a change of fragmentation (GPUs): higher is better, 50 for no change."""
    return int(100 / (1 + math.exp(after - before)))


def is_share(task: TaskShape) -> bool:
    """A task asking part of one GPU: the one kind whose GPU within the node is a choice."""
    return task.count == 1 and task.fraction < 1 - EPSILON


def placed(lefts: Sequence[float], task: TaskShape) -> tuple[float, ...] | None:
    """The idle fractions after the allocator places the task (first devices in order that fit); None: no fit."""
    after = list(lefts)
    need = task.count
    for i, left in enumerate(after):
        if need and left >= task.fraction - EPSILON:
            after[i] = max(0.0, left - task.fraction)
            need -= 1
    return None if need else tuple(after)


class Shapes:
    """Task shapes of claim specs, with the models each accepts; ``samples``: one device per model."""

    def __init__(self, state: ClusterState, samples: dict[str, DeviceRecord]) -> None:
        self.state = state
        self.samples = samples
        self.cel = CompileCache()
        self._accepts: dict[tuple[str, tuple[str, ...]], frozenset[str] | None] = {}

    def _models(self, request: ExactDeviceRequest) -> frozenset[str] | None:
        device_class = self.state.classes.get(request.device_class_name)
        expressions = [s.cel.expression for s in (device_class.spec.selectors if device_class else []) if s.cel]
        expressions += [s.cel.expression for s in request.selectors if s.cel]
        key = (request.device_class_name, tuple(expressions))
        if key in self._accepts:
            return self._accepts[key]
        models: frozenset[str] | None = None
        if expressions:
            found = set()
            for model, record in self.samples.items():
                view = DeviceView(record.id.driver, record.device)
                try:
                    if all(self.cel.compile(e).evaluate(view) for e in expressions):
                        found.add(model)
                except CelError:
                    continue
            models = frozenset(found)
        self._accepts[key] = models
        return models

    def _fraction(self, request: ExactDeviceRequest, models: frozenset[str] | None) -> float:
        if request.capacity is None or not request.capacity.requests:
            return 1.0
        sample = next((r for m, r in self.samples.items() if models is None or m in models), None)
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

    def of(self, cpu_milli: int, specs: Iterable[ResourceClaimSpec]) -> TaskShape:
        for spec in specs:
            for request in spec.devices.requests:
                exact = request.exactly
                if exact is None and request.first_available:
                    first = request.first_available[0]
                    exact = ExactDeviceRequest(device_class_name=first.device_class_name, selectors=first.selectors,
                                               count=first.count, capacity=first.capacity)
                if exact is None:
                    continue
                models = self._models(exact)
                return TaskShape(cpu_milli, exact.count or 1, self._fraction(exact, models), models)
        return TaskShape(cpu_milli, 0, 0.0, None)


def cpu_milli(record: PodRecord) -> int:
    cpu = record.requests.get("cpu")
    return cpu.milli_value() if cpu is not None else 0


def claim_specs(state: ClusterState, record: PodRecord) -> list[ResourceClaimSpec]:
    """The claim specs a pod asks for: its claims where they exist, else its templates'."""
    specs: list[ResourceClaimSpec] = []
    namespace = record.pod.metadata.namespace
    for source in record.pod.spec.resource_claims:
        if source.resource_claim_name:
            claim = state.claims.get(f"{namespace}/{source.resource_claim_name}")
            if claim is not None:
                specs.append(claim.spec)
        elif source.resource_claim_template_name:
            template = state.templates.get(f"{namespace}/{source.resource_claim_template_name}")
            if template is not None:
                specs.append(template.spec.spec)
    return specs


class TraceScorer:
    """Chooses among feasible nodes by ``fgd``, ``best-fit`` or ``random``."""

    def __init__(self, state: ClusterState, policy: str) -> None:
        self.state = state
        self.policy = policy
        self._gpus: dict[str, list[DeviceRecord]] | None = None
        self._model: dict[str, str] = {}
        self._tasks: list[tuple[TaskShape, float]] | None = None
        self._shapes: Shapes | None = None
        self._pod_shapes: dict[str, TaskShape] = {}
        self._max_cpu = 0
        self._max_gpus = 0
        self._memo: dict[tuple[tuple[float, ...], str, int], float] = {}  # F_n(M) of a node state: nodes repeat

    def _build(self) -> None:
        gpus: dict[str, list[DeviceRecord]] = {}
        samples: dict[str, DeviceRecord] = {}
        for record in self.state.devices.by_key.values():
            attrs = record.device.attributes
            kind = attrs.get("type") or attrs.get(f"{record.id.driver}/type")
            if record.node is None or (kind is not None and kind.string != "gpu"):
                continue
            product = attrs.get("productName") or attrs.get(f"{record.id.driver}/productName")
            model = product.string if product is not None and product.string else record.id.driver
            gpus.setdefault(record.node, []).append(record)
            self._model.setdefault(record.node, model)
            samples.setdefault(model, record)
        self._gpus = gpus
        self._shapes = Shapes(self.state, samples)
        for name, node in self.state.nodes.items():
            cpu = node.status.allocatable.get("cpu")
            self._max_cpu = max(self._max_cpu, Quantity.parse(cpu).milli_value() if cpu else 0)
            self._max_gpus = max(self._max_gpus, len(gpus.get(name, ())))
        weights: Counter[TaskShape] = Counter(self.shape(r) for r in self.state.pods.values())
        total = sum(weights.values())
        self._tasks = [(task, count / total) for task, count in weights.items()] if total else []

    def shape(self, record: PodRecord) -> TaskShape:
        found = self._pod_shapes.get(record.key)
        if found is None:
            assert self._shapes is not None
            found = self._pod_shapes[record.key] = self._shapes.of(cpu_milli(record), claim_specs(self.state, record))
        return found

    def _lefts(self, node: str) -> tuple[float, ...]:
        assert self._gpus is not None
        table = self.state.devices
        held = table.allocated.allocated_devices
        return tuple(
            0.0 if r.id in held else 1.0 - table.share_use_of(r.id) / USE_SCALE for r in self._gpus.get(node, ())
        )

    def _cpu_left(self, node: str) -> int:
        cpu = self.state.nodes[node].status.allocatable.get("cpu")
        usage = self.state.usage.get(node)
        used = usage.requested.get("cpu") if usage is not None else None
        return (Quantity.parse(cpu).milli_value() if cpu else 0) - (used.milli_value() if used is not None else 0)

    def _score(self, node: str, task: TaskShape) -> float:
        """Lower is better."""
        lefts = self._lefts(node)
        cpu_left = self._cpu_left(node)
        if self.policy == "best-fit":
            after: tuple[float, ...] | None = placed(lefts, task) if task.count else lefts
            gpu_left = sum(after if after is not None else lefts)
            cpu_part = (cpu_left - task.cpu_milli) / self._max_cpu if self._max_cpu else 0.0
            gpu_part = gpu_left / self._max_gpus if self._max_gpus else 0.0
            return 0.5 * cpu_part + 0.5 * gpu_part
        return -self._fgd(node, lefts, cpu_left, task)[0]

    def _fgd(self, node: str, lefts: tuple[float, ...], cpu_left: int, task: TaskShape) -> tuple[int, int | None]:
        """The node's FGDScore for the task and, for a share, the index of the GPU that gets it."""
        model = self._model.get(node, "")
        before = self._fragmentation(lefts, model, cpu_left)
        cpu_after = cpu_left - task.cpu_milli
        if not is_share(task):
            after = placed(lefts, task) if task.count else lefts
            # None: the allocator found room our model does not see (other devices): no change seen
            return fgd_score(before, self._fragmentation(after if after is not None else lefts, model, cpu_after)), None
        best, chosen = 0, None
        for i, left in enumerate(lefts):
            if left >= task.fraction - EPSILON:
                after = (*lefts[:i], max(0.0, left - task.fraction), *lefts[i + 1:])
                score = fgd_score(before, self._fragmentation(after, model, cpu_after))
                if chosen is None or score > best:
                    best, chosen = score, i
        if chosen is None:
            return fgd_score(before, self._fragmentation(lefts, model, cpu_after)), None
        return best, chosen

    def prefer(self, record: PodRecord, node: str) -> list[DeviceID]:
        """The devices the pod should get on ``node``, for the allocator to try first (empty: its usual order)."""
        if self.policy != "fgd":
            return []
        if self._gpus is None:
            self._build()
        task = self.shape(record)
        if not is_share(task):
            return []
        _, chosen = self._fgd(node, self._lefts(node), self._cpu_left(node), task)
        assert self._gpus is not None
        return [self._gpus[node][chosen].id] if chosen is not None else []

    def _fragmentation(self, lefts: tuple[float, ...], model: str, cpu_left: int) -> float:
        key = (lefts, model, cpu_left)
        found = self._memo.get(key)
        if found is None:
            assert self._tasks is not None
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            found = self._memo[key] = fragmentation(lefts, model, cpu_left, self._tasks)
        return found

    def choose(self, record: PodRecord, nodes: Sequence[str], rng: random.Random) -> int:
        """The index in ``nodes`` of the chosen node."""
        if self.policy == "random":
            return rng.randrange(len(nodes))
        if self._gpus is None:
            self._build()
        task = self.shape(record)
        scores = [self._score(node, task) for node in nodes]
        best = min(scores)
        tied = [i for i, score in enumerate(scores) if score <= best + EPSILON]
        return min(tied, key=nodes.__getitem__)  # the artifact's tie-break: the smallest node name
