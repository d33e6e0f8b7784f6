"""Loading Kubernetes objects: files, directories and stdin → v1 model objects, raw objects and warnings.

Pipeline per document: safe parse (:mod:`.parse`) → dispatch on apiVersion/kind → beta → v1
(:mod:`.beta`) or the legacy dialect (:mod:`.legacy`, converted once every document is read because
its references cross documents) → decode into the model (:mod:`.decode`) → validation
(:mod:`.validate`). Every problem of every document is collected and raised together as one
:class:`InvalidInputError`; nothing else is ever raised for bad input.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, TextIO, TypeVar

from kubedra.objects import beta, legacy
from kubedra.objects import model as m
from kubedra.objects.decode import decode
from kubedra.objects.errors import ConversionWarning, InvalidInputError, Location, Problem
from kubedra.objects.parse import Document, ParseLimits, parse_text, too_big
from kubedra.objects.validate import validate

T = TypeVar("T")
KubeObject = m.KubeObject
SUFFIXES = (".yaml", ".yml", ".json")

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


class _Builder:
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


def load_text(
    text: str, *, source: str = "<string>", limits: ParseLimits | None = None, api_validation: bool = True
) -> Loaded:
    """Load one YAML (multi-document) or JSON text; raise InvalidInputError listing every problem.

    ``api_validation=False`` keeps the shape checks (unknown fields, wrong types, conversions) but skips the API
    server's rules on names, formats and limits — what the allocator itself accepts, as upstream's does.
    """
    builder = _Builder(api_validation=api_validation)
    _add_text(builder, text, source, None, limits)
    return builder.finish()


def _add_text(builder: _Builder, text: str, source: str, json: bool | None, limits: ParseLimits | None) -> bool:
    """Parse one input's text into the builder; False where it held no document at all (empty, or comments)."""
    builder.files.setdefault(source, len(builder.files))
    documents, problems = parse_text(text, source, json=json, bounds=limits)
    builder.problems.extend(problems)
    for document in documents:
        builder.add_document(document, source)
    return bool(documents or problems)


def _files(path: str, problems: list[Problem], recursive: bool = False, notes: list[str] | None = None) -> list[str]:
    """The files ``path`` stands for: itself, or a directory's files by name (its subdirectories' after its own
    when ``recursive``, each sorted the same way). Each entry of a directory that is not read gets a note."""
    try:
        if os.path.isdir(path):
            entries = sorted(os.listdir(path))
            files = [os.path.join(path, n) for n in entries
                     if n.lower().endswith(SUFFIXES) and os.path.isfile(os.path.join(path, n))]
            subdirs = [n for n in entries if os.path.isdir(os.path.join(path, n))]
            for name in entries:
                full = os.path.join(path, name)
                if notes is None or full in files or name.startswith("."):
                    continue
                if name in subdirs:
                    if not recursive:
                        notes.append(f"{full}: directory skipped (-R, --recursive reads subdirectories)")
                else:
                    notes.append(f"{full}: skipped: not a .yaml, .yml or .json file")
            if not recursive:
                subdirs = []
            if not files and not subdirs:
                problems.append(Problem(Location(path), "no .yaml, .yml or .json files in this directory"))
            for name in subdirs:
                files.extend(_files(os.path.join(path, name), problems, recursive, notes))
            return files
    except OSError as exc:
        problems.append(Problem(Location(path), f"cannot read: {exc.strerror or exc}", unreadable=True))
        return []
    except ValueError as exc:  # a path with a NUL byte
        problems.append(Problem(Location(path), f"cannot read: {exc}", unreadable=True))
        return []
    if not os.path.exists(path):
        problems.append(Problem(Location(path), "no such file or directory", unreadable=True))
        return []
    return [path]


def _decode_text(data: bytes, source: str, problems: list[Problem]) -> str | None:
    """UTF-8 text (a leading byte order mark dropped, as YAML readers drop it), or None with the problem noted."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(Problem(Location(source), f"not UTF-8 text: {exc.reason} at byte {exc.start}", unreadable=True))
        return None


def _read_stdin(stream: TextIO | BinaryIO, bounds: ParseLimits, problems: list[Problem]) -> str | None:
    """stdin as bytes where it has them (so bad UTF-8 is a problem, not a crash), at most the size limit."""
    source = "<stdin>"
    raw = getattr(stream, "buffer", stream)
    try:
        data = raw.read(bounds.max_bytes + 1)
    except UnicodeDecodeError as exc:
        problems.append(Problem(Location(source), f"not UTF-8 text: {exc.reason} at byte {exc.start}", unreadable=True))
        return None
    except OSError as exc:
        problems.append(Problem(Location(source), f"cannot read: {exc.strerror or exc}", unreadable=True))
        return None
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    refused = too_big(size, source, bounds)
    if refused is not None:
        problems.append(refused)
        return None
    return _decode_text(data, source, problems) if isinstance(data, bytes) else data


def read_stdin(stream: TextIO | BinaryIO | None = None, limits: ParseLimits | None = None) -> str:
    """stdin's text for callers that need it whole (and also load it): read as :func:`load_paths` reads ``-``, so
    bad UTF-8 or an oversized input raise :class:`InvalidInputError`, never a decoding error."""
    problems: list[Problem] = []
    text = _read_stdin(stream if stream is not None else sys.stdin, limits or ParseLimits(), problems)
    if text is None:
        raise InvalidInputError(problems)
    return text


@dataclass(frozen=True)
class Input:
    """One input as read: its name (the file, or ``<stdin>`` for -) and its text; ``json`` True when the file's
    name says JSON (None: YAML or JSON, by its text)."""

    name: str
    text: str
    json: bool | None = None


@dataclass
class Inputs:
    """What :func:`read_inputs` read, in input order, and the problems that kept any path from being read."""

    texts: list[Input] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # directory entries not read


_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})")


def _joined_json_surrogates(text: str, json_file: bool = False) -> str:
    """JSON writes a character beyond U+FFFF as an escaped surrogate pair (``\\ud800\\udc00``); a JSON reader joins
    it, a YAML reader keeps two code points no YAML reader takes back. Every command reads the same text, so the pair
    is written as its character once, here, for JSON input (a backslash escaped itself is left alone)."""
    if "\\u" not in text or not (json_file or text.lstrip()[:1] == "{"):
        return text

    def join(match: re.Match[str]) -> str:
        high, low = int(match.group(2), 16), int(match.group(3), 16)
        return match.group(1) + chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))

    return _SURROGATE_PAIR.sub(join, text)


def read_inputs(
    paths: Sequence[str],
    *,
    stdin: TextIO | BinaryIO | None = None,
    limits: ParseLimits | None = None,
    recursive: bool = False,
) -> Inputs:
    """Read files, directories (their ``*.yaml``, ``*.yml``, ``*.json``, sorted by name; subdirectories too when
    ``recursive``) and ``-`` (stdin), each once: for callers that load the inputs (:func:`load_inputs`) and also
    need their texts (the lines of findings, migrate's round trip)."""
    bounds = limits or ParseLimits()
    read = Inputs()
    for path in paths:
        if path == "-":
            text = _read_stdin(stdin if stdin is not None else sys.stdin, bounds, read.problems)
            if text is not None:
                read.texts.append(Input("<stdin>", _joined_json_surrogates(text)))
            continue
        for file in _files(path, read.problems, recursive, read.notes):
            try:
                refused = too_big(os.path.getsize(file), file, bounds)
                if refused is not None:
                    read.problems.append(refused)
                    continue
                with open(file, "rb") as handle:
                    data = handle.read(bounds.max_bytes + 1)
            except OSError as exc:
                read.problems.append(Problem(Location(file), f"cannot read: {exc.strerror or exc}", unreadable=True))
                continue
            text = _decode_text(data, file, read.problems)
            if text is not None:
                json_file = file.lower().endswith(".json")
                read.texts.append(Input(file, _joined_json_surrogates(text, json_file), True if json_file else None))
    return read


def load_inputs(
    inputs: Inputs,
    *,
    limits: ParseLimits | None = None,
    api_validation: bool = True,
    documents: Sequence[tuple[str, Any]] = (),
    lenient_documents: bool = False,
    passthrough: Callable[[Any], bool] | None = None,
) -> Loaded:
    """Load what :func:`read_inputs` read, as :func:`load_paths` loads it (its problems reported with the rest).
    ``passthrough``: top-level documents for which it is true are not objects and are left to the caller (migrate's
    device-plugin configs), neither loaded nor refused."""
    bounds = limits or ParseLimits()
    builder = _Builder(api_validation=False)
    builder.passthrough = passthrough
    builder.lenient = lenient_documents
    for index, (source, data) in enumerate(documents):
        builder.files.setdefault(source, len(builder.files))
        builder.add_document(Document(index, data), source)
    builder.api_validation = api_validation
    builder.lenient = False
    # A path that could not be read is in no file order, so its problem sorts after the others, as when reading
    # and loading were interleaved.
    builder.problems.extend(inputs.problems)
    empty = [read.name for read in inputs.texts if not _add_text(builder, read.text, read.name, read.json, bounds)]
    loaded = builder.finish()
    loaded.notes = [*inputs.notes, *(f"{name}: no objects in this file (empty, or only comments)" for name in empty)]
    return loaded


def load_paths(
    paths: Sequence[str],
    *,
    stdin: TextIO | BinaryIO | None = None,
    limits: ParseLimits | None = None,
    api_validation: bool = True,
    documents: Sequence[tuple[str, Any]] = (),
    lenient_documents: bool = False,
    recursive: bool = False,
) -> Loaded:
    """Load files, directories (their ``*.yaml``, ``*.yml``, ``*.json``, sorted by name; subdirectories too when
    ``recursive``, as kubectl's ``-R``) and ``-`` (stdin).

    See :func:`load_text` for ``api_validation``. ``documents`` are (source, JSON value) pairs a caller already
    holds — objects an API server returned — read before the paths with the same dispatch, conversion and
    decoding but without the API validation (their server already applied it); ``source[i]`` locates them.
    ``lenient_documents``: fields of theirs the model does not know are ignored (a newer server's), as clients do.
    """
    return load_inputs(read_inputs(paths, stdin=stdin, limits=limits, recursive=recursive), limits=limits,
                       api_validation=api_validation, documents=documents, lenient_documents=lenient_documents)
