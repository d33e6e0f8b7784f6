"""The device-plugin nodes a rollout switches (:class:`GpuNode`): each as the device plugin serves it today and as
NVIDIA's DRA driver publishes it once switched, read from a NodePool with ``devicePlugin: true`` or from a plain Node's
labels; the device plugin's time-slicing ConfigMap multiplies what an unswitched node advertises (``replicas`` per
GPU). A MIG node's devices are read by :mod:`kubedra.migrate.mig`.

A Node's GPU model is read from the labels GPU Feature Discovery puts on it (NVIDIA/k8s-device-plugin, which hosts
GFD since v0.15; ``internal/lm/resource.go`` at commit 02f65cca): ``nvidia.com/gpu.product`` is NVML's product name
with spaces made ``-`` and ``-SHARED`` appended when time-slicing replicates the GPU (unless renamed),
``nvidia.com/gpu.count`` the physical GPUs, ``nvidia.com/gpu.memory`` each GPU's memory in MiB,
``nvidia.com/gpu.replicas`` the time-slicing replicas; ``nvidia.com/mig.strategy`` comes from ``internal/lm/
mig-strategy.go``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import msgspec
import yaml

from kubedra.cluster import catalogue
from kubedra.cluster.gpuslices import stable_uid
from kubedra.cluster.nodepool import POOL_LABEL, gpu_node_slices
from kubedra.migrate import mig
from kubedra.migrate.mig import COUNT_LABEL, GPU, MEMORY_LABEL, PRODUCT_LABEL, SHARED_SUFFIX
from kubedra.migrate.mig import STRATEGY_LABEL as MIG_STRATEGY_LABEL
from kubedra.migrate.workloads import mig_profile
from kubedra.objects.builder import Loaded
from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import Node, ResourceSlice

CONFIG_LABEL = "nvidia.com/device-plugin.config"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"


@dataclass(frozen=True)
class GpuNode:
    """A node the device plugin serves today: both of its shapes, before and after the switch."""

    name: str
    pool: str
    plugin: Node  # advertising nvidia.com/gpu (times the time-slicing replicas)
    dra: Node  # no nvidia.com/gpu: its GPUs are in ``slices``
    slices: tuple[ResourceSlice, ...]
    replicas: int = 1
    mig_resources: tuple[str, ...] = ()  # the device-plugin names its MIG devices are served by (a MIG node's)


def plugin_replicas(loaded: Loaded) -> dict[str, int]:
    """Time-slicing replicas of ``nvidia.com/gpu`` per config key (ConfigMap data keys; a bare config is ``""``)."""
    out: dict[str, int] = {}
    for raw in loaded.raw:
        if raw.data.get("kind") != "ConfigMap" or not isinstance(raw.data.get("data"), dict):
            continue
        for key, text in raw.data["data"].items():
            try:
                config = yaml.safe_load(text) if isinstance(text, str) else None
            except yaml.YAMLError:
                continue
            sharing = config.get("sharing") if isinstance(config, dict) else None
            block = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
            for entry in (block or {}).get("resources") or []:
                if isinstance(entry, dict) and entry.get("name") == GPU and isinstance(entry.get("replicas"), int):
                    out[str(key)] = max(1, entry["replicas"])
    return out


def replicas_for(labels: dict[str, str], replicas: dict[str, int]) -> int:
    """The node's config (its label names the key; unlabelled nodes take ``default`` or a bare config's)."""
    key = labels.get(CONFIG_LABEL)
    if key is not None:
        return replicas.get(key, 1)
    return replicas.get("default", replicas.get("", 1))


def scaled(node: Node, replicas: int) -> Node:
    if replicas == 1:
        return node
    allocatable = dict(node.status.allocatable)
    allocatable[GPU] = str(int(allocatable[GPU]) * replicas)
    status = msgspec.structs.replace(node.status, allocatable=allocatable, capacity=dict(allocatable))
    return msgspec.structs.replace(node, status=status)


def gfd_model(product: str, memory: str | None) -> catalogue.GpuModel | None:
    """The catalogue's model for GFD's ``nvidia.com/gpu.product`` (NVML's name, spaces as ``-``, ``-SHARED`` when
    time-sliced); a product the catalogue does not know is declared from ``nvidia.com/gpu.memory`` (MiB) where the
    node has it, else None."""
    name = product.removesuffix(SHARED_SUFFIX).upper()
    for model in catalogue.MODELS:
        if name in {k.replace(" ", "-").upper() for k in (model.product_name, model.name, *model.aliases)}:
            return model
    if memory is not None and memory.isdigit() and int(memory) > 0:
        return catalogue.GpuModel(product.removesuffix(SHARED_SUFFIX), product.removesuffix(SHARED_SUFFIX),
                                  "Nvidia", "", "", int(memory), 0)
    return None


def labelled_gpu_node(node: Node, where: Location, replicas: dict[str, int], problems: list[Problem],
                      notes: list[str]) -> GpuNode | None:
    """A plain Node the device plugin serves, its GPUs read from GPU Feature Discovery's labels; None (and a
    problem naming the node and the label) where a label it needs is missing or unreadable."""
    name, labels = node.metadata.name, node.metadata.labels

    def bad(label: str, message: str) -> None:
        problems.append(Problem(replace(where, field=f"metadata.labels[{label}]"), f"Node {name}: {message}"))

    product = labels.get(PRODUCT_LABEL)
    if not product:
        bad(PRODUCT_LABEL, f"advertises nvidia.com/gpu but has no label {PRODUCT_LABEL} (GPU Feature Discovery's): "
            "its GPU model is unknown; deploy GFD (the GPU Operator does) or label the node")
        return None
    strategy = labels.get(MIG_STRATEGY_LABEL) or "none"
    if strategy != "none":
        before = len(problems)
        found = _mig_node(node, strategy, bad, notes)
        if found is not None or len(problems) > before:
            return found
    model = gfd_model(product, labels.get(MEMORY_LABEL))
    if model is None:
        bad(MEMORY_LABEL, f"{PRODUCT_LABEL}={product} is not in kubedra's catalogue and the node has no label "
            f"{MEMORY_LABEL} (MiB) to declare it; known models: {', '.join(catalogue.known_names())}")
        return None
    label_replicas = labels.get(REPLICAS_LABEL, "")
    if replicas:  # the device plugin's config is known: the node's config label selects its replicas
        times = replicas_for(labels, replicas)
    else:  # GFD's label says what the plugin applies (0: sharing off)
        times = max(1, int(label_replicas)) if label_replicas.isdigit() else 1
    advertised = int(str(node.status.allocatable[GPU]))
    count_text = labels.get(COUNT_LABEL)
    if count_text is None:
        count = advertised // times
        if count < 1:
            bad(COUNT_LABEL, f"has no label {COUNT_LABEL} and advertises {advertised} nvidia.com/gpu")
            return None
    elif not count_text.isdigit() or int(count_text) < 1:
        bad(COUNT_LABEL, f"{COUNT_LABEL}={count_text!r} is not a positive GPU count")
        return None
    else:
        count = int(count_text)
    dra = _without_plugin(node)
    slices = tuple(gpu_node_slices(name, node.metadata.uid or stable_uid("Node", name), model, count))
    if times > 1:
        notes.append(f"Node {name}: time-slicing shares each GPU among {times} pods on the device plugin; once "
                     "switched each nvidia.com/gpu is a whole GPU (DRA shares per claim, not node-wide)")
    return GpuNode(name, labels.get(POOL_LABEL, product), node, dra, slices, times)


def plugin_resource(name: str) -> bool:
    return name == GPU or mig_profile(name) is not None


def _without_plugin(node: Node) -> Node:
    """The node once switched: no device-plugin resource (``nvidia.com/gpu``, ``nvidia.com/mig-<profile>``)."""
    allocatable = {k: v for k, v in node.status.allocatable.items() if not plugin_resource(k)}
    capacity = {k: v for k, v in node.status.capacity.items() if not plugin_resource(k)}
    return msgspec.structs.replace(node, status=msgspec.structs.replace(node.status, allocatable=allocatable,
                                                                        capacity=capacity))


def _mig_node(node: Node, strategy: str, bad: Callable[[str, str], None], notes: list[str]) -> GpuNode | None:
    """A node labelled with a MIG strategy: None where it has no MIG device to plan (whole GPUs, said in a note) or
    a label is bad (``bad`` says which)."""
    if strategy not in mig.STRATEGIES:
        bad(MIG_STRATEGY_LABEL, f"{MIG_STRATEGY_LABEL}={strategy!r} is not a MIG strategy (none, single or mixed)")
        return None
    found = mig.read_mig(node.metadata.name, node.metadata.labels, node.status.allocatable,
                          model_of=gfd_model, bad=bad, notes=notes)
    return None if found is None else _mig_gpu_node(node, found)


def _mig_gpu_node(node: Node, found: mig.MigNode) -> GpuNode:
    """A MIG node: the device plugin's resources as it advertises them, the switched node's MIG devices as they are."""
    name, labels = node.metadata.name, node.metadata.labels
    allocatable = {**{k: str(v) for k, v in found.plugin.items()}, **node.status.allocatable}
    capacity = {**{k: str(v) for k, v in found.plugin.items()}, **node.status.capacity}
    plugin = msgspec.structs.replace(node, status=msgspec.structs.replace(node.status, allocatable=allocatable,
                                                                          capacity=capacity))
    slices = tuple(gpu_node_slices(name, node.metadata.uid or stable_uid("Node", name), found.model, found.count,
                                   found.static))
    return GpuNode(name, labels.get(POOL_LABEL, labels.get(PRODUCT_LABEL, found.model.name)), plugin,
                   _without_plugin(node), slices, mig_resources=found.resources)

