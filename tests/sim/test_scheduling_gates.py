"""Scheduling gates (issue 38): a gated pod waits, SchedulingGated, until its gates are removed; a scenario removes
them at a time with ``kubedra.io/ungate-after``, as Kueue's admission would. Before: every gated pod ran at once.
The real kube-scheduler's side is tests/kube/scenarios/scheduling-gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.scenarios import nodepool, pod, run

from kubedra.cli import main

GATE = [{"name": "kueue.x-k8s.io/admission"}]


def gated(name: str, **annotations: str) -> dict[str, Any]:
    doc = pod(name, requests={"cpu": "1"}, schedulingGates=GATE)
    if annotations:
        doc["metadata"]["annotations"] = {**doc["metadata"].get("annotations", {}), **annotations}
    return doc


def test_a_gated_pod_waits_and_an_ungated_one_is_scheduled_when_its_gates_go() -> None:
    sim = run(nodepool("n", gpus=None), gated("held"), gated("admitted", **{"kubedra.io/ungate-after": "10m"}))
    assert sim.phase("held") == "Pending"
    assert sim.pending_reason("held") == "Scheduling is blocked due to non-empty scheduling gates"
    condition = sim.pods["held"]["status"]["conditions"][0]
    assert (condition["reason"], condition["message"]) == (
        "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
    assert sim.timeline("Pod admitted") == [(0.0, "SchedulingGated"), (600.0, "Ungated"), (600.0, "Scheduled")]
    assert "schedulingGates" not in sim.pods["admitted"]["spec"]


@pytest.mark.parametrize(("value", "message"), [
    ("soon", "invalid duration"), ("-1m", "must not be negative"),
])
def test_a_bad_ungate_after_is_refused_naming_the_field(
    value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fixtures.scenarios import text_of

    path = tmp_path / "in.yaml"
    path.write_text(text_of(nodepool("n", gpus=None), gated("p", **{"kubedra.io/ungate-after": value})))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Pod default/p: metadata.annotations[kubedra.io/ungate-after]" in err and message in err


def test_explain_says_the_gates_hold_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures.scenarios import text_of

    path = tmp_path / "in.yaml"
    path.write_text(text_of(nodepool("n", gpus=None), gated("held")))
    assert main(["explain", "pod", "held", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Scheduling is blocked due to non-empty scheduling gates" in out
    assert "gated by kueue.x-k8s.io/admission" in out and "What Would Make It Fit" not in out
