"""The Alibaba GPU cluster trace ``cluster-trace-gpu-v2023`` ("openb") as NodePools, claim templates and pods.

The mapping, stated once (docs/planning.md repeats it for users):

* nodes of the same shape (cpu, memory, GPU count, model) become one NodePool of that many nodes, its GPUs shared
  as NVIDIA's driver shares them with ``--consumable-shares=1000`` (``spec.sharing.shares: 1000``), so one share is
  the trace's milli-GPU. Models the catalogue knows keep its facts (``T4``, ``A10``, ``V100M16`` as ``V100-16GB``,
  ``V100M32`` as ``V100-32GB``); the others are declared in the pool (``G1``-``G3`` are undisclosed models, their
  memory assumed 16Gi, said in the pool's ``kubedra.io/assumed`` annotation; ``P100`` with its 16Gi);
* a task asking ``num_gpu`` whole GPUs claims ``count: num_gpu`` devices of 1000 shares each (no other claim can
  then use them); a task with ``gpu_milli`` < 1000 claims one device with that many shares; ``gpu_spec``
  ("V100M16|V100M32") is a CEL selector on ``productName``; cpu and memory are the pod's requests; tasks with the
  same GPU request share one ResourceClaimTemplate;
* ``replay="artifact"`` (the FGD artifact's experiment): the tasks shuffled with ``seed``, then tasks drawn at random
  (same generator) and appended until the summed milli-GPU requests would pass ``tune`` x the cluster's capacity;
  they arrive one second apart in that order and never leave. ``replay="trace"``: each task arrives at its
  ``creation_time`` (from the earliest) and runs for ``deletion_time - scheduled_time`` (from creation when it was
  never scheduled).

Pure: CSV text in, documents out; the CLI reads the files.
"""

from __future__ import annotations

import csv
import io
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubedra.objects.errors import InvalidInputError, Location, Problem

Doc = dict[str, Any]
DRIVER = "gpu.nvidia.com"
SHARES = 1000  # one share is one milli-GPU
NODE_FILE = "openb_node_list_gpu_node.csv"
WORKLOADS = ("default", "gpushare100", "multigpu50", "gpuspec33")
REPLAYS = ("artifact", "trace")
ARTIFACT_SEED = 42
ARTIFACT_TUNE = 1.3

# trace model -> (catalogue name, or None to declare it; declared memory; product name; assumed)
_MODELS: dict[str, tuple[str | None, str, str, bool]] = {
    "T4": ("T4", "", "Tesla T4", False),
    "A10": ("A10", "", "NVIDIA A10", False),
    "V100M16": ("V100-16GB", "", "Tesla V100-SXM2-16GB", False),
    "V100M32": ("V100-32GB", "", "Tesla V100-SXM2-32GB", False),
    "P100": (None, "16Gi", "P100", False),
}
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")  # the rest are optional (multigpu50
# has no gpu_spec and no times)


def pod_file(workload: str) -> str:
    return f"openb_pod_list_{workload}.csv"


@dataclass(frozen=True)
class Task:
    """One row of a pod list."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str
    created: int | None
    deleted: int | None
    scheduled: int | None

    @property
    def milli_gpus(self) -> int:
        """What the artifact sums to tune the replay: ``num_gpu x gpu_milli``."""
        return self.num_gpu * self.gpu_milli


@dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


def _rows(text: str, file: str, columns: tuple[str, ...]) -> Iterable[tuple[Location, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise InvalidInputError([Problem(Location(file, 0, "", "header"), f"missing columns: {', '.join(missing)}")])
    for line, row in enumerate(reader, start=2):
        yield Location(file, line - 1, f"row {line}", ""), row


def _int(row: dict[str, str], column: str, where: Location, problems: list[Problem], *, optional: bool = False,
         low: int = 0, high: int | None = None) -> int | None:
    text = (row.get(column) or "").strip()
    if not text and optional:
        return None
    try:
        value = int(float(text)) if re.fullmatch(r"\d+(\.0*)?", text) else int(text)
    except ValueError:
        problems.append(Problem(Location(where.file, where.document, where.object, column),
                                f"must be a whole number, got {text!r}"))
        return None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        problems.append(Problem(Location(where.file, where.document, where.object, column),
                                f"must be {bound}, got {value}"))
        return None
    return value


def read_nodes(text: str, file: str = NODE_FILE) -> list[TraceNode]:
    """The node list; every bad cell is reported (file, row, column) before anything is returned."""
    problems: list[Problem] = []
    nodes: list[TraceNode] = []
    for where, row in _rows(text, file, _NODE_COLUMNS):
        cpu = _int(row, "cpu_milli", where, problems, low=1)
        memory = _int(row, "memory_mib", where, problems, low=1)
        gpus = _int(row, "gpu", where, problems, high=64)
        model = (row.get("model") or "").strip()
        if gpus and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", model):
            problems.append(Problem(Location(file, where.document, where.object, "model"),
                                    f"must be a GPU model name, got {model!r}"))
        if cpu is not None and memory is not None and gpus is not None:
            nodes.append(TraceNode(row["sn"], cpu, memory, gpus, model))
    if problems:
        raise InvalidInputError(problems)
    return nodes


def read_tasks(text: str, file: str) -> list[Task]:
    """A pod list; ``gpu_milli`` is a share of one GPU when ``num_gpu`` is 1 (1000 = whole)."""
    problems: list[Problem] = []
    tasks: list[Task] = []
    for where, row in _rows(text, file, _POD_COLUMNS):
        before = len(problems)
        cpu = _int(row, "cpu_milli", where, problems)
        memory = _int(row, "memory_mib", where, problems)
        num_gpu = _int(row, "num_gpu", where, problems, high=64)
        gpu_milli = _int(row, "gpu_milli", where, problems, high=SHARES)
        created = _int(row, "creation_time", where, problems, optional=True)
        deleted = _int(row, "deletion_time", where, problems, optional=True)
        scheduled = _int(row, "scheduled_time", where, problems, optional=True)
        spec = (row.get("gpu_spec") or "").strip()
        if spec and not all(re.fullmatch(r"[A-Za-z0-9._-]+", m) for m in spec.split("|")):
            problems.append(Problem(Location(file, where.document, where.object, "gpu_spec"),
                                    f"must be GPU models separated by |, got {spec!r}"))
        if num_gpu and gpu_milli == 0:
            problems.append(Problem(Location(file, where.document, where.object, "gpu_milli"),
                                    "must be at least 1 when num_gpu is set"))
        if len(problems) == before and cpu is not None and memory is not None and num_gpu is not None and (
            gpu_milli is not None
        ):
            tasks.append(Task(row["name"], cpu, memory, num_gpu, gpu_milli if num_gpu else 0, spec, created,
                              deleted, scheduled))
    if problems:
        raise InvalidInputError(problems)
    return tasks


def artifact_order(tasks: list[Task], gpus: int, seed: int = ARTIFACT_SEED, tune: float = ARTIFACT_TUNE) -> list[Task]:
    """The artifact's replay: shuffled, then topped up with random draws until the next would pass ``tune`` x the
    cluster's milli-GPU capacity."""
    rng = random.Random(seed)
    order = tasks[:]
    rng.shuffle(order)
    capacity = tune * gpus * SHARES
    total = sum(t.milli_gpus for t in order)
    if not tasks or not any(t.milli_gpus for t in tasks):
        return order
    while True:
        extra = rng.choice(tasks)
        if total + extra.milli_gpus > capacity:
            return order
        order.append(extra)
        total += extra.milli_gpus


def arrived_prefix(order: list[Task], gpus: int, fraction: float) -> list[Task]:
    """The tasks up to the one whose arrival brings the summed milli-GPU requests to ``fraction`` x the cluster's
    capacity (the artifact's "N % arrived" sample point); all of them if they never do."""
    target = fraction * gpus * SHARES
    total = 0
    for i, task in enumerate(order):
        total += task.milli_gpus
        if total >= target:
            return order[: i + 1]
    return order


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"


def _product(model: str) -> str:
    return _MODELS.get(model, (None, "16Gi", model, True))[2]


def nodepools(nodes: list[TraceNode]) -> list[Doc]:
    """One NodePool per node shape, in first-seen order."""
    shapes: dict[tuple[int, int, int, str], int] = {}
    for node in nodes:
        key = (node.cpu_milli, node.memory_mib, node.gpus, node.model if node.gpus else "")
        shapes[key] = shapes.get(key, 0) + 1
    docs: list[Doc] = []
    for (cpu, memory, gpus, model), count in shapes.items():
        name = f"openb-{_slug(model)}-{gpus}gpu-{cpu // 1000}cpu-{memory // 1024}gi" if gpus else (
            f"openb-cpu-{cpu // 1000}cpu-{memory // 1024}gi")
        spec: Doc = {"count": count, "labels": {"kubedra.io/trace": "openb"},
                     "allocatable": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}
        metadata: Doc = {"name": name}
        if gpus:
            catalogued, declared_memory, _, assumed = _MODELS.get(model, (None, "16Gi", model, True))
            gpu: Doc = {"model": catalogued or model, "count": gpus}
            if catalogued is None:
                gpu["memory"] = declared_memory
            spec["gpu"] = gpu
            spec["sharing"] = {"shares": SHARES}
            if assumed:
                note = f"{model}: undisclosed model, memory {declared_memory}"
                metadata["annotations"] = {"kubedra.io/assumed": note}
        docs.append({"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": metadata, "spec": spec})
    return docs


def _template(name: str, count: int, shares: int, spec: str) -> Doc:
    exactly: Doc = {"deviceClassName": DRIVER, "count": count, "capacity": {"requests": {"shares": str(shares)}}}
    if spec:
        products = ", ".join(f'"{_product(m)}"' for m in spec.split("|"))
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].productName in [{products}]'}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def _timing(task: Task, start: int) -> dict[str, str]:
    created = task.created if task.created is not None else start
    annotations = {"kubedra.io/start-after": f"{created - start}s"}
    began = task.scheduled if task.scheduled is not None else created
    if task.deleted is not None and task.deleted > began:
        annotations["kubedra.io/run-for"] = f"{task.deleted - began}s"
    return annotations


def documents(nodes: list[TraceNode], tasks: list[Task], *, replay: str = "artifact", seed: int = ARTIFACT_SEED,
              tune: float = ARTIFACT_TUNE, arrived: float | None = None) -> list[Doc]:
    """NodePools, then claim templates, then pods in arrival order; ``arrived``: the artifact replay only up to that
    multiple of capacity arrived (with no departures, the cluster at the artifact's sample point)."""
    if replay not in REPLAYS:
        raise ValueError(f"unknown replay {replay!r}; use one of {', '.join(REPLAYS)}")
    gpus = sum(n.gpus for n in nodes)
    order = artifact_order(tasks, gpus, seed, tune) if replay == "artifact" else tasks
    if arrived is not None and replay == "artifact":
        order = arrived_prefix(order, gpus, arrived)
    start = min((t.created for t in tasks if t.created is not None), default=0)
    templates: dict[tuple[int, int, str], Doc] = {}
    pods: list[Doc] = []
    for i, task in enumerate(order):
        pod_spec: Doc = {"containers": [{"name": "main", "image": "task", "resources": {
            "requests": {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}}}]}
        if task.num_gpu:
            key = (task.num_gpu, task.gpu_milli if task.num_gpu == 1 else SHARES, task.gpu_spec)
            if key not in templates:
                templates[key] = _template(f"gpu-{len(templates)}", *key)
            pod_spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            pod_spec["resourceClaims"] = [{"name": "gpu",
                                           "resourceClaimTemplateName": templates[key]["metadata"]["name"]}]
        annotations = {"kubedra.io/start-after": f"{i}s"} if replay == "artifact" else _timing(task, start)
        annotations["kubedra.io/trace-task"] = task.name
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"task-{i:05d}", "namespace": "default", "annotations": annotations},
                     "spec": pod_spec})
    return [*nodepools(nodes), *templates.values(), *pods]
