"""``kubedra explain`` of the custom workloads (JobSet, TrainJob, LeaderWorkerSet, RayCluster, PyTorchJob): their pods
found by the label their controller writes, grouped, and counted per part in the API's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"


@pytest.mark.parametrize(("target", "example", "summary"), [
    ("jobset/train", "jobset-train", "4 pods: 4 Succeeded; replicated job workers: 4 Succeeded"),
    ("trainjob/llm", "trainjob", "4 pods: 4 Succeeded; replicated job node: 4 Succeeded"),
    ("lws/vllm", "vllm-lws", "8 pods: 8 Running; group 0: 2 Running; group 1: 2 Running; group 2: 2 Running; "
                             "group 3: 2 Running"),
    ("raycluster/ray/ray-cluster", "ray-cluster", None),
    ("pytorchjob/train", "pytorchjob",
     "4 pods: 4 Succeeded; replica type master: 1 Succeeded; replica type worker: 3 Succeeded"),
])
def test_a_custom_workload_is_explained_by_its_parts(target: str, example: str, summary: str | None,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", target, "-f", str(EXAMPLES / f"{example}.yaml"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workload"].split("/", 1)[0] == {"jobset": "JobSet", "trainjob": "TrainJob", "lws": "LeaderWorkerSet",
                                                 "raycluster": "RayCluster", "pytorchjob": "PyTorchJob"}[
        target.split("/", 1)[0]]
    if summary is not None:
        assert data["summary"] == summary
    else:
        assert "; group " in data["summary"]
    assert sum(len(g["pods"]) for g in data["groups"]) == int(data["summary"].split(" ", 1)[0])


def test_an_unknown_kind_lists_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "rayjob/x"]) == 2
    assert "pytorchjob or trainjob" in capsys.readouterr().err
