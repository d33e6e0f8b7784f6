"""``kubedra allocate``: output shape and exit codes of the contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

INPUT = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train, namespace: ml}
spec:
  devices:
    requests: [{name: req-0, exactly: {deviceClassName: gpu, count: COUNT}}]
"""


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text(INPUT.replace("COUNT", count))
    code = main(["allocate", "-f", str(path), "--node", "node-1", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_allocated_prints_the_allocation_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, "2", "-o", "json")
    body = json.loads(out)
    assert code == 0
    assert body["result"] == "allocated"
    results = body["allocations"]["ml/train"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-0", "gpu-1"]


def test_unschedulable_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, "3", "-o", "json")
    assert code == 1
    assert json.loads(out) == {
        "node": "node-1",
        "result": "unschedulable",
        "allocations": {},
        "message": "cannot allocate all claims",
        "reasons": ["req-0: 2 devices match class gpu, 3 requested"],
    }


def test_table_gives_a_reason_per_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, "3", "-o", "table")
    assert code == 1
    assert "req-0: 2 devices match class gpu" in out


def test_bad_gate_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(tmp_path, capsys, "1", "--feature-gates", "NoSuchGate=true")
    assert code == 2
    assert "unrecognized feature gate: NoSuchGate" in err


POOL = """
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: l4}
spec:
  count: 2
  allocatable: {cpu: "32", memory: 128Gi}
  gpu: {model: L4, count: 1}
  sharing: {shares: 4}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: infer, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: COUNT}}]
"""


def _pool(tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str, *argv: str) -> tuple[int, str, str]:
    path = tmp_path / "pool.yaml"
    path.write_text(POOL.replace("COUNT", count))
    code = main(["allocate", "-f", str(path), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_nodepools_expand_and_nvidias_classes_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _pool(tmp_path, capsys, "1", "--node", "l4-1", "-o", "json")
    assert (code, err) == (0, "")
    [result] = json.loads(out)["allocations"]["ml/infer"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == ("gpu.nvidia.com", "l4-1", "gpu-0")


def test_the_seed_makes_share_ids_repeat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def share_id(*seed: str) -> str:
        code, out, _ = _pool(tmp_path, capsys, "1", "--node", "l4-0", "-o", "json", *seed)
        assert code == 0
        return str(json.loads(out)["allocations"]["ml/infer"]["devices"]["results"][0]["shareID"])

    assert share_id("--seed", "7") == share_id("--seed", "7") != share_id("--seed", "8")
    assert share_id() == share_id("--seed", "0")


@pytest.mark.parametrize(
    ("node", "hint"),
    [("l4-9", "did you mean: l4-1, l4-0?"), ("gpu-node", "nodes in the input: l4-0, l4-1")],
)
def test_an_unknown_node_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], node: str, hint: str) -> None:
    code, out, err = _pool(tmp_path, capsys, "1", "--node", node, "-o", "json")
    assert (code, out) == (2, "")
    assert f"error: node '{node}' not found" in err
    assert hint in err


def test_a_node_named_only_by_a_slice_is_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(tmp_path, capsys, "1", "-o", "json")  # INPUT has no Node, only a slice on node-1
    assert (code, err) == (0, "")


def test_json_carries_the_diagnosis_the_table_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _pool(tmp_path, capsys, "2", "--node", "l4-0", "-o", "json")
    assert code == 1
    reasons = json.loads(out)["reasons"]
    assert reasons == ["gpu: 1 device matches class gpu.nvidia.com, 2 requested"]
    code, out, _ = _pool(tmp_path, capsys, "2", "--node", "l4-0", "-o", "table")
    assert code == 1
    assert out.splitlines()[1:] == [f"  {r}" for r in reasons]
