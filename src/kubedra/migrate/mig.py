"""A device-plugin node's MIG devices, read from what the device plugin advertises and GPU Feature Discovery labels.

GFD (NVIDIA/k8s-device-plugin ``internal/lm/mig-strategy.go``, ``resource.go``): with ``nvidia.com/mig.strategy``
``single`` every GPU is in MIG mode with one profile and the MIG devices are ``nvidia.com/gpu``: the MIG labeler
overrides the whole-GPU labels, so ``nvidia.com/gpu.product`` is ``<model>-MIG-<profile>`` (``-MIG-INVALID`` where
the layout breaks the strategy) and ``nvidia.com/gpu.count`` the number of MIG devices; the GPUs themselves are not
counted anywhere, so they are read as that count over the most devices of the profile one GPU holds (exact for
mig-parted's ``all-<profile>`` configs). With ``mixed`` each profile is its own resource ``nvidia.com/mig-<profile>``
(labels ``nvidia.com/mig-<profile>.count``), ``nvidia.com/gpu`` the GPUs not in MIG mode, and ``nvidia.com/gpu.count``
every GPU of the model. The devices are placed GPU by GPU on the catalogue's placements (largest first).

Once switched, NVIDIA's DRA driver without ``DynamicMIG`` publishes the MIG devices mig-parted made, as they are
(``static_mig`` of :func:`kubedra.cluster.nodepool.gpu_node_slices`): the plan keeps the node's layout, and
:func:`mig_classes` adds the DeviceClasses that serve those devices where the input has none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kubedra.cluster import catalogue
from kubedra.cluster.gpuslices import max_capacities, mig_capacities
from kubedra.migrate.workloads import class_for, class_selectors, mig_profile
from kubedra.objects.model import CELDeviceSelector, DeviceClass, DeviceClassSpec, DeviceSelector, ObjectMeta

if TYPE_CHECKING:  # gpunodes reads a MIG node with this module
    from kubedra.migrate.gpunodes import GpuNode
    from kubedra.sim.scenario import Scenario

# GPU Feature Discovery's labels and the device plugin's resource, here for gpunodes.py too
GPU = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
COUNT_LABEL = "nvidia.com/gpu.count"
MEMORY_LABEL = "nvidia.com/gpu.memory"
STRATEGY_LABEL = "nvidia.com/mig.strategy"
CONFIG_LABEL = "nvidia.com/mig.config"  # the mig-parted config the MIG manager applies
STATE_LABEL = "nvidia.com/mig.config.state"
MIG_MARK = "-MIG-"
SHARED_SUFFIX = "-SHARED"
STRATEGIES = ("none", "single", "mixed")

Static = tuple[tuple[tuple[str, int], ...], ...]  # per GPU minor: (profile, start) of its MIG devices


@dataclass(frozen=True)
class MigNode:
    """What a MIG node is: its model, its GPUs and the MIG devices each holds; ``plugin``: the device-plugin
    resources it advertises (``nvidia.com/mig-<profile>`` from labels where the node's allocatable lacks them)."""

    model: catalogue.GpuModel
    count: int
    static: Static
    plugin: dict[str, int]
    resources: tuple[str, ...]  # the device-plugin names its MIG devices are served by


def resource_for(profile: str) -> str:
    return f"nvidia.com/mig-{profile}"


# A profile fits on a GPU only while the GPU has enough left of each engine a GPU instance takes: the per-GPU
# counters NVIDIA's driver publishes (``max_capacities``, the whole-GPU profile's). This is why one A100 holds a single
# 1g.5gb+me (one OFA engine), although NVML lists seven places for it. Memory is placed by memory slice instead.
ENGINES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")


def _budget(model: catalogue.GpuModel) -> tuple[int, ...]:
    per_gpu = max_capacities(model)
    return tuple(per_gpu[engine] for engine in ENGINES)


def _takes(profile: catalogue.MigProfile) -> tuple[int, ...]:
    takes = mig_capacities(profile)
    return tuple(takes[engine] for engine in ENGINES)


def _place(model: catalogue.GpuModel, profiles: list[catalogue.MigProfile], gpus: int) -> Static | None:
    """The devices on ``gpus`` GPUs, without two on one memory slice nor more engines than a GPU has (a search:
    largest first, each GPU state tried once per device, so the first fit found is the same on every run); None
    where they do not fit."""
    order = sorted(profiles, key=lambda p: (-max(s for _, s in p.placements), p.name))
    used: list[frozenset[int]] = [frozenset() for _ in range(gpus)]
    left = [_budget(model) for _ in range(gpus)]
    out: list[list[tuple[str, int]]] = [[] for _ in range(gpus)]

    def fit(i: int) -> bool:
        if i == len(order):
            return True
        profile, tried = order[i], set()
        takes = _takes(profile)
        for gpu in range(gpus):
            if any(n < t for n, t in zip(left[gpu], takes, strict=True)):
                continue
            for start, size in profile.placements:
                slots = frozenset(range(start, start + size))
                if used[gpu] & slots or (used[gpu], start) in tried:
                    continue
                tried.add((used[gpu], start))
                before = left[gpu]
                used[gpu] |= slots
                left[gpu] = tuple(n - t for n, t in zip(before, takes, strict=True))
                out[gpu].append((profile.name, start))
                if fit(i + 1):
                    return True
                used[gpu] -= slots
                left[gpu] = before
                out[gpu].pop()
        return False

    if not fit(0):
        return None
    return tuple(tuple(sorted(devices, key=lambda d: d[1])) for devices in out)


def per_gpu(model: catalogue.GpuModel, profile: catalogue.MigProfile) -> int:
    """The most devices of ``profile`` one GPU holds."""
    count = 0
    while _place(model, [profile] * (count + 1), 1) is not None:
        count += 1
    return count


def _profile(model: catalogue.GpuModel, name: str) -> catalogue.MigProfile | None:
    return next((p for p in model.mig_profiles if p.name == name), None)


def _layout_note(labels: Mapping[str, str]) -> str:
    config = labels.get(CONFIG_LABEL)
    text = f" (mig-parted config {CONFIG_LABEL}={config})" if config else ""
    state = labels.get(STATE_LABEL)
    if state and state != "success":
        text += (f"; {STATE_LABEL}={state}: the MIG manager has not finished, the layout planned is the one the "
                 "device plugin advertises now")
    return text


@dataclass(frozen=True)
class _Read:
    """One node's labels and what its device plugin advertises, with the caller's means to read a model and to
    refuse a label (``bad``) or say something (``notes``)."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, object]
    model_of: Callable[[str, str | None], catalogue.GpuModel | None]
    bad: Callable[[str, str], None]
    notes: list[str]


def read_mig(name: str, labels: Mapping[str, str], allocatable: Mapping[str, object], *,
             model_of: Callable[[str, str | None], catalogue.GpuModel | None], bad: Callable[[str, str], None],
             notes: list[str]) -> MigNode | None:
    """The node's MIG layout under its ``nvidia.com/mig.strategy`` (``single`` or ``mixed``); None where it has no
    MIG device to plan (a note says so: planned with whole GPUs) or a label is bad (``bad`` names it)."""
    read = _Read(name, labels, allocatable, model_of, bad, notes)
    product = labels.get(PRODUCT_LABEL, "").removesuffix(SHARED_SUFFIX)
    return _single(read, product) if labels[STRATEGY_LABEL] == "single" else _mixed(read, product)


def _single(read: _Read, product: str) -> MigNode | None:
    name, labels, bad, notes = read.name, read.labels, read.bad, read.notes
    if MIG_MARK not in product:
        notes.append(f"Node {name}: {STRATEGY_LABEL}=single but {PRODUCT_LABEL}={product or '(none)'} names no "
                     "MIG profile (GFD labels none without a GPU in MIG mode): planned with whole GPUs")
        return None
    parent, profile_name = product.rsplit(MIG_MARK, 1)
    model = read.model_of(parent, None)
    if profile_name == "INVALID":
        bad(PRODUCT_LABEL, f"{PRODUCT_LABEL}={product}: GFD found a layout mig.strategy single cannot serve "
            "(a GPU in MIG mode without MIG devices, MIG and whole GPUs together, or more than one profile); "
            "fix the node's mig-parted config or label it mixed")
        return None
    if model is None or not model.mig_capable:
        bad(PRODUCT_LABEL, f"{PRODUCT_LABEL}={product}: {parent} is not a MIG-capable model of kubedra's "
            f"catalogue; known models: {', '.join(catalogue.known_names())}")
        return None
    profile = _profile(model, profile_name)
    if profile is None:
        bad(PRODUCT_LABEL, f"{PRODUCT_LABEL}={product}: {model.name} has no MIG profile {profile_name} "
            f"(its profiles: {', '.join(p.name for p in model.mig_profiles)})")
        return None
    text = labels.get(COUNT_LABEL, str(read.allocatable.get(GPU, "")))
    if not text.isdigit() or int(text) < 1:
        bad(COUNT_LABEL, f"{COUNT_LABEL}={text!r} is not a positive count of MIG devices")
        return None
    devices, per = int(text), per_gpu(model, profile)
    gpus = -(-devices // per)
    static = _place(model, [profile] * devices, gpus)
    assert static is not None  # filled GPU by GPU, ``per`` on each
    notes.append(
        f"Node {name}: {STRATEGY_LABEL}=single: the device plugin serves its {devices} MIG devices {profile_name} "
        f"as {GPU} (read as {gpus} {model.name} GPUs of up to {per}){_layout_note(labels)}; once switched "
        f"the DRA driver publishes them as MIG devices, which DeviceClass gpu.nvidia.com (extendedResourceName "
        f"{GPU}) does not select: pods asking {GPU} land there only rewritten to claims of DeviceClass "
        f"{class_for(resource_for(profile_name))}")
    return MigNode(model, gpus, static, {GPU: devices}, (resource_for(profile_name),))


def _mixed(read: _Read, product: str) -> MigNode | None:
    name, labels, bad, notes = read.name, read.labels, read.bad, read.notes
    model = read.model_of(product, labels.get(MEMORY_LABEL))
    if model is None or not model.mig_capable:
        bad(PRODUCT_LABEL, f"{PRODUCT_LABEL}={product or '(none)'}: not a MIG-capable model of kubedra's catalogue "
            f"({STRATEGY_LABEL}=mixed); known models: {', '.join(catalogue.known_names())}")
        return None
    counts = _counts(read)
    if counts is None:
        return None
    if not counts:
        notes.append(f"Node {name}: {STRATEGY_LABEL}=mixed but neither nvidia.com/mig-<profile> resources nor "
                     "nvidia.com/mig-<profile>.count labels say which MIG devices it has: its MIG layout cannot be "
                     "known; planned with whole GPUs")
        return None
    profiles = []
    for profile_name, n in sorted(counts.items()):
        profile = _profile(model, profile_name)
        if profile is None:
            bad(f"{resource_for(profile_name)}.count", f"{model.name} has no MIG profile {profile_name} (its "
                f"profiles: {', '.join(p.name for p in model.mig_profiles)})")
            return None
        profiles.extend([profile] * n)
    whole_text = str(read.allocatable.get(GPU, "0"))
    whole = int(whole_text) if whole_text.isdigit() else 0
    total_text = labels.get(COUNT_LABEL)
    if total_text is None or not total_text.isdigit() or int(total_text) <= whole:
        bad(COUNT_LABEL, f"{COUNT_LABEL}={total_text!r}: the node's GPUs (MIG and whole) must be counted to place "
            f"its MIG devices, more than the {whole} whole ones it advertises as {GPU}")
        return None
    total = int(total_text)
    placed = _place(model, profiles, total - whole)
    if placed is None:
        listed = ", ".join(f"{n}x {p}" for p, n in sorted(counts.items()))
        bad(COUNT_LABEL, f"{COUNT_LABEL}={total} with {whole} whole GPUs: its MIG devices ({listed}) do not fit "
            f"on {total - whole} {model.name} GPUs")
        return None
    resources = tuple(resource_for(p) for p in sorted(counts))
    listed = ", ".join(f"{n}x {p}" for p, n in sorted(counts.items()))
    notes.append(
        f"Node {name}: {STRATEGY_LABEL}=mixed: MIG devices {listed} on {total - whole} of its {total} GPUs"
        f"{_layout_note(labels)}; once switched the DRA driver publishes them as they are (static MIG, no "
        "DynamicMIG), and pods asking nvidia.com/mig-<profile> are served through the extendedResourceName of "
        "DeviceClasses " + ", ".join(class_for(r) for r in resources))
    plugin = {resource_for(p): n for p, n in counts.items()}
    return MigNode(model, total, (*placed, *(() for _ in range(whole))), plugin, resources)


def _counts(read: _Read) -> dict[str, int] | None:
    """MIG devices per profile: ``nvidia.com/mig-<profile>`` as advertised, else GFD's ``.count`` labels; None where
    a label is bad."""
    labels, allocatable, bad = read.labels, read.allocatable, read.bad
    counts: dict[str, int] = {}
    for key, value in sorted(labels.items()):
        found = mig_profile(key.removesuffix(".count")) if key.endswith(".count") else None
        if found is None:
            continue
        if not value.isdigit():
            bad(key, f"{key}={value!r} is not a count of MIG devices")
            return None
        counts[found] = int(value)
    for resource, advertised in allocatable.items():  # what the device plugin advertises wins over GFD's labels
        found = mig_profile(resource)
        if found is not None and str(advertised).isdigit():
            counts[found] = int(str(advertised))
    return {p: n for p, n in counts.items() if n > 0}


def mig_classes(scenario: Scenario, gpu_nodes: dict[str, GpuNode], notes: list[str]) -> Scenario:
    """The DeviceClasses that serve the MIG nodes' devices once switched, where the input has none: for each
    ``nvidia.com/mig-<profile>`` the class ``kubedra migrate`` writes (its selector on the profile; the name as
    ``extendedResourceName`` where pods ask for it by name: a mixed node's)."""
    served = {c.spec.extended_resource_name for c in scenario.classes if c.spec.extended_resource_name}
    names = {c.metadata.name for c in scenario.classes}
    added: list[DeviceClass] = []
    for resource in sorted({r for g in gpu_nodes.values() for r in g.mig_resources}):
        mixed_served = any(resource in g.plugin.status.allocatable for g in gpu_nodes.values())
        name = class_for(resource)
        if name in names or (mixed_served and resource in served):
            continue
        selectors = [DeviceSelector(cel=CELDeviceSelector(expression=e)) for e in class_selectors(resource)]
        added.append(DeviceClass(metadata=ObjectMeta(name=name), spec=DeviceClassSpec(
            selectors=selectors, extended_resource_name=resource if mixed_served else None)))
        names.add(name)
    if not added:
        return scenario
    notes.append("DeviceClasses " + ", ".join(c.metadata.name for c in added) + " (as kubedra migrate writes them, "
                 "extendedResourceName for the nvidia.com/mig-<profile> pods ask) are planned as applied before the "
                 "first wave")
    return replace(scenario, classes=[*scenario.classes, *added])
