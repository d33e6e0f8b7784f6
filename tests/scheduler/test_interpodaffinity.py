"""InterPodAffinity's term matching, Filter and Score (``scheduler/interpodaffinity``), against v1.37.2's rules."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
import yaml
from tests.scheduler.fast_or_walk import fast_and_walked, random_nodes

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import pod_requests
from kubedra.objects.load import load_text
from kubedra.objects.model import LabelSelector, Node, Pod, PodAffinityTerm
from kubedra.scheduler.bitsets import positions
from kubedra.scheduler.explain import explain_pod
from kubedra.scheduler.interpodaffinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    counts_for,
    describe,
    make_term,
    normalize,
    prefilter,
    scores_for,
    selector_matches,
    skips,
    terms_of,
    topology_scores,
)
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.nodefit import node_fit_reason
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.preemption import resolvable
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

H, Z = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default", **affinity: Any) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if affinity:
        spec["affinity"] = affinity
    return msgspec.convert({"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec},
                           Pod)


def _node(name: str, zone: str | None = None) -> Node:
    labels = {H: name, **({Z: zone} if zone else {})}
    return msgspec.convert({"metadata": {"name": name, "labels": labels},
                            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}, Node)


def _term(match: dict[str, str] | None, key: str = H, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **more}
    if match is not None:
        out["labelSelector"] = {"matchLabels": match}
    return out


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}


def _preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "podAffinityTerm": t}
                                                                for w, t in weighted]}


def _selector(doc: dict[str, Any]) -> LabelSelector:
    return msgspec.convert(doc, LabelSelector)


# ---------------------------------------------------------------------------------------------- term matching


def test_label_selectors_as_metav1_reads_them() -> None:
    """None selects nothing, an empty selector everything; matchLabels and the four operators."""
    labels = {"app": "web", "tier": "front"}
    assert not selector_matches(None, labels)
    assert selector_matches(_selector({}), labels)
    assert selector_matches(_selector({}), {})
    assert selector_matches(_selector({"matchLabels": {"app": "web"}}), labels)
    assert not selector_matches(_selector({"matchLabels": {"app": "db"}}), labels)
    expressions = [
        ({"key": "app", "operator": "In", "values": ["web", "db"]}, True),
        ({"key": "app", "operator": "NotIn", "values": ["web"]}, False),
        ({"key": "missing", "operator": "NotIn", "values": ["x"]}, True),  # absent: NotIn holds
        ({"key": "tier", "operator": "Exists"}, True),
        ({"key": "tier", "operator": "DoesNotExist"}, False),
        ({"key": "missing", "operator": "In", "values": ["x"]}, False),
    ]
    for expression, expected in expressions:
        assert selector_matches(_selector({"matchExpressions": [expression]}), labels) is expected, expression


def test_namespaces_default_to_the_pods_own() -> None:
    """No ``namespaces`` and no ``namespaceSelector``: the term's pod's namespace only; ``namespaceSelector: {}``: every
    namespace; a selector on ``kubernetes.io/metadata.name`` (the label the API server gives every namespace)."""
    owner = _pod("owner", namespace="ml")
    web_ml, web_other = _pod("a", {"app": "web"}, "ml"), _pod("b", {"app": "web"}, "other")
    plain = make_term(owner, msgspec.convert(_term({"app": "web"}), PodAffinityTerm))
    assert plain.matches(web_ml) and not plain.matches(web_other)
    everywhere = make_term(owner, msgspec.convert(_term({"app": "web"}, namespaceSelector={}), PodAffinityTerm))
    assert everywhere.matches(web_ml) and everywhere.matches(web_other)
    listed = make_term(owner, msgspec.convert(_term({"app": "web"}, namespaces=["other"]), PodAffinityTerm))
    assert listed.matches(web_other) and not listed.matches(web_ml)
    by_name = make_term(owner, msgspec.convert(
        _term({"app": "web"}, namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "other"}}),
        PodAffinityTerm))
    assert by_name.matches(web_other) and not by_name.matches(web_ml)
    unknown_label = make_term(owner, msgspec.convert(
        _term({"app": "web"}, namespaceSelector={"matchLabels": {"team": "a"}}), PodAffinityTerm))
    assert not unknown_label.matches(web_ml)  # kubedra knows no other namespace label


def test_match_label_keys_are_merged_into_the_selector() -> None:
    """``matchLabelKeys`` adds ``key In (own value)``, ``mismatchLabelKeys`` ``key NotIn (own value)``; keys the pod
    lacks are skipped, and a term without a labelSelector still selects nothing (the API server's rule)."""
    owner = _pod("owner", {"app": "web", "version": "v1", "tenant": "a"})
    term = make_term(owner, msgspec.convert(
        _term({"app": "web"}, matchLabelKeys=["version", "absent"], mismatchLabelKeys=["tenant"]), PodAffinityTerm))
    assert term.matches(_pod("x", {"app": "web", "version": "v1", "tenant": "b"}))
    assert term.matches(_pod("x", {"app": "web", "version": "v1"}))  # no tenant: NotIn holds
    assert not term.matches(_pod("x", {"app": "web", "version": "v2", "tenant": "b"}))
    assert not term.matches(_pod("x", {"app": "web", "version": "v1", "tenant": "a"}))
    nothing = make_term(owner, msgspec.convert(_term(None, matchLabelKeys=["version"]), PodAffinityTerm))
    assert not nothing.matches(owner)


def test_terms_are_remembered_per_pod_object() -> None:
    pod = _pod("p", {"app": "web"}, podAntiAffinity=_required(_term({"app": "web"})))
    assert terms_of(pod) is terms_of(pod)
    assert len(terms_of(pod).anti_affinity) == 1
    assert terms_of(_pod("plain")).anti_affinity == ()


# ---------------------------------------------------------------------------------------------- Filter


def _existing(*placed: tuple[Node, list[Pod]]) -> list[tuple[Node, list[Pod]]]:
    return list(placed)


def test_required_affinity_needs_a_match_in_the_nodes_domain() -> None:
    a0, a1, b0, bare = _node("a0", "a"), _node("a1", "a"), _node("b0", "b"), _node("bare")
    cache = _pod("cache", {"app": "cache"})
    worker = _pod("w", {"app": "worker"}, podAffinity=_required(_term({"app": "cache"}, Z)))
    state = prefilter(worker, _existing((a0, [cache])))
    assert state is not None
    assert state.reason(a0) is None and state.reason(a1) is None  # the cache's zone
    assert state.reason(b0) == AFFINITY_REASON
    assert state.reason(bare) == AFFINITY_REASON  # no zone label at all


def test_required_affinity_terms_must_all_match_one_pod() -> None:
    """Counts come from pods matching *all* the terms: two pods each matching one term satisfy neither."""
    n0 = _node("n0", "a")
    worker = _pod("w", podAffinity=_required(_term({"app": "cache"}, Z), _term({"tier": "hot"}, H)))
    state = prefilter(worker, _existing((n0, [_pod("c", {"app": "cache"}), _pod("h", {"tier": "hot"})])))
    assert state is not None and state.reason(n0) == AFFINITY_REASON
    both = prefilter(worker, _existing((n0, [_pod("ch", {"app": "cache", "tier": "hot"})])))
    assert both is not None and both.reason(n0) is None


def test_the_first_pod_of_a_group_may_land_where_no_match_exists() -> None:
    """No pod anywhere matches and the pod matches its own terms: any node with the topology keys; once one matches
    somewhere, only its domain; a pod not matching its own terms never."""
    a0, b0, bare = _node("a0", "a"), _node("b0", "b"), _node("bare")
    first = _pod("g0", {"app": "group"}, podAffinity=_required(_term({"app": "group"}, Z)))
    state = prefilter(first, _existing((a0, [_pod("other", {"app": "other"})])))
    assert state is not None
    assert state.reason(a0) is None and state.reason(b0) is None
    assert state.reason(bare) == AFFINITY_REASON  # the key is still required
    second = prefilter(first, _existing((a0, [_pod("g-running", {"app": "group"})])))
    assert second is not None and second.reason(a0) is None and second.reason(b0) == AFFINITY_REASON
    outsider = _pod("o", {"app": "outsider"}, podAffinity=_required(_term({"app": "group"}, Z)))
    alone = prefilter(outsider, _existing())
    assert alone is not None and alone.reason(a0) == AFFINITY_REASON


def test_required_anti_affinity_and_its_symmetry() -> None:
    n0, n1, n2 = _node("n0", "a"), _node("n1", "a"), _node("n2", "b")
    web = _pod("web-0", {"app": "web"}, podAntiAffinity=_required(_term({"app": "web"})))
    state = prefilter(web, _existing((n0, [_pod("web-1", {"app": "web"})])))
    assert state is not None
    assert state.reason(n0) == ANTI_AFFINITY_REASON and state.reason(n1) is None
    # An existing pod's anti-affinity (zone-wide) refuses a newcomer without terms of its own.
    quiet = _pod("quiet", {"app": "quiet"}, podAntiAffinity=_required(_term({"app": "noisy"}, Z)))
    noisy = _pod("noisy", {"app": "noisy"})
    toward = prefilter(noisy, _existing((n0, [quiet])))
    assert toward is not None
    assert toward.reason(n0) == EXISTING_ANTI_AFFINITY_REASON
    assert toward.reason(n1) == EXISTING_ANTI_AFFINITY_REASON
    assert toward.reason(n2) is None
    assert prefilter(_pod("calm", {"app": "calm"}), _existing((n0, [quiet]))) is None  # PreFilter skips


def test_reasons_and_how_preemption_reads_them() -> None:
    """Affinity is UnschedulableAndUnresolvable; both anti-affinity reasons are Unschedulable (preemption may help)."""
    assert not resolvable(AFFINITY_REASON)
    assert resolvable(ANTI_AFFINITY_REASON) and resolvable(EXISTING_ANTI_AFFINITY_REASON)


def test_node_fit_reason_runs_inter_pod_affinity_after_resources() -> None:
    from kubedra.cluster.usage import NodeUsage

    n0 = _node("n0")
    web = _pod("web", {"app": "web"}, podAntiAffinity=_required(_term({"app": "web"})))
    state = prefilter(web, _existing((n0, [_pod("other", {"app": "web"})])))
    assert node_fit_reason(web, pod_requests(web), n0, NodeUsage(), inter_pod=state) == ANTI_AFFINITY_REASON
    assert node_fit_reason(web, pod_requests(web), n0, NodeUsage()) is None


# ---------------------------------------------------------------------------------------------- Score


def test_score_sums_weights_over_domains() -> None:
    a0, a1, b0 = _node("a0", "a"), _node("a1", "a"), _node("b0", "b")
    db, web = _pod("db", {"app": "db"}), _pod("web", {"app": "web"})
    client = _pod("client", {"app": "client"},
                  podAffinity=_preferred((80, _term({"app": "db"}, Z))),
                  podAntiAffinity=_preferred((30, _term({"app": "web"}))))
    scores = topology_scores(client, _existing((a0, [db, web]), (b0, [])))
    assert scores == {Z: {"a": 80}, H: {"a0": -30}}
    assert scores_for(client, _existing((a0, [db, web])), [a0, a1, b0]) == [62, 100, 0]  # raw 50, 80, 0


def test_existing_pods_terms_toward_the_newcomer_and_the_hard_weight() -> None:
    a0, b0 = _node("a0", "a"), _node("b0", "b")
    newcomer = _pod("n", {"app": "n"})
    fan = _pod("fan", {"app": "fan"}, podAffinity={**_required(_term({"app": "n"}, Z)),
                                                   **_preferred((7, _term({"app": "n"})))})
    hater = _pod("hater", podAntiAffinity=_preferred((5, _term({"app": "n"}, Z))))
    scores = topology_scores(newcomer, _existing((a0, [fan]), (b0, [hater])))
    assert scores == {Z: {"a": 1, "b": -5}, H: {"a0": 7}}  # hard-affinity weight 1 for the required term


def test_nodes_without_labels_and_no_terms_score_nothing() -> None:
    bare = msgspec.convert({"metadata": {"name": "bare"}}, Node)
    client = _pod("c", podAffinity=_preferred((10, _term({"app": "db"}))))
    assert topology_scores(client, _existing((bare, [_pod("db", {"app": "db"})]))) == {}
    assert scores_for(client, [], [bare, _node("n0")]) == [0, 0]


def test_normalize_as_upstream_in_float64() -> None:
    assert normalize([-20, 0, 7]) == [0, 74, 100]  # int64(100 * (20/27)) = 74
    assert normalize([3, 3]) == [0, 0]
    assert normalize([]) == []
    rng = random.Random(5)
    for _ in range(200):
        raw = [rng.randint(-500, 500) for _ in range(rng.randint(1, 9))]
        low, high = min(raw), max(raw)
        expected = [int(100.0 * ((s - low) / (high - low))) if high > low else 0 for s in raw]
        assert normalize(raw) == expected


# ---------------------------------------------------------------------------------------------- the scheduler


def _state(nodes: list[Node]) -> ClusterState:
    return ClusterState.build(nodes=nodes, slices=[], classes=[])


def _record(pod: Pod) -> PodRecord:
    return PodRecord(pod=pod, requests=pod_requests(pod))


def test_bound_affinity_counts_as_pods_bind_and_leave() -> None:
    state = _state([_node("n0")])
    index = BoundAffinity(state)
    plain = _pod("plain")
    assert not index.active(plain)
    picky = _record(_pod("picky", podAntiAffinity=_required(_term({"app": "x"}))))
    state.bind(picky, "n0")
    assert index.count == 1 and index.active(plain)
    state.unbind(picky, "n0")
    assert index.count == 0 and not index.active(plain)


@pytest.mark.parametrize("policy", [Policy.KUBE_SCHEDULER, Policy.LEAST_ALLOCATED, Policy.FIRST_FIT])
def test_the_scheduler_keeps_replicas_apart(policy: Policy) -> None:
    state = _state([_node("n0"), _node("n1")])
    scheduler = Scheduler(state, backend=None, policy=policy, rng=random.Random(0))  # type: ignore[arg-type]
    placed = []
    for i in range(3):
        record = _record(_pod(f"web-{i}", {"app": "web"}, podAntiAffinity=_required(_term({"app": "web"}))))
        outcome = scheduler.schedule(record)
        if isinstance(outcome, Placement):
            state.bind(record, outcome.node)
            placed.append(outcome.node)
        else:
            assert outcome.message.startswith("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity")
    assert sorted(placed) == ["n0", "n1"]


def _docs(*pods: dict[str, Any]) -> str:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {H: n}},
              "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}} for n in ("n0", "n1")]
    return yaml.safe_dump_all([*nodes, *pods])


def _pod_doc(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec}}


def test_explain_names_the_plugins_reason_per_node() -> None:
    anti = {"podAntiAffinity": _required(_term({"app": "web"}))}
    text = _docs(*(_pod_doc(f"web-{i}", {"app": "web"}, affinity=anti) for i in range(3)))
    result = simulate(build_scenario(load_text(text)), Options(policy=Policy.KUBE_SCHEDULER))
    data = explain_pod(result.state, result.allocator, "ml/web-2").as_dict()
    assert data["phase"] == "Pending"
    assert [(g["reason"], len(g["nodes"])) for g in data["groups"]] == [
        (f"{ANTI_AFFINITY_REASON}: a pod matching app=web runs in the node's kubernetes.io/hostname domain", 2)]
    running = explain_pod(result.state, result.allocator, "ml/web-0").as_dict()  # its own pod left out
    assert running["phase"] == "Running"


def test_the_fast_path_filters_and_scores_inter_pod_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods with inter-pod terms, and pods that bound pods' terms score, stay on the node-set fast path: Filter a
    bitset (``feasible_mask``), Score by domains (``score_partition``)."""
    walked: list[str] = []
    original = Scheduler._walk

    def spy(self: Scheduler, attempt: Any) -> Any:
        walked.append(attempt.record.pod.metadata.name)
        return original(self, attempt)

    monkeypatch.setattr(Scheduler, "_walk", spy)
    plain = [_pod_doc(f"plain-{i}", {"app": "plain"}) for i in range(3)]
    anti = {"podAntiAffinity": _required(_term({"app": "web"}))}
    webs = [_pod_doc(f"web-{i}", {"app": "web"}, affinity=anti) for i in range(3)]
    result = simulate(build_scenario(load_text(_docs(*webs, *plain))), Options(policy=Policy.KUBE_SCHEDULER))
    nodes = {r.pod.metadata.name: r.pod.spec.node_name for r in result.state.pods.values()}
    assert sorted([nodes["web-0"], nodes["web-1"]]) == ["n0", "n1"] and not nodes["web-2"]
    assert result.state.pods["ml/web-2"].pending_reason.startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")
    fan = _pod_doc("fan", {"app": "fan"}, affinity={"podAffinity": _preferred((10, _term({"app": "web"})))})
    sticky = _pod_doc("sticky", {"app": "plain"}, affinity={"podAffinity": _required(_term({"app": "plain"}))})
    simulate(build_scenario(load_text(_docs(fan, sticky, *plain))), Options(policy=Policy.KUBE_SCHEDULER))
    assert walked == []


def test_the_fast_path_places_inter_pod_terms_as_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random pods with required and preferred (anti-)affinity over hostnames and zones: the fast path's
    placements and refusals are the node-by-node walk's (which scores every node with ``scores_for``)."""
    rng = random.Random(9)
    apps = ["a", "b", "c"]
    for _ in range(30):
        nodes = random_nodes(rng, "xy-")
        pods = []
        for i in range(rng.randint(3, 14)):
            affinity: dict[str, Any] = {}
            for kind in ("podAffinity", "podAntiAffinity"):
                part: dict[str, Any] = {}
                if rng.random() < 0.3:
                    part.update(_required(_term({"app": rng.choice(apps)}, rng.choice([H, Z]))))
                if rng.random() < 0.5:
                    part.update(_preferred(*((rng.randint(1, 100), _term({"app": rng.choice(apps)}, rng.choice([H, Z])))
                                             for _ in range(rng.randint(1, 2)))))
                if part:
                    affinity[kind] = part
            pods.append(_pod_doc(f"p{i:02}", {"app": rng.choice(apps)}, **({"affinity": affinity} if affinity else {})))
        text = yaml.safe_dump_all([*nodes, *pods])
        fast, walked = fast_and_walked(monkeypatch, text)
        assert fast == walked


def test_kept_scores_and_their_partition_follow_binds_and_unbinds() -> None:
    """``BoundAffinity.scores`` (PreScore's map kept as pods bind and leave) and ``score_partition`` (by domains over
    a bitset) against ``scores_for`` (every bound pod walked) on random clusters, terms and bound pods."""
    rng = random.Random(13)
    apps = ["a", "b", "c"]
    for _ in range(120):
        nodes = [_node(f"n{i}", rng.choice(["x", "y", None])) for i in range(rng.randint(1, 7))]
        state = _state(nodes)
        index = BoundAffinity(state)
        names = [n.metadata.name for n in nodes]

        def some_terms() -> dict[str, Any]:
            terms: dict[str, Any] = {}
            if rng.random() < 0.4:
                terms["podAffinity"] = {**(_required(_term({"app": rng.choice(apps)}, rng.choice([H, Z])))
                                           if rng.random() < 0.5 else {}),
                                        **_preferred((rng.randint(1, 100), _term({"app": rng.choice(apps)},
                                                                                 rng.choice([H, Z]))))}
            if rng.random() < 0.4:
                terms["podAntiAffinity"] = _preferred((rng.randint(1, 100), _term({"app": rng.choice(apps)},
                                                                                  rng.choice([H, Z]))))
            return terms

        bound = []
        for j in range(rng.randint(0, 8)):
            record = _record(_pod(f"e{j}", {"app": rng.choice(apps)}, **some_terms()))
            state.bind(record, rng.choice(names))
            bound.append(record)
        pod = _pod("in", {"app": rng.choice(apps)}, **some_terms())
        for step in range(4):
            feasible = [n for n in nodes if rng.random() < 0.7]
            expected = scores_for(pod, index.existing(), feasible) if index.active(pod) and not index.neutral(pod) \
                else [0] * len(feasible)
            assert index.scores(pod, feasible) == expected
            window = sum(1 << names.index(n.metadata.name) for n in feasible)
            parts = index.score_partition(pod, window, names)
            assert sum(bits.bit_count() for _, bits in parts) == window.bit_count()
            by_node = {names[i]: score for score, bits in parts for i in positions(bits)}
            assert [by_node[n.metadata.name] for n in feasible] == expected
            if step % 2 == 0 or not bound:
                record = _record(_pod(f"later{step}", {"app": rng.choice(apps)}, **some_terms()))
                state.bind(record, rng.choice(names))
                bound.append(record)
            else:
                gone = bound.pop(rng.randrange(len(bound)))
                state.unbind(gone, next(n for n, pods in state.bound.items() if gone.key in pods))


def test_bitset_filter_agrees_with_the_node_by_node_filter() -> None:
    """``feasible_mask`` against ``AffinityFilter.reason`` on random clusters, terms and bound pods."""
    rng = random.Random(7)
    apps = ["a", "b", "c"]
    for _ in range(150):
        nodes = [_node(f"n{i}", rng.choice(["x", "y", None])) for i in range(rng.randint(1, 7))]
        state = _state(nodes)
        index = BoundAffinity(state)
        for j in range(rng.randint(0, 8)):
            terms = {}
            if rng.random() < 0.4:
                terms["podAntiAffinity"] = _required(_term({"app": rng.choice(apps)}, rng.choice([H, Z])))
            pod = _pod(f"e{j}", {"app": rng.choice(apps)}, **terms)
            state.bind(_record(pod), rng.choice(nodes).metadata.name)
        incoming: dict[str, Any] = {}
        if rng.random() < 0.6:
            incoming["podAffinity"] = _required(*(_term({"app": rng.choice(apps)}, rng.choice([H, Z]))
                                                  for _ in range(rng.randint(1, 2))))
        if rng.random() < 0.6:
            incoming["podAntiAffinity"] = _required(_term({"app": rng.choice(apps)}, rng.choice([H, Z])))
        pod = _pod("in", {"app": rng.choice(apps)}, **incoming)
        names = [n.metadata.name for n in nodes]
        found = index.prefilter(pod)
        fresh = prefilter(pod, index.existing())
        assert (found is None) == (fresh is None)
        if found is None or fresh is None:
            continue
        bound = [r for pods in state.bound.values() for r in pods.values()]
        for step in range(4):  # the kept counts and refused nodes follow later binds and unbinds
            assert found.affinity_counts == fresh.affinity_counts and found.anti_counts == fresh.anti_counts
            assert found.existing_anti_counts == fresh.existing_anti_counts
            mask = index.feasible_mask(found, names)
            assert [bool(mask >> i & 1) for i in range(len(nodes))] == [fresh.reason(n) is None for n in nodes]
            if step % 2 == 0 or not bound:
                terms = {"podAntiAffinity": _required(_term({"app": rng.choice(apps)}, rng.choice([H, Z])))}
                record = _record(_pod(f"later{step}", {"app": rng.choice(apps)}, **terms))
                state.bind(record, rng.choice(names))
                bound.append(record)
            else:
                gone = bound.pop(rng.randrange(len(bound)))
                state.unbind(gone, next(n for n, pods in state.bound.items() if gone.key in pods))
            again = index.prefilter(pod)
            fresh = counts_for(pod, index.existing())
            assert again is found or (again is None and skips(found))


def test_kept_counts_follow_binds_and_unbinds() -> None:
    nodes = [_node("n0", "x"), _node("n1", "y")]
    state = _state(nodes)
    index = BoundAffinity(state)
    web = _pod("web", {"app": "web"}, podAntiAffinity=_required(_term({"app": "web"}, Z)))
    assert index.prefilter(web) is not None  # its own terms: counted (nothing yet)
    other = _record(_pod("other", {"app": "web"}))
    state.bind(other, "n0")
    found = index.prefilter(web)
    assert found is not None and found.anti_counts == {(Z, "x"): 1}
    state.unbind(other, "n0")
    assert found.anti_counts == {}


def test_describe_names_the_term_and_the_domain_key() -> None:
    a0, b0, bare = _node("a0", "a"), _node("b0", "b"), _node("bare")
    worker = _pod("w", {"app": "worker"}, podAffinity=_required(_term({"app": "cache"}, Z)))
    state = prefilter(worker, _existing((a0, [_pod("cache", {"app": "cache"})])))
    assert state is not None
    assert describe(state, bare, AFFINITY_REASON) == f"{AFFINITY_REASON}: the node has no {Z} label"
    assert describe(state, b0, AFFINITY_REASON) == f"{AFFINITY_REASON}: no pod matching the terms in the node's {Z} domain"
    nowhere = prefilter(worker, _existing())
    assert nowhere is not None
    assert describe(nowhere, a0, AFFINITY_REASON) == f"{AFFINITY_REASON}: no pod matches app=cache"
    quiet = _pod("quiet", podAntiAffinity=_required(_term({"app": "noisy"}, Z)))
    toward = prefilter(_pod("noisy", {"app": "noisy"}), _existing((a0, [quiet])))
    assert toward is not None
    assert describe(toward, a0, EXISTING_ANTI_AFFINITY_REASON) == (
        f"{EXISTING_ANTI_AFFINITY_REASON}: a pod in the node's {Z} domain refuses this pod (its required anti-affinity)")
