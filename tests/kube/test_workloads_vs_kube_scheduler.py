"""Gangs and PodGroup claims: kubedra against the real kube-scheduler v1.37.2 with GenericWorkload and
DRAWorkloadResourceClaims on (and ``scheduling.k8s.io/v1beta1`` served, without which that scheduler never becomes
ready). The scenarios are ``scenarios-workloads/``; the comparison is ``vs_kube_scheduler``'s: which pods bind (the
pending set), how many per node, and where forced, which node and devices."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.vs_kube_scheduler import WORKLOAD_GATES, WORKLOAD_SCENARIOS, load_scenarios, run_scenario, table

pytestmark = pytest.mark.controlplane

SCENARIOS = {s.name: s for s in load_scenarios(WORKLOAD_SCENARIOS)}
CONTROLLERS = ("resourceclaim-controller", "podgroup-protection-controller")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(
        tmp_path_factory.mktemp("vs-kube-scheduler-workloads"),
        apiserver_args=["--runtime-config", "scheduling.k8s.io/v1beta1=true"],
        feature_gates=WORKLOAD_GATES,
        controllers=CONTROLLERS,
    ) as started:
        yield started


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_kubedra_schedules_gangs_as_kube_scheduler_does(plane: ControlPlane, name: str) -> None:
    result = run_scenario(plane, SCENARIOS[name])[0]
    print("\n" + table([result]))
    assert result.problems == []


def test_every_workload_scenario_runs_with_the_gates_on() -> None:
    """The scenarios here only mean something with the Workload API on, in kubedra as in the control plane."""
    assert SCENARIOS
    for scenario in SCENARIOS.values():
        assert scenario.expect.get("gates", {}).get("GenericWorkload") is True, scenario.name
