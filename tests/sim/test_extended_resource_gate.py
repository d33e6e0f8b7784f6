"""The DRAExtendedResource gate: off (1.34 and 1.35 defaults, or ``--feature-gates DRAExtendedResource=false``), no
DeviceClass serves ``nvidia.com/gpu`` and a pod asking for it needs a device plugin's allocatable — on a DRA-only
node it stays pending with NodeResourcesFit's message; on (1.36, 1.37) the class serves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.allocator import Features
from kubedra.objects.load import load_paths
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

OBJECTS = Path(__file__).resolve().parents[1] / "kube" / "scenarios" / "kep5004-gate" / "objects.yaml"
PENDING = ("0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are available: 1 Preemption "
           "is not helpful for scheduling.")  # FitError, then PostFilter's part, as kube-scheduler writes it


def _outcome(features: Features) -> dict[str, tuple[str, str]]:
    result = prepare(build_scenario(load_paths([str(OBJECTS)])), Options(features=features)).run()
    return {r.pod.metadata.name: (r.phase, r.pending_reason) for r in result.state.pods.values()}


@pytest.mark.parametrize(("release", "served"), [("1.34", False), ("1.35", False), ("1.36", True), ("1.37", True)])
def test_each_release_serves_extended_resources_as_its_gate_default_says(release: str, served: bool) -> None:
    outcome = _outcome(Features.for_release(release))
    if served:
        assert outcome["p"][0] == "Running"
    else:
        assert outcome["p"] == ("Pending", PENDING)


@pytest.mark.parametrize("release", ["1.36", "1.37"])
def test_the_gate_switched_off_turns_dra_backed_extended_resources_off(release: str) -> None:
    assert _outcome(Features.for_release(release).with_gates({"DRAExtendedResource": False}))["p"] == (
        "Pending", PENDING)


def test_explain_follows_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    from kubedra.cli import main
    assert main(["explain", "pod/p", "-f", str(OBJECTS), "--kubernetes-version", "1.35"]) == 0
    out = capsys.readouterr().out
    assert PENDING in out
    assert "the node does not advertise example.com/gpu" in out
