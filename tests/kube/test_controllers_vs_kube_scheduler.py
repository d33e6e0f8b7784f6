"""Preemption victims of controllers, against the real kube-scheduler and kube-controller-manager v1.37.2
(``vs_controllers``): the Deployment's, StatefulSet's and Job's replacement pods as the real controllers make them,
pod by pod, messages included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.random_scenarios import random_preemption_scenario
from tests.kube.vs_controllers import CONTROLLER_SCENARIOS, CONTROLLERS, canonical, run_scenario
from tests.kube.vs_kube_scheduler import PREEMPTED, Placed, load_scenarios, run_kubedra, table

SCENARIOS = {s.name: s for s in load_scenarios(CONTROLLER_SCENARIOS)}
# random_preemption_scenario is for hunting, not CI yet: with no kubelet, no pod has a start time, so where two
# candidate nodes tie on the first rules of pickOneNodeForPreemption the real scheduler's "latest start time" rule picks
# at random, and a Job's victim lingers until its finalizer is removed; seeds that agreed once (1 and 4) disagreed
# on the next run. The harness must set status.startTime as a kubelet would before its seeds can be held out here.


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("vs-controllers"), controllers=CONTROLLERS) as started:
        yield started


@pytest.mark.controlplane
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_kubedra_replaces_victims_as_the_real_controllers_do(plane: ControlPlane, name: str) -> None:
    result = run_scenario(plane, SCENARIOS[name])
    print("\n" + table([result]))
    assert result.problems == []


def test_the_deployment_scenario_keeps_four_pods_in_kubedra() -> None:
    """Without a control plane: kubedra's side of the issue's scenario (before the fix: 3 bound, the victim, no
    replacement, so the comparison's pod sets differed)."""
    outcome, names = canonical(run_kubedra(SCENARIOS["deployment-victim-replaced"].docs)[0], ["batch"])
    assert len(names["batch"]) == 5
    assert outcome["batch-#0"].node is None and outcome["batch-#0"].message.endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    assert outcome["batch-#1"] == Placed(PREEMPTED)
    assert [outcome[f"batch-#{i}"].node for i in (2, 3, 4)] == ["n0"] * 3


def test_the_random_preemption_scenarios_preempt_in_kubedra() -> None:
    """The hunting generator stays useful: most of its clusters make kubedra preempt (the seeds are not compared with
    the real scheduler in CI; see above)."""
    preempting = sum(any(p.node == PREEMPTED for p in run_kubedra(random_preemption_scenario(seed).docs)[0].values())
                     for seed in range(10))
    assert preempting >= 4
