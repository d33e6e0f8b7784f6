"""``kubedra cel``: JSON shape, runtime errors per device, compile errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s1}
spec:
  driver: gpu.example.com
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  nodeName: node-a
  devices:
  - name: gpu-0
    attributes: {model: {string: A100}}
    capacity: {memory: {value: 40Gi}}
  - name: gpu-1
    attributes: {model: {string: L4}}
"""


@pytest.fixture
def slices(tmp_path: Path) -> Path:
    path = tmp_path / "slices.yaml"
    path.write_text(SLICE)
    return path


def test_json_lists_every_device(slices: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expr = 'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("20Gi"))'
    assert main(["cel", expr, "-f", str(slices), "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [
        {"device": "gpu.example.com/node-a/gpu-0", "match": True, "error": ""},
        {"device": "gpu.example.com/node-a/gpu-1", "match": False, "error": "no such key: memory"},
    ]


def test_compile_error_exits_2(slices: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cel", "nope", "-f", str(slices), "-o", "json"]) == 2
    assert "undeclared reference to 'nope'" in capsys.readouterr().err


def test_the_default_is_a_plain_table_even_when_piped(slices: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cel", 'device.attributes["gpu.example.com"].model == "A100"', "-f", str(slices)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "DEVICE                         MATCH   REASON",
        "gpu.example.com/node-a/gpu-0   yes     <none>",
        "gpu.example.com/node-a/gpu-1   no      selector is false",
    ]


def test_name_output_lists_the_matching_devices(slices: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cel", 'device.attributes["gpu.example.com"].model == "L4"', "-f", str(slices), "-o", "name"]) == 0
    assert capsys.readouterr().out == "gpu.example.com/node-a/gpu-1\n"


def test_nodepools_are_evaluated_as_the_devices_they_expand_to(capsys: pytest.CaptureFixture[str]) -> None:
    """A NodePool is the cluster most inputs describe: its devices are listed, not silently skipped."""
    assert main(["cel", 'device.attributes["gpu.nvidia.com"].type == "gpu"', "-f", "examples/runbook/first-pool.yaml",
                 "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(row["device"].startswith("gpu.nvidia.com/") for row in rows)
    assert any(row["match"] for row in rows)
