"""The race of issue 37 (item 8), forced on a real kube-apiserver: the resourceclaim controller has created a pod's
claim from its template (owned by the pod, annotated with the pod's claim name) but has not yet written the claim's
name into the pod's status. Here no controller or scheduler runs, so the cluster stays in exactly that state while
kubedra reads it. Every command must adopt that claim, as the controller's ``findPodResourceClaim`` does, and never
make a second one for the pod."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube import builders as b

from kubedra.cli import main

pytestmark = pytest.mark.controlplane

NAMESPACE = "race"
DRIVER = "race.example.com"


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver only: nothing moves the objects this module creates."""
    with running_control_plane(tmp_path_factory.mktemp("claim-race"), only=("etcd", "kube-apiserver")) as plane:
        plane.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        plane.create(b.device_class("gpu", DRIVER))
        plane.create_node("node-a", cpu="8", memory="32Gi")
        plane.create(b.node_slice("node-a", DRIVER, 2))
        plane.create(b.template("one-gpu", NAMESPACE, "gpu"))
        pod = plane.create(b.pod("trainer", NAMESPACE, template_name="one-gpu"))
        claim = b.template("one-gpu", NAMESPACE, "gpu")["spec"]  # the template's claim spec, as the controller copies it
        plane.create({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "trainer-gpu-x7k2p", "namespace": NAMESPACE,
                         "annotations": {"resource.kubernetes.io/pod-claim-name": _pod_claim_name(pod)},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                              "uid": pod["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            **claim,
        })
        yield plane


def _pod_claim_name(pod: dict[str, Any]) -> str:
    name: str = pod["spec"]["resourceClaims"][0]["name"]
    return name


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _claims(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in items if o["kind"] == "ResourceClaim" and o["metadata"].get("namespace") == NAMESPACE]


def test_the_cluster_is_frozen_mid_race(frozen: ControlPlane) -> None:
    pod = frozen.get(f"/api/v1/namespaces/{NAMESPACE}/pods/trainer")
    assert not (pod.get("status") or {}).get("resourceClaimStatuses")
    claims = frozen.get(f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims")["items"]
    assert [c["metadata"]["name"] for c in claims] == ["trainer-gpu-x7k2p"]


def test_a_what_if_on_the_live_cluster_adopts_the_claim(frozen: ControlPlane,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_run(capsys, "simulate", "--kubeconfig", str(frozen.kubeconfig), "-o", "json"))
    claims = _claims(report["items"])
    assert [c["metadata"]["name"] for c in claims] == ["trainer-gpu-x7k2p"]
    (pod,) = [o for o in report["items"] if o["kind"] == "Pod" and o["metadata"]["name"] == "trainer"]
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == "node-a"
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "trainer-gpu-x7k2p"}]
    assert claims[0]["status"]["allocation"]["devices"]["results"][0]["driver"] == DRIVER


def test_a_snapshot_simulated_later_adopts_it_too(frozen: ControlPlane, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(_run(capsys, "snapshot", "--kubeconfig", str(frozen.kubeconfig)))
    written = [d for d in yaml.safe_load_all(snapshot.read_text()) if d]
    assert [c["metadata"]["name"] for c in _claims(written)] == ["trainer-gpu-x7k2p"]
    report = json.loads(_run(capsys, "simulate", "-f", str(snapshot), "-o", "json"))
    assert [c["metadata"]["name"] for c in _claims(report["items"])] == ["trainer-gpu-x7k2p"]


def test_explain_names_the_adopted_claim(frozen: ControlPlane, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, "explain", "--kubeconfig", str(frozen.kubeconfig), "pod", "trainer", "-n", NAMESPACE)
    assert "trainer-gpu-x7k2p" in out
