"""The rollout tests' way of asking for a plan: a NodePool of device-plugin nodes and the workloads written to a
directory, ``kubedra migrate plan --order naive -o json`` run on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main


def serving(gpus: int, on: str) -> list[dict[str, Any]]:
    """A serving Deployment of one pod asking ``gpus`` (priority 1000) that prefers n-0 and may run only on n-0 or
    ``on``: draining n-0, its pod lands on ``on``, preempting there where it finds no room."""
    hostname = "kubernetes.io/hostname"
    spec = {"containers": [{"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
            "priorityClassName": "serving", "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": hostname, "operator": "In", "values": ["n-0", on]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
                    "matchExpressions": [{"key": hostname, "operator": "In", "values": ["n-0"]}]}}]}}}
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "serving"},
             "value": 1000},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve"}, "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "serve"}},
                "template": {"metadata": {"labels": {"app": "serve"}}, "spec": spec}}}]


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
