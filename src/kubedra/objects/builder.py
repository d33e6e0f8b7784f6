"""The loader's builder: each parsed document dispatched on apiVersion/kind into a v1 model object, a raw object or a
legacy document converted at the end (its references cross documents), with every problem collected; and what a
load produces (:class:`Loaded`). :mod:`.load` feeds it from files, directories and stdin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from kubedra.objects import beta, legacy
from kubedra.objects import model as m
from kubedra.objects.decode import decode
from kubedra.objects.errors import ConversionWarning, InvalidInputError, Location, Problem
from kubedra.objects.parse import Document, ParseLimits, parse_text
from kubedra.objects.validate import validate

T = TypeVar("T")
KubeObject = m.KubeObject

_V1_CLASSES: dict[str, type[Any]] = {
    "DeviceClass": m.DeviceClass,
    "ResourceClaim": m.ResourceClaim,
    "ResourceClaimTemplate": m.ResourceClaimTemplate,
    "ResourceSlice": m.ResourceSlice,
    "DeviceTaintRule": m.DeviceTaintRule,
}
_CORE_CLASSES: dict[str, type[Any]] = {"Node": m.Node, "Pod": m.Pod}


@dataclass(frozen=True)
class RawObject:
    """A document of a kind the loader does not model (Deployment, Job, NodePool, …), passed through untouched."""

    location: Location
    data: dict[str, Any]


@dataclass
class Loaded:
    """What a load produced: v1 objects in document order, raw objects and the conversion warnings."""

    objects: list[KubeObject] = field(default_factory=list)
    raw: list[RawObject] = field(default_factory=list)
    warnings: list[ConversionWarning] = field(default_factory=list)
    # What the input held that gave no object: an empty file, a directory entry skipped (printed as notes; nothing
    # a user gave vanishes without a word).
    notes: list[str] = field(default_factory=list)
    _locations: dict[int, Location] = field(default_factory=dict, repr=False)

    def location_of(self, obj: object) -> Location:
        """Where ``obj`` (one of ``objects`` or ``raw``) came from: file, document index, ``Kind/name``."""
        if isinstance(obj, RawObject):
            return obj.location
        return self._locations.get(id(obj), Location())

    def of_kind(self, kind: type[T]) -> list[T]:
        """The objects of one model class, in document order."""
        return [o for o in self.objects if isinstance(o, kind)]


def _object_name(data: dict[str, Any]) -> str:
    kind = data.get("kind")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        name = metadata.get("generateName") if isinstance(metadata, dict) else None
    kind_text = kind if isinstance(kind, str) else ""
    return f"{kind_text or '?'}/{name}" if isinstance(name, str) and name else kind_text


# Kinds without a namespace (among those people put in manifests); every other kind is namespaced.
CLUSTER_SCOPED = frozenset(
    {
        "DeviceClass",
        "ResourceSlice",
        "DeviceTaintRule",
        "Node",
        "NodePool",
        "Namespace",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)


def _identity(api_version: object, kind: object, namespace: object, name: object) -> tuple[str, str, str, str] | None:
    """(API group, kind, namespace, name) of a named object: what makes two objects the same object."""
    if not isinstance(name, str) or not name or not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    if kind in CLUSTER_SCOPED:
        namespace = ""
    elif not isinstance(namespace, str) or not namespace:
        namespace = "default"
    return api_version.rpartition("/")[0], kind, namespace, name


def _content(slot: _Slot) -> Any:
    """What an object says, to tell a copy from a different object of the same name (namespace made explicit)."""
    if slot.obj is not None:
        body = m.to_dict(slot.obj)
    else:
        assert slot.raw is not None
        body = slot.raw.data
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and not metadata.get("namespace"):
        body = {**body, "metadata": {**metadata, "namespace": "default"}}
    return body


def _raw_identity(data: dict[str, Any]) -> tuple[str, str, str, str] | None:
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return None
    return _identity(data.get("apiVersion"), data.get("kind"), metadata.get("namespace"), metadata.get("name"))


def _prefixed(prefix: str, path: str) -> str:
    if not prefix:
        return path
    return f"{prefix}.{path}" if path and not path.startswith("[") else f"{prefix}{path}"


@dataclass
class _Slot:
    """One output position: a decoded object, a raw object, or a legacy document awaiting conversion."""

    obj: KubeObject | None = None
    raw: RawObject | None = None
    legacy_index: int | None = None
    prefix: str = ""


class Builder:
    """Documents in, one :class:`Loaded` out (``finish``): every problem of every document collected first."""

    def __init__(self, *, api_validation: bool = True) -> None:
        self.api_validation = api_validation
        self.lenient = False  # unknown fields dropped (an API server's objects), not problems
        self.slots: list[_Slot] = []
        self.legacy_docs: list[legacy.LegacyDocument] = []
        self.legacy_prefix: list[str] = []
        self.warnings: list[ConversionWarning] = []
        self.problems: list[Problem] = []
        self.locations: dict[int, Location] = {}
        self.files: dict[str, int] = {}
        self.passthrough: Callable[[Any], bool] | None = None  # documents the caller reads itself (not objects)

    def problem(self, location: Location, message: str) -> None:
        self.problems.append(Problem(location, message))

    # -- dispatch ---------------------------------------------------------------------------------

    def add_document(self, document: Document, source: str) -> None:
        location = Location(source, document.index)
        if document.data is None or (self.passthrough is not None and self.passthrough(document.data)):
            return
        self.add_data(document.data, location, "")

    def add_data(self, data: Any, location: Location, prefix: str) -> None:
        kind_of_legacy = legacy.classify(data)
        if kind_of_legacy is not None:
            obj_name = _object_name(data) if isinstance(data, dict) else ""
            self.slots.append(_Slot(legacy_index=len(self.legacy_docs), prefix=prefix))
            self.legacy_docs.append(legacy.LegacyDocument(replace(location, object=obj_name), kind_of_legacy, data))
            self.legacy_prefix.append(prefix)
            return
        if not isinstance(data, dict):
            self.problem(
                replace(location, field=prefix),
                f"a document must be a mapping with apiVersion and kind, not {type(data).__name__}",
            )
            return
        api_version, kind = data.get("apiVersion"), data.get("kind")
        where = replace(location, object=_object_name(data), within=prefix)
        if not isinstance(api_version, str) or not api_version:
            self.problem(
                replace(where, field=_prefixed(prefix, "apiVersion")), "Required value: every object needs apiVersion"
            )
            return
        if not isinstance(kind, str) or not kind:
            self.problem(replace(where, field=_prefixed(prefix, "kind")), "Required value: every object needs kind")
            return
        if kind.endswith("List") and isinstance(data.get("items"), list):
            for i, item in enumerate(data["items"]):
                self.add_data(item, location, _prefixed(prefix, f"items[{i}]"))
            return
        group, _, version = api_version.rpartition("/")
        if group == "resource.k8s.io":
            self.add_dra(data, kind, version, where, prefix)
        elif group == "" and version == "v1" and kind in _CORE_CLASSES:
            self.add_model(data, _CORE_CLASSES[kind], where, prefix)
        else:
            self.slots.append(_Slot(raw=RawObject(where, data), prefix=prefix))

    def add_dra(self, data: dict[str, Any], kind: str, version: str, where: Location, prefix: str) -> None:
        served = beta.SERVED.get(kind)
        if served is None:
            self.problem(
                replace(where, field=_prefixed(prefix, "kind")),
                f'Unsupported value: "{kind}": resource.k8s.io kinds kubedra reads: '
                + ", ".join(f'"{k}"' for k in beta.DRA_KINDS),
            )
            return
        if version not in served:
            self.problem(
                replace(where, field=_prefixed(prefix, "apiVersion")),
                f'Unsupported value: "resource.k8s.io/{version}": {kind} is served as '
                + ", ".join(f'"resource.k8s.io/{v}"' for v in served),
            )
            return
        if version != "v1":
            converted = beta.to_v1(kind, version, data)
            for path, message in converted.problems:
                self.problem(replace(where, field=_prefixed(prefix, path)), message)
            if converted.problems:
                return
            written, today, assumed = beta.describe(kind, version, converted.changes)
            self.warnings.append(ConversionWarning(where, written, today, assumed, "beta-version"))
            data = converted.document
        self.add_model(data, _V1_CLASSES[kind], where, prefix)

    def add_model(self, data: dict[str, Any], cls: type[Any], where: Location, prefix: str) -> None:
        obj, problems = decode(data, cls, lenient=self.lenient)
        for path, message in problems:
            self.problem(replace(where, field=_prefixed(prefix, path)), message)
        if obj is None:
            return
        for path, message in validate(obj) if self.api_validation else ():
            self.problem(replace(where, field=_prefixed(prefix, path)), message)
        self.locations[id(obj)] = where
        self.slots.append(_Slot(obj=obj, prefix=prefix))

    # -- the end: legacy conversion, then the result -------------------------------------------------

    def finish(self) -> Loaded:
        if self.legacy_docs:
            claims = [
                (o.metadata.namespace or "default", o.metadata.name)
                for o in self._objects()
                if isinstance(o, m.ResourceClaim)
            ]
            result = legacy.convert(self.legacy_docs, claims)
            self.warnings.extend(result.warnings)
            self.problems.extend(result.problems)
            for slot in self.slots:
                if slot.legacy_index is None:
                    continue
                output = result.outputs.get(slot.legacy_index)
                if output is None:
                    continue
                if output.raw is not None:
                    slot.raw = RawObject(output.location, output.raw)
                elif output.document is not None:
                    self._decode_legacy(slot, output)
        if not self.lenient:
            self._custom_schemas()
        self._duplicates()
        if self.problems:
            raise InvalidInputError(sorted(self.problems, key=lambda p: self._order(p.location)))
        warnings = sorted(self.warnings, key=lambda w: self._order(w.location))
        loaded = Loaded(warnings=warnings, _locations=self.locations)
        for slot in self.slots:
            if slot.obj is not None:
                loaded.objects.append(slot.obj)
            elif slot.raw is not None:
                loaded.raw.append(slot.raw)
        return loaded

    def _custom_schemas(self) -> None:
        """The custom kinds kubedra reads (JobSet, LeaderWorkerSet, RayCluster, RayJob, ClusterPolicy, GPUCluster)
        against their published CRD's schema, or the input's CRD of that group and kind: what the API server would
        refuse is refused here, whichever command reads them (validate, simulate, migrate)."""
        from kubedra.schema import problems_of
        from kubedra.schema.published import CustomSchemas, manifest

        raws = [slot.raw for slot in self.slots if slot.raw is not None]
        if not any((str(r.data.get("apiVersion")), str(r.data.get("kind"))) in manifest() for r in raws):
            return
        schemas = CustomSchemas()
        for raw in raws:
            if raw.data.get("kind") == "CustomResourceDefinition" and str(raw.data.get("apiVersion", "")).startswith(
                    "apiextensions.k8s.io/"):
                schemas.add_crd(raw.data)
        for raw in raws:
            api_version, kind = str(raw.data.get("apiVersion")), str(raw.data.get("kind"))
            validator = schemas.validator(api_version, kind) if (api_version, kind) in manifest() else None
            for problem in problems_of(validator, raw.data, custom=True) if validator is not None else ():
                # the field within the object, as validate's schema findings name it (``within`` places the item)
                self.problem(replace(raw.location, field=problem.path), problem.message)

    def _duplicates(self) -> None:
        """Two objects of one kind with one namespace and name: the API server would refuse the second, so it is
        a problem naming both places — unless the two are the same object written twice (one DeviceClass in every
        self-contained file, one file given twice), which ``kubectl apply`` leaves unchanged: the copy is dropped,
        with a warning."""
        seen: dict[tuple[str, str, str, str], tuple[_Slot, Location]] = {}
        for slot in self.slots:
            identity, where = self._identity_of(slot)
            if identity is None:
                continue
            here = replace(where, field=slot.prefix)
            if identity not in seen:
                seen[identity] = (slot, here)
                continue
            first, first_where = seen[identity]
            _, kind, namespace, name = identity
            shown = f"{namespace}/{name}" if namespace else name
            if _content(first) == _content(slot):
                written = f"{kind} {shown} again, identical to the one at {first_where}"
                self.warnings.append(ConversionWarning(here, written, "one object", code="duplicate-identical"))
                slot.obj = slot.raw = None
                continue
            self.problem(
                replace(where, field=_prefixed(slot.prefix, "metadata.name")),
                f'Duplicate value: "{shown}": {kind} {shown} is also defined at {first_where}',
            )

    def _identity_of(self, slot: _Slot) -> tuple[tuple[str, str, str, str] | None, Location]:
        if slot.obj is not None:
            meta = slot.obj.metadata
            identity = _identity(slot.obj.api_version, slot.obj.kind, meta.namespace, meta.name)
            return identity, self.locations.get(id(slot.obj), Location())
        if slot.raw is not None:
            return _raw_identity(slot.raw.data), slot.raw.location
        return None, Location()

    def _order(self, location: Location) -> tuple[int, int]:
        """Input order of a location: files in the order they were read, then document index (a stable sort)."""
        return self.files.get(location.file, len(self.files)), location.document or 0

    def _objects(self) -> list[KubeObject]:
        return [s.obj for s in self.slots if s.obj is not None]

    def _decode_legacy(self, slot: _Slot, output: legacy.LegacyOutput) -> None:
        document = output.document
        assert document is not None
        kind = str(document["kind"])
        cls = _V1_CLASSES.get(kind) or _CORE_CLASSES[kind]
        before = len(self.slots)
        self.add_model(document, cls, output.location, slot.prefix)
        if len(self.slots) > before:  # add_model appended the object: move it into the legacy slot
            slot.obj = self.slots.pop().obj


def add_text(builder: Builder, text: str, source: str, json: bool | None, limits: ParseLimits | None) -> bool:
    """Parse one input's text into the builder; False where it held no document at all (empty, or comments)."""
    builder.files.setdefault(source, len(builder.files))
    documents, problems = parse_text(text, source, json=json, bounds=limits)
    builder.problems.extend(problems)
    for document in documents:
        builder.add_document(document, source)
    return bool(documents or problems)
