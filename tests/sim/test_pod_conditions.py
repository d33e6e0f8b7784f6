"""Pods in ``simulate -o json|yaml`` carry ``PodScheduled`` as the API shows it: True once bound, False with
kube-scheduler's reason and message while they do not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

OBJECTS = Path(__file__).resolve().parents[1] / "kube" / "scenarios" / "kep5004-gate" / "objects.yaml"


@pytest.mark.parametrize(("release", "condition"), [
    ("1.37", {"type": "PodScheduled", "status": "True"}),
    ("1.35", {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
              "message": "0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are "
                         "available: 1 Preemption is not helpful for scheduling."}),
])
def test_pods_carry_the_pod_scheduled_condition(
    capsys: pytest.CaptureFixture[str], release: str, condition: dict[str, str]
) -> None:
    main(["simulate", "-f", str(OBJECTS), "-o", "json", "--kubernetes-version", release])
    pods = [o for o in json.loads(capsys.readouterr().out)["items"] if o["kind"] == "Pod"]
    assert [p["status"]["conditions"] for p in pods] == [[condition]]
