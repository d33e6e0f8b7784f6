"""The rollout tests' way of asking for a plan: a NodePool of device-plugin nodes and the workloads written to a
directory, ``kubedra migrate plan --order naive -o json`` run on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main


def first_serving_wave(tmp_path: Path, capsys: pytest.CaptureFixture[str], gpus_per_node: int,
                       docs: list[dict[str, Any]], landed_on: str) -> dict[str, Any]:
    """The first wave (n-0) of three nodes of ``gpus_per_node`` H100s running ``docs``: the one serving pod it
    evicts must land on ``landed_on`` (where it preempts, in the tests that use it)."""
    pool = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": 3, "gpu": {"model": "H100-80GB", "count": gpus_per_node}, "devicePlugin": True}}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([pool, *docs]))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    first: dict[str, Any] = json.loads(capsys.readouterr().out)["waves"][0]
    (serve,) = first["evicted"]
    assert first["nodes"] == ["n-0"] and serve.startswith("default/serve-") and first["landed"] == {serve: landed_on}
    return first
