"""The cluster's DRA-relevant state, read once: every kind listed in full, as plain documents, then as the model.

``read_cluster`` is what ``kubedra snapshot``, ``simulate --kubeconfig`` and ``explain --kubeconfig`` start from;
:class:`kubedra.kube.mirror.Mirror` keeps the same documents up to date with watches. ``manifests`` turns them into
files a user can keep and ``kubedra simulate -f`` reads back: server bookkeeping removed, status kept (claims'
allocations and reservedFor, pods' nodeName and phase), betas converted to resource.k8s.io/v1.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightkube import Client

from kubedra.kube.api import DEFAULT_PAGE_SIZE, READ_ERRORS, KubeError, describe_error, list_kind, served_version
from kubedra.kube.kinds import KINDS, Kind
from kubedra.objects import beta
from kubedra.objects.load import Loaded, load_paths

SOURCE = "cluster"
# Bookkeeping of the API server that says nothing about the cluster's state.
_METADATA_NOISE = ("managedFields", "resourceVersion", "selfLink", "generation")
_ANNOTATION_NOISE = ("kubectl.kubernetes.io/last-applied-configuration",)


def object_key(document: dict[str, Any]) -> str:
    """``namespace/name`` (``name`` for cluster-scoped objects): the API's own listing order."""
    metadata = document.get("metadata") or {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


@dataclass
class ClusterDocuments:
    """Documents by kind name (each list in namespace/name order) and the version each kind was read at."""

    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every document, inventory first (the order of ``kinds.KINDS``)."""
        for kind in KINDS:
            yield from self.by_kind.get(kind.kind, [])

    def notes(self) -> list[str]:
        return [
            f"the cluster serves no {kind} version kubedra reads ({', '.join(_versions_of(kind))}); none were read"
            for kind, version in self.versions.items()
            if version is None
        ]

    def named(self, kind: str) -> dict[str, dict[str, Any]]:
        return {object_key(d): d for d in self.by_kind.get(kind, [])}


def _versions_of(kind_name: str) -> tuple[str, ...]:
    return next(k.versions for k in KINDS if k.kind == kind_name)


def read_cluster(
    client: Client, kinds: Sequence[Kind] = KINDS, *, page_size: int = DEFAULT_PAGE_SIZE
) -> ClusterDocuments:
    """List every kind (the first served version of each); raises KubeError when the cluster cannot be read."""
    result = ClusterDocuments()
    for kind in kinds:
        try:
            version = served_version(client, kind)
            result.versions[kind.kind] = version
            if version is not None:
                result.by_kind[kind.kind] = list_kind(client, kind, version, page_size=page_size).items
        except READ_ERRORS as exc:
            raise KubeError(describe_error(exc, f"listing {kind.plural}")) from exc
    return result


def to_loaded(documents: ClusterDocuments, paths: Sequence[str] = ()) -> Loaded:
    """The cluster's objects (and those of ``paths``, after them) in kubedra's model, through the loader files use.

    The server already validated its objects, so only their shape is checked; files get the full API validation.
    Raises InvalidInputError naming the object (``cluster[i]: Kind/name``) and field that cannot be read.
    """
    return load_paths(paths, documents=[(SOURCE, d) for d in documents.documents()])


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
