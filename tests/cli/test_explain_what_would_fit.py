"""``kubedra explain``'s What would make it fit on the tutorial's example (examples/tutorials/what-would-fit.yaml): the
four kinds of change, ranked, in the table and in -o json; each applied to the manifests and the whole scenario
simulated again, where the pod then runs."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.sim.fixtures.scenarios import run

from kubedra.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tutorials" / "what-would-fit.yaml"
ARGS = ["explain", "pod", "trainer", "-n", "ml", "-f", str(EXAMPLE)]


def _docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]


def _named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def _trainer_phase(docs: list[dict[str, Any]]) -> str:
    return run(*docs).result.state.pods["ml/trainer"].phase


@pytest.fixture(scope="module")
def suggestions() -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*ARGS, "-o", "json"]) == 0
    found: list[dict[str, Any]] = json.loads(out.getvalue())["whatWouldFit"]
    return found


def test_the_example_waits_as_its_header_says() -> None:
    assert _trainer_phase(_docs()) == "Pending"


def test_four_kinds_ranked_by_cost(suggestions: list[dict[str, Any]]) -> None:
    assert [s["kind"] for s in suggestions] == ["selector", "toleration", "release", "nodes"]
    assert suggestions[0]["fitsOn"] == ["a100-0", "a100-1", "a100-2"]
    assert suggestions[0]["cost"] == {"amount": 42.9, "unit": "percent", "text": "threshold moved 42.9%"}
    assert suggestions[1]["fitsOn"] == ["spare-0"] and suggestions[2]["fitsOn"] == ["h100-0"]
    assert suggestions[3]["change"]["pool"] == "h100"


def test_the_relaxed_selector_schedules_it(suggestions: list[dict[str, Any]]) -> None:
    change = suggestions[0]["change"]
    docs = _docs()
    request = _named(docs, "ResourceClaimTemplate", "gpu-70gi")["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["selectors"][0]["cel"]["expression"] == change["expression"]
    request["exactly"]["selectors"][0]["cel"]["expression"] = change["relaxed"]
    assert _trainer_phase(docs) == "Running"


def test_the_toleration_schedules_it(suggestions: list[dict[str, Any]]) -> None:
    change = suggestions[1]["change"]
    docs = _docs()
    _named(docs, "Pod", "trainer")["spec"]["tolerations"] = [
        {"key": change["key"], "operator": "Equal", "value": change["value"], "effect": change["effect"]}]
    assert _trainer_phase(docs) == "Running"


def test_the_release_schedules_it(suggestions: list[dict[str, Any]]) -> None:
    assert suggestions[2]["change"]["endPods"][0].startswith("ml/serving-")
    docs = _docs()
    serving = _named(docs, "Deployment", "serving")["spec"]["template"]["metadata"]
    serving["annotations"] = {"kubedra.io/run-for": "5m"}  # the holder ends within the run
    assert _trainer_phase(docs) == "Running"


def test_one_more_node_schedules_it(suggestions: list[dict[str, Any]]) -> None:
    docs = copy.deepcopy(_docs())
    _named(docs, "NodePool", suggestions[3]["change"]["pool"])["spec"]["count"] += suggestions[3]["change"]["nodes"]
    assert _trainer_phase(docs) == "Running"


def test_the_table_has_the_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    section = out[out.index("What Would Make It Fit:"):out.index("Events:")].splitlines()
    assert len(section) == 5
    assert section[1].startswith("  fits on 3 nodes (a100-0, a100-1, a100-2) if template ml/gpu-70gi")
    assert section[4].endswith("[cost: add 1 node]")
