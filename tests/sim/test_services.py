"""Services in a simulation's input: read for the system-default topology spread's selector only
(``helper.DefaultSelector``), with the ReplicaSets and StatefulSets that exist."""

from __future__ import annotations

from typing import Any

import yaml

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare


def _nodes(n: int) -> list[dict[str, object]]:
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {
        "kubernetes.io/hostname": f"n{i}"}}, "status": {"allocatable": {"cpu": "96", "memory": "1024Gi", "pods": "110"}}}
        for i in range(n)]


def _pod(name: str, labels: dict[str, str], owner: str = "") -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "",
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def _service(name: str, selector: dict[str, str] | None) -> dict[str, object]:
    spec: dict[str, object] = {"type": "ClusterIP", "ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def _placed(docs: list[dict[str, object]]) -> dict[str, str]:
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    result = prepare(scenario, Options()).run()
    return {r.pod.metadata.name: r.pod.spec.node_name for r in result.state.pods.values()}


def test_services_are_read_for_their_selector_not_noted() -> None:
    docs = [*_nodes(1), _service("web", {"app": "web"}), _service("external", None)]
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    assert scenario.services == (("default", (("app", "web"),)),)
    assert not [n for n in scenario.notes if "Service" in n]


def test_a_deployments_replicaset_selects_its_pod_template_hash() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    scenario = build_scenario(load_text(yaml.safe_dump_all([*_nodes(1), deployment])))
    [pod] = [a.pod for a in scenario.workloads.arrivals]
    owner = pod.metadata.owner_references[0].name
    hash_ = pod.metadata.labels["pod-template-hash"]
    assert scenario.workloads.controllers == {
        ("default", "ReplicaSet", owner): (("app", "In", ("web",)), ("pod-template-hash", "In", (hash_,)))
    }


def test_bare_pods_a_service_selects_are_spread() -> None:
    pods = [_pod(f"web-{i}", {"app": "web"}) for i in range(3)]
    assert sorted(_placed([*_nodes(3), _service("web", {"app": "web"}), *pods]).values()) == ["n0", "n1", "n2"]
    assert set(_placed([*_nodes(3), _service("web", {"app": "other"}), *pods]).values()) == {"n0"}


def _replicaset(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name}, "spec": {
        "replicas": 0, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def test_pods_of_a_replicaset_that_does_not_exist_are_not_spread() -> None:
    """Where the inputs hold controllers, an owner missing from them does not exist (the spread-missing-owner
    scenario holds this to the real scheduler)."""
    pods = [_pod(f"web-{i}", {"app": "web"}, owner="web") for i in range(3)]
    assert set(_placed([*_nodes(3), _replicaset("other"), *pods]).values()) == {"n0"}
    assert sorted(_placed([*_nodes(3), _replicaset("web"), *pods]).values()) == ["n0", "n1", "n2"]


def test_pods_only_inputs_are_read_as_a_snapshot_whose_owners_exist() -> None:
    """``kubedra snapshot`` writes pods, not their controllers: with no controller among the inputs, a pod's owner
    stands for a selector of its own pods, as on the live cluster the snapshot came from."""
    pods = [_pod(f"web-{i}", {"app": "web"}, owner="web") for i in range(3)]
    assert sorted(_placed([*_nodes(3), *pods]).values()) == ["n0", "n1", "n2"]
