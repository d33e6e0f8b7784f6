"""kubedra's simulator against the real kube-scheduler v1.37.2: the same objects, the same pending set, and the same
node and devices for every pod the scenario names, ties included (see ``vs_kube_scheduler``: with ``parallelism: 1``
the real scheduler breaks ties by the same heap over the same node order).

The scenarios run on a control plane of their own (its scheduler is restarted per scenario, which would disturb
other tests sharing the session's). ``python -m tests.kube.vs_kube_scheduler [ROUNDS [RANDOM]]`` prints the table;
``scripts/fidelity kube-scheduler`` writes it into docs/fidelity.md, which the last test holds to this run.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator

import pytest
from tests import fidelity
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.random_scenarios import random_placement_scenario, random_scenario, random_user_scenario
from tests.kube.vs_kube_scheduler import (
    DEFAULT_PARALLELISM,
    DRIVER,
    LARGE_USER_NODES,
    PARALLELISM,
    RANDOM_SEEDS,
    Comparison,
    Scenario,
    compare,
    load_scenarios,
    page_scenarios,
    placement_scenarios,
    prepare,
    run_kubedra,
    run_scenario,
    summary,
    tie_picks,
    user_scenarios,
)

from kubedra.scheduler.scoring import Policy

pytestmark = pytest.mark.controlplane

SCENARIOS = {s.name: s for s in load_scenarios()}
USER_SCENARIOS = {s.name: s for s in user_scenarios()}
PLACEMENT_SCENARIOS = {s.name: s for s in placement_scenarios()}
TIE_ROUNDS = 2  # runs of the ties scenario at the default parallelism (12 tied picks each)
RESULTS: dict[str, list[Comparison]] = {}  # scenario -> one comparison per policy (the kube-scheduler one first)
POLICIES = list(Policy)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("vs-kube-scheduler"),
                               scheduler_config={"parallelism": PARALLELISM}) as started:
        yield started


def _result(plane: ControlPlane, scenario: Scenario) -> Comparison:
    if scenario.name not in RESULTS:
        RESULTS[scenario.name] = run_scenario(plane, scenario, POLICIES)
    return RESULTS[scenario.name][0]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_kubedra_places_pods_as_kube_scheduler_does(plane: ControlPlane, name: str) -> None:
    scenario = SCENARIOS[name]
    result = _result(plane, scenario)
    assert result.problems == []
    if scenario.expect.get("messages") and sorted(scenario.expect.get("pending", [])) == sorted(result.real):
        return  # a scenario whose every pod pends (no-nodes): its messages, compared whole, are the comparison
    assert any(p.node is not None for p in result.real.values())  # something was placed: the comparison is not empty


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RANDOM_SEEDS))
def test_random_gpu_clusters_place_exactly_alike(plane: ControlPlane, seed: int) -> None:
    """Held-out random clusters: every pod's node and devices, and the pending set."""
    result = _result(plane, random_scenario(seed))
    assert result.problems == []
    assert result.exact_checked == len(result.real)


@pytest.mark.slow
def test_a_fresh_random_gpu_cluster_places_exactly_alike(plane: ControlPlane) -> None:
    """One random cluster drawn anew each run (the seed is in the failure message), beyond the page's fixed seeds."""
    seed = secrets.randbelow(2**32)
    result = run_scenario(plane, random_scenario(seed))[0]
    assert result.problems == [], f"random_scenario({seed})"
    assert result.exact_checked == len(result.real)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(USER_SCENARIOS))
def test_random_user_workloads_place_exactly_alike(plane: ControlPlane, name: str) -> None:
    """Held-out random clusters in zones running ReplicaSets', StatefulSets', Jobs' and bare pods
    (``random_user_scenario``): every pod's node and devices, the pending set and every pending message from kubedra's
    default run, whose fast path (``KubeScorer.choose_window``, ``SpreadCounts``, ``ResourceScores``) makes the choices.

    Its scores are held to the real scheduler's log too (``compare_window``), as far as it computes them: it scores
    groups of nodes alike in every input, and sums NodeResourcesFit and NodeResourcesBalancedAllocation; with neither
    PreferNoSchedule taints, preferred node affinity nor an owner to spread by, it computes only that sum
    (TaintToleration, NodeAffinity and PodTopologySpread, which it takes to score every node alike, are then checked
    to do so in the log, and no total is computed: the best nodes are checked instead). InterPodAffinity and
    DynamicResources are never computed there (a pod they would score takes the node-by-node path). The owners make
    no pods themselves: the control plane runs no replicaset, statefulset or job controller (nor the garbage
    collector), so the real scheduler sees exactly the pods kubedra does. The large ones (more than 100 nodes) have
    Filter stop at ``numFeasibleNodesToFind`` feasible nodes, the fast path's window, from a rotating start."""
    result = _result(plane, USER_SCENARIOS[name])
    assert result.problems == []
    assert result.exact_checked == len(result.real)


@pytest.mark.slow
def test_a_fresh_random_user_workload_places_exactly_alike(plane: ControlPlane) -> None:
    """One random user-shaped cluster drawn anew each run, small and large (the seed is in the failure message)."""
    seed = secrets.randbelow(2**32)
    result = run_scenario(plane, random_user_scenario(seed))[0]
    assert result.problems == [], f"random_user_scenario({seed})"
    assert result.exact_checked == len(result.real)
    result = run_scenario(plane, random_user_scenario(seed, LARGE_USER_NODES))[0]
    assert result.problems == [], f"random_user_scenario({seed}, {LARGE_USER_NODES})"
    assert result.exact_checked == len(result.real)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLACEMENT_SCENARIOS))
def test_random_placement_terms_place_exactly_alike(plane: ControlPlane, name: str) -> None:
    """Held-out random clusters in zones and racks whose owners' and bare pods carry required and preferred pod
    affinity and anti-affinity and explicit topologySpreadConstraints (``random_placement_scenario``): every pod's
    node and devices, the pending set and every pending message, and every bound pod's scores, InterPodAffinity's and
    PodTopologySpread's among them."""
    result = _result(plane, PLACEMENT_SCENARIOS[name])
    assert result.problems == []
    assert result.exact_checked == len(result.real)


@pytest.mark.slow
def test_a_fresh_random_placement_scenario_places_exactly_alike(plane: ControlPlane) -> None:
    """One random cluster with pod (anti-)affinity and spread constraints drawn anew each run (the seed is in the
    failure message), beyond the fixed seeds: pending pods re-queued when a pod they may follow is bound."""
    seed = secrets.randbelow(2**32)
    result = run_scenario(plane, random_placement_scenario(seed))[0]
    assert result.problems == [], f"random_placement_scenario({seed})"
    assert result.exact_checked == len(result.real)


def test_ties_at_the_default_parallelism_stay_among_the_tied_nodes(plane: ControlPlane) -> None:
    """With 16 Filter goroutines the real scheduler's pick among tied nodes follows a race, not kubedra's node order:
    every pick must still be one of the nodes the real scheduler's own log scored highest, and that set must be the
    one kubedra's scorer found tied, pod by pod (the ``ties`` scenario's scores do not depend on earlier picks)."""
    scenario = SCENARIOS["ties"]
    picks = [pick for _ in range(TIE_ROUNDS) for pick in tie_picks(plane, scenario, DEFAULT_PARALLELISM)]
    big = frozenset({"big-0", "big-1", "big-2"})
    assert len(picks) == TIE_ROUNDS * 12
    for pick in picks:
        assert pick.real_top == big, pick
        assert pick.kubedra_top == big, pick
        assert pick.node in pick.real_top, pick
    chosen = Counter(pick.node for pick in picks)
    print(f"\nties at parallelism {DEFAULT_PARALLELISM}: {dict(sorted(chosen.items()))} of {len(picks)} picks")


def test_the_comparison_tells_policies_apart(plane: ControlPlane) -> None:
    """On the same real outcome the older policies disagree where scores decide, so agreement above means something:
    ``least-allocated`` counts free GPUs and spreads light pods, ``first-fit`` ignores scores."""
    for name in ("scores", "spread"):
        scenario = SCENARIOS[name]
        real = _result(plane, scenario).real
        # Namespace and driver names do not move placements: the plain objects stand in for the run's.
        docs = prepare(scenario.docs, "default", DRIVER)
        assert compare(scenario, real, run_kubedra(docs)[0]).problems == []
        assert compare(scenario, real, run_kubedra(docs, Policy.FIRST_FIT)[0]).problems
    scores = SCENARIOS["scores"]
    real = _result(plane, scores).real
    docs = prepare(scores.docs, "default", DRIVER)
    assert compare(scores, real, run_kubedra(docs, Policy.LEAST_ALLOCATED)[0]).problems


@pytest.mark.slow
def test_the_fidelity_page_states_this_run(plane: ControlPlane) -> None:
    """docs/fidelity.md's kube-scheduler table and policy counts are this run's (``scripts/fidelity kube-scheduler``
    rewrites them)."""
    scenarios = page_scenarios()
    for scenario in scenarios:
        _result(plane, scenario)
    fidelity.assert_section("kube-scheduler", summary([RESULTS[s.name] for s in scenarios], POLICIES))
