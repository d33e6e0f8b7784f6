"""``kubedra migrate plan --kubeconfig`` on the real control plane (kube-apiserver, kube-scheduler and
kube-controller-manager v1.37.2): the rollout example's cluster created as plain Nodes the device plugin serves,
labelled as GPU Feature Discovery labels them, its workloads placed by the real scheduler (the test marks bound pods
Running, as kubelets would). The plan read live must be the plan of the same objects given as files: the same waves,
and per wave the same evictions, losses, landings and waiting pods per workload (pod names differ: the controllers
name the live ones). No ClusterPolicy CRD is served at first: the plan says so and reads the replicas from the
nodes' ``nvidia.com/gpu.replicas``; last, NVIDIA's CRD is installed with a ClusterPolicy naming the time-slicing
ConfigMap, which the plan then reads. A Node advertising ``nvidia.com/gpu`` without ``nvidia.com/gpu.product`` is refused,
naming it. Nothing is written to the cluster."""

from __future__ import annotations

import urllib.error
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.builders import run_cli
from tests.kube.vs_controllers import CONTROLLERS
from tests.migrate.test_rollout import gfd_nodes
from tests.migrate.test_rollout_controlplane import EXAMPLE, PATHS, _api, _settled

from kubedra.allocator import Features
from kubedra.cluster.deviceclasses import GPU_CLASS, default_device_classes
from kubedra.kube.api import connect
from kubedra.kube.read import manifest
from kubedra.kube.rollout import read_live
from kubedra.migrate import waves
from kubedra.migrate.rollout import Cluster, read_cluster
from kubedra.objects.load import load_paths
from kubedra.schema.published import manifest as published
from kubedra.schema.published import read
from kubedra.sim.scenario import build_scenario

pytestmark = pytest.mark.controlplane

FEATURES = Features.for_release("1.37")
NAMESPACE = "live"
HTTP_NOT_FOUND = 404
OPERATOR_EXAMPLE = EXAMPLE.parent / "gpu-operator" / "cluster-policy.yaml"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("live"), controllers=(*CONTROLLERS, "disruption")) as started:
        yield started


def _workloads() -> list[dict[str, Any]]:
    docs = []
    for doc in yaml.safe_load_all((EXAMPLE / "workloads.yaml").read_text()):
        if doc["kind"] == "PriorityClass":
            doc["preemptionPolicy"] = "Never"  # the plan does not model preemption during a rollout
        else:
            doc["metadata"]["namespace"] = NAMESPACE
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def files(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster created live; the same objects (the nodes as the API server has them) written as files."""
    loaded = load_paths([str(EXAMPLE)], recursive=True)
    example = read_cluster(loaded, build_scenario(loaded))
    (gpu_class,) = [c for c in default_device_classes() if c.metadata.name == GPU_CLASS]
    plane.create(_api(gpu_class, "resource.k8s.io/v1", "DeviceClass"))
    nodes = []
    for node in gfd_nodes(example):
        allocatable = dict(node["status"]["allocatable"])
        plane.create_node(node["metadata"]["name"], cpu=allocatable.pop("cpu"), memory=allocatable.pop("memory"),
                          pods=allocatable.pop("pods"), extra_allocatable=allocatable,
                          labels=node["metadata"]["labels"])
        nodes.append(manifest(plane.get(f"/api/v1/nodes/{node['metadata']['name']}")))
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": NAMESPACE}})
    workloads = _workloads()
    for doc in workloads:
        plane.request("POST", PATHS[doc["kind"]].format(ns=NAMESPACE), doc)
    before = _settled(plane, NAMESPACE, len(example.pods))
    assert all(p["spec"].get("nodeName") for p in before)
    out = tmp_path_factory.mktemp("files")
    (out / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (out / "workloads.yaml").write_text(yaml.safe_dump_all(workloads))
    return out


def _owner(owner: str) -> str:
    kind, namespace, name = owner.split("/", 2)
    return f"{kind}/{namespace}/{name}"


def _summary(cluster: Cluster, plan: waves.Plan) -> list[dict[str, Any]]:
    """Per wave, what the plan does per workload (pod names left out)."""
    owners = {f"{a.pod.metadata.namespace or 'default'}/{a.pod.metadata.name}": _owner(a.owner) for a in cluster.pods}
    out = []
    for wave in plan.waves:
        out.append({"nodes": wave.switching, "evicted": Counter(owners[k] for k in wave.evicted),
                    "lost": Counter(owners[k] for k in wave.lost),
                    "landed": Counter((owners[k], node) for k, node in wave.moved.items()),
                    "waiting": Counter(owners[k] for k in wave.waiting),
                    "where": Counter((owners[k], node) for k, node in wave.placement.items()),
                    "budgets": wave.budgets})
    return out


def _same_start(offline: Cluster, live: Cluster) -> None:
    """The files' plan from where the real scheduler put the pods: it breaks ties between alike nodes (a100-0 and
    a100-1) at random, kubedra's simulation of the start by its seed; a workload's pods are interchangeable, so each
    is given one of the nodes its workload's live pods run on."""
    assert live.observed is not None
    nodes: dict[str, list[str]] = {}
    for arrival in live.pods:
        key = f"{arrival.pod.metadata.namespace or 'default'}/{arrival.pod.metadata.name}"
        nodes.setdefault(_owner(arrival.owner), []).append(live.observed[key])
    for found in nodes.values():
        found.sort()
    offline.observed = {f"{a.pod.metadata.namespace or 'default'}/{a.pod.metadata.name}": nodes[_owner(a.owner)].pop(0)
                        for a in sorted(offline.pods, key=lambda a: a.pod.metadata.name)}


def test_the_live_plan_is_the_plan_of_the_same_objects_as_files(plane: ControlPlane, files: Path) -> None:
    loaded = load_paths([str(files)], recursive=True)
    offline = read_cluster(loaded, build_scenario(loaded))
    with connect(str(plane.kubeconfig)) as client:
        live = read_live(client).cluster
    _same_start(offline, live)
    assert sorted(live.gpu_nodes) == sorted(offline.gpu_nodes) == ["a100-0", "a100-1", "h100-0", "h100-1", "h100-2"]
    assert live.observed is not None and len(live.observed) == len(offline.pods) == len(live.pods)
    assert {g.replicas for g in live.gpu_nodes.values() if g.pool == "a100"} == {2}
    assert any("serves no ClusterPolicy" in n for n in live.notes)
    for order in ("naive", "smart"):
        if order == "naive":
            want, got = waves.naive(offline, FEATURES, 1), waves.naive(live, FEATURES, 1)
        else:
            want, got = waves.smart(offline, FEATURES, 1), waves.smart(live, FEATURES, 1)
        assert _summary(live, got) == _summary(offline, want), order
        assert got.cost() == want.cost()


def test_the_cli_reads_the_cluster_and_writes_nothing(plane: ControlPlane, files: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI prints the plan the library makes of the same read (its start is the real scheduler's placement,
    whose ties between alike nodes fall at random: the files' plan is compared above, from the same start)."""
    before = plane.get(f"/api/v1/namespaces/{NAMESPACE}/pods")
    code, out, err = run_cli(capsys, "migrate", "plan", "--kubeconfig", str(plane.kubeconfig), "-o", "yaml")
    assert code == 0, err
    doc = yaml.safe_load(out)
    with connect(str(plane.kubeconfig)) as client:  # what the library plans from the same read
        live = read_live(client).cluster
    want = waves.document(waves.smart(live, FEATURES, 1), None)
    assert (doc["summary"], doc["waves"]) == (want["summary"], want["waves"])
    after = plane.get(f"/api/v1/namespaces/{NAMESPACE}/pods")
    assert [p["metadata"]["resourceVersion"] for p in after["items"]] == \
        [p["metadata"]["resourceVersion"] for p in before["items"]]


def test_the_planner_needs_only_the_two_published_roles(plane: ControlPlane, files: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A user bound to exactly deploy/rbac.yaml's kubedra-reader and deploy/migration-planner-rbac.yaml's
    kubedra-migration-planner plans as the admin does (the roles list what the plan reads; nothing is written)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    deploy = Path(__file__).resolve().parents[2] / "deploy"
    for path in (deploy / "rbac.yaml", deploy / "migration-planner-rbac.yaml"):
        role = yaml.safe_load(path.read_text())
        name = role["metadata"]["name"]
        plane.request("POST", f"{rbac}/clusterroles", role)
        plane.request("POST", f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}]})
    reader = str(plane.kubeconfig_for(plane.reader_token, "reader"))
    admin = run_cli(capsys, "migrate", "plan", "--kubeconfig", str(plane.kubeconfig), "-o", "yaml")

    def planned() -> tuple[int, str, str] | None:
        result = run_cli(capsys, "migrate", "plan", "--kubeconfig", reader, "-o", "yaml")
        return result if result[0] == 0 and result[2] == admin[2] else None

    _, out, _ = plane.wait_for(planned, timeout=10, what="the planner's plan to be allowed")
    assert yaml.safe_load(out) == yaml.safe_load(admin[1])


def test_a_gpu_node_without_gfd_labels_is_refused(plane: ControlPlane, files: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    plane.create_node("plain-gpu", extra_allocatable={"nvidia.com/gpu": "4"})
    code, _, err = run_cli(capsys, "migrate", "plan", "--kubeconfig", str(plane.kubeconfig))
    assert code == 2
    assert "Node plain-gpu" in err and "nvidia.com/gpu.product" in err


def test_a_served_cluster_policy_names_the_time_slicing_config(plane: ControlPlane, files: Path,
                                                               tmp_path: Path) -> None:
    """With the GPU Operator installed (its ClusterPolicy CRD served, as vendored from NVIDIA's chart) the device
    plugin's replicas come from the ConfigMap the ClusterPolicy names, the node's nvidia.com/device-plugin.config
    label picking the key, not from GFD's nvidia.com/gpu.replicas (taken off the A100 nodes here, as a GFD that does
    not publish it would leave them). The plan is the plan of the same objects as files."""
    plane.request("DELETE", "/api/v1/nodes/plain-gpu")  # the refused node of the test above
    plane.install_crds([read(published()[("nvidia.com/v1", "ClusterPolicy")])["crd"]])
    (config_map,) = [d for d in yaml.safe_load_all((EXAMPLE / "cluster.yaml").read_text()) if d["kind"] == "ConfigMap"]
    policy = next(d for d in yaml.safe_load_all(OPERATOR_EXAMPLE.read_text()) if d["kind"] == "ClusterPolicy")
    policy["spec"]["devicePlugin"]["config"] = {"name": config_map["metadata"]["name"]}
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "gpu-operator"}})
    plane.request("POST", "/api/v1/namespaces/gpu-operator/configmaps", config_map)
    plane.wait_for(lambda: _created(plane, "/apis/nvidia.com/v1/clusterpolicies", policy), timeout=30,
                   what="the ClusterPolicy to be created")
    nodes = []
    for doc in yaml.safe_load_all((files / "nodes.yaml").read_text()):
        labels = doc["metadata"]["labels"]
        if labels.pop("nvidia.com/gpu.replicas", "1") != "1":
            plane.request("PATCH", f"/api/v1/nodes/{doc['metadata']['name']}",
                          {"metadata": {"labels": {"nvidia.com/gpu.replicas": None}}},
                          content_type="application/merge-patch+json")
        nodes.append(doc)
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([*nodes, policy, config_map]))
    (tmp_path / "workloads.yaml").write_text((files / "workloads.yaml").read_text())
    loaded = load_paths([str(tmp_path)], recursive=True)
    offline = read_cluster(loaded, build_scenario(loaded))
    with connect(str(plane.kubeconfig)) as client:
        live = read_live(client).cluster
    _same_start(offline, live)
    assert {g.replicas for g in live.gpu_nodes.values() if g.pool == "a100"} == {2}
    assert not any("ClusterPolicy" in n for n in live.notes), live.notes
    want, got = waves.smart(offline, FEATURES, 1), waves.smart(live, FEATURES, 1)
    assert _summary(live, got) == _summary(offline, want)


def _created(plane: ControlPlane, path: str, body: dict[str, Any]) -> bool:
    """POST until the new CRD's resource is served (Established a moment before its handler is)."""
    try:
        plane.request("POST", path, body)
    except urllib.error.HTTPError as exc:
        if exc.code == HTTP_NOT_FOUND:
            return False
        raise
    return True
