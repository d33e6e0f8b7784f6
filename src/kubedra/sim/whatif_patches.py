"""What would make it fit, as patches: each change a JSON patch (RFC 6902) on the manifest the user edits.

``change["patches"]`` is a list of ``{object: {kind, name}, patch: [...]}``, one per object, in every suggestion that
edits manifests: the ResourceClaimTemplate (``/spec/spec/devices``) or the ResourceClaim (``/spec/devices``) a claim
comes from, the object whose pod template the pod was made from (a bare Pod's ``/spec``; a Deployment's, StatefulSet's,
ReplicaSet's, DaemonSet's or Job's ``/spec/template/spec``; a CronJob's ``/spec/jobTemplate/spec/template/spec``), a
NodePool. A list is written whole with ``add`` (which replaces an existing member), so the patch applies whether the
manifest had the list or not. Pods made by objects kubedra expands further (JobSet, LeaderWorkerSet, RayCluster,
PyTorchJob) and nodes that are not a NodePool's get no patch: ``change`` still says what to edit.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import ResourceClaim, Toleration
from kubedra.sim.daemonsets import DAEMON_TOLERATIONS, HOST_NETWORK_TOLERATION

Patch = dict[str, Any]
NODEPOOL_LABEL = "kubedra.io/nodepool"
TEMPLATE_SPEC = {"Pod": "/spec", "Deployment": "/spec/template/spec", "StatefulSet": "/spec/template/spec",
                 "ReplicaSet": "/spec/template/spec", "DaemonSet": "/spec/template/spec",
                 "Job": "/spec/template/spec"}
# Pods of objects expanded further than their StatefulSet or Job: the Job or StatefulSet is not a manifest
EXPANDED = ("jobset.sigs.k8s.io/jobset-name", "leaderworkerset.sigs.k8s.io/name", "ray.io/cluster",
            "training.kubeflow.org/job-name")
CRON_JOB = re.compile(r"^(?P<cron>.+)-[0-9]{8,}$")  # a CronJob's Job: <cronjob>-<scheduled time in minutes>


def entry(kind: str, name: str, ops: list[Patch]) -> Patch:
    return {"object": {"kind": kind, "name": name}, "patch": ops}


def claim_object(template: str, claim_key: str) -> tuple[str, str, str]:
    """(kind, namespace/name, pointer to its requests) of the object a pod's claim is written in."""
    if template:
        return "ResourceClaimTemplate", template, "/spec/spec/devices/requests"
    return "ResourceClaim", claim_key, "/spec/devices/requests"


def pod_template(record: PodRecord) -> tuple[str, str, str] | None:
    """(kind, namespace/name, pointer to its pod spec) of the manifest the pod was made from, or None."""
    labels = record.pod.metadata.labels
    if any(label in labels for label in EXPANDED):
        return None
    kind, _, key = record.owner.partition("/")
    pointer = TEMPLATE_SPEC.get(kind)
    if pointer is None or not key:
        return None
    namespace, _, name = key.partition("/")
    cron = CRON_JOB.match(name) if kind == "Job" else None
    if cron is not None and record.pod.metadata.labels.get("batch.kubernetes.io/job-name", name) == name:
        return "CronJob", f"{namespace}/{cron['cron']}", "/spec/jobTemplate/spec/template/spec"
    return kind, key, pointer


def _wire(toleration: Toleration) -> dict[str, Any]:
    return msgspec.to_builtins(toleration)  # type: ignore[no-any-return]


def pod_toleration(record: PodRecord, added: Toleration) -> Patch | None:
    """The pod's template with one more toleration (a DaemonSet's automatic ones left to its controller)."""
    found = pod_template(record)
    if found is None:
        return None
    kind, name, pointer = found
    automatic = (*DAEMON_TOLERATIONS, HOST_NETWORK_TOLERATION) if kind == "DaemonSet" else ()
    own = [t for t in record.pod.spec.tolerations if t not in automatic]
    return entry(kind, name, [{"op": "add", "path": f"{pointer}/tolerations",
                               "value": [_wire(t) for t in [*own, added]]}])


def claim_patch(claim: ResourceClaim, template: str, claim_key: str, changed: ResourceClaim) -> Patch:
    """The claim's requests as ``changed`` has them, written over the template's or the claim's."""
    kind, name, pointer = claim_object(template, claim_key)
    ops = []
    for i, (before, after) in enumerate(zip(claim.spec.devices.requests, changed.spec.devices.requests, strict=True)):
        if before != after:
            ops.append({"op": "replace", "path": f"{pointer}/{i}",
                        "value": msgspec.to_builtins(after)})
    return entry(kind, name, ops)


def nodepool(label: str, pool: str, ops: list[Patch]) -> Patch | None:
    """A NodePool's patch; None for a pool of plain Nodes (a cloud's node group: its nodes are not manifests)."""
    return entry("NodePool", pool, ops) if label == NODEPOOL_LABEL else None
