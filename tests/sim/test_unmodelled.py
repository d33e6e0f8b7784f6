"""Fields kube-scheduler reads that kubedra does not model yet are said, in simulate and validate (issue 38: "said,
never silent"): before, explicit topologySpreadConstraints were dropped without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.scenarios import nodepool, pod, text_of

from kubedra.cli import main
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "a"}}}]
PVC = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


def test_each_unmodelled_field_is_named_once_with_its_pods() -> None:
    notes = build_scenario(load_text(text_of(
        nodepool("n", gpus=None),
        pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD),
        pod("b", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD, volumes=PVC),
        pod("c", requests={"cpu": "1"}, volumes=[{"name": "scratch", "emptyDir": {}}]),
    ))).notes
    assert notes == [
        "2 pods (e.g. Pod default/a) set spec.topologySpreadConstraints, which kubedra does not read yet: "
        "kube-scheduler filters and scores them with PodTopologySpread's explicit constraints (kubedra applies only "
        "the system-default spreading), so their placements may differ from kube-scheduler's",
    ]


def test_validate_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text_of(nodepool("n", gpus=None), pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD)))
    assert main(["validate", "-f", str(path)]) == 0
    assert "set spec.topologySpreadConstraints, which kubedra does not read yet" in capsys.readouterr().out
