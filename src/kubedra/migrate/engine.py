"""The migration: inputs in, output documents and the report out (pure: no files, no printing).

Per document: workloads (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, and Lists of them) are
migrated in the chosen mode; device-plugin configs (bare, or the values of the plugin's ConfigMap) become DRA
DeviceClasses and driver values; DRA objects in the betas or the seed's legacy dialect are converted to v1 as
``kubedra convert`` converts them (the same loader); everything else passes through untouched, comments included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from kubedra.migrate import clusterpolicy as cp
from kubedra.migrate import deviceplugin as dp
from kubedra.migrate import dradriver
from kubedra.migrate import workloads as wl
from kubedra.migrate.documents import (
    ParsedDocument,
    Source,
    build,
    insert_sorted,
    keep_leading_comment,
    parse,
    plain,
)
from kubedra.migrate.model import Change, Decision, Migration, MigrationError, Mode, Options, OutputFile
from kubedra.migrate.steps import steps
from kubedra.objects import legacy
from kubedra.objects.errors import InvalidInputError, Location, Problem

# Kinds of the built-in groups a manifest may hold; another kind in these groups is a typo, not a pass-through.
KNOWN_KINDS: dict[str, set[str]] = {
    "v1": {"Pod", "Service", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "PersistentVolumeClaim",
           "PersistentVolume", "Node", "Endpoints", "LimitRange", "ResourceQuota", "ReplicationController",
           "PodTemplate", "Event", "List"},
    "apps/v1": {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ControllerRevision"},
    "batch/v1": {"Job", "CronJob"},
    "resource.k8s.io": {"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule",
                        "ResourceClass"},
}


def _known(api_version: str, kind: str) -> bool:
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    table = KNOWN_KINDS.get(group if group == "resource.k8s.io" else api_version)
    if table is None:
        return group not in ("", "apps", "batch")  # another group: a CRD or an API kubedra does not know; passed
    return kind in table


def _name(data: Any) -> str:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(metadata, dict):
        return ""
    return str(metadata.get("name") or str(metadata.get("generateName") or "").rstrip("-"))


def _namespace(data: Any) -> str | None:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    value = metadata.get("namespace") if isinstance(metadata, dict) else None
    return str(value) if value else None


def _get(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


class _Run:
    def __init__(self, sources: Sequence[Source], options: Options) -> None:
        self.sources = sources
        self.options = options
        self.result = Migration()
        self.problems: list[Problem] = []
        self.template_names: set[tuple[str, str]] = set()  # (namespace, name): in the input or written
        self.template_of: dict[tuple[str, ...], str] = {}  # (group, kind, namespace, name, claim) -> template
        self.served: dict[str, Location] = {}  # extended-resource mode: name -> first workload asking for it
        self.classes_in_input: set[str] = set()
        self.class_names_in_input: set[str] = set()
        self.first_file_for: dict[str, int] = {}
        self.plugin_mapped: set[str] = set()
        self.used_classes: set[str] = set()
        self.plugin_classes: set[str] = set()
        self.configmaps: set[tuple[str, str]] = set()  # (namespace, name) of device-plugin ConfigMaps converted
        self.identity: tuple[str, ...] | None = None  # the workload being rewritten, when it has a name
        self.configmap_keys: dict[str, set[str]] = {}  # ConfigMaps of the input: name -> data keys
        self.policy_defaults: set[str] = set()  # devicePlugin.config.default of the input's ClusterPolicies
        self.policies: list[tuple[int, Location, cp.Policy]] = []
        self.gpu_cluster_in_input = False
        if options.dra_install not in dradriver.INSTALLS:
            self.problems.append(Problem(Location(), f'--dra-install: Unsupported value: "{options.dra_install}": '
                                                     'supported values: "helm", "gpucluster"'))
        self.extra, errors = wl.requirements(options.min_memory, options.model, options.min_compute_capability,
                                             options.same_pcie_root)
        self.problems.extend(Problem(Location(), e) for e in errors)
        if options.gpu_memory is not None and not dp.memory_ok(options.gpu_memory):
            self.problems.append(Problem(Location(), f'--gpu-memory: Invalid value: "{options.gpu_memory}": '
                                                     "must be a quantity of at least 1Mi, such as 80Gi"))
        if options.mode is Mode.extended_resource and options.requirements():
            flags = ", ".join(options.requirements())
            self.problems.append(Problem(Location(), f"{flags}: cannot be used with --mode extended-resource "
                                                     "(pod specs stay untouched there); use --mode claims"))

    def change(self, where: Location, action: str, detail: str) -> None:
        self.result.changes.append(Change(where, action, detail))

    def decide(self, where: Location, message: str) -> None:
        self.result.decisions.append(Decision(where, message))

    # ---------------------------------------------------------------------------------------------- the run

    def run(self) -> Migration:
        if self.problems:
            raise MigrationError(self.problems)
        parsed: list[list[ParsedDocument]] = []
        for source in self.sources:
            documents, problems = parse(source)
            self.problems.extend(problems)
            parsed.append(documents)
        if self.problems:
            raise MigrationError(self.problems)
        self.scan(parsed)
        converted = self.convert_dra(parsed)
        outputs: list[list[Any]] = []
        for f, (source, documents) in enumerate(zip(self.sources, parsed, strict=True)):
            out: list[Any] = []
            for document in documents:
                where = Location(source.name, document.index)
                if (f, document.index) in converted:
                    replacements = converted[(f, document.index)]
                    if replacements:
                        keep_leading_comment(document.data, replacements[0])
                    for data in replacements:
                        out.extend(self.document(f, where, data))
                else:
                    out.extend(self.document(f, where, document.data))
            outputs.append(out)
        if self.problems:
            raise MigrationError(self.problems)
        self.add_extended_classes(outputs)
        self.add_policy_installs(outputs)
        self.result.files = [OutputFile(s.name, docs) for s, docs in zip(self.sources, outputs, strict=True)]
        self.result.steps = steps(self.result, self.options, sorted(self.used_classes), bool(self.policies))
        return self.result

    def scan(self, parsed: list[list[ParsedDocument]]) -> None:
        """Kinds are known; DeviceClasses already in the input (so a second run adds none)."""
        for source, documents in zip(self.sources, parsed, strict=True):
            for document in documents:
                self.scan_one(Location(source.name, document.index), document.data)

    def scan_one(self, where: Location, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind, api_version = data.get("kind"), data.get("apiVersion")
        if kind is None and api_version is None:
            return  # a fragment or a device-plugin config: handled per document
        if not isinstance(kind, str) or not isinstance(api_version, str) or not kind or not api_version:
            self.problems.append(Problem(where, "Required value: apiVersion and kind must both be set"))
            return
        if not _known(api_version, kind):
            self.problems.append(Problem(Location(where.file, where.document, f"{kind}/{_name(data)}"),
                                         f'unknown kind "{kind}" in {api_version}'))
            return
        if kind == "List" and isinstance(data.get("items"), list):
            for i, item in enumerate(data["items"]):
                self.scan_one(Location(where.file, where.document, field=f"items[{i}]"), item)
        if kind == "ResourceClaimTemplate":
            self.template_names.add((_namespace(data) or "default", _name(data)))
        self.scan_gpu_operator(kind, api_version, data)
        if kind == "DeviceClass":
            self.class_names_in_input.add(_name(data))
            name = _get(data, ("spec", "extendedResourceName"))
            if name:
                self.classes_in_input.add(str(name))

    def scan_gpu_operator(self, kind: str, api_version: str, data: dict[str, Any]) -> None:
        """ConfigMaps' keys, ClusterPolicies' default configs, a GPUCluster already there (a second run adds none)."""
        if kind == "ConfigMap" and isinstance(data.get("data"), dict):
            self.configmap_keys.setdefault(_name(data), set()).update(str(k) for k in data["data"])
        if cp.is_cluster_policy(data):
            default = _get(data, ("spec", "devicePlugin", "config", "default"))
            if isinstance(default, str):
                self.policy_defaults.add(default)
        if kind == "GPUCluster" and api_version == dradriver.GPU_CLUSTER_VERSION:
            self.gpu_cluster_in_input = True

    def convert_dra(self, parsed: list[list[ParsedDocument]]) -> dict[tuple[int, int], list[Any]]:
        """Beta and legacy DRA documents → v1 through the loader (references cross files: classes, claims)."""
        from kubedra.objects.load import load_paths
        from kubedra.objects.model import to_dict

        picked: list[tuple[int, int]] = []
        payload: list[tuple[str, Any]] = []
        for f, (source, documents) in enumerate(zip(self.sources, parsed, strict=True)):
            for document in documents:
                if _needs_conversion(document.data) or _is_v1_claim(document.data):
                    picked.append((f, document.index))
                    payload.append((source.name, plain(document.data)))
        if not any(_needs_conversion(d) for _, d in payload):
            return {}
        try:
            loaded = load_paths([], documents=payload, api_validation=False)
        except InvalidInputError as error:
            self.problems.extend(Problem(self._local(p.location, picked), p.message) for p in error.problems)
            return {}
        out: dict[tuple[int, int], list[Any]] = {}
        converting = {picked[i] for i, (_, d) in enumerate(payload) if _needs_conversion(d)}
        for key in converting:
            out[key] = []
        items: list[tuple[Location, Any]] = [(loaded.location_of(o), _clean(to_dict(o))) for o in loaded.objects]
        items.extend((r.location, r.data) for r in loaded.raw)
        for location, data in sorted(items, key=lambda item: item[0].document or 0):
            key = picked[location.document or 0]
            if key in out:
                out[key].append(build(data))
        for warning in loaded.warnings:
            where = self._local(warning.location, picked)
            detail = f"{warning.written} -> {warning.today}" + (f" (assumed: {warning.assumed})"
                                                                 if warning.assumed else "")
            self.change(where, "converted", detail)
        return out

    def _local(self, location: Location, picked: list[tuple[int, int]]) -> Location:
        if location.document is None or location.document >= len(picked):
            return location
        f, index = picked[location.document]
        return Location(self.sources[f].name, index, location.object, location.field)

    # ---------------------------------------------------------------------------------------------- per document

    def document(self, f: int, where: Location, data: Any) -> list[Any]:
        """The documents that replace ``data`` (itself, possibly rewritten, and what it needs first)."""
        if dp.is_plugin_config(data):
            return self.plugin_config(where, data)
        if not isinstance(data, dict) or "kind" not in data:
            if isinstance(data, dict) and legacy.classify(data) == "ContainerResources":
                asks = wl.container_asks({"containers": [{"name": "fragment", "resources": data["resources"]}]},
                                         "", where, self.problems)
                if asks:
                    self.decide(where, "a container's resources fragment, not an object: kept as is; put it in a "
                                       "workload and run kubedra migrate on that")
            return [data]
        kind = str(data["kind"])
        where = Location(where.file, where.document, f"{kind}/{_name(data)}", where.field)
        if kind == "List" and isinstance(data.get("items"), list):
            items = data["items"]
            new_items: list[Any] = []
            for i, item in enumerate(items):
                at = Location(where.file, where.document, where.object, f"items[{i}]")
                new_items.extend(self.document(f, at, item))
            items[:] = new_items
            return [data]
        if kind == "ConfigMap" and isinstance(data.get("data"), dict):
            return [data, *self.plugin_configmap(where, data)]
        if kind in wl.POD_SPEC_PATHS:
            return self.workload(f, where, kind, data)
        if cp.is_cluster_policy(data):
            self.cluster_policy(f, where, data)
        return [data]

    def workload(self, f: int, where: Location, kind: str, data: Any) -> list[Any]:
        path = wl.POD_SPEC_PATHS[kind]
        pod_spec = _get(data, path)
        prefix = ".".join(path)
        if where.field:  # inside a List
            prefix = f"{where.field}.{prefix}"
        asks = wl.container_asks(pod_spec, prefix, where, self.problems)
        if not asks:
            return [data]
        if self.options.mode is Mode.extended_resource:
            for ask in asks:
                for gpu in (g for g in ask.asks if g.count):  # a zero asks for nothing: no class to serve it
                    self.served.setdefault(gpu.resource, where)
                    self.first_file_for.setdefault(gpu.resource, f)
                    self.change(where, "unchanged", f"{ask.path} ({ask.name}): {gpu.resource}: {gpu.count} stays; "
                                f"served through DRA by DeviceClass {wl.class_for(gpu.resource)} on nodes without "
                                "the device plugin")
            return [data]
        return [*self.to_claims(where, kind, data, pod_spec, prefix=prefix, asks=asks), data]

    def to_claims(
        self, where: Location, kind: str, data: Any, pod_spec: Any, *, prefix: str, asks: list[wl.ContainerAsk]
    ) -> list[Any]:
        templates: list[Any] = []
        namespace = _namespace(data)
        workload = _name(data) or kind.lower()
        asks = self._drop_zeros(where, prefix, pod_spec, asks)
        # An object's identity, when it has a name: the loader refused two different objects of one identity, so
        # a second one is an identical copy and gets the same template names (kubectl applies the copies as one).
        metadata = data.get("metadata")
        named = isinstance(metadata, dict) and bool(metadata.get("name"))
        identity = (str(data.get("apiVersion", "")).rpartition("/")[0], kind, namespace or "default", workload)
        self.identity = identity if named else None
        existing = pod_spec.get("resourceClaims") if isinstance(pod_spec.get("resourceClaims"), list) else []
        taken = {str(c.get("name")) for c in existing if isinstance(c, dict)}
        claim_of: dict[int, str] = {}  # id(long-lived ask) -> its pod claim
        for ask in asks:
            for gpu in ask.asks:
                if gpu.resource.endswith(wl.SHARED_SUFFIX):
                    self.decide(where, f"{prefix}.{ask.path}: {gpu.resource} is a shared replica (device-plugin "
                                       "time-slicing): kept; serve it with the .shared DeviceClass of the converted "
                                       "device-plugin config, or claim a share of a GPU")
            converted = _converted(ask)
            if not converted or not ask.long_lived:
                continue
            claim = self._new_claim(where, pod_spec, taken=taken, claim=wl.dns_label(f"{ask.label}-gpu"),
                                    template=f"{workload}-{ask.label}-gpu",
                                    fallback=f"{workload}-{kind.lower()}-{ask.label}-gpu", namespace=namespace,
                                    asks=converted, templates=templates)
            claim_of[id(ask)] = claim
            self._rewrite_container(pod_spec, ask, converted, [(claim, None)])
            asked = ", ".join(f"{g.resource}: {g.count}" for g in converted)
            self.change(where, "rewritten", f"{prefix}.{ask.path} ({ask.name}): {asked} -> resources.claims "
                                            f"[{claim}], spec.resourceClaims {claim} from ResourceClaimTemplate "
                                            f"{templates[-1]['metadata']['name']}")
        uses, shortfall = wl.plan_init_reuse(asks, _converted)
        init_claim = None
        if shortfall:
            init_claim = self._new_claim(where, pod_spec, taken=taken, claim="init-gpu",
                                         template=f"{workload}-init-gpu",
                                         fallback=f"{workload}-{kind.lower()}-init-gpu",
                                         namespace=namespace, asks=shortfall, templates=templates)
        for use in uses:
            refs: list[tuple[str, str | None]] = [
                (claim_of[id(owner)], wl.request_name(resource)) for owner, resource in use.reused
                if id(owner) in claim_of
            ]
            if init_claim is not None:
                refs.extend((init_claim, wl.request_name(resource)) for resource in use.shortfall)
            converted = _converted(use.ask)
            self._rewrite_container(pod_spec, use.ask, converted, refs)
            asked = ", ".join(f"{g.resource}: {g.count}" for g in converted)
            shown = ", ".join(f"{claim}/{request}" for claim, request in refs)
            self.change(where, "rewritten", f"{prefix}.{use.ask.path} ({use.ask.name}): {asked} -> resources.claims "
                                            f"[{shown}]: an init container uses the devices of the containers that "
                                            "start after it, as kube-scheduler serves nvidia.com/gpu; the pod keeps "
                                            "its GPU count")
        return templates

    def _drop_zeros(
        self, where: Location, prefix: str, pod_spec: Any, asks: list[wl.ContainerAsk]
    ) -> list[wl.ContainerAsk]:
        """A container's ``nvidia.com/gpu: 0`` asks for nothing: it goes with the device plugin's name and makes no
        claim (a request for 0 devices is invalid). The asks left, containers without any dropped."""
        kept: list[wl.ContainerAsk] = []
        for ask in asks:
            zeros = [g for g in ask.asks if g.count == 0 and not g.resource.endswith(wl.SHARED_SUFFIX)]
            if zeros:
                self._rewrite_container(pod_spec, ask, zeros, [])
                names = ", ".join(f"{g.resource}: 0" for g in zeros)
                self.change(where, "rewritten", f"{prefix}.{ask.path} ({ask.name}): {names} removed: no device "
                                                "asked, no claim")
                ask.asks = [g for g in ask.asks if g not in zeros]
            if ask.asks:
                kept.append(ask)
        return kept

    def _template_name(self, namespace: str | None, claim: str, candidates: list[str]) -> str:
        """The first candidate (then the last with -2, -3, ...) no other template of the namespace has; the same
        name again for an identical copy of an object."""
        key = (*self.identity, claim) if self.identity is not None else None
        if key is not None and key in self.template_of:
            return self.template_of[key]
        bucket = namespace or "default"
        names = [wl.dns_label(c, 253) for c in candidates]
        suffix = 2
        while all((bucket, n) in self.template_names for n in names):
            names = [wl.dns_label(f"{candidates[-1]}-{suffix}", 253)]
            suffix += 1
        template = next(n for n in names if (bucket, n) not in self.template_names)
        self.template_names.add((bucket, template))
        if key is not None:
            self.template_of[key] = template
        return template

    def _new_claim(
        self, where: Location, pod_spec: Any, *, taken: set[str], claim: str, template: str,
        fallback: str, namespace: str | None, asks: list[wl.GpuAsk], templates: list[Any],
    ) -> str:
        """A pod claim from a new ResourceClaimTemplate for ``asks``: ``claim``, numbered (-2, -3, ...) when the pod
        has a claim of that name already (its own, or an app container "init"'s beside the init containers' one)."""
        base, number = claim, 2
        while claim in taken:
            claim, number = wl.dns_label(f"{base}-{number}"), number + 1
        taken.add(claim)
        template = self._template_name(namespace, claim, [template, fallback])
        document, notes = wl.template_document(template, namespace, asks, self.extra)
        self.used_classes.update(document_class(g) for g in asks)
        templates.append(build(document))
        self._add_pod_claim(pod_spec, claim, template)
        at = Location(where.file, where.document, f"ResourceClaimTemplate/{template}")
        got = ", ".join(f"{g.count} x {document_class(g)}" for g in asks)
        self.change(at, "added", f"{got}" + ("; " + "; ".join(self.extra.selectors) if self.extra.selectors
                                               else ""))
        for note in notes:
            self.decide(at, note)
        return claim

    @staticmethod
    def _rewrite_container(
        pod_spec: Any, ask: wl.ContainerAsk, converted: list[wl.GpuAsk], refs: list[tuple[str, str | None]]
    ) -> None:
        container = pod_spec[ask.list_name][ask.index]
        resources = container["resources"]
        for part in ("limits", "requests"):
            values = resources.get(part)
            if not isinstance(values, dict):
                continue
            for gpu in converted:
                values.pop(gpu.resource, None)
            if not values:
                del resources[part]
        claims = resources.get("claims")
        if not refs:
            return
        if not isinstance(claims, list):
            claims = build([])
            insert_sorted(resources, "claims", claims)
        for claim, request in refs:
            claims.append(build({"name": claim} if request is None else {"name": claim, "request": request}))

    @staticmethod
    def _add_pod_claim(pod_spec: Any, claim: str, template: str) -> None:
        claims = pod_spec.get("resourceClaims")
        if not isinstance(claims, list):
            claims = build([])
            insert_sorted(pod_spec, "resourceClaims", claims)
        claims.append(build({"name": claim, "resourceClaimTemplateName": template}))

    # ---------------------------------------------------------------------------------------------- device plugin

    def plugin_config(self, where: Location, data: Any) -> list[Any]:
        return self._plugin(where, None, plain(data), prefix="")

    def plugin_configmap(self, where: Location, data: Any) -> list[Any]:
        # A named ConfigMap seen before is an identical copy (the loader refused a different one of its name):
        # its DeviceClasses and values are written once, not again under other names.
        identity = (_namespace(data) or "default", _name(data))
        if identity[1] and identity in self.configmaps:
            return []
        self.configmaps.add(identity)
        configs: list[tuple[str, Any]] = []
        for key, text in data["data"].items():
            try:
                value = YAML(typ="safe", pure=True).load(str(text))
            except YAMLError:
                continue
            if dp.is_plugin_config(value):
                configs.append((str(key), value))
        if not configs:
            return []
        # The config every node gets first (its classes keep their plain names): a ClusterPolicy's default, or the
        # usual names of it.
        first = [c for c in configs if c[0] in self.policy_defaults or c[0] in ("default", "any")]
        out: list[Any] = []
        for key, value in [*first, *(c for c in configs if c not in first)]:
            out.extend(self._plugin(where, key, value, prefix=f"data[{key}]."))
        return out

    def _plugin(self, where: Location, key: str | None, config: Any, *, prefix: str) -> list[Any]:
        result = dp.convert_config(config, key, mapped=self.plugin_mapped, classes=self.plugin_classes,
                                   gpu_memory=self.options.gpu_memory)
        for path, message in result.problems:
            self.problems.append(Problem(Location(where.file, where.document, where.object, prefix + path), message))
        out = []
        for cls in result.classes:
            name = cls["metadata"]["name"]
            if name in self.class_names_in_input:
                continue  # converted on an earlier run
            out.append(build(cls))
            at = Location(where.file, where.document, f"DeviceClass/{name}")
            self.change(at, "added", f"from the device-plugin config{f' {key}' if key else ''}")
        label = f"config {key}" if key else "config"
        for note in result.notes:
            self.decide(Location(where.file, where.document, where.object), f"device-plugin {label}: {note}")
        if result.values:
            self.result.driver_values.append({"config": key or "default", **result.values})
        if where.object == "":
            self.change(where, "converted", f"device-plugin {label} -> {len(result.classes)} DeviceClass(es) and "
                                            "DRA driver values")
        return out

    # ---------------------------------------------------------------------------------------------- GPU Operator

    def cluster_policy(self, f: int, where: Location, data: Any) -> None:
        policy, problems = cp.read_policy(plain(data), self.configmap_keys)
        for path, message in problems:
            self.problems.append(Problem(Location(where.file, where.document, where.object, path), message))
        if not problems:
            self.policies.append((f, where, policy))

    def add_policy_installs(self, outputs: list[list[Any]]) -> None:
        """Each ClusterPolicy's DRA install (the chart's values, or a GPUCluster after the policy) and its notes."""
        pool_gates: dict[str, bool] = {}
        for values in self.result.driver_values:
            pool_gates.update(values.get("featureGates") or {})
        install = self.options.dra_install
        for f, where, policy in self.policies:
            gates, gate_notes = dradriver.driver_gates(policy, pool_gates)
            if install == "helm":
                self.result.dra_values = dradriver.helm_values(policy, gates)
                self.change(where, "converted", f"-> values for NVIDIA's DRA driver chart ({dradriver.VALUES_FILE})")
            elif not self.gpu_cluster_in_input:
                self.gpu_cluster_in_input = True  # one singleton, however many policies
                document = build(dradriver.gpu_cluster(policy, gates))
                document.yaml_set_start_comment(
                    "For a new cluster, or once the ClusterPolicy is gone: ClusterPolicy and GPUCluster must not "
                    "both exist.")
                output = outputs[f]
                output.insert(next((i + 1 for i, d in enumerate(output) if d is _policy_data(d, where)),
                                   len(output)), document)
                self.change(Location(where.file, where.document, f"GPUCluster/{dradriver.GPU_CLUSTER_NAME}"),
                            "added", f"from {where.object}")
            for note in [*gate_notes, *cp.policy_notes(policy, self.configmap_keys, install)]:
                self.decide(where, note)

    # ---------------------------------------------------------------------------------------------- extended mode

    def add_extended_classes(self, outputs: list[list[Any]]) -> None:
        added: dict[int, list[Any]] = {}
        for name, where in self.served.items():
            if name in self.classes_in_input:
                continue
            document = wl.extended_class_document(name)
            class_name = document["metadata"]["name"]
            # A class converted from a device-plugin config serves the name already, or holds the class's name
            # with other settings: a second object of that name is one the API server would refuse.
            if name in self.plugin_mapped:
                continue
            if class_name in self.plugin_classes:
                self.decide(where, f"DeviceClass {class_name} comes from the device-plugin config without "
                                   f"extendedResourceName {name}: add it there if its sharing suits these pods "
                                   "(not added twice)")
                continue
            if class_name in self.class_names_in_input:
                self.decide(where, f"DeviceClass {class_name} is in the input without extendedResourceName {name}: "
                                   "add it there (not added twice)")
                continue
            added.setdefault(self.first_file_for[name], []).append(build(document))
            at = Location(where.file, None, f"DeviceClass/{class_name}")
            self.change(at, "added", f"extendedResourceName {name}: the scheduler serves {name} through DRA on "
                                     "nodes whose allocatable does not list it")
            if class_name == "gpu.nvidia.com":
                self.decide(at, "NVIDIA's DRA driver chart installs DeviceClass gpu.nvidia.com with this "
                                "extendedResourceName already (resource.k8s.io/v1): apply ours only if yours lacks it")
        for f, documents in added.items():
            outputs[f][:0] = documents
        if self.served:
            self.decide(Location(), "a node must not offer a name through both the device plugin and DRA: turn "
                                    "the device plugin off node pool by pool; DRAExtendedResource is on by default "
                                    "from 1.36 (alpha in 1.34 and 1.35: enable the gate on kube-apiserver, "
                                    "kube-scheduler and kubelet)")


def _converted(ask: wl.ContainerAsk) -> list[wl.GpuAsk]:
    """The asks of a container that become claims (a ``.shared`` replica stays as it is)."""
    return [g for g in ask.asks if not g.resource.endswith(wl.SHARED_SUFFIX) and g.count]


def document_class(gpu: wl.GpuAsk) -> str:
    return "mig.nvidia.com" if wl.mig_profile(gpu.resource) else "gpu.nvidia.com"


def _needs_conversion(data: Any) -> bool:
    if not isinstance(data, dict):
        return isinstance(data, list) and legacy.classify(data) is not None
    if dp.is_plugin_config(data) or "kind" not in data:
        return False
    api_version = str(data.get("apiVersion", ""))
    kind = legacy.classify(data)
    if kind is not None and kind != "ContainerResources":
        return True
    return api_version.startswith("resource.k8s.io/") and api_version != "resource.k8s.io/v1"


def _is_v1_claim(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == "ResourceClaim" and data.get(
        "apiVersion") == "resource.k8s.io/v1"


def _clean(document: dict[str, Any]) -> dict[str, Any]:
    if document.get("status") in ({}, None):
        return {k: v for k, v in document.items() if k != "status"}
    return document


def _policy_data(document: Any, where: Location) -> Any:
    """``document`` when it is the ClusterPolicy ``where`` names (else None)."""
    return document if cp.is_cluster_policy(document) and f"ClusterPolicy/{_name(document)}" == where.object else None


def migrate(sources: Sequence[Source], options: Options) -> Migration:
    """Migrate every source; raise MigrationError with every problem (and produce nothing) if any input is bad."""
    return _Run(sources, options).run()
