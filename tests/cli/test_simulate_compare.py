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
