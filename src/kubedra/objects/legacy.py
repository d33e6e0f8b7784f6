"""The seed article's dialect → resource.k8s.io/v1, with one warning per thing that was reinterpreted.

The article (see ``kubedra/data/seed/README.md``) writes classic-DRA objects (Kubernetes 1.26-1.30)
under a ``v1beta2`` apiVersion, plus an ``NvidiaGPUConfig`` kind that never existed. What each
construct becomes, and what kubedra assumes, is said in the warning it emits:

* ``ResourceClass{driverName, parametersRef}`` → a ``DeviceClass`` of the same name with one CEL
  selector per requirement of the referenced ``NvidiaGPUConfig`` (see :mod:`kubedra.objects.gpuconfig`);
  a config no class refers to becomes a DeviceClass of its own name, so claims can use it.
* claims with ``resourceClassName`` (+ ``allocationMode: WaitForFirstConsumer|Immediate``) → a v1 claim
  with one request ``gpu`` of ``exactly.deviceClassName``.
* pods with ``containers[].resourceClaims[].source`` / pod-level ``source`` / no name → a v1 pod with
  ``spec.resourceClaims[{name, resourceClaimName}]``, ``containers[].resources.claims[{name}]``, a
  generated name and its claim's namespace.
* a bare list of Prometheus alerting rules → a ``PrometheusRule`` raw object; a device-plugin
  ``resources:`` fragment → kept raw (it is not an object).
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kubedra.objects.errors import ConversionWarning, Location, Problem
from kubedra.objects.gpuconfig import MAX_PODS_ANNOTATION, GpuRequirements, read_gpu_config

V1 = "resource.k8s.io/v1"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' generateName suffixes


@dataclass(frozen=True)
class LegacyDocument:
    """A document in the legacy dialect, waiting until every document is read (references cross files)."""

    location: Location
    kind: str
    data: Any


@dataclass
class LegacyOutput:
    """What one legacy document became: a v1 document to decode, or a raw pass-through."""

    location: Location
    document: dict[str, Any] | None = None
    raw: dict[str, Any] | None = None


@dataclass
class LegacyResult:
    outputs: dict[int, LegacyOutput] = field(default_factory=dict)  # by position in the input list
    warnings: list[ConversionWarning] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _classify_fragment(doc: Any) -> str | None:
    if isinstance(doc, list):
        rules = doc and all(isinstance(r, dict) and ("alert" in r or "record" in r) and "expr" in r for r in doc)
        return "AlertRules" if rules else None
    resources = doc.get("resources") if isinstance(doc, dict) else None
    fragment = isinstance(resources, dict) and set(resources) <= {"limits", "requests"}
    return "ContainerResources" if fragment else None


def classify(doc: Any) -> str | None:
    """The legacy construct ``doc`` is, or None when it is not in the legacy dialect."""
    if not isinstance(doc, dict) or (doc.get("kind") is None and doc.get("apiVersion") is None):
        return _classify_fragment(doc)
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    group = api_version.split("/")[0] if isinstance(api_version, str) and "/" in api_version else ""
    if (kind == "ResourceClass" and group == "resource.k8s.io") or kind == "NvidiaGPUConfig":
        return str(kind)
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and group == "resource.k8s.io":
        spec = doc.get("spec")
        if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
            spec = spec.get("spec")
        legacy_spec = isinstance(spec, dict) and bool(
            {"resourceClassName", "allocationMode", "parametersRef"} & set(spec)
        )
        return str(kind) if legacy_spec else None
    if kind == "Pod" and api_version == "v1":
        return "Pod" if _is_legacy_pod(doc) else None
    return None


def _is_legacy_pod(doc: dict[str, Any]) -> bool:
    metadata = doc.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return False  # not a nameless pod but a wrong one: the decoder names the field
    if not isinstance(metadata, dict) or not (metadata.get("name") or metadata.get("generateName")):
        return True
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return False
    claims = spec.get("resourceClaims")
    if isinstance(claims, list) and any(isinstance(c, dict) and "source" in c for c in claims):
        return True
    containers = spec.get("containers")
    return isinstance(containers, list) and any(isinstance(c, dict) and "resourceClaims" in c for c in containers)


def _name(doc: dict[str, Any]) -> str:
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _metadata(doc: dict[str, Any]) -> dict[str, Any]:
    metadata = doc.get("metadata")
    return copy.deepcopy(metadata) if isinstance(metadata, dict) else {}


def _pod_shape_ok(spec: dict[str, Any]) -> bool:
    """Whether the lists and maps the pod conversion rewrites have their types (anything else is left as it is)."""
    containers = spec.get("containers")
    if not isinstance(spec.get("resourceClaims", []), list | None) or not isinstance(containers, list | None):
        return False
    for container in containers or []:
        if not isinstance(container, dict):
            continue
        resources = container.get("resources")
        if resources is not None and not isinstance(resources, dict):
            return False
        if resources and not isinstance(resources.get("claims", []), list | None):
            return False
    return True


class _Converter:
    def __init__(self, documents: Sequence[LegacyDocument], claims: Sequence[tuple[str, str]]) -> None:
        self.documents = documents
        self.result = LegacyResult()
        self.configs: dict[str, int] = {}
        for i, d in enumerate(documents):
            if d.kind == "NvidiaGPUConfig":
                self.configs.setdefault(_name(d.data), i)
        self.requirements: dict[int, GpuRequirements] = {}
        self.referenced: set[int] = set()
        self.class_annotations: dict[str, dict[str, str]] = {}
        self.claim_namespaces: dict[str, set[str]] = {}
        for namespace, name in claims:
            self.claim_namespaces.setdefault(name, set()).add(namespace)

    def warn(self, location: Location, written: str, today: str, assumed: str, code: str) -> None:
        self.result.warnings.append(ConversionWarning(location, written, today, assumed, code))

    def problem(self, location: Location, message: str) -> None:
        self.result.problems.append(Problem(location, message))

    def gpu_config(self, index: int) -> GpuRequirements:
        if index not in self.requirements:
            doc = self.documents[index]
            requirements = read_gpu_config(doc.data)
            for f, written, today, assumed, code in requirements.notes:
                self.warn(_at_field(doc.location, f), written, today, assumed, code)
            for f, message in requirements.problems:
                self.problem(_at_field(doc.location, f), message)
            self.requirements[index] = requirements
        return self.requirements[index]

    def run(self) -> LegacyResult:
        """Classes first (claims copy their annotations), then unreferenced configs, claims, pods, fragments."""
        self.claim_namespaces_from_legacy()
        for i, doc in enumerate(self.documents):
            if doc.kind == "ResourceClass":
                self.resource_class(i, doc)
        for i, doc in enumerate(self.documents):
            if doc.kind == "NvidiaGPUConfig" and i not in self.referenced:
                self.standalone_config(i, doc)
        for i, doc in enumerate(self.documents):
            if doc.kind in ("ResourceClaim", "ResourceClaimTemplate"):
                self.claim(i, doc)
            elif doc.kind == "Pod":
                self.pod(i, doc)
            elif doc.kind == "AlertRules":
                self.alert_rules(i, doc)
            elif doc.kind == "ContainerResources":
                self.container_resources(i, doc)
        return self.result

    def claim_namespaces_from_legacy(self) -> None:
        for doc in self.documents:
            if doc.kind == "ResourceClaim":
                namespace = _metadata(doc.data).get("namespace") or "default"
                self.claim_namespaces.setdefault(_name(doc.data), set()).add(str(namespace))

    # ---------------------------------------------------------------------------------------------
    # classes

    def _device_class(self, name: str, metadata: dict[str, Any], driver: str, req: GpuRequirements | None) -> Any:
        selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
        config: list[dict[str, Any]] = []
        annotations = dict(metadata.get("annotations") or {})
        if req is not None:
            selectors += [{"cel": {"expression": expr}} for expr in req.selectors(driver)]
            if req.opaque is not None:
                config.append({"opaque": {"driver": driver, "parameters": req.opaque}})
            if req.max_pods_per_device is not None:
                annotations[MAX_PODS_ANNOTATION] = str(req.max_pods_per_device)
        meta = {**metadata, "name": name}
        meta.pop("namespace", None)
        if annotations:
            meta["annotations"] = annotations
            self.class_annotations[name] = {k: v for k, v in annotations.items() if k == MAX_PODS_ANNOTATION}
        spec: dict[str, Any] = {"selectors": selectors}
        if config:
            spec["config"] = config
        return {"apiVersion": V1, "kind": "DeviceClass", "metadata": meta, "spec": spec}

    def resource_class(self, i: int, doc: LegacyDocument) -> None:
        data, name = doc.data, _name(doc.data)
        where = _at_object(doc.location, f"DeviceClass/{name}")
        driver = data.get("driverName")
        if not isinstance(driver, str) or not driver:
            self.problem(_at_field(where, "driverName"), "Required value: a ResourceClass needs driverName")
            return
        req: GpuRequirements | None = None
        ref = data.get("parametersRef")
        ref_text = "no parametersRef"
        if isinstance(ref, dict):
            ref_text = f"parametersRef {ref.get('kind')}/{ref.get('name')}"
            index = self.configs.get(str(ref.get("name"))) if ref.get("kind") == "NvidiaGPUConfig" else None
            if index is None:
                self.warn(
                    _at_field(where, "parametersRef"),
                    f"{ref_text} (apiGroup {ref.get('apiGroup')})",
                    "nothing: DeviceClasses carry CEL selectors and opaque config instead of a parameters object",
                    "the referenced object is not in the input, so the class selects every device of the driver",
                    "legacy-parameters-missing",
                )
            else:
                self.referenced.add(index)
                req = self.gpu_config(index)
        self.warn(
            where,
            f"{data.get('apiVersion')} ResourceClass {name} (driverName {driver}, {ref_text})",
            f'{V1} DeviceClass {name}: selector device.driver == "{driver}" plus one CEL selector per '
            "requirement; sharing settings as opaque config (ResourceClass was classic DRA, removed in 1.31)",
            "the DeviceClass keeps the ResourceClass's name so claims that name it still work",
            "legacy-resourceclass",
        )
        self.result.outputs[i] = LegacyOutput(where, self._device_class(name, _metadata(data), driver, req))

    def standalone_config(self, i: int, doc: LegacyDocument) -> None:
        name = _name(doc.data)
        api_version = doc.data.get("apiVersion")
        driver = api_version.split("/")[0] if isinstance(api_version, str) and "/" in api_version else "gpu.nvidia.com"
        where = _at_object(doc.location, f"DeviceClass/{name}")
        req = self.gpu_config(i)
        self.warn(
            where,
            f"NvidiaGPUConfig {name}, which no ResourceClass refers to",
            f"{V1} DeviceClass {name} with the config's selectors and opaque GpuConfig",
            f"claims that want this configuration name DeviceClass {name}; driver {driver} taken from the apiVersion",
            "legacy-standalone-config",
        )
        self.result.outputs[i] = LegacyOutput(where, self._device_class(name, _metadata(doc.data), driver, req))

    # ---------------------------------------------------------------------------------------------
    # claims

    def claim(self, i: int, doc: LegacyDocument) -> None:
        data = copy.deepcopy(doc.data)
        template = doc.kind == "ResourceClaimTemplate"
        outer: dict[str, Any] = data["spec"] if isinstance(data.get("spec"), dict) else {}
        spec: dict[str, Any] = outer["spec"] if template and isinstance(outer.get("spec"), dict) else outer
        name = _name(data)
        where = _at_object(doc.location, f"{doc.kind}/{name}")
        class_name = spec.get("resourceClassName")
        if not isinstance(class_name, str) or not class_name:
            self.problem(_at_field(where, "spec.resourceClassName"), "Required value")
            return
        mode = spec.get("allocationMode")
        request: dict[str, Any] = {"name": "gpu", "exactly": {"deviceClassName": class_name}}
        if "parametersRef" in spec:
            self.warn(
                _at_field(where, "spec.parametersRef"),
                f"claim parametersRef {spec['parametersRef']}",
                "spec.devices.requests[].exactly.selectors and spec.devices.config[].opaque",
                "claim parameters ignored: only the class's requirements apply",
                "legacy-claim-parameters",
            )
        new_spec = {"devices": {"requests": [request]}}
        mode_text = {
            "WaitForFirstConsumer": "the default and only behaviour today: a claim is allocated when the first "
            "pod that uses it is scheduled",
            "Immediate": "no longer exists: the claim is allocated when the first pod that uses it is scheduled",
        }.get(str(mode), "no longer exists")
        self.warn(
            where,
            f"spec.resourceClassName: {class_name}" + (f", spec.allocationMode: {mode}" if mode is not None else ""),
            f"spec.devices.requests[0] {{name: gpu, exactly: {{deviceClassName: {class_name}}}}}"
            + (f"; allocationMode {mode}: {mode_text}" if mode is not None else ""),
            'one device from the class (allocationMode ExactCount, count 1); the request is named "gpu"',
            "legacy-claim",
        )
        metadata = _metadata(data)
        extra = self.class_annotations.get(class_name)
        if extra:
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **extra}
        body: dict[str, Any] = new_spec if not template else {"metadata": outer.get("metadata") or {}, "spec": new_spec}
        document = {"apiVersion": V1, "kind": doc.kind, "metadata": metadata, "spec": body}
        self.result.outputs[i] = LegacyOutput(where, document)

    # ---------------------------------------------------------------------------------------------
    # pods

    def pod(self, i: int, doc: LegacyDocument) -> None:
        data = copy.deepcopy(doc.data)
        metadata = _metadata(data)
        spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
        location = doc.location
        if not _pod_shape_ok(spec):  # converted as written: the decoder reports the wrong types with their paths
            self.result.outputs[i] = LegacyOutput(location, {**data, "metadata": metadata})
            return
        pod_claims: dict[str, dict[str, Any]] = {}
        for entry in spec.get("resourceClaims") or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                pod_claims[entry["name"]] = self._flat_claim(entry)
        containers = []
        moved: list[str] = []
        for c_index, written in enumerate(spec.get("containers") or []):
            if not isinstance(written, dict):
                containers.append(written)
                continue
            container = dict(written)
            legacy_claims = container.pop("resourceClaims", None) or []
            resources = dict(container.get("resources") or {})
            refs = list(resources.get("claims") or [])
            for entry in legacy_claims if isinstance(legacy_claims, list) else []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    self.problem(
                        _at_field(location, f"spec.containers[{c_index}].resourceClaims"),
                        "Invalid value: each entry needs a name",
                    )
                    continue
                flat = self._flat_claim(entry)
                known = pod_claims.get(entry["name"], {"name": entry["name"]})
                pod_claims[entry["name"]] = {**flat, **{k: v for k, v in known.items() if v is not None}}
                refs.append({"name": entry["name"]})
                moved.append(f"containers[{c_index}].resourceClaims[{entry['name']}]")
            if refs:
                resources["claims"] = refs
                container["resources"] = resources
            containers.append(container)
        first = next((c.get("name") for c in containers if isinstance(c, dict) and c.get("name")), "pod")
        generated = not metadata.get("name") and not metadata.get("generateName")
        if generated:
            metadata["name"] = f"{first}-{_suffix(location)}"
        namespace, namespace_note = self._namespace(metadata, pod_claims)
        metadata["namespace"] = namespace
        name = metadata.get("name") or metadata.get("generateName")
        where = _at_object(location, f"Pod/{name}")
        assumed = [namespace_note] if namespace_note else []
        if generated:
            assumed.append(f"name {metadata['name']} generated (deterministic, from the first container)")
        self.warn(
            where,
            "pod claims written in the pre-1.31 shape"
            + (f" ({', '.join(moved)} with source.resourceClaimName)" if moved else "")
            + ("; no metadata.name/namespace" if generated else ""),
            "spec.resourceClaims[{name, resourceClaimName}] and containers[].resources.claims[{name}]; "
            "a pod must live in its claims' namespace",
            "; ".join(assumed) or "claims moved as written",
            "legacy-pod",
        )
        new_spec = {**spec, "containers": containers, "resourceClaims": list(pod_claims.values())}
        document = {**data, "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": new_spec}
        self.result.outputs[i] = LegacyOutput(where, document)

    @staticmethod
    def _flat_claim(entry: dict[str, Any]) -> dict[str, Any]:
        flat = {k: v for k, v in entry.items() if k != "source"}
        source = entry.get("source")
        if isinstance(source, dict):
            for key in ("resourceClaimName", "resourceClaimTemplateName"):
                if key in source:
                    flat[key] = source[key]
        return flat

    def _namespace(self, metadata: dict[str, Any], claims: dict[str, dict[str, Any]]) -> tuple[str, str]:
        if metadata.get("namespace"):
            return str(metadata["namespace"]), ""
        found: set[str] = set()
        for claim in claims.values():
            found |= self.claim_namespaces.get(str(claim.get("resourceClaimName")), set())
        if len(found) == 1:
            namespace = found.pop()
            return namespace, f"placed in namespace {namespace}, the namespace of its claim"
        return "default", "placed in namespace default (its claims' namespace is not unique or not known)"

    # ---------------------------------------------------------------------------------------------
    # fragments

    def alert_rules(self, i: int, doc: LegacyDocument) -> None:
        stem = re.sub(r"[^a-z0-9-]+", "-", doc.location.file.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()).strip("-")
        name = stem or "legacy-rules"
        where = _at_object(doc.location, f"PrometheusRule/{name}")
        raw = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": name},
            "spec": {"groups": [{"name": name, "rules": copy.deepcopy(doc.data)}]},
        }
        alerts = ", ".join(str(r.get("alert") or r.get("record")) for r in doc.data)
        self.warn(
            where,
            f"a bare list of Prometheus rules ({alerts})",
            "a monitoring.coreos.com/v1 PrometheusRule (passed through, not a DRA object)",
            "wrapped in one rule group named after the file; the metrics it reads (kube_resourceclaim_pending, "
            "kube_resourceclaim_allocated, node_dra_resource_available) exist nowhere upstream: kube-state-metrics "
            "has only kube_pod_resourceclaim_info",
            "legacy-alert-rules",
        )
        self.result.outputs[i] = LegacyOutput(where, raw=raw)

    def container_resources(self, i: int, doc: LegacyDocument) -> None:
        limits = (doc.data.get("resources") or {}).get("limits") or {}
        asked = ", ".join(f"{k}: {v}" for k, v in limits.items()) if isinstance(limits, dict) else ""
        self.warn(
            doc.location,
            f"a container's resources fragment ({asked}), the device-plugin way",
            "still valid inside a container: with DRAExtendedResource (GA in 1.37) a DeviceClass with "
            "extendedResourceName nvidia.com/gpu serves it through DRA; the DRA-native form is a "
            "ResourceClaimTemplate request {exactly: {deviceClassName: gpu.nvidia.com, count: N}}",
            "kept as a raw fragment: it is not an object to schedule",
            "legacy-device-plugin-request",
        )
        self.result.outputs[i] = LegacyOutput(doc.location, raw=copy.deepcopy(doc.data))


def _at_field(location: Location, field_path: str) -> Location:
    return replace(location, field=field_path)


def _at_object(location: Location, obj: str) -> Location:
    return replace(location, object=obj)


def _suffix(location: Location) -> str:
    """Five name characters from the file's base name and document index: the same wherever the file is read from."""
    digest = hashlib.sha256(f"{os.path.basename(location.file)}#{location.document}".encode()).digest()
    return "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])


def convert(documents: Sequence[LegacyDocument], claims: Sequence[tuple[str, str]] = ()) -> LegacyResult:
    """Convert every legacy document; ``claims`` are the (namespace, name) of the v1 claims in the input."""
    return _Converter(documents, claims).run()
