"""The exporter keeps slim Nodes and Pods (``kube.read.slim``): what the model reads and nothing else. The exposition
must be exactly the one the whole documents give, before and after events, and the copy much smaller."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.kube import realistic

from kubedra.allocator import Features
from kubedra.kube.api import Listing
from kubedra.kube.kinds import KINDS
from kubedra.kube.mirror import Mirror
from kubedra.kube.read import slim, to_loaded
from kubedra.metrics.live import LiveSource
from kubedra.objects.model import Pod
from kubedra.sim.unmodelled import unmodelled_fields

NODES, PODS = 12, 80


def _mirror(trim: bool) -> Mirror:
    mirror = Mirror(lambda: None, trim=slim if trim else None)  # type: ignore[arg-type, return-value]
    mirror.prepare({k.kind: k.versions[0] for k in KINDS})
    for kind in KINDS:
        mirror.replace(Listing(kind, kind.versions[0], realistic.documents(kind.kind, NODES, PODS), "1"))
    return mirror


def _dra(source: LiveSource) -> str:
    assert source.refresh()
    text = source.text()
    return text[: text.index("# HELP kubedra_exporter_synced")]


def _size(mirror: Mirror, kind: str) -> int:
    return sum(len(json.dumps(d)) for d in mirror.snapshot().by_kind[kind])


def test_slim_nodes_and_pods_give_the_exposition_of_whole_ones() -> None:
    whole, slimmed = _mirror(trim=False), _mirror(trim=True)
    sources = [LiveSource(m, Features.for_release(), clock=lambda: 0.0) for m in (whole, slimmed)]
    first = _dra(sources[0])
    assert 'kube_resourceclaim_allocated{name="infer-7d9f8b6c5d-000001-gpu-abcde"' in first
    assert 'kube_pod_resourceclaim_info{namespace="team-1",pod="infer-7d9f8b6c5d-000001"' in first
    assert _dra(sources[1]) == first
    assert to_loaded(whole.snapshot()).objects == to_loaded(slimmed.snapshot()).objects

    # Events: a pod finishes, another's containers restart (nothing a metric reads), a node is cordoned and loses
    # its GPU taint, a pod is deleted.
    finished = realistic.pod(3, NODES)
    finished["status"]["phase"] = "Succeeded"
    restarted = realistic.pod(4, NODES)
    restarted["status"]["containerStatuses"][0]["restartCount"] = 7
    cordoned = realistic.node(2)
    cordoned["spec"]["unschedulable"] = True
    cordoned["spec"]["taints"] = []
    events: list[tuple[str, str, dict[str, Any]]] = [
        ("Pod", "MODIFIED", finished), ("Pod", "MODIFIED", restarted), ("Node", "MODIFIED", cordoned),
        ("Pod", "DELETED", realistic.pod(5, NODES)),
    ]
    for kind, event_type, document in events:
        for mirror in (whole, slimmed):
            mirror.apply(kind, event_type, copy.deepcopy(document))
    after = _dra(sources[0])
    assert after != first
    assert _dra(sources[1]) == after
    assert to_loaded(whole.snapshot()).objects == to_loaded(slimmed.snapshot()).objects

    # What is kept is a fraction of the whole.
    assert _size(slimmed, "Node") < 0.2 * _size(whole, "Node")
    assert _size(slimmed, "Pod") < 0.35 * _size(whole, "Pod")


def test_slim_keeps_the_dra_kinds_whole_and_drops_only_what_the_model_does_not_read() -> None:
    node, pod, claim = realistic.node(1), realistic.pod(1, NODES), realistic.claim(1, NODES)
    assert slim("ResourceClaim", claim) is claim
    slim_node, slim_pod = slim("Node", node), slim("Pod", pod)
    assert "managedFields" not in slim_node["metadata"] and "images" not in slim_node["status"]
    assert slim_node["status"]["allocatable"] == node["status"]["allocatable"]
    assert slim_node["spec"]["taints"] == node["spec"]["taints"]
    assert slim_node["metadata"]["labels"] == node["metadata"]["labels"]
    assert "volumes" not in slim_pod["spec"] and "containerStatuses" not in slim_pod["status"]
    assert "env" not in slim_pod["spec"]["containers"][0]
    assert slim_pod["spec"]["containers"][0]["resources"] == pod["spec"]["containers"][0]["resources"]
    assert slim_pod["status"]["resourceClaimStatuses"] == pod["status"]["resourceClaimStatuses"]
    assert slim_pod["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]  # the watch resumes from it
    assert node["metadata"]["managedFields"]  # the input is left as it was


def _with_claim_volumes(document: dict[str, Any]) -> dict[str, Any]:
    """A realistic pod that also mounts a dataset claim and a per-pod scratch claim (a generic ephemeral volume)."""
    document["spec"]["volumes"][1:1] = [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
            "metadata": {"labels": {"team": "ml"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "dataSourceRef": {
                "kind": "VolumeSnapshot", "name": "warm"}, "resources": {"requests": {"storage": "200Gi"}}},
        }}},
    ]
    return document


def test_slim_pods_keep_their_claim_volumes_and_only_those() -> None:
    pod = _with_claim_volumes(realistic.pod(1, NODES))
    assert slim("Pod", pod)["spec"]["volumes"] == [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "resources": {"requests": {"storage": "200Gi"}},
        }}}},
    ]
    assert len(pod["spec"]["volumes"]) == 5  # the input is left as it was


def test_a_mirrors_slim_pods_keep_the_claim_volumes_unmodelled_fields_name() -> None:
    whole, slimmed = _mirror(trim=False), _mirror(trim=True)
    assert unmodelled_fields(to_loaded(slimmed.snapshot()).of_kind(Pod)) == []
    for mirror in (whole, slimmed):
        mirror.apply("Pod", "MODIFIED", _with_claim_volumes(realistic.pod(6, NODES)))
        mirror.apply("Pod", "ADDED", _with_claim_volumes(realistic.pod(NODES * 10, NODES)))
    assert to_loaded(whole.snapshot()).objects == to_loaded(slimmed.snapshot()).objects
    pods = to_loaded(slimmed.snapshot()).of_kind(Pod)
    (note,) = unmodelled_fields(pods)
    assert note.startswith("2 pods (e.g. Pod team-3/infer-7d9f8b6c5d-000120) set persistentVolumeClaim or ephemeral "
                           "volumes (spec.volumes)")
    (kept,) = [p for p in pods if p.metadata.name.endswith("000006")]
    assert kept.spec.volumes is not None and [v.name for v in kept.spec.volumes] == ["dataset", "scratch"]
