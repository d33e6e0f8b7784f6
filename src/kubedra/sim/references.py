"""What a schema cannot see across objects: references between the inputs, and fields the release has gated off.

* a request's ``deviceClassName`` names a DeviceClass of the inputs or one NVIDIA's chart or kubedra's installs;
* a pod's (or a workload's pod template's) ``spec.resourceClaims[]`` names a ResourceClaim or ResourceClaimTemplate
  of the inputs, in the pod's namespace (claims and templates are namespaced; a pod cannot use another namespace's);
* a field whose feature gate is off in the chosen release (and ``--feature-gates``): the API server silently drops
  such fields on create, so the object would not do what it says.

With ``validate --kubeconfig`` the live cluster's DeviceClasses, claims and claim templates resolve references too
(:class:`Known`). References still unresolved are ``unresolved`` findings (the API server accepts the object; the
class or claim may exist in the cluster): ``validate`` reports them as warnings. Gated fields are errors.

Pure: loaded objects in, findings out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubedra.allocator import Features
from kubedra.cluster.deviceclasses import INSTALLED_CLASSES
from kubedra.objects.builder import Loaded
from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import DeviceClass, Pod, ResourceClaim, ResourceClaimTemplate, to_dict

_POD_SPECS = {"Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
              "DaemonSet": ("spec", "template", "spec"), "ReplicaSet": ("spec", "template", "spec"),
              "Job": ("spec", "template", "spec"), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}

# (feature field, gate name, predicate on a request/device/class dict) checked where each field lives.
_REQUEST_GATES = (("admin_access", "DRAAdminAccess", "adminAccess"),
                  ("device_taints", "DRADeviceTaints", "tolerations"),
                  ("consumable_capacity", "DRAConsumableCapacity", "capacity"))
_DEVICE_GATES = (("device_taints", "DRADeviceTaints", "taints"),
                 ("partitionable_devices", "DRAPartitionableDevices", "consumesCounters"),
                 ("consumable_capacity", "DRAConsumableCapacity", "allowMultipleAllocations"),
                 ("device_binding_conditions", "DRADeviceBindingConditions", "bindingConditions"))


@dataclass(frozen=True)
class Known:
    """What a live cluster already holds that the inputs may refer to (``validate --kubeconfig``): DeviceClass names,
    and claim and claim-template names with their namespaces."""

    classes: frozenset[str] = frozenset()
    claims: Mapping[str, frozenset[str]] = field(default_factory=dict)
    templates: Mapping[str, frozenset[str]] = field(default_factory=dict)


def _gated(features: Features, feature: str, gate: str) -> str | None:
    if getattr(features, feature, True):
        return None
    return (f"Forbidden: feature gate {gate} is off (Kubernetes {features.release} defaults and --feature-gates): "
            "the API server drops this field")


def _requests(spec: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every request and subrequest of a claim spec, with its path."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for i, request in enumerate(devices.get("requests", []) if isinstance(devices, dict) else []):
        base = f"{path}.devices.requests[{i}]"
        if isinstance(request.get("exactly"), dict):
            yield f"{base}.exactly", request["exactly"]
        for j, sub in enumerate(request.get("firstAvailable") or []):
            yield f"{base}.firstAvailable[{j}]", sub


def _claim_checks(where: Location, spec: Any, path: str, classes: set[str], features: Features, *,
                  places: str = "the inputs") -> list[Problem]:
    problems = []
    for request_path, request in _requests(spec, path):
        name = request.get("deviceClassName")
        if name and name not in classes:
            problems.append(Problem(replace(where, field=f"{request_path}.deviceClassName"),
                                    f'Not found: "{name}": no DeviceClass of this name in {places}, nor one '
                                    "NVIDIA's chart or kubedra's installs", unresolved=True))
        for feature, gate, key in _REQUEST_GATES:
            message = _gated(features, feature, gate) if request.get(key) else None
            if message:
                problems.append(Problem(replace(where, field=f"{request_path}.{key}"), message))
        if ".firstAvailable[0]" in request_path:
            message = _gated(features, "prioritized_list", "DRAPrioritizedList")
            if message:
                problems.append(Problem(replace(where, field=request_path.rsplit("[", 1)[0]), message))
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for i, constraint in enumerate(devices.get("constraints", []) if isinstance(devices, dict) else []):
        message = _gated(features, "consumable_capacity", "DRAConsumableCapacity")
        if constraint.get("distinctAttribute") and message:
            problems.append(Problem(replace(where, field=f"{path}.devices.constraints[{i}].distinctAttribute"),
                                    message))
    return problems


def _pod_claims(where: Location, pod_spec: Any, path: str, namespace: str, *,
                claims: dict[str, set[str]], templates: dict[str, set[str]],
                places: str = "the inputs") -> list[Problem]:
    problems = []
    entries = pod_spec.get("resourceClaims") if isinstance(pod_spec, dict) else None
    for i, entry in enumerate(entries or []):
        for key, known, kind in (("resourceClaimName", claims, "ResourceClaim"),
                                 ("resourceClaimTemplateName", templates, "ResourceClaimTemplate")):
            name = entry.get(key) if isinstance(entry, dict) else None
            if not name or namespace in known.get(name, set()):
                continue
            elsewhere = sorted(known.get(name, set()))
            detail = (f"exists in namespace {', '.join(elsewhere)}, not in the pod's namespace {namespace}" if elsewhere
                      else f"no {kind} of this name in {places}")
            problems.append(Problem(replace(where, field=f"{path}.resourceClaims[{i}].{key}"),
                                    f'Not found: "{name}": {detail}', unresolved=True))
    return problems


def reference_problems(loaded: Loaded, features: Features, known: Known | None = None) -> list[Problem]:
    """Every finding of the module docstring, in input order; with ``known``, what the cluster holds resolves
    references too."""
    places = "the inputs" if known is None else "the inputs or the cluster"
    known = known or Known()
    classes = set(INSTALLED_CLASSES) | {c.metadata.name for c in loaded.of_kind(DeviceClass)} | known.classes
    claims: dict[str, set[str]] = {name: set(spaces) for name, spaces in known.claims.items()}
    templates: dict[str, set[str]] = {name: set(spaces) for name, spaces in known.templates.items()}
    for claim in loaded.of_kind(ResourceClaim):
        claims.setdefault(claim.metadata.name, set()).add(claim.metadata.namespace or "default")
    for template in loaded.of_kind(ResourceClaimTemplate):
        templates.setdefault(template.metadata.name, set()).add(template.metadata.namespace or "default")
    problems: list[Problem] = []
    for obj in loaded.objects:
        where = loaded.location_of(obj)
        body = to_dict(obj)
        if isinstance(obj, ResourceClaim):
            problems.extend(_claim_checks(where, body.get("spec"), "spec", classes, features, places=places))
        elif isinstance(obj, ResourceClaimTemplate):
            problems.extend(_claim_checks(where, body.get("spec", {}).get("spec"), "spec.spec", classes, features,
                                          places=places))
        elif isinstance(obj, DeviceClass):
            message = _gated(features, "extended_resource", "DRAExtendedResource")
            if body.get("spec", {}).get("extendedResourceName") and message:
                problems.append(Problem(replace(where, field="spec.extendedResourceName"), message))
        elif isinstance(obj, Pod):
            problems.extend(_pod_claims(where, body.get("spec"), "spec", obj.metadata.namespace or "default",
                                        claims=claims, templates=templates, places=places))
        else:
            problems.extend(_gated_kinds(where, body, features))
    for raw in loaded.raw:
        path = _POD_SPECS.get(str(raw.data.get("kind")))
        if path is None:
            continue
        pod_spec: Any = raw.data
        for key in path:
            pod_spec = pod_spec.get(key) if isinstance(pod_spec, dict) else None
        metadata: dict[str, Any] = raw.data["metadata"] if isinstance(raw.data.get("metadata"), dict) else {}
        where = replace(raw.location, object=raw.location.object or f"{raw.data.get('kind')}/{metadata.get('name')}")
        problems.extend(_pod_claims(where, pod_spec, ".".join(path), str(metadata.get("namespace") or "default"),
                                    claims=claims, templates=templates, places=places))
    return problems


def _gated_kinds(where: Location, body: dict[str, Any], features: Features) -> list[Problem]:
    """ResourceSlice device fields and the DeviceTaintRule kind, where their gates are off."""
    problems = []
    if body.get("kind") == "ResourceSlice":
        for i, device in enumerate(body.get("spec", {}).get("devices", [])):
            for feature, gate, key in _DEVICE_GATES:
                message = _gated(features, feature, gate) if device.get(key) else None
                if message:
                    problems.append(Problem(replace(where, field=f"spec.devices[{i}].{key}"), message))
    elif body.get("kind") == "DeviceTaintRule":
        message = _gated(features, "device_taint_rules", "DRADeviceTaintRules")
        if message:
            problems.append(Problem(replace(where, field="kind"),
                                    message.replace("drops this field", "does not serve this kind")))
    return problems
