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
    assert body["message"] == "0/8 nodes are available: 8 cannot allocate all claims."
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
    assert "Pod ml/trainer: Pending" in out
    assert "8 nodes (node-0, node-1, node-2 and 5 more): claim ml/big, request gpu: 2 devices match class gpu" in out


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
