"""kubedra's simulator against the real kube-scheduler v1.37.2: the same objects, the same pending set, and the same
node and devices wherever the placement is forced or the scores single out one node (see ``vs_kube_scheduler``).

The scenarios run on a control plane of their own (its scheduler is restarted per scenario, which would disturb
other tests sharing the session's). ``python -m tests.kube.vs_kube_scheduler [ROUNDS]`` prints the table.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.random_scenarios import random_scenario
from tests.kube.vs_kube_scheduler import (
    DRIVER,
    Comparison,
    Scenario,
    compare,
    load_scenarios,
    prepare,
    run_kubedra,
    run_scenario,
    table,
)

from kubedra.scheduler.scoring import Policy

pytestmark = pytest.mark.controlplane

SCENARIOS = {s.name: s for s in load_scenarios()}
RANDOM_SEEDS = 6
RESULTS: dict[str, Comparison] = {}


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("vs-kube-scheduler")) as started:
        yield started
    if RESULTS:
        print("\n" + table(list(RESULTS.values())))


def _result(plane: ControlPlane, scenario: Scenario) -> Comparison:
    if scenario.name not in RESULTS:
        RESULTS[scenario.name] = run_scenario(plane, scenario)[0]
    return RESULTS[scenario.name]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_kubedra_places_pods_as_kube_scheduler_does(plane: ControlPlane, name: str) -> None:
    result = _result(plane, SCENARIOS[name])
    assert result.problems == []
    assert any(p.node is not None for p in result.real.values())  # something was placed: the comparison is not empty


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RANDOM_SEEDS))
def test_random_gpu_clusters_place_exactly_alike(plane: ControlPlane, seed: int) -> None:
    """Held-out random clusters: every pod's node and devices, and the pending set."""
    result = _result(plane, random_scenario(seed))
    assert result.problems == []
    assert result.exact_checked == len(result.real) or result.tie  # all compared, or up to a tie broken otherwise


def test_the_comparison_tells_policies_apart(plane: ControlPlane) -> None:
    """On the same real outcome the older policies disagree where scores decide, so agreement above means something:
    ``least-allocated`` counts free GPUs and spreads light pods, ``first-fit`` ignores scores."""
    for name in ("scores", "spread"):
        scenario = SCENARIOS[name]
        real = _result(plane, scenario).real
        # Namespace and driver names do not move placements: the plain objects stand in for the run's.
        docs = prepare(scenario.docs, "default", DRIVER)
        assert compare(scenario, real, *run_kubedra(docs)).problems == []
        assert compare(scenario, real, *run_kubedra(docs, Policy.FIRST_FIT)).problems
    scores = SCENARIOS["scores"]
    real = _result(plane, scores).real
    assert compare(scores, real, *run_kubedra(prepare(scores.docs, "default", DRIVER), Policy.LEAST_ALLOCATED)).problems
