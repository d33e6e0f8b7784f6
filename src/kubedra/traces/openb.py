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
* ``mig=MODEL`` (an option): every GPU node has MIG-capable ``MODEL`` GPUs with MIG enabled instead of shared ones
  (the trace's own model kept as the node label ``kubedra.io/trace-model``, the substitution said in the pool's
  ``kubedra.io/assumed`` annotation); a task asking ``num_gpu`` whole GPUs claims that many of the full-GPU profile
  (``7g.*``) and a ``gpu_milli`` share one device of the smallest profile with at least that share of the compute
  slices (``Ng`` of 7: 100 -> 1g, 250 -> 2g, 400 -> 3g, 500 -> 4g, above 4/7 -> 7g; of each size the one with least
  memory, no ``+me``); ``gpu_spec`` becomes a node affinity on ``kubedra.io/trace-model``;
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

from kubedra.cluster.catalogue import GpuModel, UnknownGpuModelError, lookup
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
MIG_CLASS = "mig.nvidia.com"
TRACE_MODEL_LABEL = "kubedra.io/trace-model"
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


def mig_model(name: str) -> GpuModel:
    """The catalogue's MIG-capable model ``name``; ValueError saying which models are, otherwise."""
    try:
        model: GpuModel | None = lookup(name)
    except UnknownGpuModelError:
        model = None
    if model is None or not model.mig_capable:
        from kubedra.cluster.catalogue import MODELS

        capable = ", ".join(m.name for m in MODELS if m.mig_capable)
        raise ValueError(f"{name!r} is not a MIG-capable GPU model; use one of {capable}")
    return model


def _compute_slices(profile: str) -> int:
    return int(profile.split("g.", 1)[0])


def mig_profile(model: GpuModel, milli: int) -> str:
    """The smallest profile of ``model`` with at least ``milli``/1000 of the compute slices (least memory of a size,
    no media-extension variant); 1000 gets the full GPU's."""
    sizes: dict[int, tuple[int, str]] = {}
    for p in model.mig_profiles:
        if "+" in p.name:
            continue
        g = _compute_slices(p.name)
        if g not in sizes or p.memory_mib < sizes[g][0]:
            sizes[g] = (p.memory_mib, p.name)
    full = max(sizes)
    for g in sorted(sizes):
        if g * SHARES >= milli * full:
            return sizes[g][1]
    return sizes[full][1]


def nodepools(nodes: list[TraceNode], mig: GpuModel | None = None, *, per_node: bool = False) -> list[Doc]:
    """One NodePool per node shape, in first-seen order; ``per_node``: one per trace node, named after its ``sn``
    (its node ``<sn>-0``), so nodes sort by name as the trace's do — the order the artifact's scheduler breaks ties
    in."""
    shapes: dict[tuple[int, int, int, str, str], int] = {}
    for node in nodes:
        key = (node.cpu_milli, node.memory_mib, node.gpus, node.model if node.gpus else "",
               node.name if per_node else "")
        shapes[key] = shapes.get(key, 0) + 1
    docs: list[Doc] = []
    for (cpu, memory, gpus, model, sn), count in shapes.items():
        name = f"openb-{_slug(model)}-{gpus}gpu-{cpu // 1000}cpu-{memory // 1024}gi" if gpus else (
            f"openb-cpu-{cpu // 1000}cpu-{memory // 1024}gi")
        if sn:
            name = _slug(sn)
        spec: Doc = {"count": count, "labels": {"kubedra.io/trace": "openb"},
                     "allocatable": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}
        metadata: Doc = {"name": name}
        if gpus and mig is not None:
            spec["labels"][TRACE_MODEL_LABEL] = model
            spec["gpu"] = {"model": mig.name, "count": gpus}
            spec["mig"] = {"enabled": True}
            metadata["annotations"] = {"kubedra.io/assumed": f"{model} GPUs as {mig.name} with MIG (trace mapped to "
                                                             "MIG profiles)"}
        elif gpus:
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


def _claim_template(name: str, exactly: Doc) -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def _mig_template(name: str, count: int, profile: str) -> Doc:
    return _claim_template(name, {"deviceClassName": MIG_CLASS, "count": count, "selectors": [{"cel": {
        "expression": f'device.attributes["{DRIVER}"].profile == "{profile}"'}}]})


def _template(name: str, count: int, shares: int, spec: str) -> Doc:
    exactly: Doc = {"deviceClassName": DRIVER, "count": count, "capacity": {"requests": {"shares": str(shares)}}}
    if spec:
        products = ", ".join(f'"{_product(m)}"' for m in spec.split("|"))
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].productName in [{products}]'}}]
    return _claim_template(name, exactly)


def _timing(task: Task, start: int) -> dict[str, str]:
    created = task.created if task.created is not None else start
    annotations = {"kubedra.io/start-after": f"{created - start}s"}
    began = task.scheduled if task.scheduled is not None else created
    if task.deleted is not None and task.deleted > began:
        annotations["kubedra.io/run-for"] = f"{task.deleted - began}s"
    return annotations


def documents(nodes: list[TraceNode], tasks: list[Task], *, replay: str = "artifact", seed: int = ARTIFACT_SEED,
              tune: float = ARTIFACT_TUNE, arrived: float | None = None, mig: str | None = None,
              pool_per_node: bool = False) -> list[Doc]:
    """NodePools, then claim templates, then pods in arrival order; ``arrived``: the artifact replay only up to that
    multiple of capacity arrived (with no departures, the cluster at the artifact's sample point); ``mig``: shares
    as MIG profiles of that model (the module's mapping); ``pool_per_node``: see ``nodepools``."""
    if replay not in REPLAYS:
        raise ValueError(f"unknown replay {replay!r}; use one of {', '.join(REPLAYS)}")
    mig_gpu = mig_model(mig) if mig is not None else None
    gpus = sum(n.gpus for n in nodes)
    order = artifact_order(tasks, gpus, seed, tune) if replay == "artifact" else tasks
    if arrived is not None and replay == "artifact":
        order = arrived_prefix(order, gpus, arrived)
    start = min((t.created for t in tasks if t.created is not None), default=0)
    templates: dict[tuple[int, int | str, str], Doc] = {}
    pods: list[Doc] = []
    for i, task in enumerate(order):
        pod_spec: Doc = {"containers": [{"name": "main", "image": "task", "resources": {
            "requests": {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}}}]}
        if task.num_gpu:
            shares = task.gpu_milli if task.num_gpu == 1 else SHARES
            name = f"gpu-{len(templates)}"
            if mig_gpu is None:
                key: tuple[int, int | str, str] = (task.num_gpu, shares, task.gpu_spec)
                if key not in templates:
                    templates[key] = _template(name, task.num_gpu, shares, task.gpu_spec)
            else:  # one template per profile and count; gpu_spec is a node affinity
                profile = mig_profile(mig_gpu, shares)
                key = (task.num_gpu, profile, "")
                if key not in templates:
                    templates[key] = _mig_template(name, task.num_gpu, profile)
            if mig_gpu is not None and task.gpu_spec:
                pod_spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": TRACE_MODEL_LABEL, "operator": "In",
                                                                 "values": task.gpu_spec.split("|")}]}]}}}
            pod_spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            pod_spec["resourceClaims"] = [{"name": "gpu",
                                           "resourceClaimTemplateName": templates[key]["metadata"]["name"]}]
        annotations = {"kubedra.io/start-after": f"{i}s"} if replay == "artifact" else _timing(task, start)
        annotations["kubedra.io/trace-task"] = task.name
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"task-{i:05d}", "namespace": "default", "annotations": annotations},
                     "spec": pod_spec})
    return [*nodepools(nodes, mig_gpu, per_node=pool_per_node), *templates.values(), *pods]
