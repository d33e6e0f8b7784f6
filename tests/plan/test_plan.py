"""``kubedra plan``: goals, the search, the CLI on the shipped examples, the cache, and Ray giving the same answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main
from kubedra.plan.candidate import Candidate, simulate_candidate
from kubedra.plan.goal import GoalError, parse_goal

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plan"
ARGS = [
    "plan", "-f", str(EXAMPLES / "workloads.yaml"), "--pool", str(EXAMPLES / "l4.yaml"),
    "--pool", str(EXAMPLES / "a100.yaml"), "--goal", "p99-pending<=5m", "--cost-per-hour", "l4=0.8",
    "--cost-per-hour", "a100=3.7", "--max-nodes", "8",
]


def test_goals_are_read_and_checked() -> None:
    goal = parse_goal("p99-pending<=5m,all-placed")
    assert goal.bounds == (("p99", 300.0),) and goal.all_placed
    summary = {"pods": {"pending": 0}, "pendingTime": {"p99Seconds": 299.0}}
    assert goal.met(summary)
    assert not goal.met({"pods": {"pending": 1}, "pendingTime": {"p99Seconds": 0.0}})
    assert not parse_goal("max-pending<=1h").met({"pods": {"pending": 1}, "pendingTime": {"maxSeconds": None}})
    for bad in ("p98-pending<=5m", "p99-pending<=5 minutes", ""):
        with pytest.raises(GoalError):
            parse_goal(bad)


def _plan(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main([*ARGS, *extra, "-o", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_example_plan_and_its_resume(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, body, _ = _plan(capsys, "--cache-dir", str(tmp_path), "--workers", "2")
    assert code == 0
    assert body["answer"] == {"fleet": {"l4": 3, "a100": 1}, "costPerHour": 6.1}  # failed before: a100=2 at 7.4
    assert body["search"] == {"exact": True, "candidatesEvaluated": len(body["frontier"]),
                              "lowerBoundCostPerHour": 6.1}
    frontier = body["frontier"]
    assert isinstance(frontier, list)
    costs = [row["costPerHour"] for row in frontier]
    assert costs == sorted(costs)
    one_each = next(row for row in frontier if row["fleet"] == {"l4": 1, "a100": 1})
    assert not one_each["meetsGoal"]  # inference fills the A100 past the L4's 4 shares: training waits 2h
    l4_only = next(row for row in frontier if row["fleet"] == {"l4": 8, "a100": 0})
    assert l4_only["pendingTime"]["max"] == "never"  # 2-GPU pods never fit on a 1-GPU node
    simulated = len(frontier)
    assert f"{simulated} candidates simulated, 0 read" in body["assumptions"][-1]
    code, again, _ = _plan(capsys, "--cache-dir", str(tmp_path))
    assert again["frontier"] == frontier
    assert f"0 candidates simulated, {simulated} read" in again["assumptions"][-1]


def _candidate(fleet: tuple[int, ...]) -> Candidate:
    texts = tuple(json.dumps(yaml.safe_load((EXAMPLES / f"{p}.yaml").read_text()), sort_keys=True)
                  for p in ("l4", "a100"))
    return Candidate(fleet, texts, (EXAMPLES / "workloads.yaml").read_text(), 0, "kube-scheduler")


def test_the_example_answer_is_the_cheapest_fleet_by_direct_simulation() -> None:
    """Brute force where it matters: every fleet of 0-8 nodes per pool cheaper than the answer, simulated one by
    one outside the search, fails the goal, and the answer meets it."""
    goal = parse_goal("p99-pending<=5m")
    cheaper = [(a, b) for a in range(9) for b in range(9) if 0.8 * a + 3.7 * b < 6.1 - 1e-9]
    assert len(cheaper) == 11
    for fleet in cheaper:
        assert not goal.met(simulate_candidate(_candidate(fleet))), fleet
    assert goal.met(simulate_candidate(_candidate((3, 1))))


def test_a_search_stopped_by_max_candidates_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main([*ARGS, "--max-candidates", "2", "--cache-dir", str(tmp_path), "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert ("Best fleet found meeting p99-pending<=5m: l4=8, a100=8 at 36/h, not proven cheapest: --max-candidates 2 "
            "reached; the cheapest costs at least 3.7/h") in out  # (8, 0) failed: every cheaper fleet needs an a100


def test_a_goal_no_fleet_meets_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["plan", "-f", str(EXAMPLES / "workloads.yaml"), "--pool", str(EXAMPLES / "l4.yaml"),
                 "--goal", "all-placed", "--max-nodes", "4", "--cache-dir", str(tmp_path), "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "No fleet up to 4 nodes per pool meets all-placed (1 candidate evaluated)." in out  # l4=4 failed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--goal", "p99<=5m"], "goal 'p99<=5m': use p50-pending<=D"),
        (["--goal", "all-placed", "--cost-per-hour", "h100=3"], "no pool named 'h100'"),
        (["--goal", "all-placed", "--cost-per-hour", "l4=cheap"], "the price must be a number"),
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code = main(["plan", "-f", str(EXAMPLES / "workloads.yaml"), "--pool", str(EXAMPLES / "l4.yaml"), *args])
    assert code == 2
    assert message in capsys.readouterr().err


def test_a_file_that_is_not_a_nodepool_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "-f", str(EXAMPLES / "workloads.yaml"), "--pool", str(EXAMPLES / "workloads.yaml"),
                 "--goal", "all-placed"])
    assert code == 2
    assert "must hold exactly one NodePool" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_gives_the_answers_of_local_workers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    _, local, _ = _plan(capsys, "--cache-dir", str(tmp_path / "local"), "--workers", "2")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _, remote, _ = _plan(capsys, "--cache-dir", str(tmp_path / "ray"), "--ray-address", "local")
    finally:
        ray.shutdown()
    assert remote["answer"] == local["answer"]
    assert remote["frontier"] == local["frontier"]
