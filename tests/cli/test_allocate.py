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
    }


def test_table_gives_a_reason_per_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, "3", "-o", "table")
    assert code == 1
    assert "req-0: 2 devices match class gpu" in out


def test_bad_gate_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(tmp_path, capsys, "1", "--feature-gates", "NoSuchGate=true")
    assert code == 2
    assert "unrecognized feature gate: NoSuchGate" in err
