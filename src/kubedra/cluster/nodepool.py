"""``kubedra.io/v1alpha1`` NodePool: a compact inventory that expands into Nodes and NVIDIA-shaped ResourceSlices.

A pool named ``a100`` with ``count: 4`` yields nodes ``a100-0`` .. ``a100-3`` (``<pool>-<index>``). Each node
gets the ResourceSlices NVIDIA's ``gpu-kubelet-plugin`` publishes for it (gpu-drivers.md §1.3): driver
``gpu.nvidia.com``, one pool named after the node, devices ``gpu-<minor>``. The layout of the slices
themselves lives in :mod:`kubedra.cluster.gpuslices`; this module reads and checks the document.

``devicePlugin: true`` models a node still on the device plugin: ``nvidia.com/gpu: <count>`` in its
allocatable and no slices, so mixed clusters can be simulated during a migration.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import msgspec

from kubedra.cluster import catalogue, hosts
from kubedra.cluster.gpuslices import GpuNodeLayout, SliceFactory, stable_uid
from kubedra.objects import formats
from kubedra.objects.decode import decode
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.model import (
    DeviceAttribute,
    Int64,
    Node,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    QuantityText,
    ResourceSlice,
    Taint,
)
from kubedra.objects.quantity import Quantity
from kubedra.objects.validate import validate

API_VERSION = "kubedra.io/v1alpha1"
KIND = "NodePool"
DEFAULT_DRIVER_VERSION = "580.126.20"
DEFAULT_CUDA_DRIVER_VERSION = "13.0.0"
DEFAULT_PODS = "110"
MAX_GPUS_PER_NODE = 64
MAX_NODES_PER_POOL = 100_000
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


class RawLike(Protocol):
    """What the loader gives for kinds it does not model: where the document was, and its body."""

    @property
    def location(self) -> Location: ...

    @property
    def data(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------------------------------
# Strict decoding shared with the workload expander


class Strict(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A kubedra-read document part: unknown fields are errors, as with ``kubectl --validate=strict``."""


T = TypeVar("T")


def object_location(raw: RawLike, kind: str) -> Location:
    """The raw document's location naming ``Kind/name``."""
    meta = raw.data.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    return Location(raw.location.file, raw.location.document, f"{kind}/{name}" if name else kind, "")


def at(location: Location, field: str) -> Location:
    """The same object, pointing at ``field``."""
    return Location(location.file, location.document, location.object, field)


def convert_strict(data: Any, kind: type[T], location: Location, problems: list[Problem]) -> T | None:
    """The loader's decoding (:func:`kubedra.objects.decode.decode`), recording every problem with its field path."""
    obj, found = decode(data, kind)
    problems.extend(Problem(at(location, path), message) for path, message in found)
    return obj


# --------------------------------------------------------------------------------------------------
# The document


class PoolTaint(Strict, kw_only=True):
    key: str
    value: str = ""
    effect: str


class PoolGpu(Strict, kw_only=True):
    """``memory`` declares a model the catalogue does not know (``model`` is then its name, ``productName`` what NVML
    would call it); ``attributes`` are published on every GPU device besides the driver's own."""

    model: str
    count: Int64
    driver_version: str = DEFAULT_DRIVER_VERSION
    cuda_driver_version: str = DEFAULT_CUDA_DRIVER_VERSION
    memory: QuantityText | None = None
    product_name: str | None = None
    attributes: dict[str, DeviceAttribute] = {}


class PoolMig(Strict, kw_only=True):
    enabled: bool = False


class PoolSharing(Strict, kw_only=True):
    shares: Int64


class NodePoolSpec(Strict, kw_only=True):
    count: Int64
    labels: dict[str, str] = {}
    taints: list[PoolTaint] = []
    allocatable: dict[str, QuantityText] = {}
    gpu: PoolGpu | None = None
    mig: PoolMig | None = None
    sharing: PoolSharing | None = None
    device_plugin: bool = False


class NodePoolMeta(Strict, kw_only=True):
    name: str
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class NodePool(Strict, kw_only=True):
    api_version: str
    kind: str
    metadata: NodePoolMeta
    spec: NodePoolSpec


def is_nodepool(data: dict[str, Any]) -> bool:
    """Whether a raw document is a NodePool (of any apiVersion, so a wrong version is reported, not ignored)."""
    return data.get("kind") == KIND and str(data.get("apiVersion", "")).startswith("kubedra.io/")


def _label_problems(labels: dict[str, str], where: Location) -> list[Problem]:
    problems = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        bad_prefix = prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))
        if bad_prefix or not name or len(name) > 63 or not _LABEL_NAME.match(name):
            problems.append(Problem(at(where, f"spec.labels[{key}]"), f"invalid label key {key!r}"))
        if len(value) > 63 or not _LABEL_NAME.match(value):
            problems.append(Problem(at(where, f"spec.labels[{key}]"), f"invalid label value {value!r}"))
    return problems


def _check_node(pool: NodePool, bad: Callable[[str, str], None]) -> None:
    if pool.api_version != API_VERSION:
        bad("apiVersion", f"unsupported apiVersion {pool.api_version!r} for NodePool; use {API_VERSION!r}")
    name, spec = pool.metadata.name, pool.spec
    if not name or len(name) > 200 or not _DNS_SUBDOMAIN.match(name):
        bad("metadata.name", f"invalid pool name {name!r}: must be a lowercase DNS subdomain of at most 200 characters")
    if spec.count < 0:
        bad("spec.count", f"Invalid value: {spec.count}: must be greater than or equal to 0")
    elif spec.count > MAX_NODES_PER_POOL:
        bad("spec.count", f"must be between 0 and {MAX_NODES_PER_POOL}, got {spec.count}")
    if "kubernetes.io/hostname" in spec.labels:
        bad("spec.labels[kubernetes.io/hostname]", "is set per node to the node's name; remove it")
    for i, taint in enumerate(spec.taints):
        if not taint.key:
            bad(f"spec.taints[{i}].key", "Required value")
        if taint.effect not in TAINT_EFFECTS:
            bad(
                f"spec.taints[{i}].effect",
                f"unsupported value {taint.effect!r}: must be one of {', '.join(TAINT_EFFECTS)}",
            )
    for resource, value in spec.allocatable.items():
        for message in formats.resource_quantity(resource, value):  # what the API server checks on a Node
            bad(f"spec.allocatable[{resource}]", message)
    if "nvidia.com/gpu" in spec.allocatable:
        bad(
            "spec.allocatable[nvidia.com/gpu]",
            "set spec.devicePlugin: true to advertise GPUs through the device plugin",
        )


def _check_gpu(spec: NodePoolSpec, bad: Callable[[str, str], None]) -> catalogue.GpuModel | None:
    if spec.gpu is None:
        for field, present in (("spec.mig", spec.mig), ("spec.sharing", spec.sharing)):
            if present is not None:
                bad(field, "needs spec.gpu")
        if spec.device_plugin:
            bad("spec.devicePlugin", "needs spec.gpu")
        return None
    gpu = spec.gpu
    model = _gpu_model(gpu, bad)
    if not 1 <= gpu.count <= MAX_GPUS_PER_NODE:
        bad("spec.gpu.count", f"must be between 1 and {MAX_GPUS_PER_NODE}, got {gpu.count}")
    for field, version in (("driverVersion", gpu.driver_version), ("cudaDriverVersion", gpu.cuda_driver_version)):
        if not _SEMVER.match(version):
            bad(f"spec.gpu.{field}", f"invalid version {version!r}: must be a semantic version such as 580.126.20")
    mig = spec.mig is not None and spec.mig.enabled
    if mig and model is not None and not model.mig_capable:
        bad("spec.mig.enabled", f"{model.name} ({model.product_name}) does not support MIG")
    if spec.sharing is not None and spec.sharing.shares < 1:
        bad("spec.sharing.shares", f"must be at least 1, got {spec.sharing.shares}")
    if spec.device_plugin and (mig or spec.sharing is not None):
        bad("spec.devicePlugin", "a device-plugin node publishes no ResourceSlices; drop spec.mig and spec.sharing")
    return model


def _declared_memory_mib(text: str, bad: Callable[[str, str], None]) -> int | None:
    messages = list(formats.resource_quantity("memory", text))
    for message in messages:
        bad("spec.gpu.memory", message)
    if messages:
        return None
    mib = Quantity.parse(text).value() // (1024 * 1024)
    if mib < 1:
        bad("spec.gpu.memory", f"must be at least 1Mi, got {text!r}")
        return None
    return mib


def _gpu_model(gpu: PoolGpu, bad: Callable[[str, str], None]) -> catalogue.GpuModel | None:
    """The catalogue's model, or the one the pool declares with ``memory`` (a name the catalogue must not know, so
    one name never means two GPUs)."""
    try:
        known: catalogue.GpuModel | None = catalogue.lookup(gpu.model)
    except catalogue.UnknownGpuModelError as err:
        known = None
        if gpu.memory is None:
            bad("spec.gpu.model", f"{err}; or declare the model with spec.gpu.memory (and productName, attributes)")
    if gpu.memory is None:
        if gpu.product_name is not None:
            bad("spec.gpu.productName", "needs spec.gpu.memory: only a model the pool declares names its product")
        return known
    if known is not None:
        bad("spec.gpu.memory", f"{gpu.model!r} is the catalogue's {known.name} ({known.product_name}); drop "
            "spec.gpu.memory and spec.gpu.productName, or give the declared model a name of its own")
        return None
    mib = _declared_memory_mib(gpu.memory, bad)
    if mib is None:
        return None
    product = gpu.model if gpu.product_name is None else gpu.product_name
    if not product:
        bad("spec.gpu.productName", "Required value")
        return None
    return catalogue.GpuModel(gpu.model, product, "Nvidia", "", "", mib, 0)


def _check_attributes(pool: NodePool, model: catalogue.GpuModel, bad: Callable[[str, str], None]) -> None:
    """The API server's checks on one GPU device of the pool, reported at the pool's fields."""
    gpu = pool.spec.gpu
    assert gpu is not None
    factory = SliceFactory(_layout(pool.spec, gpu, model))
    sample = factory.node_slices(f"{pool.metadata.name}-0", "00000000-0000-0000-0000-000000000000")
    for slice_ in sample:
        for path, message in validate(slice_):
            if ".attributes[" in path:
                bad("spec.gpu.attributes" + path[path.index(".attributes[") + len(".attributes") :], message)
                return


def _layout(spec: NodePoolSpec, gpu: PoolGpu, model: catalogue.GpuModel) -> GpuNodeLayout:
    return GpuNodeLayout(
        model=model,
        count=gpu.count,
        driver_version=gpu.driver_version,
        cuda_driver_version=gpu.cuda_driver_version,
        mig=spec.mig is not None and spec.mig.enabled,
        shares=spec.sharing.shares if spec.sharing is not None else None,
        attributes=tuple(sorted(gpu.attributes.items())),
    )


def _check(pool: NodePool, where: Location) -> tuple[list[Problem], catalogue.GpuModel | None]:
    """Every problem of one pool (field order), and its GPU model when it names a known one."""
    problems: list[Problem] = []

    def bad(field: str, message: str) -> None:
        problems.append(Problem(at(where, field), message))

    _check_node(pool, bad)
    problems.extend(_label_problems(pool.spec.labels, where))
    model = _check_gpu(pool.spec, bad)
    if model is not None and not problems and pool.spec.gpu is not None and pool.spec.gpu.attributes:
        _check_attributes(pool, model, bad)
    return problems, model


POOL_LABEL = "kubedra.io/nodepool"  # which NodePool a node came from: reports group GPUs by it


def _node(name: str, spec: NodePoolSpec, pool: str, defaults: dict[str, str] | None = None) -> Node:
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    labels[POOL_LABEL] = pool
    labels.update(spec.labels)
    labels["kubernetes.io/hostname"] = name
    allocatable = dict(spec.allocatable or defaults or {})
    allocatable.setdefault("pods", DEFAULT_PODS)
    if spec.device_plugin and spec.gpu is not None:
        allocatable["nvidia.com/gpu"] = str(spec.gpu.count)
    return Node(
        metadata=ObjectMeta(name=name, uid=stable_uid("Node", name), labels=labels),
        spec=NodeSpec(taints=[Taint(key=t.key, value=t.value, effect=t.effect) for t in spec.taints]),
        status=NodeStatus(capacity=dict(allocatable), allocatable=allocatable),
    )


def expand_nodepools(
    raw_objects: list[RawLike], notes: list[str] | None = None
) -> tuple[list[Node], list[ResourceSlice]]:
    """Nodes and ResourceSlices for every NodePool, in document then index order. A GPU pool without
    ``spec.allocatable`` gets its model's host (:mod:`kubedra.cluster.hosts`), said in ``notes``.

    Raises InvalidInputError listing every problem (all pools are checked before any is expanded). Two pools of
    one name are the loader's to refuse, as for every kind.
    """
    problems: list[Problem] = []
    checked: list[tuple[NodePool, catalogue.GpuModel | None]] = []
    for raw in raw_objects:
        where = object_location(raw, KIND)
        pool = convert_strict(raw.data, NodePool, where, problems)
        if pool is None:
            continue
        found, model = _check(pool, where)
        problems.extend(found)
        if not found:
            checked.append((pool, model))
    if problems:
        raise InvalidInputError(problems)
    nodes: list[Node] = []
    slices: list[ResourceSlice] = []
    for pool, model in checked:
        spec = pool.spec
        factory = None
        if model is not None and spec.gpu is not None and not spec.device_plugin:
            factory = SliceFactory(_layout(spec, spec.gpu, model))
        defaults = None
        shape = hosts.default_shape(model.name) if model is not None and not spec.allocatable else None
        if shape is not None and spec.gpu is not None:
            defaults = shape.allocatable(spec.gpu.count)
            if notes is not None:
                notes.append(hosts.note(pool.metadata.name, model.name if model else "", spec.gpu.count, shape))
        for index in range(spec.count):
            node = _node(f"{pool.metadata.name}-{index}", spec, pool.metadata.name, defaults)
            nodes.append(node)
            if factory is not None:
                slices.extend(factory.node_slices(node.metadata.name, node.metadata.uid))
    return nodes, slices


def gpu_node_slices(node: str, node_uid: str, model: catalogue.GpuModel, count: int,
                    static_mig: tuple[tuple[tuple[str, int], ...], ...] | None = None) -> list[ResourceSlice]:
    """The slices NVIDIA's DRA driver publishes for a node of ``count`` GPUs of ``model`` (driver defaults, no
    ``DynamicMIG``, no sharing): what a device-plugin node read from a cluster publishes once switched. ``static_mig``:
    per GPU, the (profile, start) of the MIG devices mig-parted made on it (none: a whole GPU)."""
    gpu = PoolGpu(model=model.name, count=count)
    layout = replace(_layout(NodePoolSpec(count=1, gpu=gpu), gpu, model), static_mig=static_mig)
    return SliceFactory(layout).node_slices(node, node_uid)
