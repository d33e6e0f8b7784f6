"""PodTopologySpread with the pod's explicit ``topologySpreadConstraints``, as kube-scheduler v1.37.2 filters and scores
them (``framework/plugins/podtopologyspread``); the system-default constraints, applied only to pods that set none, are
``scheduler/spreading.py`` and ``kube_scorer.py``'s.

A constraint reads: ``maxSkew``; ``topologyKey``; ``labelSelector`` (absent: no pod), with the ``matchLabelKeys``
the incoming pod carries merged in as ``key In (value)`` (the API server merges them when the pod is created);
``minDomains`` (1 when unset); ``nodeAffinityPolicy`` (``Honor`` when unset: only nodes passing the pod's
nodeSelector and required node affinity count) and ``nodeTaintsPolicy`` (``Ignore`` when unset; ``Honor``: nodes with
a NoSchedule/NoExecute taint the pod does not tolerate do not count).

Filter (``whenUnsatisfiable: DoNotSchedule``; PreFilter skips where the pod has none): PreFilter counts, per
constraint, the pods of the pod's namespace that the selector matches and that are not terminating, per domain, over
the nodes carrying *every* constraint's key and passing that constraint's node policies — a domain with no such pod
counts 0 and is a domain. A node without the key is refused (``... (missing required label)``,
UnschedulableAndUnresolvable); else the pod fits where ``count in the node's domain + 1 if the pod matches its own
selector - global minimum <= maxSkew``, the global minimum being 0 while there are fewer domains than ``minDomains``
(else ``didn't match pod topology spread constraints``, Unschedulable).

Score (``whenUnsatisfiable: ScheduleAnyway``; PreScore skips where the pod has none): feasible nodes lacking some
constraint's key are ignored (score 0). Per constraint a weight ``log(domains + 2)`` — the distinct values among the
other feasible nodes, or their number for ``kubernetes.io/hostname`` — and the matching pods of the node's domain
(counted over every node carrying all keys and passing the policies; for hostname the node's own pods, no policy),
summed as ``count * weight + maxSkew - 1`` and rounded; normalised as ``100 * (max + min - score) / max`` (100 when
the highest is 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubedra.cluster.state import ClusterState
from kubedra.objects.model import LabelSelector, LabelSelectorRequirement, Node, Pod
from kubedra.objects.selection import toleration_tolerates
from kubedra.scheduler.interpodaffinity import selector_matches
from kubedra.scheduler.nodefit import affinity_reason

CONSTRAINTS_REASON = "node(s) didn't match pod topology spread constraints"  # Unschedulable
MISSING_LABEL_REASON = f"{CONSTRAINTS_REASON} (missing required label)"  # UnschedulableAndUnresolvable
SPREAD_REASONS = frozenset({CONSTRAINTS_REASON, MISSING_LABEL_REASON})
HOSTNAME_LABEL = "kubernetes.io/hostname"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
MAX_NODE_SCORE = 100
MAX_CACHED = 4096

NodePods = Iterable[tuple[Node, Sequence[Pod]]]
"""Every node of the cluster with the pods bound to it (kube-scheduler's NodeInfos)."""


@dataclass(frozen=True)
class Constraint:
    """``topologySpreadConstraint``: one constraint as the plugin reads it (selector merged, defaults applied)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False

    def matches(self, pod: Pod) -> bool:
        return selector_matches(self.selector, pod.metadata.labels)


def has_constraints(pod: Pod) -> bool:
    """Whether the pod sets ``topologySpreadConstraints`` (then the system defaults do not apply to it)."""
    return bool(pod.spec.topology_spread_constraints)


_cache: dict[tuple[int, str], tuple[Pod, tuple[Constraint, ...]]] = {}


def constraints_of(pod: Pod, action: str) -> tuple[Constraint, ...]:
    """The pod's constraints of ``whenUnsatisfiable: action`` (``filterTopologySpreadConstraints``), remembered per
    pod object (pods are not changed in place)."""
    if not pod.spec.topology_spread_constraints:
        return ()
    found = _cache.get((id(pod), action))
    if found is not None and found[0] is pod:
        return found[1]
    labels = pod.metadata.labels
    out = []
    for c in pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = c.label_selector
        extra = [LabelSelectorRequirement(key=k, operator="In", values=[labels[k]])
                 for k in c.match_label_keys if k in labels]
        if selector is not None and extra:
            selector = LabelSelector(match_labels=selector.match_labels,
                                     match_expressions=[*selector.match_expressions, *extra])
        out.append(Constraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=selector,
            min_domains=c.min_domains if c.min_domains is not None else 1,
            honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
            honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
        ))
    constraints = tuple(out)
    if len(_cache) >= MAX_CACHED:
        _cache.clear()
    _cache[id(pod), action] = (pod, constraints)  # held: the id stays unique while remembered
    return constraints


def untolerated_taint(pod: Pod, node: Node) -> bool:
    """Whether the node has a NoSchedule/NoExecute taint the pod does not tolerate (``nodeTaintsPolicy: Honor``;
    the node's own ``spec.taints`` only)."""
    for taint in node.spec.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(toleration_tolerates(key=t.key, operator=t.operator, value=t.value, effect=t.effect,
                                        taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect)
                   for t in pod.spec.tolerations):
            return True
    return False


def has_all_keys(node: Node, constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``."""
    labels = node.metadata.labels
    return all(c.topology_key in labels for c in constraints)


def admits(pod: Pod, constraint: Constraint, node: Node) -> bool:
    """``matchNodeInclusionPolicies``: the node counts for the constraint."""
    if constraint.honor_affinity and affinity_reason(pod, node) is not None:
        return False
    return not (constraint.honor_taints and untolerated_taint(pod, node))


def count_matching(pods: Iterable[Pod], constraint: Constraint, namespace: str) -> int:
    """``countPodsMatchSelector``: the pods of ``namespace``, not terminating, that the selector matches."""
    return sum(1 for p in pods if p.metadata.deletion_timestamp is None and p.metadata.namespace == namespace
               and constraint.matches(p))


def domain_counts(pod: Pod, constraints: Sequence[Constraint], nodes: NodePods) -> list[dict[str, int]]:
    """Per constraint, domain -> matching pods, over the nodes carrying every key and passing the constraint's
    policies (PreFilter's ``TpValueToMatchNum``)."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    namespace = pod.metadata.namespace
    for node, pods in nodes:
        if not has_all_keys(node, constraints):
            continue
        for i, constraint in enumerate(constraints):
            if not admits(pod, constraint, node):
                continue
            value = node.metadata.labels[constraint.topology_key]
            counts[i][value] = counts[i].get(value, 0) + count_matching(pods, constraint, namespace)
    return counts


def cluster_nodes(state: ClusterState, skip: str = "") -> list[tuple[Node, list[Pod]]]:
    """Every node with its bound pods (leaving out the pod keyed ``skip``: a running pod explained)."""
    bound = state.bound
    return [(node, [r.pod for r in bound[name].values() if r.key != skip] if name in bound else [])
            for name, node in state.nodes.items()]


def prefilter_in(state: ClusterState, pod: Pod, skip: str = "") -> SpreadFilter | None:
    """``prefilter`` over the cluster's nodes and bound pods."""
    if not constraints_of(pod, DO_NOT_SCHEDULE):
        return None
    return prefilter(pod, cluster_nodes(state, skip))


# ---------------------------------------------------------------------------------------------- Filter


@dataclass(frozen=True)
class SpreadFilter:
    """PreFilter's state for one incoming pod; ``reason`` is Filter on one node."""

    constraints: tuple[Constraint, ...]
    counts: list[dict[str, int]]  # per constraint: domain -> matching pods
    self_match: tuple[int, ...]  # per constraint: 1 where the pod matches its own selector
    minimum: tuple[int, ...]  # per constraint: the global minimum, minDomains applied

    def reason(self, node: Node) -> str | None:
        labels = node.metadata.labels
        for i, c in enumerate(self.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return MISSING_LABEL_REASON
            if self.counts[i].get(value, 0) + self.self_match[i] - self.minimum[i] > c.max_skew:
                return CONSTRAINTS_REASON
        return None

    def skew(self, i: int, node: Node) -> int:
        """The skew constraint ``i`` works out on ``node`` (which carries its key)."""
        value = node.metadata.labels[self.constraints[i].topology_key]
        return self.counts[i].get(value, 0) + self.self_match[i] - self.minimum[i]


def state_for(pod: Pod, constraints: tuple[Constraint, ...], counts: list[dict[str, int]]) -> SpreadFilter:
    """The Filter state from PreFilter's counts: each constraint's global minimum (0 with fewer domains than
    ``minDomains``, or none)."""
    minimum = tuple(
        min(domains.values()) if domains and len(domains) >= c.min_domains else 0
        for c, domains in zip(constraints, counts, strict=True)
    )
    return SpreadFilter(constraints, counts, tuple(int(c.matches(pod)) for c in constraints), minimum)


def prefilter(pod: Pod, nodes: NodePods) -> SpreadFilter | None:
    """PreFilter over every node and its pods; None where it skips (no DoNotSchedule constraint)."""
    constraints = constraints_of(pod, DO_NOT_SCHEDULE)
    if not constraints:
        return None
    return state_for(pod, constraints, domain_counts(pod, constraints, nodes))


def describe(state: SpreadFilter, node: Node, reason: str) -> str:
    """``reason`` on ``node`` with what decided it (for ``explain``), told by topology key, never the node's own
    value (nodes refused alike are told alike, so they group)."""
    labels = node.metadata.labels
    for i, c in enumerate(state.constraints):
        if c.topology_key not in labels:
            return f"{reason}: the node has no {c.topology_key} label"
        skew = state.skew(i, node)
        if skew > c.max_skew:
            return f"{reason}: placing the pod would make the skew of {c.topology_key} {skew} (maxSkew {c.max_skew})"
    return reason


# ---------------------------------------------------------------------------------------------- Score


def scores_for(pod: Pod, nodes: NodePods, feasible: Sequence[Node], pods_on: Mapping[str, Sequence[Pod]]) -> list[int]:
    """PodTopologySpread's normalised score on each of ``feasible`` for a pod with explicit constraints (its
    ScheduleAnyway ones; none: PreScore skips, every node 0). ``nodes``: every node with its pods; ``pods_on``: the
    pods of each node by name."""
    constraints = constraints_of(pod, SCHEDULE_ANYWAY)
    if not constraints or not feasible:
        return [0] * len(feasible)
    ignored = [not has_all_keys(node, constraints) for node in feasible]
    kept = [node for node, skip in zip(feasible, ignored, strict=True) if not skip]
    domains: list[dict[str, int]] = [
        {} if c.topology_key == HOSTNAME_LABEL else {node.metadata.labels[c.topology_key]: 0 for node in kept}
        for c in constraints
    ]
    weights = [topology_weight(len(kept) if c.topology_key == HOSTNAME_LABEL else len(domains[i]))
               for i, c in enumerate(constraints)]
    namespace = pod.metadata.namespace
    if any(domains):
        for node, pods in nodes:
            if not has_all_keys(node, constraints):
                continue
            for i, c in enumerate(constraints):
                value = node.metadata.labels[c.topology_key]
                if value not in domains[i] or not admits(pod, c, node):
                    continue
                domains[i][value] += count_matching(pods, c, namespace)
    raw: list[int | None] = []
    for node, skip in zip(feasible, ignored, strict=True):
        if skip:
            raw.append(None)
            continue
        labels = node.metadata.labels
        found = [count_matching(pods_on.get(node.metadata.name, ()), c, namespace) if c.topology_key == HOSTNAME_LABEL
                 else domains[i][labels[c.topology_key]] for i, c in enumerate(constraints)]
        raw.append(score_one(constraints, found, weights))
    return normalize(raw)


def topology_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(float(size + 2))


def score_one(constraints: Sequence[Constraint], counts: Sequence[int], weights: Sequence[float]) -> int:
    """Score on one node: ``count * weight + maxSkew - 1`` summed in float64 in the constraints' order, rounded."""
    total = 0.0
    for c, count, weight in zip(constraints, counts, weights, strict=True):
        total += float(count) * weight + float(c.max_skew - 1)
    return _round(total)


def _round(x: float) -> int:
    """``math.Round``: half away from zero."""
    whole = math.floor(abs(x))
    if abs(x) - whole >= 0.5:
        whole += 1
    return int(whole) if x >= 0 else -int(whole)


def normalize(raw: Sequence[int | None]) -> list[int]:
    """NormalizeScore: ignored nodes (None) 0; others ``100 * (max + min - s) / max``, 100 when the highest is 0."""
    scored = [s for s in raw if s is not None]
    if not scored:
        return [0] * len(raw)
    lowest, highest = min(scored), max(0, *scored)
    out = []
    for s in raw:
        if s is None:
            out.append(0)
        elif highest == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (highest + lowest - s) // highest)
    return out
