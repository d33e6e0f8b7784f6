"""InterPodAffinity as kube-scheduler v1.37.2 filters and scores it (``framework/plugins/interpodaffinity``).

Filter (PreFilter's counts per topology pair, then each node), with the InterPodAffinityHostnameFastPath gate off as
it is by default in 1.37:

* the incoming pod's required ``podAffinity``: every term's topology key on the node, and some existing pod matching
  *all* the terms in the node's domain of each; where no pod anywhere matches them all, a pod matching its own terms
  may land on any node carrying the keys (the first pod of a group) — ``didn't match pod affinity rules``,
  UnschedulableAndUnresolvable;
* its required ``podAntiAffinity``: no existing pod matching a term in the node's domain of that term —
  ``didn't match pod anti-affinity rules``, Unschedulable (preemption may remove the pods);
* the existing pods' required anti-affinity toward it (symmetry): no domain of the node holds a pod with a term the
  incoming pod matches — ``didn't satisfy existing pods anti-affinity rules``, Unschedulable.

Score (PreScore over every node's pods, then the sum over the node's domains): the incoming pod's preferred affinity
(+weight) and anti-affinity (-weight) terms matched by existing pods, the existing pods' required affinity terms
the incoming pod matches (+``hardPodAffinityWeight``, 1 by default), their preferred affinity (+weight) and
anti-affinity (-weight) terms it matches; normalised from the lowest to the highest raw score onto 0..100.

A term matches a pod in its ``namespaces`` (the term's pod's own namespace when neither ``namespaces`` nor
``namespaceSelector`` is set) or in a namespace its ``namespaceSelector`` selects, with a ``labelSelector`` its
labels satisfy (none: no pod). ``matchLabelKeys``/``mismatchLabelKeys`` are merged into the selector as ``key In
(value)``/``key NotIn (value)`` with the pod's own label values, as the API server does when the pod is created.

kubedra reads no Namespace objects: a namespace's labels are taken to be the one every namespace gets from the API
server, ``kubernetes.io/metadata.name: <name>``, and no other (a ``namespaceSelector`` on other namespace labels
selects nothing here, where the real cluster may label its namespaces).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubedra.objects.model import LabelSelector, LabelSelectorRequirement, Node, Pod, PodAffinity, PodAffinityTerm

AFFINITY_REASON = "node(s) didn't match pod affinity rules"  # UnschedulableAndUnresolvable
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"  # Unschedulable
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"  # Unschedulable
INTER_POD_REASONS = frozenset({AFFINITY_REASON, ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs.hardPodAffinityWeight's default
MAX_NODE_SCORE = 100
MAX_CACHED = 4096

TopologyPair = tuple[str, str]


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``: None selects nothing, an empty one everything."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        op = req.operator
        if op == "In":
            ok = present and labels[req.key] in req.values
        elif op == "NotIn":
            ok = not present or labels[req.key] not in req.values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            ok = False  # the API server refuses other operators
        if not ok:
            return False
    return True


def namespace_labels(namespace: str) -> dict[str, str]:
    """The labels kubedra assumes a namespace has (see the module docstring)."""
    return {NAMESPACE_NAME_LABEL: namespace}


@dataclass(frozen=True)
class Term:
    """``fwk.AffinityTerm`` (plus the weight of a preferred one): whom the term selects and over which domains."""

    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector | None
    topology_key: str
    weight: int = 0

    def matches(self, pod: Pod) -> bool:
        namespace = pod.metadata.namespace
        if namespace in self.namespaces or selector_matches(self.namespace_selector, namespace_labels(namespace)):
            return selector_matches(self.selector, pod.metadata.labels)
        return False


def make_term(pod: Pod, term: PodAffinityTerm, weight: int = 0) -> Term:
    """The term as the scheduler reads it from ``pod``: label keys merged in, namespaces defaulted."""
    selector = term.label_selector
    if selector is not None and (term.match_label_keys or term.mismatch_label_keys):
        labels = pod.metadata.labels
        extra = [LabelSelectorRequirement(key=k, operator="In", values=[labels[k]])
                 for k in term.match_label_keys if k in labels]
        extra += [LabelSelectorRequirement(key=k, operator="NotIn", values=[labels[k]])
                  for k in term.mismatch_label_keys if k in labels]
        selector = LabelSelector(match_labels=selector.match_labels,
                                 match_expressions=[*selector.match_expressions, *extra])
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset({pod.metadata.namespace})
    else:
        namespaces = frozenset(term.namespaces)
    return Term(namespaces, term.namespace_selector, selector, term.topology_key, weight)


@dataclass(frozen=True)
class PodTerms:
    """A pod's inter-pod affinity terms (``framework.NewPodInfo``)."""

    affinity: tuple[Term, ...] = ()
    anti_affinity: tuple[Term, ...] = ()
    preferred: tuple[Term, ...] = ()
    preferred_anti: tuple[Term, ...] = ()


NO_TERMS = PodTerms()


def _required(pod: Pod, part: PodAffinity | None) -> tuple[Term, ...]:
    return tuple(make_term(pod, t) for t in part.required_during_scheduling_ignored_during_execution) if part else ()


def _preferred(pod: Pod, part: PodAffinity | None) -> tuple[Term, ...]:
    if part is None:
        return ()
    return tuple(make_term(pod, t.pod_affinity_term, t.weight)
                 for t in part.preferred_during_scheduling_ignored_during_execution)


def has_pod_affinity(pod: Pod) -> bool:
    """Whether the pod carries ``podAffinity`` or ``podAntiAffinity`` (kube-scheduler's ``podWithAffinity``)."""
    affinity = pod.spec.affinity
    return affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None)


_terms_cache: dict[int, tuple[Pod, PodTerms]] = {}


def terms_of(pod: Pod) -> PodTerms:
    """The pod's terms, remembered per pod object (pods are not changed in place)."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    found = _terms_cache.get(id(pod))
    if found is not None and found[0] is pod:
        return found[1]
    terms = PodTerms(
        _required(pod, affinity.pod_affinity),
        _required(pod, affinity.pod_anti_affinity),
        _preferred(pod, affinity.pod_affinity),
        _preferred(pod, affinity.pod_anti_affinity),
    )
    if len(_terms_cache) >= MAX_CACHED:
        _terms_cache.clear()
    _terms_cache[id(pod)] = (pod, terms)  # held: the id stays unique while remembered
    return terms


def _matches_all(terms: Sequence[Term], pod: Pod) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    return bool(terms) and all(t.matches(pod) for t in terms)


ExistingPods = Iterable[tuple[Node, Iterable[Pod]]]
"""Each node with the pods bound to it (kube-scheduler's NodeInfos)."""


# ---------------------------------------------------------------------------------------------- Filter


@dataclass(frozen=True)
class AffinityFilter:
    """PreFilter's state for one incoming pod; ``reason`` is Filter on one node."""

    terms: PodTerms
    affinity_counts: dict[TopologyPair, int]  # domains holding pods that match all required affinity terms
    anti_counts: dict[TopologyPair, int]  # domains holding pods that match a required anti-affinity term
    existing_anti_counts: dict[TopologyPair, int]  # domains whose pods' required anti-affinity the pod matches
    matches_own_terms: bool

    def reason(self, node: Node) -> str | None:
        labels = node.metadata.labels
        terms = self.terms
        if terms.affinity:
            pods_exist = True
            for term in terms.affinity:
                value = labels.get(term.topology_key)
                if value is None:
                    return AFFINITY_REASON
                if self.affinity_counts.get((term.topology_key, value), 0) <= 0:
                    pods_exist = False
            if not pods_exist and (self.affinity_counts or not self.matches_own_terms):
                return AFFINITY_REASON
        if self.anti_counts:
            for term in terms.anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and self.anti_counts.get((term.topology_key, value), 0) > 0:
                    return ANTI_AFFINITY_REASON
        if self.existing_anti_counts:
            for pair in labels.items():
                if self.existing_anti_counts.get(pair, 0) > 0:
                    return EXISTING_ANTI_AFFINITY_REASON
        return None


def _count(counts: dict[TopologyPair, int], node: Node, key: str, sign: int) -> None:
    value = node.metadata.labels.get(key)
    if value is not None:
        pair = (key, value)
        count = counts.get(pair, 0) + sign
        if count:
            counts[pair] = count
        else:
            del counts[pair]  # an empty map means no match anywhere (the first-pod rule reads it)


def add_pod(state: AffinityFilter, incoming: Pod, other: Pod, node: Node, sign: int = 1) -> None:
    """PreFilter's counts for one existing pod on ``node`` (``sign`` -1: it left, as ``RemovePod`` updates them)."""
    terms = state.terms
    for term in terms_of(other).anti_affinity:
        if term.matches(incoming):
            _count(state.existing_anti_counts, node, term.topology_key, sign)
    if terms.affinity and _matches_all(terms.affinity, other):
        for term in terms.affinity:
            _count(state.affinity_counts, node, term.topology_key, sign)
    for term in terms.anti_affinity:
        if term.matches(other):
            _count(state.anti_counts, node, term.topology_key, sign)


def counts_for(pod: Pod, existing: ExistingPods) -> AffinityFilter:
    """PreFilter's counts over the existing pods (whether or not the plugin then skips)."""
    terms = terms_of(pod)
    state = AffinityFilter(terms, {}, {}, {}, _matches_all(terms.affinity, pod))
    for node, pods in existing:
        for other in pods:
            add_pod(state, pod, other, node)
    return state


def skips(state: AffinityFilter) -> bool:
    """PreFilter's Skip: no term of the pod and no existing pod's anti-affinity toward it."""
    return not state.existing_anti_counts and not state.terms.affinity and not state.terms.anti_affinity


def prefilter(pod: Pod, existing: ExistingPods) -> AffinityFilter | None:
    """PreFilter over the existing pods; None where it skips (no term of the pod, none toward it)."""
    state = counts_for(pod, existing)
    return None if skips(state) else state


def scoring_terms(pod: Pod) -> bool:
    """Whether the pod's terms can score other pods' nodes (required affinity: the hard weight; preferred ones)."""
    terms = terms_of(pod)
    return bool(terms.affinity or terms.preferred or terms.preferred_anti)


# ---------------------------------------------------------------------------------------------- Score


def _process(
    out: dict[str, dict[str, int]], terms: Iterable[Term], pod: Pod, labels: Mapping[str, str], sign: int,
    *, weight: int | None = None,
) -> None:
    """``scoreMap.processTerms``: each term ``pod`` matches adds its weight (``weight`` if given) times ``sign`` to the
    node's domain of the term's topology key."""
    for term in terms:
        if term.matches(pod):
            value = labels.get(term.topology_key)
            if value is not None:
                values = out.setdefault(term.topology_key, {})
                values[value] = values.get(value, 0) + sign * (term.weight if weight is None else weight)


def add_scores(
    out: dict[str, dict[str, int]], pod: Pod, other: Pod, labels: Mapping[str, str], sign: int = 1
) -> None:
    """What the existing pod ``other`` on a node labelled ``labels`` adds to ``pod``'s PreScore map (``sign`` -1:
    takes back): ``pod``'s preferred terms ``other`` matches, ``other``'s required affinity (the hard weight) and
    preferred terms ``pod`` matches."""
    terms = terms_of(pod)
    if terms.preferred or terms.preferred_anti:
        _process(out, terms.preferred, other, labels, sign)
        _process(out, terms.preferred_anti, other, labels, -sign)
    theirs = terms_of(other)
    if theirs is not NO_TERMS:
        _process(out, theirs.affinity, pod, labels, sign, weight=HARD_POD_AFFINITY_WEIGHT)
        _process(out, theirs.preferred, pod, labels, sign)
        _process(out, theirs.preferred_anti, pod, labels, -sign)


def topology_scores(pod: Pod, existing: ExistingPods) -> dict[str, dict[str, int]]:
    """PreScore: topology key -> value -> summed weight (empty: the plugin skips, every node scores 0)."""
    out: dict[str, dict[str, int]] = {}
    for node, pods in existing:
        labels = node.metadata.labels
        if not labels:
            continue
        for other in pods:
            add_scores(out, pod, other, labels)
    return out


def node_score(scores: Mapping[str, Mapping[str, int]], node: Node) -> int:
    """Score: the node's domains' summed weights."""
    labels = node.metadata.labels
    total = 0
    for key, values in scores.items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def normalize(raw: Sequence[int]) -> list[int]:
    """NormalizeScore: ``int64(100 * (s - min) / (max - min))`` in float64, 0 everywhere when all are equal."""
    if not raw:
        return []
    lowest, highest = min(raw), max(raw)
    spread = highest - lowest
    if spread <= 0:
        return [0] * len(raw)
    return [int(float(MAX_NODE_SCORE) * ((s - lowest) / spread)) for s in raw]


def scores_for(pod: Pod, existing: ExistingPods, nodes: Sequence[Node]) -> list[int]:
    """InterPodAffinity's normalised score on each of ``nodes`` (the feasible ones), before its weight."""
    scores = topology_scores(pod, existing)
    if not scores:
        return [0] * len(nodes)
    return normalize([node_score(scores, node) for node in nodes])


def _selector_text(term: Term) -> str:
    selector = term.selector
    if selector is None:
        return "no labelSelector"
    parts = [f"{k}={v}" for k, v in selector.match_labels.items()]
    parts += [f"{r.key} {r.operator} ({','.join(r.values)})" if r.values else f"{r.key} {r.operator}"
              for r in selector.match_expressions]
    return ", ".join(parts) or "every pod"


def describe(state: AffinityFilter, node: Node, reason: str) -> str:
    """``reason`` on ``node`` with what decided it (for ``explain``): the term and the topology key, never the node's
    own value (nodes refused alike are told alike, so they group)."""
    labels = node.metadata.labels
    if reason == AFFINITY_REASON:
        for term in state.terms.affinity:
            if term.topology_key not in labels:
                return f"{reason}: the node has no {term.topology_key} label"
        if not state.affinity_counts and not state.matches_own_terms:
            return f"{reason}: no pod matches {'; '.join(_selector_text(t) for t in state.terms.affinity)}"
        missing = [t.topology_key for t in state.terms.affinity
                   if state.affinity_counts.get((t.topology_key, labels[t.topology_key]), 0) <= 0]
        return f"{reason}: no pod matching the terms in the node's {', '.join(missing)} domain"
    if reason == ANTI_AFFINITY_REASON:
        for term in state.terms.anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None and state.anti_counts.get((term.topology_key, value), 0) > 0:
                return f"{reason}: a pod matching {_selector_text(term)} runs in the node's {term.topology_key} domain"
    if reason == EXISTING_ANTI_AFFINITY_REASON:
        keys = sorted({k for k, v in labels.items() if state.existing_anti_counts.get((k, v), 0) > 0})
        if keys:
            return (f"{reason}: a pod in the node's {', '.join(keys)} domain refuses this pod "
                    "(its required anti-affinity)")
    return reason
