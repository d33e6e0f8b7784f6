"""PodTopologySpread's system-default selector on a live cluster: the Services, ReplicaSets and StatefulSets read
from the API server give a pod the selector the same objects give from files (``helper.DefaultSelector``), and a user
not allowed to list them still gets the rest, with a note naming what could not be read."""

from __future__ import annotations

import contextlib
import json
import urllib.error
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b
from tests.kube.builders import run_cli

from kubedra.cli.simulate import load_scenario
from kubedra.kube.api import connect
from kubedra.kube.read import read_cluster
from kubedra.scheduler.spreading import SelectorKey, default_selector
from kubedra.sim.simulate import Options, prepare

pytestmark = pytest.mark.controlplane


def _post(plane: ControlPlane, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return plane.request("POST", path, body)


def _template(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "main", "image": "registry.example/web:1"}]}}


def _owned(pod: dict[str, Any], labels: dict[str, str], kind: str, owner: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["labels"] = labels
    api_version = "v1" if kind == "ReplicationController" else "apps/v1"
    pod["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner["metadata"]["name"],
                                           "uid": owner["metadata"]["uid"], "controller": True}]
    return pod


@pytest.fixture
def spread_objects(control_plane: ControlPlane, namespace: str) -> dict[str, Any]:
    """A Service selecting app=web; a ReplicaSet (app=web, tier=front) with two bare pods it controls, a pod whose
    controlling ReplicaSet does not exist, a StatefulSet (app=db) and its pod, a ReplicationController (app=web,
    tier=legacy) and its pod. No controller runs (the control plane
    has only the resourceclaim controller), so the pods are exactly these; they fit no node and stay pending."""
    ns = f"/api/v1/namespaces/{namespace}"
    apps = f"/apis/apps/v1/namespaces/{namespace}"
    _post(control_plane, f"{ns}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    front = {"app": "web", "tier": "front"}
    replica_set = _post(control_plane, f"{apps}/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-front"},
        "spec": {"replicas": 2, "selector": {"matchLabels": front}, "template": _template(front)}})
    stateful_set = _post(control_plane, f"{apps}/statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": _template({"app": "db"})}})
    legacy = {"app": "web", "tier": "legacy"}
    controller = _post(control_plane, f"{ns}/replicationcontrollers", {
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
        "spec": {"replicas": 1, "selector": legacy, "template": _template(legacy)}})
    nowhere = {"kubedra.test/pool": namespace}
    gone = {"metadata": {"name": "web-gone", "uid": "00000000-0000-0000-0000-000000000001"}}
    pods = [
        _owned(b.pod("front-0", namespace, node_selector=nowhere), front, "ReplicaSet", replica_set),
        _owned(b.pod("front-1", namespace, node_selector=nowhere), front, "ReplicaSet", replica_set),
        _owned(b.pod("orphan", namespace, node_selector=nowhere), {"app": "web"}, "ReplicaSet", gone),
        _owned(b.pod("db-0", namespace, node_selector=nowhere), {"app": "db"}, "StatefulSet", stateful_set),
        _owned(b.pod("legacy-0", namespace, node_selector=nowhere), legacy, "ReplicationController", controller),
    ]
    for pod in pods:
        _post(control_plane, f"{ns}/pods", pod)
    return {"namespace": namespace, "replica_set": replica_set, "stateful_set": stateful_set}


def _selectors(scenario: Any, features: Any, namespace: str) -> dict[str, SelectorKey | None]:
    """``helper.DefaultSelector`` of each of ``namespace``'s pods, as the simulation's spreading builds it."""
    state = prepare(scenario, Options(features=features)).state
    sources = state.spread_sources
    services: dict[str, list[tuple[tuple[str, str], ...]]] = {}
    for service_namespace, pairs in sources.services:
        services.setdefault(service_namespace, []).append(pairs)
    pods = [a.pod for a in scenario.workloads.arrivals if a.pod.metadata.namespace == namespace]
    return {p.metadata.name: default_selector(p, services, sources.controllers) for p in pods}


def _as_file(document: dict[str, Any]) -> dict[str, Any]:
    """A controller as a file gives it to kubedra without new pods: its pods are already in the snapshot."""
    metadata = {k: document["metadata"][k] for k in ("name", "namespace", "uid")}
    return {"apiVersion": "apps/v1", "kind": document["kind"], "metadata": metadata,
            "spec": {**document["spec"], "replicas": 0}}


def test_the_live_selector_is_the_one_the_same_objects_give_from_files(
    control_plane: ControlPlane, spread_objects: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = spread_objects["namespace"]
    kubeconfig = str(control_plane.kubeconfig)
    with connect(kubeconfig) as client:
        documents = read_cluster(client)
    assert documents.unread == {}
    ours = [d for kind in ("Service", "ReplicaSet", "StatefulSet") for d in documents.by_kind[kind]
            if d["metadata"].get("namespace") == namespace]
    # Slim: the selector, not the Service's ports nor the controllers' pod templates.
    assert [sorted(d["spec"]) for d in ours] == [["selector"]] * 3
    assert "template" not in json.dumps(ours)

    _, live, features = load_scenario(None, 0, "1.37", "", kubeconfig)
    live_selectors = _selectors(live, features, namespace)
    web, front, db = ("app", "In", ("web",)), ("tier", "In", ("front",)), ("app", "In", ("db",))
    assert live_selectors == {
        "front-0": (namespace, (web, front), None),
        "front-1": (namespace, (web, front), None),
        "orphan": (namespace, (web,), None),  # its ReplicaSet does not exist: the Service's selector alone
        "db-0": (namespace, (db,), None),
        "legacy-0": (namespace, (web, ("tier", "In", ("legacy",))), None),  # the labels merged
    }

    snapshot = tmp_path / "snapshot"
    code, _, err = run_cli(capsys, "snapshot", "--kubeconfig", kubeconfig, "--output-dir", str(snapshot))
    assert code == 0, err
    services = [d for d in yaml.safe_load_all((snapshot / "80-services.yaml").read_text()) if d]
    assert [d["spec"] for d in services if d["metadata"].get("namespace") == namespace] == [
        {"selector": {"app": "web"}}]
    # The snapshot alone carries no controllers: each pod's controller is taken to select its own pods.
    _, pods_only, features = load_scenario([str(snapshot)], 0, "1.37", "")
    assert _selectors(pods_only, features, namespace)["front-0"] == (namespace, (web,), ("ReplicaSet", "web-front"))
    # With the controllers as files, the same selectors as live.
    controllers = tmp_path / "controllers.yaml"
    controllers.write_text(yaml.safe_dump_all([_as_file(spread_objects["replica_set"]),
                                               _as_file(spread_objects["stateful_set"])]))
    _, from_files, features = load_scenario([str(snapshot), str(controllers)], 0, "1.37", "")
    # (ReplicationControllers are not simulated from files, a note says so: legacy-0's is taken not to exist.)
    assert _selectors(from_files, features, namespace) == {**live_selectors, "legacy-0": (namespace, (web,), None)}


def test_a_user_who_may_not_list_services_or_controllers_gets_the_rest_and_a_note(
    control_plane: ControlPlane, spread_objects: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped role without its Services and controllers rules: DRA kinds, nodes and pods only."""
    namespace = spread_objects["namespace"]
    role = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "rbac.yaml").read_text())
    rules = [r for r in role["rules"] if not {"services", "replicasets"} & set(r["resources"])]
    assert {p for r in rules for p in r["resources"]} >= {"nodes", "pods", "resourceclaims"}
    name = f"kubedra-dra-only-{namespace}"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    _post(control_plane, f"/api/v1/namespaces/{namespace}/serviceaccounts",
          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "limited"}})
    _post(control_plane, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1",
                                                  "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    _post(control_plane, f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": namespace}]})
    answer = _post(control_plane, f"/api/v1/namespaces/{namespace}/serviceaccounts/limited/token",
                   {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 3600}})
    limited = str(control_plane.kubeconfig_for(answer["status"]["token"], f"limited-{namespace}"))

    def readable() -> Any:
        with connect(limited) as client, contextlib.suppress(Exception):
            return read_cluster(client)
        return None

    documents = control_plane.wait_for(readable, timeout=10, what="the limited user's read to be allowed")
    assert set(documents.unread) == {"Service", "ReplicaSet", "StatefulSet", "ReplicationController"}
    assert documents.controllers() is None
    assert any(p["metadata"]["name"] == "front-0" for p in documents.by_kind["Pod"])
    (note,) = documents.notes()
    assert note.startswith("services, replicasets, statefulsets, replicationcontrollers not read")
    assert "403" in note

    # The commands work as before: each pod's controller stands for its own pods; stderr says why.
    code, _, err = run_cli(capsys, "explain", "pod", "front-0", "-n", namespace, "--kubeconfig", limited,
                           "-o", "json")
    assert code == 0, err
    assert "Note: services, replicasets, statefulsets, replicationcontrollers not read" in err
    _, scenario, features = load_scenario(None, 0, "1.37", "", limited)
    assert scenario.cluster_controllers is None
    selectors = _selectors(scenario, features, namespace)
    assert selectors["front-0"] == (namespace, (), ("ReplicaSet", "web-front"))
    assert selectors["orphan"] == (namespace, (), ("ReplicaSet", "web-gone"))
    with contextlib.suppress(urllib.error.HTTPError):
        control_plane.request("DELETE", f"{rbac}/clusterrolebindings/{name}")
