"""kubedra's LeaderWorkerSet expansion (``kubedra.sim.leaderworkersets``) against the released LWS controller,
sigs.k8s.io/lws v0.9.0 (``tests/sigs/build.sh``): its manager runs against a control plane of this module's own
(with kube-controller-manager's StatefulSet controller, which makes the leader and worker StatefulSets' pods; nothing
schedules), with the CRDs and the webhooks (LeaderWorkerSet defaulting and validation, the pod webhook that labels
the pods and gives leaders the exclusive-placement affinities) of the same module. The example and variants are
applied to both and the pods compared: names, counts, labels, annotations, owner references, containers' resources
and claims, the pods' resource claims, affinity, nodeSelector and what else the scheduler reads. The leader pods are
marked Running and Ready (and, with exclusive placement, bound to a node of the topology) by hand, as a kubelet and
the scheduler would, where the workers wait for that.

Skips with the reason when the controller is not built (``scripts/test`` builds it where ``go`` is); in CI
(``CI=true``) a missing controller fails instead."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.leaderworkersets import _pinned
from kubedra.sim.scenario import build_scenario

BINARY = harness.BIN / "lws-controller"
MODULE = "sigs.k8s.io/lws"
EXAMPLE = harness.EXAMPLES / "vllm-lws.yaml"
# hashes of what each side hashes its own way: the StatefulSet controller's ControllerRevision name and LWS's
# template hash; both are compared for being the same on every pod of the same template
HASHES = ("controller-revision-hash", "leaderworkerset.sigs.k8s.io/template-revision-hash")

pytestmark = pytest.mark.controlplane


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    harness.require(BINARY)
    with harness.control_plane(tmp_path_factory.mktemp("lws-cp"), ("statefulset-controller",)) as cp:
        yield cp


@pytest.fixture(scope="module")
def lws(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The LWS controller v0.9.0 with its CRDs and webhooks."""
    root = harness.module_dir(MODULE)
    bases = root / "config" / "crd" / "bases"
    crds = [bases / "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
            bases / "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"]
    with harness.controller(plane, tmp_path_factory.mktemp("lws"), BINARY, "config.lws.x-k8s.io/v1alpha1", root,
                            crds, root / "config" / "webhook"):
        yield


def lws_docs(namespace: str) -> list[dict[str, Any]]:
    """The example's ResourceClaimTemplate and LeaderWorkerSet (its Job and NodePools are the scenario's)."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d["kind"] in ("ResourceClaimTemplate",
                                                                                   "LeaderWorkerSet")]
    return harness.in_namespace(namespace, docs)


def kubedra_pods(docs: list[dict[str, Any]], rack: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """kubedra's pods by name: the leaders and the workers made with them, and those its controller makes once
    their leader is ready or scheduled (pinned to ``rack[leader]`` with exclusive placement)."""
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    pods = [a.pod for a in scenario.workloads.arrivals]
    for run in scenario.workloads.leaderworkersets:
        for group in run.groups:
            for pod in group.workers:
                value = (rack or {}).get(group.leader)
                pods.append(_pinned(pod, run.exclusive, value) if run.exclusive and value else pod)
    return {pod.metadata.name: msgspec.to_builtins(pod) for pod in pods}


def real_pods(plane: ControlPlane, namespace: str, count: int) -> dict[str, dict[str, Any]]:
    pods = harness.listed(plane, f"/api/v1/namespaces/{namespace}/pods", count, "pods")
    return {pod["metadata"]["name"]: pod for pod in pods}


def shape(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    labels = dict(meta.get("labels", {}))
    for key in HASHES:
        if key in labels:
            labels[key] = "<hash>"
    return {
        "labels": labels,
        "annotations": meta.get("annotations", {}),
        **harness.pod_fields(pod),
    }


def compare(real: dict[str, dict[str, Any]], ours: dict[str, dict[str, Any]]) -> None:
    assert sorted(ours) == sorted(real)
    for name, pod in real.items():
        assert shape(ours[name]) == shape(pod), name
    for side in (real, ours):
        # the StatefulSet controller's revision name: its StatefulSet's name and a hash (of its own making)
        for pod in side.values():
            labels = pod["metadata"]["labels"]
            statefulset = pod["metadata"]["ownerReferences"][0]["name"]
            assert labels[HASHES[0]].rsplit("-", 1)[0] == statefulset
        # LWS's template hash: one value on every pod of the LeaderWorkerSet
        assert len({p["metadata"]["labels"][HASHES[1]] for p in side.values()}) == 1


def leaders(pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods.values() if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/worker-index") == "0"]


def test_the_example_lws_expands_as_the_lws_controller_makes_it(plane: ControlPlane, lws: None) -> None:
    # exclusive placement and LeaderReady: the 4 leaders first; a group's worker once its leader is scheduled (on a
    # rack) and ready, pinned to that rack
    namespace = plane.create_namespace("lws")
    docs = lws_docs(namespace)
    harness.apply(plane, docs)
    real = real_pods(plane, namespace, 4)
    ours = kubedra_pods(docs)
    assert sorted(real) == ["vllm-0", "vllm-1", "vllm-2", "vllm-3"]
    compare(real, {name: pod for name, pod in ours.items() if name in real})
    racks = {}
    for index, leader in enumerate(sorted(leaders(real), key=lambda p: p["metadata"]["name"])[:2]):
        node = f"node-{index}"
        plane.create_node(node, labels={"rack": f"r{index}"})
        harness.bind(plane, leader, node)
        harness.make_ready(plane, leader)
        racks[leader["metadata"]["name"]] = f"r{index}"
    real = real_pods(plane, namespace, 6)
    ours = kubedra_pods(docs, racks)
    compare(real, {name: pod for name, pod in ours.items() if name in real})
    assert sorted(real) == ["vllm-0", "vllm-0-1", "vllm-1", "vllm-1-1", "vllm-2", "vllm-3"]


def test_leadercreated_makes_the_workers_with_their_leader(plane: ControlPlane, lws: None) -> None:
    namespace = plane.create_namespace("lws")
    docs = lws_docs(namespace)
    lws_doc = docs[-1]
    lws_doc["metadata"] = {"name": "plain", "namespace": namespace, "labels": {"app": "serve"}}
    spec = lws_doc["spec"]
    spec.update(replicas=2, startupPolicy="LeaderCreated")
    template = spec["leaderWorkerTemplate"]
    del template["leaderTemplate"]  # the leader from the worker template
    template["size"] = 3
    template["workerTemplate"]["metadata"] = {"labels": {"tier": "gpu"}, "annotations": {"team": "ml"}}
    template["workerTemplate"]["spec"]["nodeSelector"] = {"pool": "h100"}
    harness.apply(plane, docs)
    real = real_pods(plane, namespace, 6)
    compare(real, kubedra_pods(docs))


def test_leaderready_makes_the_workers_once_the_leader_is_ready(plane: ControlPlane, lws: None) -> None:
    namespace = plane.create_namespace("lws")
    docs = lws_docs(namespace)
    lws_doc = docs[-1]
    lws_doc["metadata"] = {"name": "ready", "namespace": namespace}
    lws_doc["spec"]["replicas"] = 2
    lws_doc["spec"]["leaderWorkerTemplate"]["size"] = 2
    harness.apply(plane, docs)
    real = real_pods(plane, namespace, 2)
    harness.make_ready(plane, real["ready-1"])
    real = real_pods(plane, namespace, 3)
    assert sorted(real) == ["ready-0", "ready-1", "ready-1-1"]
    compare(real, {name: pod for name, pod in kubedra_pods(docs).items() if name in real})


