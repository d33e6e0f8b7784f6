"""Publishing the node's pool as ResourceSlices, through the kube/ adapter (server-side apply).

As the kubelet-plugin helper's ResourceSlice controller does it: slices listed by ``spec.driver`` and
``spec.nodeName``; owner reference to the Node (controller); the pool's generation bumped and
``resourceSliceCount`` set whenever the devices change; slices that are no longer wanted deleted. What was last
applied is recognised by a hash annotation, so an unchanged pool costs one list and no write. API errors are
retried with exponential backoff.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from kubedra.driver.devices import Sharing, pool_slices
from kubedra.driver.inventory import DriverError, Inventory
from kubedra.kube import api
from kubedra.kube.kinds import NODE, RESOURCE_SLICE
from kubedra.migrate.versions import from_v1
from kubedra.objects.beta import to_v1
from kubedra.objects.model import DeviceTaint

log = logging.getLogger("kubedra.driver")
FIELD_MANAGER = "kubedra-driver"
HASH_ANNOTATION = "kubedra.io/pool-hash"


@dataclass
class PublishResult:
    generation: int
    slices: list[str]
    changed: bool
    deleted: list[str]


def _content_hash(slices: list[dict[str, Any]]) -> str:
    """What the pool says, without its generation: equal hashes, nothing to write."""
    parts = []
    for s in slices:
        spec = {k: v for k, v in s["spec"].items() if k != "pool"}
        parts.append({"name": s["metadata"]["name"], "spec": spec, "count": s["spec"]["pool"]["resourceSliceCount"]})
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


RESOURCE_API_VERSIONS = ("v1", "v1beta2", "v1beta1")


def check_resource_api_version(version: str) -> str:
    if version not in RESOURCE_API_VERSIONS:
        raise DriverError(f"--resource-api-version: {version!r} is not one of {', '.join(RESOURCE_API_VERSIONS)}")
    return version


class SlicePublisher:
    """``version``: the resource.k8s.io version slices are written in (v1 from Kubernetes 1.34, v1beta2 on 1.33,
    v1beta1 on 1.32); the slices are built in v1 and written through the one v1 → beta converter
    (:func:`kubedra.migrate.versions.from_v1`, that of ``kubedra convert --to``)."""

    def __init__(
        self, client: Any, driver: str, node: str, sharing: Sharing | None = None, version: str = "v1"
    ) -> None:
        self.client = client
        self.driver = driver
        self.node = node
        self.sharing = sharing or Sharing()
        self.version = check_resource_api_version(version)

    def publish(self, inventory: Inventory, taints: Mapping[str, list[DeviceTaint]] | None = None) -> PublishResult:
        """One reconcile: raises lightkube/httpx errors (the caller retries) or DriverError."""
        version = self.version
        if not api.serves(self.client, RESOURCE_SLICE, version):
            served = api.served_version(self.client, RESOURCE_SLICE)
            raise DriverError(
                f"the API server does not serve resource.k8s.io/{version} ResourceSlices"
                + (f" (it serves {served}: --resource-api-version {served})" if served else "")
            )
        node = api.get_object(self.client, NODE, "v1", self.node)
        node_uid = str(node["metadata"]["uid"])
        existing = api.list_selected(
            self.client, RESOURCE_SLICE, version, {"spec.driver": self.driver, "spec.nodeName": self.node}
        )
        generation = max((int(s["spec"]["pool"].get("generation", 0)) for s in existing), default=0)
        desired = [
            msgspec.to_builtins(s)
            for s in pool_slices(
                inventory, self.driver, self.node, node_uid, generation=0, sharing=self.sharing, taints=taints
            )
        ]
        digest = _content_hash(desired)
        current = {s["metadata"]["name"]: s for s in existing}
        unchanged = set(current) == {d["metadata"]["name"] for d in desired} and all(
            (s["metadata"].get("annotations") or {}).get(HASH_ANNOTATION) == digest for s in existing
        )
        if unchanged:
            return PublishResult(generation, sorted(current), changed=False, deleted=[])
        generation += 1
        for document in desired:
            document["apiVersion"], document["kind"] = RESOURCE_SLICE.api_version("v1"), RESOURCE_SLICE.kind
            document["spec"]["pool"]["generation"] = generation
            document["metadata"]["annotations"] = {HASH_ANNOTATION: digest}
            written = from_v1(RESOURCE_SLICE.kind, document, version).document
            api.apply_object(self.client, RESOURCE_SLICE, version, written, FIELD_MANAGER)
        wanted = {d["metadata"]["name"] for d in desired}
        obsolete = sorted(set(current) - wanted)
        for name in obsolete:
            api.delete_object(self.client, RESOURCE_SLICE, version, name)
        log.info(
            "published pool %s generation %d: %d slice(s), deleted %d",
            self.node,
            generation,
            len(desired),
            len(obsolete),
        )
        return PublishResult(generation, sorted(wanted), changed=True, deleted=obsolete)


def publish_with_retry(
    publish: Callable[[], PublishResult],
    stop: threading.Event,
    *,
    initial: float = 0.5,
    maximum: float = 30.0,
    sleep: Callable[[float], bool] | None = None,
) -> PublishResult | None:
    """``publish()`` until it succeeds (None if ``stop`` is set first); delays double from ``initial`` to
    ``maximum``. A DriverError (nothing a retry fixes) is raised."""
    wait = sleep or stop.wait
    delay = initial
    while not stop.is_set():
        try:
            return publish()
        except DriverError:
            raise
        except Exception as exc:  # noqa: BLE001 - API unavailable, refused, timed out: retried
            log.warning(
                "publishing ResourceSlices failed (retrying in %.1fs): %s", delay, api.describe_error(exc, "API")
            )
            if wait(delay):
                return None
            delay = min(delay * 2, maximum)
    return None


class KubeClaims:
    """Claims read from the API server (the kubelet-plugin helper's ``getResourceClaims``), in ``version`` (the
    driver's --resource-api-version: a 1.32 cluster has no v1) and brought to v1 by the loader's converter."""

    def __init__(self, client: Any, version: str = "v1") -> None:
        self.client = client
        self.version = check_resource_api_version(version)

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        from kubedra.kube.kinds import RESOURCE_CLAIM

        document = api.get_object(self.client, RESOURCE_CLAIM, self.version, name, namespace)
        return document if self.version == "v1" else to_v1(RESOURCE_CLAIM.kind, self.version, document).document
