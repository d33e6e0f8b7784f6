"""Workloads that ask for GPUs the device-plugin way (``nvidia.com/gpu``, ``nvidia.com/mig-<profile>``).

``claims`` mode rewrites each pod template: a ResourceClaimTemplate per workload and long-lived container (app
containers and sidecars; one request per extended resource, ``count`` = the number asked for), ``spec.resourceClaims``
and ``resources.claims`` added, the extended resource removed. Plain init containers first use the claims of the
long-lived containers that start after them, and share one more template for what those do not cover (the largest
shortfall of any init container): the pod keeps the device count kube-scheduler gives the original
(``plan_init_reuse``). ``extended-resource`` mode leaves pods alone and says which DeviceClasses (with
``extendedResourceName``, KEP-5004) let the scheduler serve the same names through DRA.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from kubedra.cluster.deviceclasses import GPU_CLASS, MIG_CLASS
from kubedra.objects import formats
from kubedra.objects.errors import Location, Problem
from kubedra.objects.gpuconfig import read_gpu_config
from kubedra.objects.quantity import parse_quantity

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
DRIVER = "gpu.nvidia.com"
_MIG = re.compile(r"^nvidia\.com/mig-([0-9]+g\.[0-9]+gb(?:\+[a-z]+)?|[0-9]+c\.[0-9]+g\.[0-9]+gb)$")

# Where each kind keeps its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
}
_CONTAINER_LISTS = ("initContainers", "containers")


def is_gpu_resource(name: str) -> bool:
    """A name the device plugin advertises: ``nvidia.com/gpu``, its ``.shared`` replica, or a mixed-MIG profile."""
    base = name.removesuffix(SHARED_SUFFIX)
    return base == GPU_RESOURCE or _MIG.match(base) is not None


def mig_profile(name: str) -> str | None:
    match = _MIG.match(name.removesuffix(SHARED_SUFFIX))
    return match.group(1) if match else None


def class_for(name: str) -> str:
    """The DeviceClass that serves ``name``: NVIDIA's ``gpu.nvidia.com`` for whole GPUs, ``mig-<profile>.nvidia.com``
    for one MIG profile, with ``.shared`` before the domain for a renamed replica (``nvidia.com/gpu.shared``)."""
    base = name.removesuffix(SHARED_SUFFIX)
    stem = "gpu" if base == GPU_RESOURCE else "mig-" + (mig_profile(base) or "").replace("+", "-")
    shared = ".shared" if name.endswith(SHARED_SUFFIX) else ""
    return f"{stem}{shared}.nvidia.com"


def class_selectors(name: str) -> list[str]:
    """CEL for the class serving ``name`` (NVIDIA's chart's selector, plus the MIG profile or the shares)."""
    profile = mig_profile(name)
    kind = "mig" if profile else "gpu"
    expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
    if profile:
        expression += f" && device.attributes['{DRIVER}'].profile == '{profile}'"
    if name.endswith(SHARED_SUFFIX):
        expression += " && device.allowMultipleAllocations"
    return [expression]


def request_name(resource: str) -> str:
    """A DNS label for the claim request of ``resource``: ``gpu``, ``mig-1g-5gb``."""
    profile = mig_profile(resource)
    return "gpu" if profile is None else "mig-" + re.sub(r"[^a-z0-9]+", "-", profile).strip("-")


def dns_label(text: str, limit: int = 63) -> str:
    """``text`` if it fits, else cut with a short hash so two long names stay distinct."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:5]
    return f"{text[: limit - 6].rstrip('-.')}-{digest}"


@dataclass
class GpuAsk:
    """What one container asks of one device-plugin resource."""

    resource: str
    count: int


@dataclass
class ContainerAsk:
    index: int
    list_name: str
    name: str
    asks: list[GpuAsk] = field(default_factory=list)
    sidecar: bool = False  # an init container with restartPolicy Always: long-lived, like an app container

    @property
    def path(self) -> str:
        return f"{self.list_name}[{self.index}]"

    @property
    def label(self) -> str:
        """The container's name as a piece of the claim's and template's names: lower case, other characters as
        '-', no '-' at either end; its place in the pod where nothing is left (a name the API server refuses)."""
        part = re.sub(r"[^a-z0-9-]+", "-", self.name.lower()).strip("-")
        return part or f"{self.list_name.lower()}-{self.index}"

    @property
    def long_lived(self) -> bool:
        """Runs beside the app: an app container or a sidecar. A plain init container has finished before the
        long-lived containers after it start, so it can use their devices (as kube-scheduler's KEP-5004 claim does)."""
        return self.list_name == "containers" or self.sidecar

    def order(self) -> tuple[int, int]:
        """Position in the kubelet's start order: init containers, then app containers."""
        return (0 if self.list_name == "initContainers" else 1, self.index)


def _count(name: str, value: Any, field_path: str, problems: list[Problem], where: Location) -> int | None:
    """The device count, or None with a problem in the words ``kubedra validate`` uses for the same field."""
    text = str(value)
    if isinstance(value, bool):
        problems.append(Problem(_at(where, field_path), f'Invalid value: "{text}": must be an integer'))
        return None
    messages = formats.resource_quantity(name, text) or formats.device_count(name, text)
    if messages:
        problems.extend(Problem(_at(where, field_path), message) for message in messages)
        return None
    return parse_quantity(str(parse_quantity(text))).k8s_as_int64()  # read as stored: "1.0" is stored as "1"


def _at(where: Location, field_path: str) -> Location:
    return Location(where.file, where.document, where.object, field_path)


def container_asks(pod_spec: Any, prefix: str, where: Location, problems: list[Problem]) -> list[ContainerAsk]:
    """The GPU asks of every container (init containers first, as the kubelet runs them)."""
    found: list[ContainerAsk] = []
    if not isinstance(pod_spec, dict):
        return found
    for list_name in _CONTAINER_LISTS:
        containers = pod_spec.get(list_name)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, dict) or not isinstance(container.get("resources"), dict):
                continue
            ask = ContainerAsk(i, list_name, str(container.get("name", f"{list_name}-{i}")),
                               sidecar=list_name == "initContainers" and container.get("restartPolicy") == "Always")
            resources = container["resources"]
            limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
            requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
            path = f"{prefix}.{list_name}[{i}].resources"
            for name in [*limits, *(n for n in requests if n not in limits)]:
                if not is_gpu_resource(str(name)):
                    continue
                limit = (
                    _count(str(name), limits[name], f"{path}.limits[{name}]", problems, where) if name in limits
                    else None
                )
                request = (
                    _count(str(name), requests[name], f"{path}.requests[{name}]", problems, where)
                    if name in requests else None
                )
                if limit is not None and request is not None and limit != request:
                    problems.append(Problem(
                        _at(where, f"{path}.requests[{name}]"),
                        f'Invalid value: "{requests[name]}": must be equal to {name} limit of {limits[name]}',
                    ))
                    continue
                count = limit if limit is not None else request
                if count is not None:
                    ask.asks.append(GpuAsk(str(name), count))
            if ask.asks:
                found.append(ask)
    return found


@dataclass(frozen=True)
class Requirements:
    """Selectors and a constraint from the command-line options, checked once."""

    selectors: tuple[str, ...] = ()
    same_pcie_root: bool = False


def requirements(
    min_memory: str | None, model: str | None, min_compute_capability: str | None, same_pcie_root: bool
) -> tuple[Requirements, list[str]]:
    """The selectors the options stand for, or the reasons they are invalid (one message per bad option)."""
    spec: dict[str, Any] = {}
    if min_memory is not None:
        spec["memory"] = min_memory
    if min_compute_capability is not None:
        spec["computeCapability"] = min_compute_capability
    errors: list[str] = []
    flags = {"spec.memory": "--min-memory", "spec.computeCapability": "--min-compute-capability"}
    read = read_gpu_config({"spec": spec, "metadata": {"name": "options"}})
    for path, message in read.problems:
        errors.append(f"{flags.get(path, path)}: {message}")
    selectors = [
        s for s in read.selectors(DRIVER) if ".type ==" not in s  # the class (gpu or mig) already says the type
    ]
    if model is not None:
        if not re.fullmatch(r"[A-Za-z0-9 ._+*?-]+", model):
            errors.append(f'--model: Invalid value: "{model}": a glob of letters, digits, " ._+-" and * or ?')
        else:
            regex = "".join(".*" if c == "*" else "." if c == "?" else f"[{c}]" if c in "._+" else c for c in model)
            selectors.append(f'device.attributes["{DRIVER}"].productName.matches("^(NVIDIA )?{regex}$")')
    return Requirements(tuple(selectors), same_pcie_root), errors


def template_document(
    name: str, namespace: str | None, asks: list[GpuAsk], extra: Requirements
) -> tuple[dict[str, Any], list[str]]:
    """The ResourceClaimTemplate for one container's asks, and what a human should know about it."""
    notes: list[str] = []
    requests = []
    for ask in asks:
        profile = mig_profile(ask.resource)
        selectors = [f'device.attributes["{DRIVER}"].profile == "{profile}"'] if profile else []
        selectors.extend(extra.selectors)
        exactly: dict[str, Any] = {"deviceClassName": MIG_CLASS if profile else GPU_CLASS, "count": ask.count}
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
        requests.append({"name": request_name(ask.resource), "exactly": exactly})
    devices: dict[str, Any] = {"requests": requests}
    if extra.same_pcie_root:
        if sum(a.count for a in asks) > 1:
            devices["constraints"] = [
                {"requests": [r["name"] for r in requests], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
            ]
        else:
            notes.append("--same-pcie-root: one device, nothing to align; no constraint added")
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    document = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {"spec": {"devices": devices}},
    }
    return document, notes


def extended_class_document(name: str) -> dict[str, Any]:
    """A DeviceClass mapping the device-plugin name ``name`` to DRA devices (KEP-5004 ``extendedResourceName``)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": class_for(name)},
        "spec": {
            "selectors": [{"cel": {"expression": e}} for e in class_selectors(name)],
            "extendedResourceName": name,
        },
    }


@dataclass
class InitUse:
    """What one plain init container uses after migration: requests of long-lived containers' claims (claim owner,
    resource) and, per resource, how many devices it still needs from the init containers' shared claim."""

    ask: ContainerAsk
    reused: list[tuple[ContainerAsk, str]] = field(default_factory=list)
    shortfall: dict[str, int] = field(default_factory=dict)


def plan_init_reuse(asks: list[ContainerAsk], converted: Any) -> tuple[list[InitUse], list[GpuAsk]]:
    """kube-scheduler's reuse rule for plain init containers (``createRequestsAndMappings``): per resource, walk the
    long-lived containers after the init container in start order, using their devices until the count is met; the
    rest is a shortfall. Returns each init container's use and the shared claim's asks (per resource the largest
    shortfall). ``converted(ask)`` gives the asks of a container that become claims."""
    long_lived = sorted((a for a in asks if a.long_lived), key=ContainerAsk.order)
    uses: list[InitUse] = []
    largest: dict[str, int] = {}
    for ask in sorted((a for a in asks if not a.long_lived), key=ContainerAsk.order):
        use = InitUse(ask)
        for gpu in converted(ask):
            covered = 0
            for later in long_lived:
                if later.order() < ask.order():
                    continue
                theirs = sum(g.count for g in converted(later) if g.resource == gpu.resource)
                if not theirs:
                    continue
                covered += theirs
                use.reused.append((later, gpu.resource))
                if covered >= gpu.count:
                    break
            if covered < gpu.count:
                use.shortfall[gpu.resource] = gpu.count - covered
                largest[gpu.resource] = max(largest.get(gpu.resource, 0), gpu.count - covered)
        uses.append(use)
    return uses, [GpuAsk(resource, count) for resource, count in sorted(largest.items())]
