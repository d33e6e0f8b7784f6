"""Resources pods ask for that no node publishes: a note in ``simulate``, a warning in ``validate`` (issue 37 item 5:
a NodePool naming no cpu left every pod "Insufficient cpu" while ``validate`` said "valid")."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.scenarios import nodepool, pod, text_of

from kubedra.cli import main
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

GPU_ONLY = nodepool("a100", gpus=4, allocatable={"memory": "64Gi"})  # no cpu


def notes(*documents: dict[str, object]) -> list[str]:
    return build_scenario(load_text(text_of(*documents))).notes


def test_a_resource_no_node_publishes_is_named_once_with_how_many_pods_ask() -> None:
    found = notes(GPU_ONLY, pod("a", requests={"cpu": "4", "ephemeral-storage": "1Gi"}), pod("b", requests={"cpu": "1"}))
    assert found == [
        "2 pods ask for cpu (e.g. Pod default/a), which no node publishes: they stay pending (Insufficient cpu); "
        "give the NodePool spec.allocatable.cpu or the Node status.allocatable.cpu",
        "1 pod asks for ephemeral-storage (e.g. Pod default/a), which no node publishes: it stays pending "
        "(Insufficient ephemeral-storage); give the NodePool spec.allocatable.ephemeral-storage or the Node "
        "status.allocatable.ephemeral-storage",
    ]


def test_published_zero_requests_and_dra_served_resources_say_nothing() -> None:
    published = nodepool("n", gpus=4, allocatable={"cpu": "8", "memory": "64Gi"})
    assert notes(published, pod("a", requests={"cpu": "4", "memory": "1Gi", "ephemeral-storage": "0"})) == []
    # The NodePool's GPUs are DRA devices; a device-plugin style request is served through DRA's extended resource.
    assert notes(published, pod("b", requests={"cpu": "1", "deviceclass.resource.kubernetes.io/gpu.nvidia.com": "1"})) == []


def test_each_kind_of_pod_is_counted_and_the_note_matches_what_the_run_says() -> None:
    from kubedra.sim.simulate import simulate

    scenario = build_scenario(load_text(text_of(GPU_ONLY, pod("a", requests={"cpu": "4"}))))
    result = simulate(scenario)
    assert result.state.pods["default/a"].pending_reason.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert any("asks for cpu" in note for note in scenario.notes)


def test_validate_warns_and_stays_valid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text_of(GPU_ONLY, pod("a", requests={"cpu": "4"})))
    assert main(["validate", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"warning: {path}: 1 pod asks for cpu (e.g. Pod default/a), which no node publishes" in out
    assert main(["validate", "-f", str(path), "--strict-references"]) == 1
