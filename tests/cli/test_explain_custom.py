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
    ("rayjob/ray/tune", "rayjob", "5 pods: 1 Succeeded, 4 Deleted; group headgroup: 1 Deleted; group gpu: 3 Deleted; "
                                  "submitter Job: 1 Succeeded"),
])
def test_a_custom_workload_is_explained_by_its_parts(target: str, example: str, summary: str | None,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", target, "-f", str(EXAMPLES / f"{example}.yaml"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workload"].split("/", 1)[0] == {"jobset": "JobSet", "trainjob": "TrainJob", "lws": "LeaderWorkerSet",
                                                 "raycluster": "RayCluster", "pytorchjob": "PyTorchJob", "rayjob": "RayJob"}[
        target.split("/", 1)[0]]
    if summary is not None:
        assert data["summary"] == summary
    else:
        assert "; group " in data["summary"]
    assert sum(len(g["pods"]) for g in data["groups"]) == int(data["summary"].split(" ", 1)[0])


def test_an_unknown_kind_lists_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "rayservice/x"]) == 2
    assert "pytorchjob or trainjob" in capsys.readouterr().err


def test_a_rayjob_whose_cluster_is_not_ready_has_no_submitter_yet(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Its pods are its cluster's and its submitter Job's, found through the run (no label on them names the
    RayJob); with a worker that cannot fit the cluster never gets Ready, so the Job is never made."""
    text = (EXAMPLES / "rayjob.yaml").read_text().replace("replicas: 3", "replicas: 5").replace(
        "minReplicas: 3", "minReplicas: 5").replace("maxReplicas: 3", "maxReplicas: 5")
    (tmp_path / "rayjob.yaml").write_text(text)
    assert main(["explain", "rayjob", "tune", "-n", "ray", "-f", str(tmp_path / "rayjob.yaml"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workload"] == "RayJob/ray/tune"
    assert data["summary"] == "6 pods: 1 Pending, 5 Running; group headgroup: 1 Running; group gpu: 1 Pending, 4 Running"
    (pending,) = [g for g in data["groups"] if g["phase"] == "Pending"]
    assert pending["explanation"]["whatWouldFit"]
