"""The incremental scores against a from-scratch computation, after random sequences of binds, completions and deletions.

``SpreadCounts`` keeps PodTopologySpread's counts as pods come and go, and ``KubeScorer.choose_window`` scores groups of
alike nodes. Here both are held to the plain definitions after every step of random runs: every bound pod rescanned
for every node (what kube-scheduler's PreScore does), every plugin scored node by node over the window in walk order.
"""

from __future__ import annotations

import math
import random
from typing import Any

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord, SpreadSources
from kubedra.cluster.usage import pod_requests
from kubedra.objects.model import Node, Pod
from kubedra.scheduler.kube_scorer import WEIGHTS, Candidate, KubeScorer
from kubedra.scheduler.nodefit import affinity_reason
from kubedra.scheduler.normalize import go_round
from kubedra.scheduler.spreading import HOSTNAME_LABEL, ZONE_LABEL, controller_of, controller_ref, spread_normalize
from kubedra.scheduler.window_groups import RESOURCES, GroupScores

ZONES = ["z1", "z2", "z3"]
OWNERS = [("apps/v1", "ReplicaSet", "web"), ("apps/v1", "ReplicaSet", "api"), ("apps/v1", "StatefulSet", "db"),
          ("batch/v1", "Job", "train"), None]
APPS = ["web", "api", "db"]
# Services (namespace, selector) and the controllers that exist, as a simulation's input gives them: a Service
# broader than a ReplicaSet, one selecting bare pods, one in another namespace; "api" has no ReplicaSet object.
SOURCES = SpreadSources(
    services=(
        ("default", (("app", "web"),)), ("default", (("app", "db"), ("tier", "back"))), ("team", (("tier", "back"),))
    ),
    controllers={
        ("default", "ReplicaSet", "web"): (("app", "In", ("web",)), ("rev", "In", ("1",))),
        ("team", "ReplicaSet", "web"): (("app", "In", ("web",)),),
        ("default", "StatefulSet", "db"): (("app", "In", ("db",)), ("rev", "NotIn", ("2",))),
        ("team", "StatefulSet", "db"): (("tier", "Exists", ()),),
    },
)


def _requirement_holds(key: str, operator: str, values: tuple[str, ...], labels: dict[str, str]) -> bool:
    return {
        "In": key in labels and labels[key] in values,
        "NotIn": key not in labels or labels[key] not in values,
        "Exists": key in labels,
        "DoesNotExist": key not in labels,
    }[operator]


def _selector_by_definition(pod: Pod, sources: SpreadSources) -> Any:
    """``helper.DefaultSelector`` written out: a predicate on other pods, or None where it is empty."""
    namespace, labels = pod.metadata.namespace, pod.metadata.labels
    pairs: dict[str, str] = {}
    for service_namespace, selector in sources.services:
        if service_namespace == namespace and all(labels.get(k) == v for k, v in selector):
            pairs.update(selector)
    requirements = [(k, "In", (v,)) for k, v in pairs.items()]
    ref = controller_ref(pod)
    owner = None
    if ref is not None and ref.api_version == "apps/v1" and ref.kind in ("ReplicaSet", "StatefulSet"):
        if sources.controllers is None:
            owner = (ref.kind, ref.name)
        else:
            requirements += sources.controllers.get((namespace, ref.kind, ref.name), ())
    if not requirements and owner is None:
        return None

    def counted(other: Pod) -> bool:
        return (other.metadata.namespace == namespace and other.metadata.deletion_timestamp is None
                and (owner is None or controller_of(other) == owner)
                and all(_requirement_holds(k, op, v, other.metadata.labels) for k, op, v in requirements))
    return counted


def _node(rng: random.Random, i: int) -> Node:
    labels: dict[str, str] = {}
    if rng.random() < 0.9:
        labels[HOSTNAME_LABEL] = f"n{i}"
    if rng.random() < 0.7:
        labels[ZONE_LABEL] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["pool"] = rng.choice(["a", "b"])
    taints = [{"key": "spot", "effect": "PreferNoSchedule"}] if rng.random() < 0.3 else []
    if rng.random() < 0.2:
        taints.append({"key": "old", "value": "yes", "effect": "PreferNoSchedule"})
    return msgspec.convert({
        "metadata": {"name": f"n{i}", "labels": labels},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": rng.choice(["8", "16"]), "memory": rng.choice(["32Gi", "64Gi"]),
                                   "pods": "110"}},
    }, Node)


def _pod(rng: random.Random, name: str) -> Pod:
    owner = rng.choice(OWNERS)
    labels = {"app": rng.choice(APPS)} if rng.random() < 0.8 else {}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["back", "front"])
    if rng.random() < 0.5:
        labels["rev"] = rng.choice(["1", "2"])
    meta: dict[str, Any] = {"name": name, "namespace": rng.choice(["default", "default", "team"]), "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                    "controller": rng.random() < 0.9}]
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": rng.choice(
        [{}, {"cpu": "1", "memory": "2Gi"}, {"cpu": "500m"}, {"cpu": "2", "memory": "8Gi"}])}}]}
    if rng.random() < 0.25:
        spec["nodeSelector"] = {"pool": rng.choice(["a", "b"])}
    if rng.random() < 0.15:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": rng.sample(ZONES, 2)}]}]}}}
    if rng.random() < 0.25:
        spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": "pool", "operator": "In", "values": [rng.choice(["a", "b"])]}]}}]
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "spot", "operator": "Exists", "effect": rng.choice(["", "PreferNoSchedule"])}]
    return msgspec.convert({"metadata": meta, "spec": spec}, Pod)


def _spread_from_scratch(state: ClusterState, pod: Pod, nodes: list[Node]) -> list[int]:
    """PodTopologySpread's Score and NormalizeScore by definition: every bound pod rescanned for every node."""
    counted = _selector_by_definition(pod, state.spread_sources)
    if counted is None or not nodes:
        return [0] * len(nodes)

    per_node = {name: sum(1 for r in bound.values() if counted(r.pod)) for name, bound in state.bound.items()}
    zones = {n.metadata.labels.get(ZONE_LABEL, "") for n in nodes}
    zone_counts = dict.fromkeys(zones, 0)
    for name, count in per_node.items():
        node = state.nodes[name]
        zone = node.metadata.labels.get(ZONE_LABEL, "")
        if count and zone in zone_counts and affinity_reason(pod, node) is None:
            zone_counts[zone] += count
    weights = {HOSTNAME_LABEL: math.log(len(nodes) + 2), ZONE_LABEL: math.log(len(zones) + 2)}
    raw = []
    for node in nodes:
        total = 0.0
        labels = node.metadata.labels
        for key, max_skew in ((HOSTNAME_LABEL, 3), (ZONE_LABEL, 5)):
            if key in labels:
                count = per_node.get(node.metadata.name, 0) if key == HOSTNAME_LABEL else zone_counts[labels[key]]
                total += float(count) * weights[key] + float(max_skew - 1)
        raw.append(go_round(total))
    return spread_normalize(raw)


def _record(pod: Pod) -> PodRecord:
    return PodRecord(pod=pod, requests=pod_requests(pod))


def _check(rng: random.Random, state: ClusterState, scorer: KubeScorer, names: list[str], probe: PodRecord) -> None:
    n = len(names)
    window = rng.randrange(1, 1 << n)
    start = rng.randrange(n)
    order = [i for i in range(start, n) if window >> i & 1] + [i for i in range(start) if window >> i & 1]
    candidates = [Candidate(names[i]) for i in order]
    scores = scorer.score(probe, candidates)
    expected_spread = _spread_from_scratch(state, probe.pod, [state.nodes[names[i]] for i in order])
    assert [s.plugins["PodTopologySpread"] for s in scores] == expected_spread
    expected = order[scorer.choose(probe, candidates)]
    tied = scorer.tied.get(probe.key)
    seen: list[tuple[int, list[GroupScores], int]] = []
    scorer.observe = lambda _record, w, groups, best: seen.append((w, groups, best))
    assert scorer.choose_window(probe, window, start) == expected
    scorer.observe = None
    assert scorer.tied.get(probe.key) == tied
    # What the window reported (for the comparison with kube-scheduler's log) is the node-by-node scores, summed as
    # it sums them: every node of the window once, and its best the nodes of the highest total.
    [(seen_window, groups, best)] = seen
    assert seen_window == window
    by_node = {s.node: s for s in scores}
    reported = {names[i]: g.scores for g in groups for i in range(n) if g.nodes >> i & 1}
    assert sorted(reported) == sorted(by_node) and sum(g.nodes.bit_count() for g in groups) == len(by_node)
    for node, got in reported.items():
        plugins = by_node[node].plugins
        weighted = {p: WEIGHTS[p] * v for p, v in plugins.items()}
        weighted[RESOURCES] = weighted["NodeResourcesFit"] + weighted["NodeResourcesBalancedAllocation"]
        weighted["total"] = by_node[node].total
        assert got == {k: weighted[k] for k in got}, (node, got, weighted)
    high = max(s.total for s in scores)
    assert {names[i] for i in range(n) if best >> i & 1} == {s.node for s in scores if s.total == high}


def test_incremental_scores_equal_a_from_scratch_computation() -> None:
    for seed in range(60):
        rng = random.Random(seed)
        nodes = [_node(rng, i) for i in range(rng.randint(2, 14))]
        state = ClusterState.build(nodes=nodes, slices=[], classes=[])
        if seed % 2:  # a simulation's input: Services and controllers; else a live state's (controllers not read)
            state.spread_sources = SOURCES
        names = list(state.nodes)  # positions are the NodeTree order the state keeps
        placed: list[tuple[PodRecord, str]] = []
        serial = 0
        # Some pods are already bound when the scorer starts (a live cluster's state): counted from state.bound.
        for _ in range(rng.randint(0, 6)):
            record = _record(_pod(rng, f"pre{serial}"))
            serial += 1
            node = rng.choice(names)
            state.bind(record, node)
            placed.append((record, node))
        scorer = KubeScorer(state)
        for _ in range(80):
            action = rng.random()
            if action < 0.55 or not placed:  # a pod binds
                record = _record(_pod(rng, f"p{serial}"))
                serial += 1
                node = rng.choice(names)
                state.bind(record, node)
                placed.append((record, node))
            elif action < 0.85:  # a pod completes (its node's usage and counts drop)
                record, node = placed.pop(rng.randrange(len(placed)))
                state.unbind(record, node)
            else:  # a controller's pods are deleted together (a scale-down)
                owner = rng.choice(OWNERS)
                gone = [(r, nd) for r, nd in placed if owner is not None
                        and any(ref.name == owner[2] for ref in r.pod.metadata.owner_references)]
                for record, node in gone:
                    state.unbind(record, node)
                    placed.remove((record, node))
            _check(rng, state, scorer, names, _record(_pod(rng, "probe")))


def test_counts_by_node_and_zone_are_the_bound_pods_recounted() -> None:
    for sources in (SpreadSources(), SOURCES):
        rng = random.Random(99)
        nodes = [_node(rng, i) for i in range(10)]
        state = ClusterState.build(nodes=nodes, slices=[], classes=[])
        state.spread_sources = sources
        scorer = KubeScorer(state)
        probes = [_pod(rng, f"probe{i}") for i in range(40)]
        for probe in probes[:20]:  # selectors asked for before the pods bind, the rest after
            scorer.spread.key_for(probe)
        placed: list[tuple[PodRecord, str]] = []
        for step in range(400):
            if rng.random() < 0.6 or not placed:
                record = _record(_pod(rng, f"p{step}"))
                node = rng.choice(nodes).metadata.name
                state.bind(record, node)
                placed.append((record, node))
            else:
                record, node = placed.pop(rng.randrange(len(placed)))
                state.unbind(record, node)
        for probe in probes:
            key = scorer.spread.key_for(probe)
            counted = _selector_by_definition(probe, sources)
            assert (key is None) == (counted is None)
            if key is None:
                continue
            occupied, by_count = scorer.spread.by_count(key)
            for i, node in enumerate(state.nodes.values()):  # positions: the state's (NodeTree) order
                expected = sum(1 for r in state.bound.get(node.metadata.name, {}).values() if counted(r.pod))
                assert scorer.spread.count(key, node.metadata.name) == expected
                assert bool(occupied >> i & 1) == (expected > 0)
                assert all(bool(mask >> i & 1) == (count == expected) for count, mask in by_count.items())
