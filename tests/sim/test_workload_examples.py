"""The gang and preemption examples (``examples/workloads``) do what their headers say, run as the header's command."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "workloads"


def _simulate(name: str, *extra: str) -> dict[str, Any]:
    """The example's first-line command with ``-o json``, from the repository root as the header writes paths."""
    command = (EXAMPLES / name).read_text().splitlines()[0].removeprefix("# ")
    argv = shlex.split(command)
    assert argv[:2] == ["kubedra", "simulate"], command
    out = io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv[1:], *extra, "-o", "json"]) == 0
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _scheduled(report: dict[str, Any]) -> dict[str, float]:
    return {e["object"].rsplit("/", 1)[1]: e["seconds"] for e in report["events"]
            if e["type"] == "Scheduled" and e["object"].startswith("Pod ")}


def test_the_gang_starts_whole_when_the_notebook_finishes() -> None:
    report = _simulate("gang.yaml")
    workers = {pod: at for pod, at in _scheduled(report).items() if pod.startswith("llm-pretrain-")}
    assert len(workers) == 16
    # the gang's first retry after the notebook finishes at 1h: it backs off up to 40 s (10 s times the root of 16)
    assert set(workers.values()) == {3608.0}


def test_without_the_gate_fourteen_workers_start_at_once_and_idle() -> None:
    report = _simulate("gang.yaml", "--feature-gates", "GenericWorkload=false")
    workers = [at for pod, at in _scheduled(report).items() if pod.startswith("llm-pretrain-")]
    assert sorted(workers).count(300.0) == 14


def test_preemption_frees_cpu_for_inference_but_never_a_gpu() -> None:
    report = _simulate("preemption.yaml")
    preempted = [e["object"] for e in report["events"] if e["type"] == "Preempted"]
    assert len(preempted) == 2 and all(p.startswith("Pod default/etl-") for p in preempted)
    scheduled = _scheduled(report)
    assert scheduled["inference"] == 600.0 + 30.0
    assert "inference-gpu" not in scheduled
    assert "finetune" in scheduled and not any("finetune" in p for p in preempted)


@pytest.mark.parametrize("name", ["gang.yaml", "preemption.yaml", "jobset-train.yaml"])
def test_every_example_header_names_its_own_file(name: str) -> None:
    assert f"examples/workloads/{name}" in (EXAMPLES / name).read_text().splitlines()[0]
