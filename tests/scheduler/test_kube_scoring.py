"""The ``kube-scheduler`` policy: every score plugin's weighted score per node against what kube-scheduler v1.37.2
logged for the same objects (``kube_scores.yaml``, recorded by tests/kube/real_scores.py and checked against a fresh
run by tests/kube/test_real_scores.py); the helpers' integer arithmetic (Go's truncation and rounding) on the edges the
API cannot express (a node without memory, weight-0 terms); the heap's tie-breaking against v1.37.2's own heap (the oracle's ``heap-root``);
and whole simulations where the choice is only the scores'."""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth
from tests.conformance.oracle import go_available, oracle_path
from tests.kube.real_scores import CASES, TARGET, Case, Scores, load_expected
from tests.kube.vs_kube_scheduler import without_zeros

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import ScoringRequests, pod_requests, scoring_requests
from kubedra.objects.load import load_text
from kubedra.objects.model import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    Node,
    Pod,
    ResourceClaim,
)
from kubedra.scheduler.bitsets import first_bits, mask_of, nth_bit
from kubedra.scheduler.dynamicresources import first_available_score
from kubedra.scheduler.kube_scorer import WEIGHTS, Candidate, KubeScorer
from kubedra.scheduler.nodeaffinity import preferred_affinity, preferred_terms
from kubedra.scheduler.noderesources import balance, balanced_allocation, least_allocated, least_requested
from kubedra.scheduler.normalize import default_normalize, go_div, go_round
from kubedra.scheduler.resource_scores import ResourceScores
from kubedra.scheduler.scoring import Policy
from kubedra.scheduler.selecthost import FEW_TIED, compress, heap_root, heap_root_in, heap_root_of, heap_root_rank
from kubedra.scheduler.spreading import spread_normalize
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import DEFAULT_POLICY, Options, simulate

GI = 1024**3


def _pod(spec: dict[str, Any], **meta: Any) -> Pod:
    return msgspec.convert({"metadata": {"name": "p", "namespace": "default", **meta}, "spec": spec}, Pod)


def _node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
          cpu: str = "4", memory: str = "8Gi") -> Node:
    return msgspec.convert(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
        },
        Node,
    )


def test_the_default_policy_is_kube_scheduler() -> None:
    assert DEFAULT_POLICY is Policy.KUBE_SCHEDULER
    assert Options().policy is Policy.KUBE_SCHEDULER


# ---------------------------------------------------------------------------------------------- formulas


def test_least_allocated() -> None:
    assert least_requested(3000, 4000) == 25  # (4000-3000)*100/4000
    assert least_requested(1, 3) == 66  # truncated
    assert least_requested(5000, 4000) == 0  # over capacity
    assert least_allocated([3000, 2 * GI], [4000, 8 * GI]) == 50  # (25 + 75) / 2
    assert least_allocated([3000, 2 * GI], [4000, 0]) == 25  # no memory published: cpu only
    assert least_allocated([100, 200 * 1024**2], [96000, 1152 * GI]) == 99  # both 99.9 truncated


def test_balanced_allocation_scores_the_change_in_balance() -> None:
    assert balance([3000, 2 * GI], [4000, 8 * GI]) == 75  # fractions .75 and .25: std .25
    assert balance([1000, 2 * GI], [4000, 8 * GI]) == 100
    # 50 + (50 + 75 - 100) / 2 = 50 + 12 (Go truncates)
    assert balanced_allocation([3000, 2 * GI], [1000, 2 * GI], [4000, 8 * GI]) == 62
    # a pod that makes the node more balanced scores above 50: from (.75, .25) to (.75, .75)
    assert balanced_allocation([3000, 6 * GI], [3000, 2 * GI], [4000, 8 * GI]) == 50 + (50 + 100 - 75) // 2
    assert go_div(-3, 2) == -1
    assert go_div(3, -2) == -1


def test_default_normalize() -> None:
    assert default_normalize([0, 1, 2], reverse=True) == [100, 50, 0]
    assert default_normalize([1, 2, 3], reverse=False) == [33, 66, 100]
    assert default_normalize([0, 0], reverse=True) == [100, 100]
    assert default_normalize([0, 0], reverse=False) == [0, 0]


def test_spread_normalize() -> None:
    assert spread_normalize([5, 2, 4]) == [40, 100, 60]  # 100*(5+2-s)/5
    assert spread_normalize([0, 0]) == [100, 100]


def test_go_round_is_half_away_from_zero() -> None:
    assert go_round(2.5) == 3
    assert go_round(3.5) == 4
    assert go_round(-2.5) == -3
    assert go_round(5.2189) == 5


@pytest.mark.oracle
@pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built")
def test_heap_root_is_the_node_kube_scheduler_pops() -> None:
    """``heap_root`` against v1.37.2's own ``framework.NewSortedScoredNodes(...).Pop()`` (``oracle heap-root``), on
    lists with many ties (totals 0..3) and with few (0..1000), 1 to 60 nodes."""
    rng = random.Random(13)
    lists = [[1, 5, 5], [1, 2, 5, 5], [5, 5, 5], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 9, 9]]
    lists += [[rng.randint(0, rng.choice([3, 1000])) for _ in range(rng.randint(1, 60))] for _ in range(3000)]
    binary = oracle_path()
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: run tests/oracle/build.sh")
    answer = subprocess.run([str(binary), "heap-root"], input=json.dumps(lists), capture_output=True, text=True,
                            timeout=60, check=True)
    roots = json.loads(answer.stdout)
    assert [heap_root(totals) for totals in lists] == roots
    assert roots[1] == 3  # not the first of the tied nodes: the check has teeth


def test_node_affinity_sums_weights_of_matching_preferred_terms() -> None:
    pod = _pod({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]}},
        {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
        {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
        {"weight": 50, "preference": {}},
    ]}}})
    terms = preferred_terms(pod)
    assert [t.weight for t in terms] == [10, 3]  # weight 0 and empty terms are dropped as upstream does
    assert preferred_affinity(_node("a", {"gpu": "h100", "zone": "x"}), terms) == 13
    assert preferred_affinity(_node("b", {"zone": "x"}), terms) == 3
    assert preferred_affinity(_node("c"), terms) == 0


def test_first_available_score() -> None:
    claim = msgspec.convert({
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu"}, {"name": "small", "deviceClassName": "gpu"},
        ]}]}},
    }, ResourceClaim)

    def allocation(request: str) -> AllocationResult:
        return AllocationResult(devices=DeviceAllocationResult(results=[
            DeviceRequestAllocationResult(request=request, driver="d", pool="p", device="x"),
        ]))

    assert first_available_score([claim], [allocation("gpu/big")]) == 8
    assert first_available_score([claim], [allocation("gpu/small")]) == 7


def test_scoring_requests_count_missing_requests_as_100m_and_200mi() -> None:
    pod = _pod({
        "containers": [
            {"name": "a"},  # nothing: non-zero defaults
            {"name": "b", "resources": {"requests": {"cpu": "0"}}},  # explicit 0 stays 0; memory defaulted
            {"name": "c", "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}}},  # requests from limits
        ],
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "init", "resources": {"requests": {"cpu": "5", "memory": "1Gi"}}},
        ],
        "overhead": {"cpu": "250m"},
    })
    got = scoring_requests(pod)
    # containers + sidecar = 2500m; the init container's peak is 5000m + the sidecar's 1000m = 6000m; + overhead
    assert got.milli_cpu == 6000 + 250
    assert got.nonzero_milli_cpu == 6000 + 250  # the init peak dominates the 100m default of container a
    assert got.memory == 2 * GI  # c + sidecar, and the init container's peak (1Gi + the sidecar's 1Gi)
    assert got.nonzero_memory == 2 * 200 * 1024**2 + 2 * GI
    empty = scoring_requests(_pod({"containers": [{"name": "a"}]}))
    assert empty == ScoringRequests(0, 0, 100, 200 * 1024**2)


# ---------------------------------------------------------------------------------------------- the profile


def _state(nodes: list[Node]) -> ClusterState:
    return ClusterState.build(nodes=nodes, slices=[], classes=[])


def _record(pod: Pod) -> PodRecord:
    return PodRecord(pod=pod, requests=pod_requests(pod))


def _bind(state: ClusterState, pod: Pod, node: str) -> None:
    state.bind(_record(pod), node)


# ---------------------------------------------------------------------------------------------- whole runs


def _nodes_yaml(count: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{i}", "labels": {"kubernetes.io/hostname": f"n-{i}"}},
         "status": {"allocatable": {"cpu": "96", "memory": "1024Gi", "pods": "110"}}}
        for i in range(count)
    ]


def _placements(docs: list[dict[str, Any]], policy: Policy) -> list[str]:
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    result = simulate(scenario, Options(policy=policy))
    return [e.node for e in result.events if e.type == "Scheduled"]


def test_light_bare_pods_pack_onto_the_first_node() -> None:
    """Pods requesting nothing count as 100m / 200Mi: on 96-core nodes LeastAllocated is 99 for the first nine of them
    (truncation) and Balanced skips them, so all nodes tie and the heap's root is the first feasible node, every time.
    ``least-allocated`` draws among the ties instead."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"containers": [{"name": "c"}]}} for i in range(4)]
    assert _placements(_nodes_yaml(3) + pods, Policy.KUBE_SCHEDULER) == ["n-0"] * 4
    assert _placements(_nodes_yaml(3) + pods, Policy.LEAST_ALLOCATED) != ["n-0"] * 4  # ties drawn at random


def test_deployment_pods_spread_by_the_default_constraints() -> None:
    """The same light pods in a Deployment spread: PodTopologySpread's hostname constraint counts its pods."""
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
    }
    assert _placements([*_nodes_yaml(3), deployment], Policy.KUBE_SCHEDULER) == ["n-0", "n-1", "n-2"]


def test_ties_are_recorded_with_the_tied_nodes() -> None:
    """What the comparison with the real scheduler needs to tell a tie broken otherwise from a difference."""
    state = _state([_node("a", cpu="96", memory="1024Gi"), _node("b", cpu="96", memory="1024Gi"), _node("c")])
    scorer = KubeScorer(state)
    light = _record(_pod({"containers": [{"name": "x"}]}))
    assert scorer.choose(light, [Candidate("a"), Candidate("b"), Candidate("c")]) == 0
    assert scorer.tied == {"default/p": frozenset({"a", "b"})}
    heavy = _record(_pod({"containers": [{"name": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}))
    assert scorer.choose(heavy, [Candidate("a"), Candidate("c")]) == 0
    assert scorer.tied == {}  # the same pod key chose again, without a tie


def test_ties_are_kept_only_when_asked() -> None:
    """The simulation's scorer keeps no tie log (a bitset per tied pod until the run ends); the same choice."""
    state = _state([_node("a", cpu="96", memory="1024Gi"), _node("b", cpu="96", memory="1024Gi"), _node("c")])
    scorer = KubeScorer(state, keep_ties=False)
    light = _record(_pod({"containers": [{"name": "x"}]}))
    assert scorer.choose(light, [Candidate("a"), Candidate("b"), Candidate("c")]) == 0
    assert scorer.choose_window(light, 0b111, 0) == 0
    assert scorer.tied == {}
    scorer.keep_ties()
    assert scorer.choose(light, [Candidate("a"), Candidate("b"), Candidate("c")]) == 0
    assert scorer.tied == {"default/p": frozenset({"a", "b"})}
    scorer.keep_ties(False)
    assert scorer.tied == {}


def test_heap_root_of_the_highest_positions_is_heap_root() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        totals = [rng.randint(0, 3) for _ in range(rng.randint(1, 40))]
        best = max(totals)
        assert heap_root_of(i for i, t in enumerate(totals) if t == best) == heap_root(totals)


def test_heap_root_in_finds_the_descent_on_long_lists() -> None:
    """The level-by-level search against Go's ``heap.Init`` written out (``heap_root``) on lists of up to 5,000 nodes
    with a few highest totals anywhere (deep levels, far apart) or many."""
    rng = random.Random(17)
    for _ in range(300):
        n = rng.randint(1, 5000)
        tops = rng.sample(range(n), min(n, rng.choice([1, 2, 3, 10, n // 2 + 1])))
        totals = [0] * n
        for i in tops:
            totals[i] = 1
        assert heap_root_in(mask_of(tops)) == heap_root(totals)


def test_choose_window_is_choose_over_the_window_in_walk_order() -> None:
    """The class-based chooser of the fast path against the node-by-node one, on random clusters and windows."""
    rng = random.Random(11)
    for _ in range(200):
        nodes = [_node(f"n{i}", cpu=rng.choice(["4", "8", "96"]), memory=rng.choice(["16Gi", "1024Gi"]))
                 for i in range(rng.randint(2, 12))]
        state = _state(nodes)
        scorer = KubeScorer(state)
        for j in range(rng.randint(0, 20)):
            requests = rng.choice([{}, {"cpu": "100m"}, {"cpu": "1", "memory": "1Gi"}, {"memory": "2Gi"}])
            pod = _pod({"containers": [{"name": "x", "resources": {"requests": requests}}]}, name=f"b{j}")
            _bind(state, pod, rng.choice(nodes).metadata.name)
        window = rng.randrange(1, 1 << len(nodes))
        start = rng.randrange(len(nodes))
        order = [i for i in range(start, len(nodes)) if window >> i & 1] + [i for i in range(start) if window >> i & 1]
        requests = rng.choice([{}, {"cpu": "500m", "memory": "1Gi"}])
        record = _record(_pod({"containers": [{"name": "x", "resources": {"requests": requests}}]}))
        assert scorer.by_groups()
        expected = order[scorer.choose(record, [Candidate(nodes[i].metadata.name) for i in order])]
        tied = scorer.tied.get(record.key)
        assert scorer.choose_window(record, window, start) == expected
        assert scorer.tied.get(record.key) == tied


@settings(max_examples=depth.examples(60, 600), deadline=None)
@given(st.data())
def test_choose_window_after_binds_and_departures_is_choose_from_scratch(data: st.DataObject) -> None:
    """The incremental state behind ``choose_window`` (score classes, per-node totals per request shape) against the
    node-by-node scorer's formulas, read after every step of a random sequence of binds and pods leaving (completed
    or deleted: both unbind), with request shapes asked again after their nodes changed."""
    count = data.draw(st.integers(2, 14), label="nodes")
    nodes = [_node(f"n{i}", cpu=data.draw(st.sampled_from(["4", "8", "96"])),
                   memory=data.draw(st.sampled_from(["16Gi", "64Gi", "1024Gi"]))) for i in range(count)]
    state = _state(nodes)
    scorer = KubeScorer(state)
    shapes = [{}, {"cpu": "100m"}, {"cpu": "1", "memory": "1Gi"}, {"memory": "2Gi"}, {"cpu": "3", "memory": "5Gi"}]
    bound: list[tuple[PodRecord, str]] = []
    for step in range(data.draw(st.integers(1, 40), label="steps")):
        action = data.draw(st.sampled_from(["bind", "bind", "leave", "read"]))
        if action == "bind":
            requests = data.draw(st.sampled_from(shapes))
            record = _record(_pod({"containers": [{"name": "x", "resources": {"requests": requests}}]},
                                  name=f"b{step}"))
            node = nodes[data.draw(st.integers(0, count - 1))].metadata.name
            state.bind(record, node)
            bound.append((record, node))
        elif action == "leave" and bound:
            record, node = bound.pop(data.draw(st.integers(0, len(bound) - 1)))
            state.unbind(record, node)
        else:
            window = data.draw(st.integers(1, (1 << count) - 1), label="window")
            start = data.draw(st.integers(0, count - 1), label="start")
            order = [i for i in range(start, count) if window >> i & 1] + [i for i in range(start) if window >> i & 1]
            requests = data.draw(st.sampled_from(shapes))
            record = _record(_pod({"containers": [{"name": "x", "resources": {"requests": requests}}]}))
            expected = order[scorer.choose(record, [Candidate(nodes[i].metadata.name) for i in order])]
            tied = scorer.tied.get(record.key)
            assert scorer.choose_window(record, window, start) == expected
            assert scorer.tied.get(record.key) == tied


def test_resource_scores_follow_every_touch() -> None:
    """Per-node totals per shape against a from-scratch maximum, through more touches than the log keeps (it starts
    over, and each shape is then rebuilt) and shapes read seldom."""
    rng = random.Random(13)
    keys = [rng.randrange(50) for _ in range(30)]
    scores: ResourceScores[int] = ResourceScores(keys, lambda key, wants: (key * wants.milli_cpu) % 17)
    wants = [ScoringRequests(milli_cpu=m) for m in (1, 2, 3, 5, 7)]
    for _ in range(5000):
        i = rng.randrange(len(keys))
        keys[i] = rng.randrange(50)
        scores.touched(i)
        if rng.random() < 0.3:
            shape = rng.choice(wants)
            window = rng.randrange(1, 1 << len(keys))
            totals = {j: (keys[j] * shape.milli_cpu) % 17 for j in range(len(keys)) if window >> j & 1}
            best = max(totals.values())
            assert scores.best(window, shape) == mask_of([j for j, t in totals.items() if t == best])


def test_compress_packs_the_selected_bits() -> None:
    assert compress(0b1010, 0b1110) == 0b101  # bits 1..3 of 1010 -> 1, 0, 1
    assert compress(0, 0b11) == 0
    assert compress(0b1111_0110, 0b0110) == 0b11  # bits above the selector's span are not read
    assert compress(0b1, 0) == 0
    rng = random.Random(3)
    for _ in range(500):
        width = rng.randint(1, 300)
        selector, bits = rng.getrandbits(width), rng.getrandbits(width)
        expected = [bits >> i & 1 for i in range(width) if selector >> i & 1]
        got = compress(bits, selector)
        assert [got >> j & 1 for j in range(len(expected))] == expected
        assert got >> len(expected) == 0


def test_heap_root_rank_is_the_root_of_the_packed_ranks() -> None:
    """Its shortcuts (first listed node tied, a list without gaps, a few tied nodes counted one by one) against
    packing every rank."""
    rng = random.Random(5)
    for _ in range(2000):
        width = rng.randint(1, 400)
        walk = rng.getrandbits(width) | 1 << (width - 1) if rng.random() < 0.7 else (1 << width) - 1
        listed = [i for i in range(width) if walk >> i & 1]
        tied_count = rng.choice([1, 2, 3, FEW_TIED, FEW_TIED + 1, len(listed)])
        tied = mask_of(rng.sample(listed, min(tied_count, len(listed))))
        assert heap_root_rank(tied, walk) == heap_root_in(compress(tied, walk))


def test_resource_total_is_the_plugin_formulas_weighted() -> None:
    """The fast path's written-out cpu/memory sum against NodeResourcesFit + BalancedAllocation as the plugins have
    them, on random nodes (some without cpu or memory published), usages and pods (some asking nothing)."""
    from kubedra.scheduler.noderesources import resource_total

    rng = random.Random(5)
    scorer = KubeScorer(_state([_node("a")]))
    for _ in range(20000):
        have = (rng.choice([0, 1000, 4000, 96000]), rng.choice([0, 8 * GI, 1024 * GI]))
        used = ScoringRequests(rng.choice([0, rng.randrange(0, 100000)]), rng.choice([0, rng.randrange(0, 1100 * GI)]),
                               rng.randrange(0, 100000), rng.randrange(0, 1100 * GI))
        wants = ScoringRequests(rng.choice([0, 100, 2500]), rng.choice([0, GI, 64 * GI]),
                                rng.choice([100, 2500]), rng.choice([200 * 1024**2, 64 * GI]))
        fit, balanced = scorer.resources((have, used), wants)
        assert resource_total((have, used), wants) == fit + balanced


# ---------------------------------------------------------------------------------------------- the real scheduler's


def _scores_against_the_real_scheduler(case: Case) -> tuple[Scores, Scores]:
    """kubedra's weighted scores per node for the case's target, and the real scheduler's recorded ones, both without
    the plugins that scored 0 (the real scheduler's log leaves out plugins whose PreScore skipped)."""
    real = load_expected()[case.name]
    docs = [d for d in case.docs if d["kind"] in ("Node", "Pod")]
    nodes = [msgspec.convert(d, Node) for d in docs if d["kind"] == "Node"]
    state = _state(nodes)
    target = None
    for doc in docs:
        if doc["kind"] != "Pod":
            continue
        body = {**doc, "metadata": {**doc["metadata"], "namespace": "default"}}
        pod = msgspec.convert(body, Pod)
        if doc["metadata"]["name"] == TARGET:
            target = pod
        else:
            _bind(state, pod, doc["spec"]["nodeName"])
    assert target is not None
    candidates = [Candidate(n.metadata.name) for n in nodes if n.metadata.name in real]
    ours = {s.node: {**{p: WEIGHTS[p] * v for p, v in s.plugins.items() if v}, "total": s.total}
            for s in KubeScorer(state).score(_record(target), candidates)}
    return ours, without_zeros(real)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scores_are_the_real_schedulers(case: Case) -> None:
    """Each plugin's weighted score and each total per feasible node, as kube-scheduler v1.37.2 logged them at -v=10
    for the same objects (tests/scheduler/kube_scores.yaml, recorded by tests/kube/real_scores.py)."""
    ours, theirs = _scores_against_the_real_scheduler(case)
    assert ours == theirs, case.why


def test_nth_bit_is_the_nth_set_position() -> None:
    """Its shortcuts (the lowest bit, a run of set bits from 0, a wide set halved first) against counting."""
    rng = random.Random(11)
    for _ in range(1000):
        width = rng.choice([1, 5, 64, 700, 3000, 9000])
        x = rng.getrandbits(width) | ((1 << rng.randint(0, width)) - 1 if rng.random() < 0.4 else 0)
        listed = [i for i in range(width) if x >> i & 1]
        if not listed:
            continue
        n = rng.randrange(len(listed))
        assert nth_bit(x, n) == listed[n]


def test_first_bits_is_the_walk_from_the_start() -> None:
    """The span-by-span search against walking the positions from ``start`` (wrapping) one by one, on sparse, dense
    and empty sets, narrow and wide."""
    rng = random.Random(19)
    for _ in range(1500):
        width = rng.choice([1, 7, 64, 300, 5000])
        density = rng.choice([0.0, 0.01, 0.3, 1.0])
        listed = [i for i in range(width) if rng.random() < density]
        mask, start, wanted = mask_of(listed), rng.randrange(width), rng.randint(1, 40)
        walked = [i % width for i in range(start, start + width) if mask >> (i % width) & 1][:wanted]
        visited = width if len(walked) < wanted else (walked[-1] - start) % width + 1
        assert first_bits(mask, start, wanted, width) == (mask_of(walked), visited, len(walked))
