"""``kubedra snapshot``, ``simulate --kubeconfig`` and ``explain --kubeconfig`` on a cluster the real kube-scheduler
and resourceclaim controller have placed: the snapshot round trip keeps every placement and allocation, the what-if
writes nothing, and explain gives the same reasons live as on the snapshot's files."""

from __future__ import annotations

import contextlib
import json
import urllib.error
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Secret
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b
from tests.kube.builders import run_cli

from kubedra.kube.api import connect

pytestmark = pytest.mark.controlplane


def wait_pod(control_plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    """The pod once kube-scheduler decided: bound, or marked Unschedulable."""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"

    def decided() -> dict[str, Any] | None:
        pod = control_plane.get(path)
        return pod if b.is_bound(pod) or b.is_unschedulable(pod) else None

    return control_plane.wait_for(decided, what=f"pod {namespace}/{name} to be scheduled or unschedulable")


@pytest.fixture
def placed(control_plane: ControlPlane, namespace: str) -> dict[str, Any]:
    """Two nodes of 2 GPUs each (this test's own driver and class); three 1-GPU pods from a template, then a pod
    whose claim wants 2 GPUs on one node: the real scheduler binds the three and leaves the last Unschedulable."""
    driver, device_class = f"{namespace}.example.com", f"{namespace}-gpu"
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    control_plane.create(b.device_class(device_class, driver))
    for node in nodes:
        control_plane.create_node(node, cpu="8", memory="32Gi")
        control_plane.create(b.node_slice(node, driver, 2))
    control_plane.create(b.template("one-gpu", namespace, device_class))
    pods: dict[str, dict[str, Any]] = {}
    for i in range(3):
        control_plane.create(b.pod(f"worker-{i}", namespace, template_name="one-gpu"))
        pods[f"worker-{i}"] = wait_pod(control_plane, namespace, f"worker-{i}")
    control_plane.create(b.claim("pair", namespace, device_class, count=2))
    control_plane.create(b.pod("pair", namespace, claim_name="pair"))
    pods["pair"] = wait_pod(control_plane, namespace, "pair")
    assert [n for n in pods if b.is_bound(pods[n])] == ["worker-0", "worker-1", "worker-2"]
    assert b.is_unschedulable(pods["pair"])
    claims = control_plane.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    return {"namespace": namespace, "nodes": nodes, "class": device_class, "pods": pods, "claims": claims}


def live_placements(control_plane: ControlPlane, namespace: str) -> dict[str, str]:
    items = control_plane.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def allocations(claims: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    result: dict[str, list[tuple[str, str, str]]] = {}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation:
            result[claim["metadata"]["name"]] = [
                (r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]
            ]
    return result


def report_of(out: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(out)
    return report


def sim_pods(report: dict[str, Any], namespace: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o
        for o in report["items"]
        if o["kind"] == "Pod" and o["metadata"]["namespace"] == namespace
    }


def sim_claims(report: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    return [o for o in report["items"] if o["kind"] == "ResourceClaim" and o["metadata"]["namespace"] == namespace]


def test_snapshot_round_trip_keeps_placements_and_allocations(
    control_plane: ControlPlane, placed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = placed["namespace"]
    kubeconfig = str(control_plane.kubeconfig)
    snapshot_dir = tmp_path / "snapshot"
    code, _, err = run_cli(capsys, "snapshot", "--kubeconfig", kubeconfig, "--output-dir", str(snapshot_dir))
    assert code == 0, err
    files = sorted(p.name for p in snapshot_dir.iterdir())
    assert files == ["10-nodes.yaml", "20-deviceclasses.yaml", "30-resourceslices.yaml", "40-devicetaintrules.yaml",
                     "50-resourceclaimtemplates.yaml", "60-resourceclaims.yaml", "70-pods.yaml",
                     "80-services.yaml"]
    documents = [d for f in files for d in yaml.safe_load_all((snapshot_dir / f).read_text()) if d]
    assert not any("managedFields" in d["metadata"] or "resourceVersion" in d["metadata"] for d in documents)
    assert {d["kind"] for d in documents} >= {"Node", "DeviceClass", "ResourceSlice", "ResourceClaimTemplate",
                                              "ResourceClaim", "Pod"}
    # stdout gives the same objects as one stream.
    code, out, err = run_cli(capsys, "snapshot", "--kubeconfig", kubeconfig)
    assert code == 0, err
    streamed = [d for d in yaml.safe_load_all(out) if d]
    ours = {(d["kind"], d["metadata"]["name"]) for d in streamed if d["metadata"].get("namespace") == namespace}
    assert ours == {(d["kind"], d["metadata"]["name"]) for d in documents
                    if d["metadata"].get("namespace") == namespace}

    code, out, err = run_cli(capsys, "simulate", "-f", str(snapshot_dir), "-o", "json")
    assert code == 0, err
    report = report_of(out)
    pods = sim_pods(report, namespace)
    live = live_placements(control_plane, namespace)
    assert {n: p["spec"].get("nodeName", "") for n, p in pods.items()} == live
    assert {n: p["status"]["phase"] for n, p in pods.items()} == {
        "worker-0": "Running", "worker-1": "Running", "worker-2": "Running", "pair": "Pending"
    }
    assert allocations(sim_claims(report, namespace)) == allocations(placed["claims"])
    assert len(allocations(placed["claims"])) == 3  # the three template claims; "pair" is not allocated


def test_what_if_simulates_on_the_live_state_and_writes_nothing(
    control_plane: ControlPlane, placed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = placed["namespace"]
    more = tmp_path / "more"
    more.mkdir()
    extra = b.pod("extra", namespace, template_name="one-gpu")
    (more / "extra.yaml").write_text(yaml.safe_dump(extra))
    before = live_placements(control_plane, namespace)
    code, out, err = run_cli(capsys, "simulate", "--kubeconfig", str(control_plane.kubeconfig), "-f", str(more),
                             "-o", "json")
    assert code == 0, err
    pods = sim_pods(report_of(out), namespace)
    # The last free GPU is on the node where only one worker runs; "pair" (2 on one node) still does not fit.
    used = [placed["pods"][f"worker-{i}"]["spec"]["nodeName"] for i in range(3)]
    free_node = next(n for n in placed["nodes"] if used.count(n) == 1)
    assert pods["extra"]["spec"]["nodeName"] == free_node
    assert pods["pair"]["status"]["phase"] == "Pending"
    assert {n: pods[n]["spec"]["nodeName"] for n in before if before[n]} == {n: v for n, v in before.items() if v}
    assert live_placements(control_plane, namespace) == before  # nothing was created in the cluster


def test_explain_on_the_live_state_says_what_it_says_on_the_snapshot(
    control_plane: ControlPlane, placed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = placed["namespace"]
    kubeconfig = str(control_plane.kubeconfig)
    code, live_out, err = run_cli(capsys, "explain", "pod", "pair", "-n", namespace, "--kubeconfig", kubeconfig,
                                  "-o", "json")
    assert code == 0, err
    snapshot_dir = tmp_path / "snapshot"
    assert run_cli(capsys, "snapshot", "--kubeconfig", kubeconfig, "--output-dir", str(snapshot_dir))[0] == 0
    code, file_out, err = run_cli(capsys, "explain", "pod", "pair", "-n", namespace, "-f", str(snapshot_dir),
                                  "-o", "json")
    assert code == 0, err
    live, offline = json.loads(live_out), json.loads(file_out)
    assert live == offline
    assert live["phase"] == "Pending"
    ours = [g for g in live["groups"] if set(g["nodes"]) & set(placed["nodes"])]
    assert ours and all(g["check"] != "fits" for g in ours)
    assert any("claim" in g["reason"] or "device" in g["reason"] for g in ours), ours
    # A bound worker: explained where it runs.
    code, out, err = run_cli(capsys, "explain", "pod", "worker-0", "-n", namespace, "--kubeconfig", kubeconfig,
                             "-o", "json")
    assert code == 0, err
    worker = json.loads(out)
    assert (worker["phase"], worker["node"]) == ("Running", placed["pods"]["worker-0"]["spec"]["nodeName"])


def test_an_unreachable_cluster_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], control_plane: ControlPlane
) -> None:
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    broken = tmp_path / "kubeconfig"
    broken.write_text(yaml.safe_dump(config))
    code, out, err = run_cli(capsys, "snapshot", "--kubeconfig", str(broken))
    assert (code, out) == (2, "")
    assert "cannot reach the API server" in err
    code, _, err = run_cli(capsys, "snapshot", "--kubeconfig", str(control_plane.kubeconfig), "--context", "nope")
    assert code == 2
    assert "Context 'nope' not found" in err


def test_the_shipped_read_only_role_is_enough_and_grants_no_secrets(
    control_plane: ControlPlane, placed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    role = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "rbac.yaml").read_text())
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    with contextlib.suppress(urllib.error.HTTPError):  # already there from an earlier test of this session
        control_plane.request("POST", f"{rbac}/clusterroles", role)
        control_plane.request("POST", f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "kubedra-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubedra-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}],
        })
    reader = str(control_plane.kubeconfig_for(control_plane.reader_token, "reader"))

    def allowed() -> tuple[int, str, str] | None:
        result = run_cli(capsys, "snapshot", "--kubeconfig", reader)
        return result if result[0] == 0 else None

    _, out, _ = control_plane.wait_for(allowed, timeout=10, what="the reader's snapshot to be allowed")
    names = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out) if d}
    assert ("Pod", "pair") in names and ("ResourceClaim", "pair") in names
    code, _, err = run_cli(capsys, "explain", "pod", "pair", "-n", placed["namespace"], "--kubeconfig", reader,
                           "-o", "json")
    assert code == 0, err
    with connect(reader) as client, pytest.raises(ApiError) as refused:
        list(client.list(Secret, namespace="*"))
    assert refused.value.status.code == 403


def test_a_live_pods_claim_volumes_are_said_as_a_files_are(
    control_plane: ControlPlane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod mounting a dataset claim that does not exist yet: the real scheduler leaves it Unschedulable
    (VolumeBinding); kubedra does not read volumes, and simulate --kubeconfig says so, naming the pod, as a snapshot of
    the cluster read back does (the API server adds the pod's service-account volume, which the model drops)."""
    control_plane.create_node(f"{namespace}-a", cpu="8", memory="32Gi")
    pod = b.pod("dataset-reader", namespace)
    pod["spec"]["volumes"] = [{"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet"}}]
    control_plane.create(pod)
    live = wait_pod(control_plane, namespace, "dataset-reader")
    assert b.is_unschedulable(live)
    assert "persistentvolumeclaim" in json.dumps(live["status"]["conditions"]).lower()
    kubeconfig = str(control_plane.kubeconfig)
    code, _, live_err = run_cli(capsys, "simulate", "--kubeconfig", kubeconfig)
    assert code == 0, live_err
    notes = [line for line in live_err.splitlines() if "spec.volumes" in line]
    assert len(notes) == 1 and f"(e.g. Pod {namespace}/dataset-reader) set persistentVolumeClaim" in notes[0], live_err
    snapshot_dir = tmp_path / "snapshot"
    assert run_cli(capsys, "snapshot", "--kubeconfig", kubeconfig, "--output-dir", str(snapshot_dir))[0] == 0
    code, _, file_err = run_cli(capsys, "simulate", "-f", str(snapshot_dir))
    assert code == 0, file_err
    assert [line for line in file_err.splitlines() if "spec.volumes" in line] == notes
