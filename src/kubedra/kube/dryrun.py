"""Server-side dry runs: each input document sent to the live API server with ``dryRun=All``, as ``kubectl apply
--dry-run=server`` would, and what the server refuses reported in its own words (``validate --dry-run server``).

The server runs its whole admission chain (validation, defaulting, quota, admission webhooks and policies) and
stores nothing. Documents are sent as written; kubedra's own kinds (NodePool) and the legacy dialect have no server
to judge them and are skipped with a note. DRA kinds, Nodes and Pods go through kubedra's own resource table, other
built-in kinds (Deployments, Jobs, Namespaces ...) through lightkube's models; custom resources are not sent. Needs
``create`` permission on the kinds sent (the read-only role kubedra ships has none).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lightkube import Client, codecs
from lightkube.core.exceptions import ApiError, LoadResourceError
from lightkube.core.resource import NamespacedResource

from kubedra.kube.api import MALFORMED_ANSWER, READ_ERRORS, KubeError, describe_error, resource
from kubedra.kube.kinds import KINDS


@dataclass
class Refusal:
    """One thing the server refused: the field (empty for the whole object) and its message."""

    field: str
    message: str


@dataclass
class Verdict:
    """The server's answer for one document: accepted (no refusals), refused, or not sent (``skipped`` says why)."""

    refusals: list[Refusal] = field(default_factory=list)
    skipped: str = ""


def dry_run(client: Client, documents: Iterable[dict[str, Any]], namespace: str = "default") -> list[Verdict]:
    """The server's verdict on each document, in order; ``namespace`` for namespaced objects that name none."""
    return [_one(client, document, namespace) for document in documents]


def _resource_of(document: dict[str, Any]) -> Any | None:
    """The lightkube object to send: a DRA kind or Node/Pod through kubedra's own resource table, any kind
    lightkube's models know (Deployments, Jobs, Namespaces ...) through its codec; None for others."""
    api_version, kind = str(document.get("apiVersion", "")), str(document.get("kind", ""))
    for known in KINDS:
        for version in known.versions:
            if known.kind == kind and known.api_version(version) == api_version:
                return resource(known, version, writable=True)(document)
    unknown: tuple[type[Exception], ...] = (LoadResourceError, *MALFORMED_ANSWER)
    try:
        return codecs.from_dict(document)
    except unknown:
        return None


def _one(client: Client, document: dict[str, Any], namespace: str) -> Verdict:
    api_version, kind = str(document.get("apiVersion", "")), str(document.get("kind", ""))
    if api_version.startswith("kubedra.io/"):
        return Verdict(skipped=f"{kind} is kubedra's own kind: no API server serves it")
    obj = _resource_of(document)
    if obj is None:
        return Verdict(skipped=f"kubedra cannot send {kind} ({api_version}): not a kind it knows")
    found = document.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    namespaced = getattr(obj, "_api_info", None) is not None and issubclass(type(obj), NamespacedResource)
    try:
        if namespaced:
            client.create(obj, namespace=str(metadata.get("namespace") or namespace), dry_run=True)
        else:
            client.create(obj, dry_run=True)
    except ApiError as exc:
        return Verdict(refusals=_refusals(exc))
    except READ_ERRORS as exc:
        raise KubeError(describe_error(exc, f"dry run of {kind}/{metadata.get('name')}")) from exc
    return Verdict()


def _refusals(error: ApiError) -> list[Refusal]:
    status = error.status
    causes = status.details.causes if status.details is not None and status.details.causes else []
    if causes:
        return [Refusal(c.field or "", c.message or "") for c in causes]
    return [Refusal("", status.message or str(error))]
