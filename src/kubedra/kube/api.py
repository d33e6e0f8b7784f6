"""Connecting and reading: lightkube's sync client with the user's kubeconfig, paginated lists, served versions.

Objects are read through lightkube's generic resources, so every item arrives as the API's own JSON (a dict) —
whatever lightkube-models knows — and is decoded once, into kubedra's model, by ``kubedra.objects.load``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import msgspec
import yaml
from lightkube import Client, KubeConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.core.resource import ApiInfo, ResourceDef
from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource

from kubedra.kube import kubeconfig as kc
from kubedra.kube.kinds import Kind
from kubedra.kube.kubeconfig import KUBECONFIG_SHAPE, KubeError, read_kubeconfig

__all__ = ["KUBECONFIG_SHAPE", "READ_ERRORS", "KubeError", "Listing", "connect", "read_kubeconfig"]

DEFAULT_PAGE_SIZE = 500
_VERBS = ["get", "list", "global_list", "watch", "global_watch"]
# The writers: the node driver (its ResourceSlices), validate --dry-run server (post with dryRun=All).
_WRITE_VERBS = [*_VERBS, "create", "post", "patch", "delete"]
_HTTP_NOT_FOUND = 404


MALFORMED_ANSWER: tuple[type[Exception], ...] = (ValueError, KeyError, TypeError, AttributeError, IndexError)
"""What lightkube raises on an answer that is not the Kubernetes API's: a body that is not JSON (a proxy's HTML error
page, a cut-off read; JSONDecodeError is a ValueError), a list without items or metadata, an error status whose body
is no Status. Caught only around the calls that read the server's answers."""
READ_ERRORS: tuple[type[Exception], ...] = (
    ApiError, httpx2.HTTPError, httpx2.InvalidURL, httpx2.StreamError, OSError, *MALFORMED_ANSWER,
)
"""Everything reading from the API server may raise that is the server's (or the network's) doing."""


@dataclass
class Listing:
    """One kind, listed completely: its items (as JSON dicts with apiVersion and kind) and the list's version."""

    kind: Kind
    version: str
    items: list[dict[str, Any]]
    resource_version: str


def connect(kubeconfig: str | None = None, context: str | None = None, *, timeout: float | None = 30.0) -> Client:
    """A client for ``context`` (default: the current one) of the kubeconfig kubectl would use: ``kubeconfig``, else
    every file of ``$KUBECONFIG`` merged, else ``~/.kube/config``, else the pod's service account
    (:mod:`kubedra.kube.kubeconfig`). Tokens, client certificates and exec plugins work as lightkube supports them."""
    try:
        found = kc.load(kubeconfig)
        if found.config is None:
            try:
                config = KubeConfig.from_service_account()
            except ConfigError as exc:
                tried = ", ".join(found.files or found.missing) or "no file"
                raise KubeError(f"no kubeconfig: tried {tried} and the in-cluster service account ({exc}); "
                                "give --kubeconfig FILE or set $KUBECONFIG") from exc
        else:
            config = KubeConfig.from_dict(found.config, fname=found.files[0])
        single = config.get(context_name=context)
        if single is not None and single.user is None:  # a context naming no user: kubectl asks anonymously
            single = single._replace(user=User())
        _files_exist(single, kubeconfig or ", ".join(found.files))
        # trust_env: HTTPS_PROXY and NO_PROXY apply, as they do for kubectl.
        return Client(single, timeout=httpx2.Timeout(timeout), trust_env=True)
    except ConfigError as exc:
        raise KubeError(f"kubeconfig {kubeconfig or '(default)'}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError, msgspec.ValidationError) as exc:
        raise KubeError(f"kubeconfig {kubeconfig or '(default)'}: not a valid kubeconfig ({exc})") from exc
    except httpx2.InvalidURL as exc:  # a cluster's server that is no URL (a stray quote in the port)
        raise KubeError(f"kubeconfig {kubeconfig or '(default)'}: the cluster's server is not a URL ({exc})") from exc
    except OSError as exc:  # a file the kubeconfig names (a CA, a client certificate) that cannot be read
        what = f"{exc.strerror}: {exc.filename}" if exc.filename and exc.strerror else str(exc)
        raise KubeError(f"kubeconfig {kubeconfig or '(default)'}: {what}") from exc


def _files_exist(single: Any, where: str) -> None:
    """A file the chosen context names that is missing is said with its field (lightkube's own error would be a bare
    "No such file or directory")."""
    user = single.user
    named = [("certificate-authority", single.cluster.certificate_auth)]
    if user is not None:
        named += [("client-certificate", user.client_cert), ("client-key", user.client_key),
                  ("tokenFile", user.token_file)]
    for field, path in named:
        if path and not os.path.exists(path):
            raise KubeError(f"kubeconfig {where}: context {single.context_name}: {field} {path}: not found")


def limit_watch_reads(client: Client, seconds: float) -> None:
    """Make a watch that receives no byte for ``seconds`` fail with a read timeout instead of blocking for ever.

    lightkube turns the read timeout off for watches (a quiet watch rightly sends nothing until the server's
    ``timeoutSeconds`` ends it) and has no setting for it, so a stream that hangs (a half-open connection, a stuck
    proxy) would hold its reader for ever while its kind looks up. Any read timeout longer than the server's watch
    timeout is safe. This is the one place that reaches into lightkube's client for it; KubeError if it moved."""
    inner = getattr(client, "_client", None)
    current = getattr(inner, "_watch_timeout", None)
    if not isinstance(current, httpx2.Timeout):
        raise KubeError("this lightkube version keeps its watch timeout elsewhere: watch reads cannot be bounded")
    inner._watch_timeout = httpx2.Timeout(  # type: ignore[union-attr]
        connect=current.connect, read=seconds, write=current.write, pool=current.pool
    )


_RESOURCES: dict[tuple[str, str, bool], type[Any]] = {}


def resource(kind: Kind, version: str, *, writable: bool = False) -> type[Any]:
    """lightkube's generic resource for one served version of a kind (items stay plain dicts); read-only unless
    ``writable``."""
    key = (kind.kind, version, writable)
    cls = _RESOURCES.get(key)
    if cls is None:
        base = GenericNamespacedResource if kind.namespaced else GenericGlobalResource
        verbs = _WRITE_VERBS if writable else _VERBS
        info = ApiInfo(resource=ResourceDef(kind.group, version, kind.kind), plural=kind.plural, verbs=verbs)
        cls = type(kind.kind, (base,), {"_api_info": info})
        _RESOURCES[key] = cls
    return cls


def all_namespaces(kind: Kind) -> dict[str, Any]:
    return {"namespace": "*"} if kind.namespaced else {}


def describe_error(exc: BaseException, what: str) -> str:
    """An error as one line a user can act on."""
    if isinstance(exc, ApiError):
        status = exc.status
        return f"{what}: {status.code} {status.reason or ''}: {status.message or exc}".replace("  ", " ")
    if isinstance(exc, httpx2.RequestError):
        try:
            url = f" at {exc.request.url.scheme}://{exc.request.url.netloc.decode()}"
        except RuntimeError:  # raised when the error carries no request
            url = ""
        return f"{what}: cannot reach the API server{url}: {exc or type(exc).__name__}"
    if isinstance(exc, MALFORMED_ANSWER):
        return f"{what}: the API server's answer is not one the Kubernetes API gives ({type(exc).__name__}: {exc})"
    return f"{what}: {exc or type(exc).__name__}"


def is_gone(exc: BaseException) -> bool:
    """410 Gone: the resourceVersion (or a continue token) is older than the server keeps; list again."""
    return isinstance(exc, ApiError) and exc.status.code == 410


def list_kind(client: Client, kind: Kind, version: str, *, page_size: int = DEFAULT_PAGE_SIZE) -> Listing:
    """Every object of one kind, page by page (``limit``/``continue``); the items carry apiVersion and kind.

    The list's resourceVersion is the point a watch resumes from: nothing before it is missed, nothing after
    it is in the items.
    """
    pages = client.list(resource(kind, version), chunk_size=page_size, **all_namespaces(kind))
    api_version = kind.api_version(version)
    items = [{**item, "apiVersion": api_version, "kind": kind.kind} for item in pages]
    return Listing(kind, version, items, pages.resourceVersion)


def served_version(client: Client, kind: Kind) -> str | None:
    """The first of ``kind.versions`` the server serves (probed with a one-item list); None if none is."""
    for version in kind.versions:
        try:
            pages = client.list(resource(kind, version), chunk_size=1, **all_namespaces(kind))
            next(iter(pages), None)
        except ApiError as exc:
            if exc.status.code == _HTTP_NOT_FOUND:
                continue
            raise
        return version
    return None


def serves(client: Client, kind: Kind, version: str) -> bool:
    """Whether the server serves ``kind`` as ``version`` (a one-item list)."""
    try:
        next(iter(client.list(resource(kind, version), chunk_size=1, **all_namespaces(kind))), None)
    except ApiError as exc:
        if exc.status.code == _HTTP_NOT_FOUND:
            return False
        raise
    return True


def get_object(client: Client, kind: Kind, version: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """One object as the API's JSON (apiVersion and kind set); raises lightkube's ApiError (404 when absent)."""
    kwargs = {"namespace": namespace} if kind.namespaced else {}
    item = client.get(resource(kind, version), name, **kwargs)
    return {**item, "apiVersion": kind.api_version(version), "kind": kind.kind}


def list_selected(client: Client, kind: Kind, version: str, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of a cluster-scoped kind whose fields equal ``fields`` (a field selector)."""
    pages = client.list(resource(kind, version), fields=fields, chunk_size=DEFAULT_PAGE_SIZE, **all_namespaces(kind))
    return [{**item, "apiVersion": kind.api_version(version), "kind": kind.kind} for item in pages]


def watch_selected(
    client: Client, kind: Kind, version: str, fields: dict[str, Any], *, server_timeout: int = 300
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of a cluster-scoped kind whose fields equal ``fields``, as an informer sees them: ``("LISTED",
    object)`` for each that exists, then the watch's events (``ADDED``, ``MODIFIED``, ``DELETED``) from the list's
    resourceVersion, without end (a watch the server closes is resumed). Errors are raised, 410 Gone included
    (:func:`is_gone`): the caller lists again."""
    res = resource(kind, version)
    api_version = kind.api_version(version)
    pages = client.list(res, fields=fields, chunk_size=DEFAULT_PAGE_SIZE)
    for item in pages:
        yield "LISTED", {**item, "apiVersion": api_version, "kind": kind.kind}
    events = client.watch(res, fields=fields, resource_version=pages.resourceVersion, server_timeout=server_timeout)
    for event_type, item in events:
        yield str(event_type), {**item, "apiVersion": api_version, "kind": kind.kind}


def apply_object(client: Client, kind: Kind, version: str, document: dict[str, Any], field_manager: str) -> None:
    """Server-side apply of ``document`` (forced: this manager owns what it writes)."""
    from lightkube.types import PatchType

    metadata = document["metadata"]
    kwargs = {"namespace": metadata["namespace"]} if kind.namespaced else {}
    client.patch(
        resource(kind, version, writable=True),
        metadata["name"],
        document,
        patch_type=PatchType.APPLY,
        field_manager=field_manager,
        force=True,
        **kwargs,
    )


def delete_object(client: Client, kind: Kind, version: str, name: str) -> None:
    """Delete one cluster-scoped object; one that is already gone is not an error."""
    try:
        client.delete(resource(kind, version, writable=True), name)
    except ApiError as exc:
        if exc.status.code != _HTTP_NOT_FOUND:
            raise
