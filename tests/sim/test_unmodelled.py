"""Fields kube-scheduler reads that kubedra does not model yet are said, in simulate and validate (issue 38: "said,
never silent"). Explicit topologySpreadConstraints were the last such field: since they are modelled, neither
command says anything of them; the mechanism still names the pods of a field listed as unmodelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.scenarios import nodepool, pod, text_of

from kubedra.cli import main
from kubedra.objects.load import load_text
from kubedra.objects.model import Pod
from kubedra.sim.scenario import build_scenario
from kubedra.sim.unmodelled import unmodelled_fields

SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "a"}}}]
PVC = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


def test_explicit_spread_constraints_are_modelled_so_no_note() -> None:
    notes = build_scenario(load_text(text_of(
        nodepool("n", gpus=None),
        pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD),
        pod("b", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD, volumes=PVC),
    ))).notes
    assert not any("topologySpreadConstraints" in note for note in notes)


def test_each_unmodelled_field_is_named_once_with_its_pods() -> None:
    pods = load_text(text_of(pod("a", requests={"cpu": "1"}), pod("b", requests={"cpu": "1"}),
                             pod("c", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD))).of_kind(Pod)
    fields = [("spec.someField", "SomePlugin", lambda p: not p.spec.topology_spread_constraints)]
    assert unmodelled_fields(pods, fields) == [
        "2 pods (e.g. Pod default/a) set spec.someField, which kubedra does not read yet: kube-scheduler filters and "
        "scores them with SomePlugin, so their placements may differ from kube-scheduler's",
    ]


def test_validate_says_nothing_of_spread_constraints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text_of(nodepool("n", gpus=None), pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD)))
    assert main(["validate", "-f", str(path)]) == 0
    assert "topologySpreadConstraints" not in capsys.readouterr().out
