"""``kubedra explain pod|claim``: the JSON shape, the grouped table, close matches and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubedra.cli import main

CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
"""
for _i in range(8):
    CLUSTER += f"""
---
apiVersion: v1
kind: Node
metadata: {{name: node-{_i}}}
status: {{allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-{_i}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: node-{_i}
  pool: {{name: node-{_i}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}, {{name: gpu-1}}]
"""

WORKLOAD = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: big, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 3}}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: big}]
  containers: [{name: main, image: x, resources: {claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ml}
spec:
  containers: [{name: main, image: x, resources: {requests: {cpu: "1"}}}]
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(CLUSTER + WORKLOAD)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pending_pod_as_json(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "pod", "trainer", "-n", "ml", "-f", str(scenario), "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert body["pod"] == "ml/trainer"
    assert body["phase"] == "Pending"
    assert body["node"] is None
    assert body["message"] == (
        "0/8 nodes are available: 8 cannot allocate all claims. preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."
    )
    assert body["summary"] == "0 of 8 nodes can run the pod now"
    assert body["claims"] == [
        {"claim": "ml/big", "state": "pending", "devices": [], "reservedFor": [], "allocatedOn": ""}
    ]
    assert body["groups"] == [
        {
            "check": "devices",
            "reason": "claim ml/big, request gpu: 2 devices match class gpu, 3 requested",
            "reasons": ["claim ml/big, request gpu: 2 devices match class gpu, 3 requested"],
            "count": 8,
            "nodes": [f"node-{i}" for i in range(8)],
        }
    ]


def test_table_groups_nodes_and_elides_names(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "pod", "ml/trainer", "-f", str(scenario), "-o", "table", "--max-nodes", "3")
    assert code == 0
    # Laid out as kubectl describe lays out a pod: aligned fields, sections, the scheduler's event last.
    assert out.startswith("Name:         trainer\nNamespace:    ml\nStatus:       Pending\nNode:         <none>\n")
    assert "8 nodes (node-0, node-1, node-2 and 5 more): claim ml/big, request gpu: 2 devices match class gpu" in out
    assert out.splitlines()[-4:-1] == ["Events:", "  Type     Reason            From     Message",
                                       "  ----     ------            ----     -------"]
    assert out.splitlines()[-1].startswith("  Warning  FailedScheduling  kubedra  0/8 nodes are available: ")


def test_running_pod_as_yaml(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "pod", "web", "-f", str(scenario), "-o", "yaml", "--policy", "first-fit")
    assert code == 0
    body = yaml.safe_load(out)
    assert body["phase"] == "Running"
    assert body["node"] == "node-0"
    assert body["groups"][0]["check"] == "fits"
    assert body["groups"][0]["count"] == 7


def test_claim_as_json(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "claim", "big", "-n", "ml", "-f", str(scenario), "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert body["claim"] == "ml/big"
    assert body["state"] == "pending"
    assert [p["pod"] for p in body["pods"]] == ["ml/trainer"]


def test_unknown_pod_exits_2_with_close_matches(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "pod", "trainr", "-f", str(scenario))
    assert code == 2
    assert out == ""
    assert "pod 'trainr' not found; did you mean: ml/trainer?" in err


def test_unknown_claim_exits_2(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "claim", "nothing-like-it", "-f", str(scenario))
    assert code == 2
    assert "resourceclaim 'nothing-like-it' not found" in err


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: 3}\n")
    code, _, err = _run(capsys, "pod", "x", "-f", str(bad))
    assert code == 2
    assert "error:" in err


def test_the_seed_demo_runs_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "claim", "ml-training/my-gpu-claim", "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert body["state"] == "allocated"
    assert body["pods"][0]["phase"] == "Running"


WORKLOADS = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  replicas: 3
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}, annotations: {kubedra.io/run-for: 30m}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers: [{name: main, image: x, resources: {claims: [{name: gpu}]}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: sweep, namespace: ml}
spec:
  completions: 2
  parallelism: 2
  template:
    metadata: {annotations: {kubedra.io/run-for: 10m}}
    spec:
      restartPolicy: Never
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers: [{name: main, image: x, resources: {claims: [{name: gpu}]}}]
"""


@pytest.fixture
def workloads(tmp_path: Path) -> Path:
    path = tmp_path / "workloads.yaml"
    path.write_text(CLUSTER + WORKLOADS)
    return path


def test_a_deleted_pod_is_reported_as_simulate_reports_it(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(workloads), "-o", "json"]) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    deleted = {e["object"].removeprefix("Pod "): e for e in events if e["type"] == "Deleted" and
               e["object"].startswith("Pod ")}
    assert len(deleted) == 3
    for key, event in deleted.items():
        code, out, _ = _run(capsys, "pod", key, "-f", str(workloads), "-o", "json")
        assert code == 0
        body = json.loads(out)
        assert body["phase"] == "Deleted"
        assert (body["node"], body["endedAt"], body["endReason"]) == (event["node"], event["seconds"],
                                                                      event["message"])


def test_a_deployment_is_explained_as_its_pods_grouped(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "deployment/serve", "-f", str(workloads), "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert body["workload"] == "Deployment/ml/serve"
    assert body["summary"] == "3 pods: 3 Deleted"
    [group] = body["groups"]
    assert (group["phase"], group["count"]) == ("Deleted", 3)
    assert group["explanation"]["endReason"] == "run-for elapsed: Deployment pods end by deletion"


def test_a_job_in_the_table(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "job", "ml/sweep", "-f", str(workloads), "-o", "table")
    assert code == 0
    assert out.startswith("Name:         sweep\nNamespace:    ml\nKind:         Job\nPods:         2 pods: 2 Succeeded\n"
                          "2 pods Succeeded on ")
    assert "  Normal  Completed  kubedra  finished on node-" in out


def test_an_unknown_workload_suggests_close_names(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "deploy", "serv", "-f", str(workloads))
    assert (code, out) == (2, "")
    assert "deployment 'serv' not found; did you mean: ml/serve?" in err


def test_an_unknown_kind_exits_2(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "cronjob/x", "-f", str(workloads))
    assert code == 2
    assert "unknown kind 'cronjob'" in err


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_nodes_below_1_is_refused(scenario: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, out, err = _run(capsys, "pod", "trainer", "-f", str(scenario), "--max-nodes", value)
    assert (code, out) == (2, "")
    assert "--max-nodes" in err


def test_a_deployments_replicaset_is_found_by_its_pods_owner(
    workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "rs", "serve", "-f", str(workloads))
    assert code == 2
    suggested = err.split("did you mean: ", 1)[1].rstrip("?\n")
    assert suggested.startswith("ml/serve-")
    code, out, _ = _run(capsys, f"replicaset/{suggested}", "-f", str(workloads), "-o", "json")
    assert code == 0
    body = json.loads(out)
    assert (body["workload"], body["summary"]) == (f"ReplicaSet/{suggested}", "3 pods: 3 Deleted")
