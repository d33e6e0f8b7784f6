"""The cluster's DRA-relevant state, read once: every kind listed in full, as plain documents, then as the model.

``read_cluster`` is what ``kubedra snapshot``, ``simulate --kubeconfig`` and ``explain --kubeconfig`` start from;
:class:`kubedra.kube.mirror.Mirror` keeps the same documents up to date with watches. ``manifests`` turns them into
files a user can keep and ``kubedra simulate -f`` reads back: server bookkeeping removed, status kept (claims'
allocations and reservedFor, pods' nodeName and phase), betas converted to resource.k8s.io/v1.

The Services, ReplicaSets, StatefulSets and ReplicationControllers (``kinds.SPREAD_KINDS``) are read where the user
may list them, each slimmed to its selector: what PodTopologySpread's system-default constraints need. Services are
documents like the others (a snapshot writes them); the controllers are not (files would expand a ReplicaSet into new
pods), :meth:`ClusterDocuments.controllers` hands them to the scenario apart. A kind the user may not list is a note.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightkube import Client
from lightkube.core.exceptions import ApiError

from kubedra.kube.api import DEFAULT_PAGE_SIZE, READ_ERRORS, KubeError, describe_error, list_kind, served_version
from kubedra.kube.kinds import DOCUMENT_KINDS, KINDS, SPREAD_CONTROLLERS, SPREAD_KINDS, Kind
from kubedra.objects import beta
from kubedra.objects import model as m
from kubedra.objects.builder import Loaded
from kubedra.objects.decode import prune
from kubedra.objects.errors import InvalidInputError, Problem
from kubedra.objects.load import load_paths

SOURCE = "cluster"
# Bookkeeping of the API server that says nothing about the cluster's state.
_METADATA_NOISE = ("managedFields", "resourceVersion", "selfLink", "generation")
_ANNOTATION_NOISE = ("kubectl.kubernetes.io/last-applied-configuration",)


_SLIM: dict[str, type[Any]] = {"Node": m.Node, "Pod": m.Pod}
_SELECTOR_ONLY = frozenset(k.kind for k in SPREAD_KINDS)
_HTTP_FORBIDDEN = 403


def slim(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    """A Node or Pod with only the fields kubedra's model reads; a Service or controller with only its name and
    selector; other kinds whole. A long-lived copy (the exporter's) need not keep managedFields, a node's images and
    conditions, a pod's env, container statuses and volumes (all but its claims': persistentVolumeClaim and ephemeral
    volumes): most of their size, and nothing any metric reads. The model reads the slim document exactly as the whole
    one (it ignores what is dropped), and the DRA kinds keep every field: each one counts for them."""
    if kind in _SELECTOR_ONLY:
        return selector_only(document)
    cls = _SLIM.get(kind)
    if cls is None:
        return document
    slimmed = dict(prune(cls, document))
    if kind == "Pod":
        _claim_volumes_only(slimmed)
    return slimmed


def _claim_volumes_only(pod: dict[str, Any]) -> None:
    """A slim pod's ``spec.volumes`` reduced to its persistentVolumeClaim and ephemeral volumes, as the model keeps
    them (``model.PodSpec``), and dropped when it has none: a pod's other volumes (its service account token's, its
    ConfigMaps') are no part of the model."""
    spec = pod.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not isinstance(volumes, list):
        return
    kept = [v for v in volumes
            if isinstance(v, dict) and (v.get("persistentVolumeClaim") is not None or v.get("ephemeral") is not None)]
    if kept:
        spec["volumes"] = kept
    else:
        del spec["volumes"]


def selector_only(document: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, name, namespace, uid and ``spec.selector``: all ``helper.DefaultSelector`` reads of a
    Service, ReplicaSet, StatefulSet or ReplicationController (a Service's ports, a controller's pod template are
    dropped: a template is most of a controller's size)."""
    metadata = document.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    spec = document.get("spec")
    out: dict[str, Any] = {
        "apiVersion": document.get("apiVersion"),
        "kind": document.get("kind"),
        "metadata": {k: metadata[k] for k in ("name", "namespace", "uid") if k in metadata},
    }
    if isinstance(spec, dict) and "selector" in spec:
        out["spec"] = {"selector": spec["selector"]}
    return out


def object_key(document: dict[str, Any]) -> str:
    """``namespace/name`` (``name`` for cluster-scoped objects): the API's own listing order."""
    metadata = document.get("metadata") or {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


@dataclass
class ClusterDocuments:
    """Documents by kind name (each list in namespace/name order) and the version each kind was read at;
    ``unread``: the kinds of ``kinds.SPREAD_KINDS`` the user may not list, with the server's answer."""

    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every document, inventory first (the order of ``kinds.DOCUMENT_KINDS``): no controller."""
        for kind in DOCUMENT_KINDS:
            yield from self.by_kind.get(kind.kind, [])

    def controllers(self) -> list[dict[str, Any]] | None:
        """The ReplicaSets, StatefulSets and ReplicationControllers (selector only); None unless all three were
        listed: PodTopologySpread then assumes each pod's controller exists and selects its own pods."""
        if any(kind.kind not in self.by_kind for kind in SPREAD_CONTROLLERS):
            return None
        return [d for kind in SPREAD_CONTROLLERS for d in self.by_kind[kind.kind]]

    def notes(self) -> list[str]:
        notes = [
            f"the cluster serves no {kind} version kubedra reads ({', '.join(_versions_of(kind))}); none were read"
            for kind, version in self.versions.items()
            if version is None
        ]
        if self.unread:
            kinds = ", ".join(_plural_of(kind) for kind in self.unread)
            first = next(iter(self.unread.values()))
            notes.append(
                f"{kinds} not read, the user may not list them ({first}); PodTopologySpread's system-default "
                f"constraints {_unread_consequence(set(self.unread))}"
            )
        return notes

    def named(self, kind: str) -> dict[str, dict[str, Any]]:
        return {object_key(d): d for d in self.by_kind.get(kind, [])}


def _unread_consequence(unread: set[str]) -> str:
    parts = []
    if "Service" in unread:
        parts.append("take no selector from Services")
    if unread & {k.kind for k in SPREAD_CONTROLLERS}:
        parts.append("assume each pod's controlling ReplicaSet or StatefulSet exists and selects its own pods")
    return " and ".join(parts) + " (grant list on them: deploy/rbac.yaml)"


def _plural_of(kind_name: str) -> str:
    return next(k.plural for k in SPREAD_KINDS if k.kind == kind_name)


def _versions_of(kind_name: str) -> tuple[str, ...]:
    return next(k.versions for k in (*KINDS, *SPREAD_KINDS) if k.kind == kind_name)


def read_cluster(
    client: Client,
    kinds: Sequence[Kind] = KINDS,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    optional: Sequence[Kind] = SPREAD_KINDS,
) -> ClusterDocuments:
    """List every kind (the first served version of each); raises KubeError when the cluster cannot be read.
    ``optional`` kinds are slimmed to their selectors, and one the user may not list (403) is left in ``unread``."""
    result = ClusterDocuments()
    for kind in kinds:
        try:
            version = served_version(client, kind)
            result.versions[kind.kind] = version
            if version is not None:
                result.by_kind[kind.kind] = list_kind(client, kind, version, page_size=page_size).items
        except READ_ERRORS as exc:
            raise KubeError(describe_error(exc, f"listing {kind.plural}")) from exc
    for kind in optional:
        try:
            version = served_version(client, kind)
            result.versions[kind.kind] = version
            if version is not None:
                items = list_kind(client, kind, version, page_size=page_size).items
                result.by_kind[kind.kind] = [selector_only(d) for d in items]
        except ApiError as exc:
            if exc.status.code != _HTTP_FORBIDDEN:
                raise KubeError(describe_error(exc, f"listing {kind.plural}")) from exc
            result.versions.pop(kind.kind, None)
            result.unread[kind.kind] = describe_error(exc, f"listing {kind.plural}")
        except READ_ERRORS as exc:
            raise KubeError(describe_error(exc, f"listing {kind.plural}")) from exc
    return result


def to_loaded(documents: ClusterDocuments, paths: Sequence[str] = ()) -> Loaded:
    """The cluster's objects (and those of ``paths``, after them) in kubedra's model, through the loader files use.

    The server already validated its objects, so only their shape is checked, and fields the model does not know
    (a newer server's) are ignored, as Kubernetes clients ignore them; files get the full API validation.
    Raises InvalidInputError naming the object (``cluster[i]: Kind/name``) and field that cannot be read.
    """
    return load_paths(paths, documents=[(SOURCE, d) for d in documents.documents()], lenient_documents=True)


@dataclass(frozen=True)
class Undecodable:
    """A cluster object that cannot be read into the model (even leniently): a wrong type, an integer out of range."""

    kind: str
    key: str  # namespace/name, or name
    resource_version: str
    problems: tuple[tuple[str, str], ...]  # (field path, message)

    def __str__(self) -> str:
        fields = "; ".join(f"{path or '(object)'}: {message}" for path, message in self.problems)
        return f"{self.kind} {self.key}: {fields}"


@dataclass
class Decoded:
    """What :func:`decode_cluster` read: the objects it could, and those it set aside."""

    loaded: Loaded
    undecodable: list[Undecodable] = field(default_factory=list)


def decode_cluster(documents: ClusterDocuments) -> Decoded:
    """Every object that can be read, leniently as :func:`to_loaded` reads them; one that cannot is set aside
    (returned with its problems), so that one bad object never hides all the others.

    The common case is one pass over all the documents; a failed pass names the documents at fault (the loader
    locates every problem at ``cluster[i]``), and the rest are read again without them."""
    pending = list(documents.documents())
    undecodable: list[Undecodable] = []
    while True:
        try:
            loaded = load_paths([], documents=[(SOURCE, d) for d in pending], lenient_documents=True)
        except InvalidInputError as exc:
            at_fault: dict[int, list[Problem]] = {}
            for problem in exc.problems:
                index = problem.location.document if problem.location.file == SOURCE else None
                if index is None or not 0 <= index < len(pending):
                    # Not one document's (cannot happen for an API server's objects): read them one by one.
                    return _one_by_one(pending, undecodable)
                at_fault.setdefault(index, []).append(problem)
            if not at_fault:
                return _one_by_one(pending, undecodable)
            undecodable.extend(_undecodable(pending[i], problems) for i, problems in sorted(at_fault.items()))
            pending = [d for i, d in enumerate(pending) if i not in at_fault]
            continue
        return Decoded(loaded, undecodable)


def _one_by_one(pending: list[dict[str, Any]], undecodable: list[Undecodable]) -> Decoded:
    readable: list[dict[str, Any]] = []
    for document in pending:
        try:
            load_paths([], documents=[(SOURCE, document)], lenient_documents=True)
        except InvalidInputError as exc:
            undecodable.append(_undecodable(document, exc.problems))
        else:
            readable.append(document)
    return Decoded(load_paths([], documents=[(SOURCE, d) for d in readable], lenient_documents=True), undecodable)


def _undecodable(document: dict[str, Any], problems: Sequence[Problem]) -> Undecodable:
    metadata = document.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    found = tuple((p.location.field, p.message) for p in problems)
    return Undecodable(str(document.get("kind", "")), object_key(document), str(version or ""), found)


def manifest(document: dict[str, Any]) -> dict[str, Any]:
    """One object as a plain manifest: v1, without the server's bookkeeping, with its status."""
    data = copy.deepcopy(document)
    group, _, version = str(data.get("apiVersion", "")).rpartition("/")
    if group == "resource.k8s.io" and version != "v1":
        converted = beta.to_v1(str(data.get("kind")), version, data)
        if not converted.problems:
            data = converted.document
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key in _METADATA_NOISE:
            metadata.pop(key, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            for key in _ANNOTATION_NOISE:
                annotations.pop(key, None)
            if not annotations:
                del metadata["annotations"]
    status = data.get("status")
    if data.get("kind") == "Node" and isinstance(status, dict):
        status.pop("images", None)  # hundreds of lines on a real node, nothing a scheduler reads
    return data


def manifests(documents: ClusterDocuments) -> list[dict[str, Any]]:
    return [manifest(d) for d in documents.documents()]
