"""PodTopologySpread's explicit constraints (``scheduler/podtopologyspread``): the counting rules of v1.37.2's PreFilter
and Filter, its Score and NormalizeScore, the validation of the field, and the scheduler and explain using them
(issue 38; the placements themselves are compared with the real scheduler in tests/kube/scenarios/spread-*)."""

from __future__ import annotations

import math
import random
from typing import Any

import msgspec
import pytest
import yaml
from tests.scheduler.fast_or_walk import fast_and_walked, random_nodes

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import NodeUsage, pod_requests
from kubedra.objects.load import load_text
from kubedra.objects.model import Node, Pod
from kubedra.scheduler.bitsets import positions
from kubedra.scheduler.explain import explain_pod
from kubedra.scheduler.kube_scorer import Candidate, KubeScorer
from kubedra.scheduler.nodefit import node_fit_reason
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.podtopologyspread import (
    CONSTRAINTS_REASON,
    DO_NOT_SCHEDULE,
    MISSING_LABEL_REASON,
    SCHEDULE_ANYWAY,
    cluster_nodes,
    constraints_of,
    normalize,
    prefilter,
    scores_for,
)
from kubedra.scheduler.podtopologyspread_state import SpreadIndex
from kubedra.scheduler.preemption import resolvable
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

H, Z = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _tsc(key: str = Z, skew: int = 1, when: str = DO_NOT_SCHEDULE, app: str | None = "web", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **more}
    if app is not None:
        out["labelSelector"] = {"matchLabels": {"app": app}}
    return out


def _pod(name: str, labels: dict[str, str] | None = None, *constraints: dict[str, Any], namespace: str = "default",
         owner: str = "", **spec: Any) -> Pod:
    doc = {"containers": [{"name": "c"}], "topologySpreadConstraints": list(constraints), **spec}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "",
                                    "controller": True}]
    return msgspec.convert({"metadata": meta, "spec": doc}, Pod)


def _node(name: str, zone: str | None = None, taints: list[dict[str, str]] | None = None, **labels: str) -> Node:
    all_labels = {H: name, **({Z: zone} if zone else {}), **labels}
    return msgspec.convert({"metadata": {"name": name, "labels": all_labels}, "spec": {"taints": taints or []},
                            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}, Node)


WEB = {"app": "web"}


def test_constraints_read_defaults_and_merge_match_label_keys() -> None:
    pod = _pod("p", {"app": "web", "version": "v1"}, _tsc(matchLabelKeys=["version", "absent"]),
               _tsc(H, when=SCHEDULE_ANYWAY, minDomains=None))
    hard, = constraints_of(pod, DO_NOT_SCHEDULE)
    assert (hard.min_domains, hard.honor_affinity, hard.honor_taints) == (1, True, False)
    assert hard.matches(pod)
    assert not hard.matches(_pod("q", {"app": "web", "version": "v2"}))  # version In (v1) merged in
    soft, = constraints_of(pod, SCHEDULE_ANYWAY)
    assert soft.topology_key == H
    assert constraints_of(pod, DO_NOT_SCHEDULE) is constraints_of(pod, DO_NOT_SCHEDULE)  # remembered per pod
    assert not constraints_of(_pod("r", WEB, _tsc(app=None)), DO_NOT_SCHEDULE)[0].matches(_pod("s", WEB))


def test_counts_per_domain_namespace_terminating_and_self_match() -> None:
    a1, a2, b1 = _node("a1", "a"), _node("a2", "a"), _node("b1", "b")
    gone = _pod("gone", WEB)
    gone = msgspec.structs.replace(gone, metadata=msgspec.structs.replace(gone.metadata,
                                                                          deletion_timestamp="2026-01-01T00:00:00Z"))
    nodes = [(a1, [_pod("x", WEB), _pod("y", WEB, namespace="other")]), (a2, [_pod("z", WEB), gone]),
             (b1, [_pod("w", {"app": "db"})])]
    state = prefilter(_pod("in", WEB, _tsc()), nodes)
    assert state is not None
    assert state.counts == [{"a": 2, "b": 0}] and state.minimum == (0,) and state.self_match == (1,)
    assert state.reason(b1) is None  # 0 + 1 - 0 <= 1
    assert state.reason(a1) == CONSTRAINTS_REASON  # 2 + 1 - 0 > 1
    outsider = prefilter(_pod("in", {"app": "db"}, _tsc()), nodes)  # does not match its own selector
    assert outsider is not None and outsider.self_match == (0,) and outsider.reason(a1) == CONSTRAINTS_REASON
    assert prefilter(_pod("soft", WEB, _tsc(when=SCHEDULE_ANYWAY)), nodes) is None  # no DoNotSchedule: Skip
    assert prefilter(_pod("none", WEB), nodes) is None


def test_missing_key_refuses_and_leaves_the_node_uncounted() -> None:
    a1, bare = _node("a1", "a"), _node("bare")
    state = prefilter(_pod("in", WEB, _tsc(), _tsc(H, skew=5)), [(a1, [_pod("x", WEB)]), (bare, [_pod("y", WEB)])])
    assert state is not None
    assert state.counts == [{"a": 1}, {"a1": 1}]  # the bare node lacks the zone key: counted for neither
    assert state.reason(bare) == MISSING_LABEL_REASON
    assert state.reason(a1) is None
    assert resolvable(CONSTRAINTS_REASON) and not resolvable(MISSING_LABEL_REASON)


def test_min_domains_takes_the_global_minimum_as_zero() -> None:
    a1, b1 = _node("a1", "a"), _node("b1", "b")
    nodes = [(a1, [_pod("x", WEB)]), (b1, [_pod("y", WEB)])]
    loose = prefilter(_pod("in", WEB, _tsc(minDomains=2)), nodes)
    strict = prefilter(_pod("in", WEB, _tsc(minDomains=3)), nodes)
    assert loose is not None and strict is not None
    assert loose.minimum == (1,) and loose.reason(a1) is None
    assert strict.minimum == (0,) and strict.reason(a1) == strict.reason(b1) == CONSTRAINTS_REASON


def test_node_affinity_and_taint_policies_choose_the_counted_nodes() -> None:
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    a1, b1 = _node("a1", "a", pool="main"), _node("b1", "b", pool="main")
    c1, d1 = _node("c1", "c", pool="other"), _node("d1", "d", taint, pool="main")
    nodes = [(a1, [_pod("x", WEB)]), (b1, [_pod("y", WEB)]), (c1, []), (d1, [])]
    main = {"pool": "main"}

    def counted(*more: Any, **spec: Any) -> dict[str, int]:
        state = prefilter(_pod("in", WEB, _tsc(**dict(more)), nodeSelector=main, **spec), nodes)
        assert state is not None
        return state.counts[0]

    assert counted() == {"a": 1, "b": 1, "d": 0}  # Honor affinity (c out), Ignore taints (d in)
    assert counted(("nodeTaintsPolicy", "Honor")) == {"a": 1, "b": 1}
    tolerated = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    assert counted(("nodeTaintsPolicy", "Honor"), tolerations=tolerated) == {"a": 1, "b": 1, "d": 0}
    assert counted(("nodeAffinityPolicy", "Ignore")) == {"a": 1, "b": 1, "c": 0, "d": 0}


def test_node_fit_reason_runs_spread_after_resources() -> None:
    a1 = _node("a1", "a")
    pod = _pod("in", WEB, _tsc(minDomains=2))
    state = prefilter(pod, [(a1, [_pod("x", WEB)])])
    assert state is not None
    assert node_fit_reason(pod, pod_requests(pod), a1, NodeUsage(), spread=state) == CONSTRAINTS_REASON
    assert node_fit_reason(pod, pod_requests(pod), a1, NodeUsage()) is None


def test_score_weights_counts_by_domains_and_ignores_nodes_without_keys() -> None:
    a1, a2, b1, bare = _node("a1", "a"), _node("a2", "a"), _node("b1", "b"), _node("bare")
    pods = {"a1": [_pod("x", WEB), _pod("y", WEB)], "b1": [_pod("z", WEB)], "bare": [_pod("w", WEB)]}
    nodes = [(n, pods.get(n.metadata.name, [])) for n in (a1, a2, b1, bare)]
    pod = _pod("in", WEB, _tsc(when=SCHEDULE_ANYWAY, skew=2), _tsc(H, when=SCHEDULE_ANYWAY))
    got = scores_for(pod, nodes, [a1, a2, b1, bare], pods)
    zone_w, host_w = math.log(2 + 2), math.log(3 + 2)  # zones a, b; three feasible nodes carry both keys

    def raw(zone: int, host: int) -> int:
        total = 0.0
        total += zone * zone_w + 1.0
        total += host * host_w + 0.0
        return math.floor(total + 0.5)

    want = [raw(2, 2), raw(2, 0), raw(1, 1)]
    high, low = max(want), min(want)
    assert got == [100 * (high + low - s) // high for s in want] + [0]
    assert scores_for(_pod("hard", WEB, _tsc()), nodes, [a1, b1], pods) == [0, 0]  # no ScheduleAnyway: Skip
    assert normalize([None, 0, 0]) == [0, 100, 100]


def test_explicit_constraints_replace_the_system_defaults_in_scoring() -> None:
    nodes = [_node("n0"), _node("n1")]
    state = ClusterState.build(nodes=nodes, slices=[], classes=[])
    first = _pod("web-0", WEB, owner="web")
    state.bind(PodRecord(pod=first, requests=pod_requests(first)), "n0")
    scorer = KubeScorer(state)
    owned = _pod("web-1", WEB, _tsc(Z, when=SCHEDULE_ANYWAY), owner="web")  # no node has a zone: all ignored

    def spread(pod: Pod) -> list[int]:
        scores = scorer.score(PodRecord(pod=pod, requests=pod_requests(pod)), [Candidate(n.metadata.name) for n in nodes])
        return [s.plugins["PodTopologySpread"] for s in scores]

    assert spread(owned) == [0, 0]
    plain = _pod("web-2", WEB, owner="web")
    assert spread(plain) != [0, 0]  # the defaults (hostname) for a pod without constraints


def test_the_scheduler_spreads_over_zones() -> None:
    nodes = [_node("a1", "a"), _node("b1", "b"), _node("a2", "a"), _node("a3", "a")]
    state = ClusterState.build(nodes=nodes, slices=[], classes=[])
    scheduler = Scheduler(state, backend=None, policy=Policy.KUBE_SCHEDULER,  # type: ignore[arg-type]
                          rng=random.Random(0))
    zones = []
    for i in range(4):
        record = PodRecord(pod=(p := _pod(f"web-{i}", WEB, _tsc())), requests=pod_requests(p))
        outcome = scheduler.schedule(record)
        assert isinstance(outcome, Placement)
        state.bind(record, outcome.node)
        zones.append(state.nodes[outcome.node].metadata.labels[Z])
    assert sorted(zones) == ["a", "a", "b", "b"]


def test_explain_tells_the_constraint_per_node() -> None:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {H: n, **({Z: z} if z else {})}},
              "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}
             for n, z in (("a1", "a"), ("b1", "b"), ("bare", None))]
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}", "namespace": "ml", "labels": WEB},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                      "topologySpreadConstraints": [_tsc(minDomains=3)]}} for i in range(3)]
    result = simulate(build_scenario(load_text(yaml.safe_dump_all([*nodes, *pods]))),
                      Options(policy=Policy.KUBE_SCHEDULER))
    data = explain_pod(result.state, result.allocator, "ml/web-2").as_dict()
    assert data["phase"] == "Pending"
    assert sorted((g["reason"], len(g["nodes"])) for g in data["groups"]) == [
        (f"{MISSING_LABEL_REASON}: the node has no {Z} label", 1),
        (f"{CONSTRAINTS_REASON}: placing the pod would make the skew of {Z} 2 (maxSkew 1)", 2),
    ]


def _bind_random(rng: random.Random, state: ClusterState, records: list[tuple[PodRecord, str]], name: str) -> None:
    pod = _pod(name, {"app": rng.choice(["a", "b"])}, namespace=rng.choice(["default", "default", "other"]))
    record = PodRecord(pod=pod, requests=pod_requests(pod))
    node = rng.choice(list(state.nodes))
    state.bind(record, node)
    records.append((record, node))


def test_kept_counts_agree_with_the_scan_as_pods_bind_and_leave() -> None:
    """``SpreadIndex`` (counts kept as pods bind and leave) against ``prefilter``/``scores_for`` (every bound pod
    walked) on random clusters, constraints, policies and bound pods."""
    rng = random.Random(11)
    apps = ["a", "b"]
    taint = [{"key": "t", "value": "x", "effect": "NoSchedule"}]
    for _ in range(120):
        nodes = [_node(f"n{i}", rng.choice(["x", "y", "z", None]), taint if rng.random() < 0.3 else None,
                       **({"pool": "p"} if rng.random() < 0.6 else {})) for i in range(rng.randint(1, 7))]
        state = ClusterState.build(nodes=nodes, slices=[], classes=[])
        index = SpreadIndex(state)
        records: list[tuple[PodRecord, str]] = []

        for j in range(rng.randint(0, 6)):
            _bind_random(rng, state, records, f"e{j}")
        constraints = [_tsc(rng.choice([Z, H]), rng.randint(1, 2), rng.choice([DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]),
                            rng.choice(apps), minDomains=rng.choice([None, 2]) if rng.random() < 0.5 else None,
                            nodeAffinityPolicy=rng.choice([None, "Ignore"]),
                            nodeTaintsPolicy=rng.choice([None, "Honor"]))
                       for _ in range(rng.randint(1, 2))]
        for c in constraints:
            if c["whenUnsatisfiable"] != DO_NOT_SCHEDULE or c["minDomains"] is None:
                del c["minDomains"]
        keyed = {(c["topologyKey"], c["whenUnsatisfiable"]): c for c in constraints}  # as validation allows
        pod = _pod("in", {"app": rng.choice(apps)}, *keyed.values(),
                   **({"nodeSelector": {"pool": "p"}} if rng.random() < 0.5 else {}))
        for step in range(4):
            everything = cluster_nodes(state)
            kept, fresh = index.prefilter(pod), prefilter(pod, everything)
            assert (kept is None) == (fresh is None)
            if kept is not None and fresh is not None:
                assert kept.counts == fresh.counts and kept.minimum == fresh.minimum
                assert [kept.reason(n) for n in nodes] == [fresh.reason(n) for n in nodes]
            feasible = [n for n in nodes if rng.random() < 0.7]
            pods_on = {name: [r.pod for r in recs.values()] for name, recs in state.bound.items()}
            assert index.scores(pod, feasible) == scores_for(pod, everything, feasible, pods_on)
            names = list(state.nodes)
            window = sum(1 << names.index(n.metadata.name) for n in feasible)
            parts = index.score_partition(pod, window, names)  # the fast path's: by domains, over a bitset
            assert sum(bits.bit_count() for _, bits in parts) == window.bit_count()
            by_node = {names[i]: score for score, bits in parts for i in positions(bits)}
            assert [by_node[n.metadata.name] for n in feasible] == index.scores(pod, feasible)
            if step % 2 == 0 or not records:
                _bind_random(rng, state, records, f"later{step}")
            else:
                record, node = records.pop(rng.randrange(len(records)))
                state.unbind(record, node)


def test_the_fast_path_filters_and_scores_explicit_constraints_as_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods with explicit constraints take the node-set fast path (DoNotSchedule ones filter as
    ``SpreadIndex.feasible_mask``, ScheduleAnyway ones score as ``SpreadIndex.score_partition``); its placements and
    refusals are the node-by-node walk's."""
    rng = random.Random(5)
    for _ in range(40):
        nodes = random_nodes(rng, "xyz-")
        pods = []
        for i in range(rng.randint(3, 14)):
            app = rng.choice(["a", "b"])
            keys = rng.sample([Z, H], rng.randint(1, 2))
            whens = [rng.choice([DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]) for _ in keys]
            constraints = [_tsc(key, rng.randint(1, 2), when, app=app,
                                **({"minDomains": 3} if when == DO_NOT_SCHEDULE and rng.random() < 0.2 else {}))
                           for key, when in zip(keys, whens, strict=True)]
            owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": "", "controller": True}]
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"p{i:02}", "labels": {"app": app}, "ownerReferences": owner},
                         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                                  "topologySpreadConstraints": constraints if rng.random() < 0.8 else []}})
        text = yaml.safe_dump_all([*nodes, *pods])
        fast, walked = fast_and_walked(monkeypatch, text)
        assert fast == walked
