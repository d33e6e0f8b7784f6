"""``kubedra simulate --compare A B``: two runs side by side, as a table and a document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]
PLAN = str(ROOT / "examples" / "plan")


def test_one_scenario_under_two_policies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", PLAN, "--compare", "policy:kube-scheduler", "policy:fgd", "-o", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["kind"] == "SimulationComparison"
    figures = {f["figure"]: f for f in body["figures"]}
    assert figures["pods succeeded"]["a"] == figures["pods succeeded"]["b"] == 4
    assert figures["pods pending"]["difference"] == 0
    assert body["podsDiffering"] == len(body["pods"])
    for row in body["pods"]:
        assert (row["a"]["phase"], row["a"]["node"]) != (row["b"]["phase"], row["b"]["node"])


def test_the_same_run_twice_differs_nowhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", PLAN, "--compare", "policy:fgd", "policy:fgd"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["FIGURE", "A", "B", "B-A"]
    assert "0 pods placed differently" in out


def test_two_scenario_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bigger = tmp_path / "bigger"
    bigger.mkdir()
    for name in ("workloads.yaml", "l4.yaml"):
        (bigger / name).write_text((ROOT / "examples" / "plan" / name).read_text())
    (bigger / "a100.yaml").write_text((ROOT / "examples" / "plan" / "a100.yaml").read_text().replace(
        "count: 1\n  allocatable", "count: 2\n  allocatable"))
    assert main(["simulate", "--compare", PLAN, str(bigger), "-o", "json"]) == 0
    figures = {f["figure"]: f for f in json.loads(capsys.readouterr().out)["figures"]}
    assert figures["max pending time"]["a"] == 7200
    assert figures["max pending time"]["b"] < 7200  # the second A100 node runs both training pairs at once


def test_an_unknown_policy_side_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--compare", "policy:roulette", "policy:fgd"]) == 2
    assert "unknown policy" in capsys.readouterr().err


def test_the_totals_count_every_pod_and_the_gpu_figures_cover_the_whole_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Failed before the fix: the plan example's 12 Deployment pods, deleted at the end of their run, were in no row,
    and every GPU row was an end-of-run value (0 GPUs in use after a run that kept 9 busy)."""
    assert main(["simulate", "-f", PLAN, "--compare", "policy:kube-scheduler", "policy:fgd", "-o", "json"]) == 0
    figures = {f["figure"]: f for f in json.loads(capsys.readouterr().out)["figures"]}
    counted = sum(figures[f"pods {state}"]["a"] for state in ("running", "succeeded", "deleted", "pending"))
    assert figures["pods deleted"]["a"] == 12 and counted == 16
    assert figures["GPUs in use at the end"]["a"] == 0 and figures["GPU-hours in use"]["a"] > 0
    assert "peak stranded GPUs (samples)" in figures and "mean stranded GPUs (samples)" in figures


def test_gpu_hours_are_each_pod_s_gpus_times_its_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The integral against the sum it must equal: one GPU for 1h from 0, one for 1h from 30m, two GPUs for 20m from
    1h40m: 1 + 1 + 2/3 GPU-hours over a run of 2h."""
    path = tmp_path / "in.yaml"
    path.write_text("""
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: n}
spec: {count: 1, allocatable: {cpu: "8", memory: 64Gi}, gpu: {model: A100-40GB, count: 2}}
""" + "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, annotations: {{kubedra.io/start-after: {start}, kubedra.io/run-for: {run}}}}}
spec: {{containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}]}}
""" for i, (start, run, gpus) in enumerate([("0s", "1h", 1), ("30m", "1h", 1), ("100m", "20m", 2)])))
    assert main(["simulate", "-f", str(path), "--compare", "policy:fgd", "policy:best-fit", "-o", "json"]) == 0
    figures = {f["figure"]: f for f in json.loads(capsys.readouterr().out)["figures"]}
    assert figures["GPU-hours in use"]["a"] == pytest.approx(1 + 1 + 2 / 3, abs=1e-3)
    assert figures["mean GPUs in use"]["a"] == pytest.approx((1 + 1 + 2 / 3) / 2, abs=1e-3)


@pytest.mark.parametrize("flag", [["--html", "out.html"], ["--serve"]])
def test_a_flag_for_one_run_is_refused_with_compare(
    flag: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Failed before the fix: ``--compare --html`` exited 0 and wrote nothing."""
    argv = [a if a != "out.html" else str(tmp_path / a) for a in flag]
    assert main(["simulate", "-f", PLAN, "--compare", "policy:fgd", "policy:best-fit", *argv]) == 2
    assert f"{flag[0]} applies to one run" in capsys.readouterr().err
    assert not (tmp_path / "out.html").exists()
