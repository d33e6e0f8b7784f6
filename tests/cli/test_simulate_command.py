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


def _rows(out: str) -> list[list[str]]:
    """The first table's rows split on blanks (the last column, REASON, may hold spaces: taken as the rest)."""
    block = out.split("\n\n", 1)[0]
    return [line.split(None, 6) for line in block.splitlines()]


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


def test_the_default_output_is_a_plain_table_even_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys)  # capsys: stdout is not a terminal
    assert code == 0
    assert out.startswith("NAMESPACE   ")
    assert not re.search("[\u2500-\u257f]", out)  # no box drawing
    assert all(line == line.rstrip() for line in out.splitlines())
    pods, gpus, summary = out.split("\n\n")
    header, *rows = _rows(pods)
    assert header == ["NAMESPACE", "NAME", "STATUS", "NODE", "DEVICES", "WAITED", "REASON"]
    assert len(rows) == 9
    assert [r[:2] for r in rows] == sorted(r[:2] for r in rows)  # by namespace, then name
    trainer = next(r for r in rows if r[1].startswith("trainer-"))
    assert trainer[0] == "ml-training"
    assert trainer[2] == "Running"
    assert re.fullmatch(r"(a100|h100)-\d", trainer[3])  # an A100-or-better node; kube-scheduler ties take the first
    assert re.fullmatch(r"gpu-\d", trainer[4])
    assert trainer[5:] == ["0s", "<none>"]
    inference = [r for r in rows if r[1].startswith("llm-inference-")]
    assert [(r[0], r[2], r[3]) for r in inference] == [("inference", "Running", "a100-shared-0")] * 5
    assert sorted(r[4] for r in inference) == ["gpu-0(share)"] * 4 + ["gpu-1(share)"]
    # Each column starts where its header starts: aligned, at least 3 spaces between columns.
    lines = pods.splitlines()
    for name in ("STATUS", "NODE", "DEVICES", "WAITED", "REASON"):
        at = lines[0].index(name)
        assert all(line[at - 3 : at] == "   " and line[at] != " " for line in lines), name
    assert gpus.splitlines() == [
        "GPUS   IN-USE   WHOLE   MIG   SHARED   PEAK   CAPACITY   MODEL",
        "20     3        1       0     2        5      2.25       NVIDIA A100-SXM4-40GB",
        "16     0        0       0     0        0      0          NVIDIA H100 80GB HBM3",
        "4      0        0       0     0        4      0          nvidia.com/gpu (device plugin)",
    ]
    assert summary.splitlines() == [
        "Pods: 6 running, 3 succeeded, 0 deleted, 0 pending of 9; claims: 6 allocated, 0 pending; shares: 5 of 16 in "
        "use",
        "GPUs: 3 of 40 in use at the end (1 whole, 0 MIG-partitioned, 2 shared); capacity in use 2.25 GPUs (5.62%); "
        "peak 9 at 2m",
        "Pending time: p50 0s, p99 0s, max 0s",
        "Fragmentation: 33 GPUs free, 0 usable by the 0 pending pods' claims, 0 stranded; 0 MIG GPUs partly used, 3 "
        "shares left on shared GPUs; FGD measure 30.0833 GPUs (83.56%)",
        "Simulated time: 2h2m",
    ]


def test_wide_adds_columns_and_keeps_the_others(capsys: pytest.CaptureFixture[str]) -> None:
    _, narrow, _ = _run(capsys)
    code, wide, _ = _run(capsys, "-o", "wide")
    assert code == 0
    header = wide.splitlines()[0].split()
    assert header == [
        "NAMESPACE", "NAME", "STATUS", "NODE", "DEVICES", "WAITED", "CLAIMS", "ARRIVED", "STARTED", "FINISHED",
        "REASON",
    ]
    narrow_rows = [r[:6] for r in _rows(narrow)]
    wide_rows = [line.split()[:6] for line in wide.split("\n\n", 1)[0].splitlines()]
    assert wide_rows == narrow_rows
    trainer = next(line.split() for line in wide.splitlines() if " trainer-" in line)
    assert trainer[6:10] == ["my-gpu-claim", "0s", "0s", "<none>"]
    assert "MIG-CAPABLE   DEVICE-PLUGIN   MODEL" in wide


def test_name_output_is_kind_slash_name_as_kubectl_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    _, table, _ = _run(capsys)
    code, out, _ = _run(capsys, "-o", "name")
    assert code == 0
    names = out.splitlines()
    assert names == [f"pod/{r[1]}" for r in _rows(table)[1:]]
    assert len(names) == 9
    assert all("/" not in n.removeprefix("pod/") for n in names)  # no namespace, as kubectl


def test_no_headers_prints_the_pod_rows_alone(capsys: pytest.CaptureFixture[str]) -> None:
    _, table, _ = _run(capsys)
    code, out, _ = _run(capsys, "--no-headers")
    assert code == 0
    assert [line.split() for line in out.splitlines()] == [line.split() for line in table.splitlines()[1:10]]
    assert "NAMESPACE" not in out
    assert len(out.splitlines()) == 9


def test_quiet_silences_conversion_warnings_and_notes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "-q")
    assert code == 0
    assert err == ""
    assert out.startswith("NAMESPACE")


def test_json_summary_has_physical_gpus_peak_use_and_pending_time(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "-o", "json")
    summary = json.loads(out)["summary"]
    assert summary["gpus"]["total"] == 40
    assert summary["gpus"]["peakInUse"] == 9
    assert summary["gpus"]["peakTime"] == "2m"
    assert {m["model"]: m["total"] for m in summary["gpus"]["models"]} == {
        "NVIDIA A100-SXM4-40GB": 20,
        "NVIDIA H100 80GB HBM3": 16,
        "nvidia.com/gpu (device plugin)": 4,
    }
    assert summary["pendingTime"]["p99"] == "0s"
    # What earlier releases printed is still there (extended, not broken).
    assert summary["devices"][0] == {"model": "NVIDIA A100-SXM4-40GB", "total": 20, "allocated": 1, "sharedDevices": 2}


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
    assert pending[0]["message"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    code, _, _ = _run(capsys, *files, "-o", "json", "--fail-on-pending")
    assert code == 1


def test_fail_on_pending_exits_0_when_everything_is_scheduled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = _run(capsys, *_files(tmp_path, replicas=2), "-o", "json", "--fail-on-pending")
    assert code == 0


def test_table_shows_the_pending_reason_and_the_longest_waiter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, *_files(tmp_path, replicas=3))
    assert code == 0
    pending = [row for row in _rows(out) if row[2] == "Pending"]
    assert len(pending) == 1
    assert pending[0][3:] == ["<none>", "<none>", "0s", "0/2 nodes are available: 2 cannot allocate all claims. "
                              "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."]
    assert "Pods: 2 running, 0 succeeded, 0 deleted, 1 pending of 3;" in out


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
    code, _, err = _run(capsys, "--policy", "roulette")
    assert code == 2
    assert "roulette" in err


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


def test_pods_never_scheduled_are_counted_apart_not_as_a_max_of_0s(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "in.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '9'}}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: big}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '4'}}}]}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: small}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}\n")
    assert main(["simulate", "-f", str(tmp_path / "in.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Pending time of the 1 scheduled: p50 0s, p99 0s, max 0s; 1 never scheduled (still pending when the run " \
           "ended at 0s)" in out
    (tmp_path / "in.yaml").write_text((tmp_path / "in.yaml").read_text().rsplit("---", 1)[0])
    assert main(["simulate", "-f", str(tmp_path / "in.yaml"), "-o", "json"]) == 0
    waited = json.loads(capsys.readouterr().out)["summary"]["pendingTime"]
    assert (waited["pods"], waited["neverScheduled"]) == (0, 1)
