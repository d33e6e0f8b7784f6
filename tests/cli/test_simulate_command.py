"""``kubedra simulate`` end to end, in-process: the default seed run, output formats, exit codes, bad input, help."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kubedra.cli import main

CLUSTER = """\
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 2
  allocatable: {cpu: "32", memory: 256Gi}
  gpu: {model: L4, count: 1}
"""

WORKLOAD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: {replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: cuda:12
        resources: {claims: [{name: gpu}]}
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
"""


def _files(tmp_path: Path, replicas: int = 2) -> list[str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    workload = tmp_path / "workload.yaml"
    workload.write_text(WORKLOAD.replace("{replicas}", str(replicas)))
    return ["-f", str(cluster), "-f", str(workload)]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str]:
    """The table on a wide terminal, its box-drawing column rules turned into spaces for matching."""
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = _run(capsys, *argv, "-o", "table")
    return code, re.sub("[\u2500-\u257f]", " ", out)


def test_no_arguments_runs_the_seed_scenario_and_prints_its_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "-o", "json")
    assert code == 0
    assert err.count("Warning:") == 12
    assert "ResourceClass gpu-nvidia-a100" in err
    assert "Note:" in err  # the PrometheusRule and the bare fragment are reported as not simulated
    document = json.loads(out)
    assert document["kind"] == "SimulationReport"
    assert document["summary"]["pods"]["pending"] == 0
    pods = [o for o in document["items"] if o["kind"] == "Pod"]
    assert any(p["metadata"]["name"].startswith("trainer-") for p in pods)
    assert sum(p["metadata"]["name"].startswith("llm-inference-") for p in pods) == 5
    assert all(p["spec"]["nodeName"] for p in pods)
    assert document["events"]


def test_yaml_output_parses_back_to_the_same_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out_yaml, _ = _run(capsys, "-o", "yaml")
    assert code == 0
    code, out_json, _ = _run(capsys, "-o", "json")
    assert code == 0
    assert yaml.safe_load(out_yaml) == json.loads(out_json)


def test_the_seed_run_is_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(capsys, "-o", "json", "--seed", "5")
    second = _run(capsys, "-o", "json", "--seed", "5")
    assert first[1] == second[1]


def test_table_output_lists_pods_and_the_gpu_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _table(capsys, monkeypatch)
    assert code == 0
    assert "Pods" in out
    assert "GPUs" in out
    for header in ("POD", "PHASE", "NODE", "DEVICES / REASON", "MODEL", "TOTAL", "ALLOCATED", "SHARED"):
        assert header in out
    assert re.search(r"ml-training/trainer-\S+\s+Running\s+(a100|h100)-\d", out)
    assert len(re.findall(r"inference/llm-inference-\S+\s+Running\s+a100-shared-0", out)) == 5
    assert "(share 1)" in out
    assert re.search(r"NVIDIA A100-SXM4-40GB\s+20\s+", out)
    assert re.search(r"NVIDIA H100 80GB HBM3\s+16\s+", out)
    assert "pods: 6 running, 3 succeeded, 0 deleted, 0 pending of 9" in out
    assert "simulated time: 2h2m" in out


def test_same_seed_gives_the_same_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = _files(tmp_path)
    first = _run(capsys, *files, "--seed", "11", "-o", "json")
    second = _run(capsys, *files, "--seed", "11", "-o", "json")
    assert first[0] == 0
    assert first[1] == second[1]
    other = _run(capsys, *files, "--seed", "12", "-o", "json")
    assert other[1] != first[1]  # generated names come from the seed


@pytest.mark.parametrize("policy", ["first-fit", "least-allocated", "most-allocated"])
def test_every_policy_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path, policy: str) -> None:
    code, out, _ = _run(capsys, *_files(tmp_path), "--policy", policy, "-o", "json")
    assert code == 0
    nodes = sorted(o["spec"]["nodeName"] for o in json.loads(out)["items"] if o["kind"] == "Pod")
    assert nodes == ["gpu-0", "gpu-1"]  # one GPU per node: two pods, one each whatever the policy


# ------------------------------------------------------------------------------------------------ exit codes


def test_pending_pods_exit_0_by_default_and_1_with_fail_on_pending(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = _files(tmp_path, replicas=3)
    code, out, _ = _run(capsys, *files, "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["summary"]["pods"]["pending"] == 1
    pending = [e for e in document["events"] if e["type"] == "Pending"]
    assert pending
    assert pending[0]["message"] == "0/2 nodes are available: 2 cannot allocate all claims."
    code, _, _ = _run(capsys, *files, "-o", "json", "--fail-on-pending")
    assert code == 1


def test_fail_on_pending_exits_0_when_everything_is_scheduled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = _run(capsys, *_files(tmp_path, replicas=2), "-o", "json", "--fail-on-pending")
    assert code == 0


def test_table_shows_the_pending_reason(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out = _table(capsys, monkeypatch, *_files(tmp_path, replicas=3))
    assert code == 0
    assert re.search(r"default/web-\S+\s+Pending\s+-\s+0/2 nodes are available: 2 cannot allocate all claims\.", out)
    assert "pods: 2 running, 0 succeeded, 0 deleted, 1 pending of 3" in out


def test_a_bad_nodepool_exits_2_naming_file_object_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(CLUSTER.replace("model: L4", "model: GTX-9000"))
    code, out, err = _run(capsys, "-f", str(bad))
    assert code == 2
    assert out == ""
    line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert str(bad) in line
    assert "NodePool/gpu" in line
    assert "spec.gpu.model" in line
    assert "GTX-9000" in line


def test_a_bad_workload_exits_2_naming_file_object_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = _files(tmp_path)
    workload = Path(files[-1])
    workload.write_text(workload.read_text().replace("kind: Deployment\nmetadata: {name: web,", "kind: Deployment\nmetadata: {name: web, annotations: {kubedra.io/start-after: soon},"))
    code, _, err = _run(capsys, *files)
    assert code == 2
    assert str(workload) in err
    assert "Deployment/web" in err
    assert "metadata.annotations[kubedra.io/start-after]" in err


def test_a_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    code, out, err = _run(capsys, "-f", str(missing))
    assert code == 2
    assert out == ""
    assert f"error: {missing}" in err
    assert "no such file or directory" in err


def test_an_unknown_policy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--policy", "random")
    assert code == 2
    assert "random" in err


def test_a_bad_feature_gate_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--feature-gates", "NoSuchGate=true")
    assert code == 2
    assert out == ""
    assert "error:" in err
    assert "NoSuchGate" in err


# ------------------------------------------------------------------------------------------------ help


def test_help_teaches_inputs_timing_policies_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--help"])
    out, _ = capsys.readouterr()
    assert code == 0
    text = " ".join(out.split())
    for phrase in (
        "NodePool",
        "ResourceClaimTemplates",
        "Deployments",
        "Jobs",
        "kubedra.io/start-after",
        "kubedra.io/run-for",
        "seed",
        "--policy",
        "first-fit",
        "least-allocated",
        "most-allocated",
        "--seed",
        "--fail-on-pending",
        "-o",
        "Exit status",
    ):
        assert phrase in text, phrase
