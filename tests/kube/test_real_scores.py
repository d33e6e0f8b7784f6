"""tests/scheduler/kube_scores.yaml, the score expectations kubedra's scorer is held to, against a fresh run of the
real kube-scheduler v1.37.2 on the same cases (``python -m tests.kube.real_scores`` rewrites the file)."""

from __future__ import annotations

import pytest
from tests.controlplane.fixture import running_control_plane
from tests.kube.real_scores import CASES, load_expected, record, render

pytestmark = pytest.mark.controlplane


def test_the_recorded_scores_are_the_real_schedulers(tmp_path_factory: pytest.TempPathFactory) -> None:
    with running_control_plane(tmp_path_factory.mktemp("real-scores"),
                               only=("etcd", "kube-apiserver", "kube-scheduler")) as plane:
        fresh = record(plane)
    assert set(fresh) == {case.name for case in CASES}
    assert render(fresh) == render(load_expected()), "run python -m tests.kube.real_scores and review the diff"
