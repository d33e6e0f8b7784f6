"""InterPodAffinity's state kept across attempts: which bound pods carry terms, and PreFilter's counts per topology
pair kept as pods bind and leave (as kube-scheduler's ``AddPod``/``RemovePod`` update them within a cycle), so that
the replicas of one Deployment do not each walk every bound pod.

Counts are kept per incoming pod *shape* — what PreFilter reads of the pod: its namespace, labels and terms — and
updated on every bind and unbind; the replicas of a Deployment share one. Where the plugin cannot change any node's
score (no preferred term of the pod, no bound pod with a required affinity or preferred term), its Filter is a
bitset over the scheduler's node list (``feasible_mask``), so such pods keep the node-set fast path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Node, Pod
from kubedra.scheduler.interpodaffinity import (
    AffinityFilter,
    add_pod,
    counts_for,
    has_pod_affinity,
    node_score,
    normalize,
    prefilter,
    scoring_terms,
    skips,
    terms_of,
    topology_scores,
)
from kubedra.scheduler.interpodaffinity_scores import KeptScores

MAX_TRACKED = 64  # pod shapes whose counts are kept


class BoundAffinity:
    """How many bound pods carry ``podAffinity``/``podAntiAffinity`` (and terms that score), kept as pods bind and
    leave: while none does, a pod without terms of its own is neither filtered nor scored by this plugin (PreFilter
    and PreScore skip), and the scheduler keeps its fast path."""

    def __init__(self, state: ClusterState, *, watch: bool = True) -> None:
        """``watch``: follow binds and unbinds (off for a one-off reader of a state that stays as it is)."""
        self.state = state
        self.count = 0
        self.scoring = 0  # bound pods whose terms score other pods (required affinity, preferred terms)
        for pods in state.bound.values():
            for record in pods.values():
                self._counted(record.pod, 1)
        self._tracked: dict[bytes, tuple[Pod, AffinityFilter]] = {}  # shape -> a pod of it, its counts
        # Per kept counts (by id: they live in ``_tracked``), the nodes their anti-affinity refuses, grown as pods
        # bind, dropped (recomputed when next asked) as one leaves.
        self._refused: dict[int, int] = {}
        # PreScore's map (topology key -> value -> weight) per incoming pod shape, kept as pods bind and leave.
        self._scoring_maps: dict[bytes, KeptScores] = {}
        self._label_masks: dict[tuple[str, str], int] | None = None
        self._key_masks: dict[str, int] = {}
        if watch:
            state.pod_watchers.append(self._moved)

    def _counted(self, pod: Pod, sign: int) -> None:
        if has_pod_affinity(pod):
            self.count += sign
            if scoring_terms(pod):
                self.scoring += sign

    def _moved(self, record: PodRecord, node: str, sign: int) -> None:
        self._counted(record.pod, sign)
        if self._scoring_maps:
            labels = self.state.nodes[node].metadata.labels
            for kept in self._scoring_maps.values():
                kept.moved(record.pod, labels, sign)
        if self._tracked:
            where = self.state.nodes[node]
            for pod, counts in self._tracked.values():
                add_pod(counts, pod, record.pod, where, sign)
                refused = self._refused.get(id(counts))
                if refused is None:
                    continue
                if sign < 0 or self._label_masks is None:
                    del self._refused[id(counts)]
                else:  # only the pairs of the pod's node can have come to count
                    self._refused[id(counts)] = refused | _refusing(counts, where.metadata.labels.items(),
                                                                    self._label_masks)

    def active(self, pod: Pod) -> bool:
        """Whether InterPodAffinity may filter or score ``pod`` in the cluster as it is."""
        return self.count > 0 or has_pod_affinity(pod)

    def neutral(self, pod: Pod) -> bool:
        """Whether the plugin scores every node alike for ``pod`` (PreScore finds nothing to add)."""
        terms = terms_of(pod)
        return self.scoring == 0 and not terms.preferred and not terms.preferred_anti

    def existing(self, skip: str = "") -> list[tuple[Node, list[Pod]]]:
        """The bound pods by node (leaving out the pod keyed ``skip``: a running pod explained)."""
        nodes = self.state.nodes
        return [
            (nodes[name], [r.pod for r in records.values() if r.key != skip])
            for name, records in self.state.bound.items()
            if records and name in nodes
        ]

    def prefilter(self, pod: Pod, skip: str = "") -> AffinityFilter | None:
        """PreFilter's state for ``pod`` (None: it skips); the counts of its shape are kept from one call to the next.
        Callers read it before the next bind (a later bind updates it)."""
        if not self.active(pod):
            return None
        if skip:
            return prefilter(pod, self.existing(skip))
        key = _shape(pod)
        tracked = self._tracked.get(key)
        if tracked is None:
            if len(self._tracked) >= MAX_TRACKED:
                self._tracked.clear()
                self._refused.clear()
            tracked = self._tracked[key] = (pod, counts_for(pod, self.existing()))
        return None if skips(tracked[1]) else tracked[1]

    def scores(self, pod: Pod, nodes: Sequence[Node]) -> list[int]:
        """Score and NormalizeScore on each of ``nodes`` (the feasible ones), from the kept PreScore map."""
        if not self.active(pod) or self.neutral(pod):
            return [0] * len(nodes)
        scores = self._scoring_map(pod).scores
        if not scores:
            return [0] * len(nodes)
        return normalize([node_score(scores, node) for node in nodes])

    def _scoring_map(self, pod: Pod) -> KeptScores:
        """PreScore's map for ``pod``, kept per shape: its namespace, labels and terms (what the map reads of it)."""
        key = _shape(pod)
        kept = self._scoring_maps.get(key)
        if kept is None:
            if len(self._scoring_maps) >= MAX_TRACKED:
                self._scoring_maps.clear()
            kept = self._scoring_maps[key] = KeptScores(pod, topology_scores(pod, self.existing()))
        return kept

    def score_partition(self, pod: Pod, window: int, names: Sequence[str]) -> list[tuple[int, int]]:
        """``scores`` over the nodes of bitset ``window`` (bit i: ``names[i]``) as (normalised score, bitset of its
        nodes): the window cut by the domains of each topology key the map holds, so its cost grows with the
        domains, not with the window."""
        if not window or not self.active(pod) or self.neutral(pod):
            return [(0, window)]
        kept = self._scoring_map(pod)
        if not kept.scores:
            return [(0, window)]
        return kept.partition(window, self._masks(names)[0])

    # ------------------------------------------------------------------------------------------ Filter as a bitset

    def feasible_mask(self, state: AffinityFilter, names: Sequence[str]) -> int:
        """The nodes of ``names`` (bit i: ``names[i]``, the scheduler's fixed node list) Filter lets through: what
        ``AffinityFilter.reason`` decides node by node, from the counts' topology pairs."""
        pairs, keys = self._masks(names)
        every = (1 << len(names)) - 1
        refused = self._refused.get(id(state))
        if refused is None:
            refused = _refusing(state, [*state.anti_counts, *state.existing_anti_counts], pairs)
            if any(counts is state for _, counts in self._tracked.values()):
                self._refused[id(state)] = refused
        return _affinity_mask(state, pairs, keys, every) & ~refused & every

    def _masks(self, names: Sequence[str]) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """Each node label pair's and each label key's nodes, as bits of ``names`` (made once: nodes stay)."""
        if self._label_masks is None:
            pairs: dict[tuple[str, str], int] = {}
            keys: dict[str, int] = {}
            for i, name in enumerate(names):
                bit = 1 << i
                for pair in self.state.nodes[name].metadata.labels.items():
                    pairs[pair] = pairs.get(pair, 0) | bit
                    keys[pair[0]] = keys.get(pair[0], 0) | bit
            self._label_masks, self._key_masks = pairs, keys
        return self._label_masks, self._key_masks


def _shape(pod: Pod) -> bytes:
    """What PreFilter and PreScore read of the incoming pod: its namespace, labels and inter-pod terms."""
    affinity = pod.spec.affinity
    return msgspec.json.encode((
        pod.metadata.namespace,
        pod.metadata.labels,
        affinity.pod_affinity if affinity is not None else None,
        affinity.pod_anti_affinity if affinity is not None else None,
    ))


def _affinity_mask(state: AffinityFilter, pairs: dict[tuple[str, str], int], keys: dict[str, int], every: int) -> int:
    """The nodes the pod's required affinity lets through (``nodeTopologyMatchesAffinity``)."""
    ok = every
    terms = state.terms.affinity
    if not terms:
        return ok
    if not state.affinity_counts:  # nowhere a match: the first pod of a group, or nowhere
        if not state.matches_own_terms:
            return 0
        for term in terms:
            ok &= keys.get(term.topology_key, 0)
        return ok
    for term in terms:
        domains = 0
        for (key, value), count in state.affinity_counts.items():
            if key == term.topology_key and count > 0:
                domains |= pairs.get((key, value), 0)
        ok &= domains
    return ok


def _refusing(state: AffinityFilter, candidates: Iterable[tuple[str, str]], pairs: dict[tuple[str, str], int]) -> int:
    """The nodes refused through ``candidates`` (topology pairs): the pod's anti-affinity where a term's domain holds
    a match (``satisfyPodAntiAffinity``), the existing pods' where the pair holds one
    (``satisfyExistingPodsAntiAffinity``)."""
    anti_keys = {t.topology_key for t in state.terms.anti_affinity} if state.anti_counts else set()
    refused = 0
    for pair in candidates:
        if state.existing_anti_counts.get(pair, 0) > 0 or (
            pair[0] in anti_keys and state.anti_counts.get(pair, 0) > 0
        ):
            refused |= pairs.get(pair, 0)
    return refused
