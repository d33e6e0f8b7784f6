"""PodTopologySpread's counts for explicit constraints, kept as pods bind and leave, so that the replicas of a
Deployment do not each walk every bound pod (``podtopologyspread`` does, the reference a test holds this to).

Counts are kept per *selector* — a constraint's merged label selector and the namespace of the pods asking — as
matching pods per node; and per *view* of a selector — which nodes count and in which domain: the topology keys every
counted node must carry, the constraint's key, and the node policies with what they read of the pod (its nodeSelector
and required node affinity where ``nodeAffinityPolicy`` is Honor, its tolerations where ``nodeTaintsPolicy`` is) —
as matching pods per domain, every domain of an eligible node present (0 included). Nodes never change in a run, so
a view's eligible nodes are worked out once. Both are bounded (``MAX_TRACKED``): past that they start over, still exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Node, Pod
from kubedra.scheduler.podtopologyspread import (
    DO_NOT_SCHEDULE,
    HOSTNAME_LABEL,
    SCHEDULE_ANYWAY,
    Constraint,
    SpreadFilter,
    admits,
    constraints_of,
    has_all_keys,
    normalize,
    score_one,
    state_for,
    topology_weight,
)

MAX_TRACKED = 64  # selectors kept, and views per selector


class _View(msgspec.Struct, gc=False):
    eligible: dict[str, str]  # node -> its domain (the value of the constraint's key), nodes counted only
    sums: dict[str, int]  # domain -> matching pods on its eligible nodes


class _Selector(msgspec.Struct, gc=False):
    namespace: str
    constraint: Constraint
    per_node: dict[str, int]  # node -> matching pods
    counted: set[tuple[str, str]]  # (pod key, node) counted, to take back exactly what was added
    views: dict[bytes, _View]


class SpreadIndex:
    """See the module docstring. Listens to the cluster state's binds and unbinds."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._selectors: dict[bytes, _Selector] = {}
        self._domains: dict[str, list[tuple[str, int]]] | None = None  # key -> (value, bitset of its nodes)
        self._keys: dict[str, int] = {}  # key -> bitset of the nodes carrying it
        self._positions: dict[str, int] = {}  # node -> its bit
        state.pod_watchers.append(self._moved)
        state.terminating_watchers.append(lambda record, node: self._moved(record, node, -1))

    def _moved(self, record: PodRecord, node: str, sign: int) -> None:
        if not self._selectors:
            return
        pod = record.pod
        key = (record.key, node)
        for tracked in self._selectors.values():
            if sign > 0:
                if (pod.metadata.deletion_timestamp is not None or pod.metadata.namespace != tracked.namespace
                        or key in tracked.counted or not tracked.constraint.matches(pod)):
                    continue
                tracked.counted.add(key)
            elif key in tracked.counted:
                tracked.counted.discard(key)
            else:
                continue
            count = tracked.per_node.get(node, 0) + sign
            if count:
                tracked.per_node[node] = count
            else:
                del tracked.per_node[node]
            for view in tracked.views.values():
                domain = view.eligible.get(node)
                if domain is not None:
                    view.sums[domain] += sign

    def _selector(self, pod: Pod, constraint: Constraint) -> _Selector:
        namespace = pod.metadata.namespace
        key = msgspec.json.encode((namespace, constraint.selector))
        tracked = self._selectors.get(key)
        if tracked is None:
            if len(self._selectors) >= MAX_TRACKED:
                self._selectors.clear()
            tracked = self._selectors[key] = _Selector(namespace, constraint, {}, set(), {})
            for node, records in self.state.bound.items():
                for record in records.values():
                    p = record.pod
                    if (p.metadata.deletion_timestamp is None and p.metadata.namespace == namespace
                            and constraint.matches(p)):
                        tracked.counted.add((record.key, node))
                        tracked.per_node[node] = tracked.per_node.get(node, 0) + 1
        return tracked

    def _view(self, pod: Pod, constraint: Constraint, constraints: Sequence[Constraint]) -> _View:
        tracked = self._selector(pod, constraint)
        spec = pod.spec
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        key = msgspec.json.encode((
            sorted({c.topology_key for c in constraints}),
            constraint.topology_key,
            (spec.node_selector, affinity.required_during_scheduling_ignored_during_execution if affinity else None)
            if constraint.honor_affinity else None,
            spec.tolerations if constraint.honor_taints else None,
        ))
        view = tracked.views.get(key)
        if view is None:
            if len(tracked.views) >= MAX_TRACKED:
                tracked.views.clear()
            eligible: dict[str, str] = {}
            sums: dict[str, int] = {}
            for name, node in self.state.nodes.items():
                if has_all_keys(node, constraints) and admits(pod, constraint, node):
                    domain = eligible[name] = node.metadata.labels[constraint.topology_key]
                    sums[domain] = sums.get(domain, 0) + tracked.per_node.get(name, 0)
            view = tracked.views[key] = _View(eligible, sums)
        return view

    def prefilter(self, pod: Pod) -> SpreadFilter | None:
        """PreFilter's state for ``pod`` (None: it skips), from the kept counts."""
        constraints = constraints_of(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None
        counts = [dict(self._view(pod, c, constraints).sums) for c in constraints]
        return state_for(pod, constraints, counts)

    def scores(self, pod: Pod, feasible: Sequence[Node]) -> list[int]:
        """``podtopologyspread.scores_for`` from the kept counts."""
        constraints = constraints_of(pod, SCHEDULE_ANYWAY)
        if not constraints or not feasible:
            return [0] * len(feasible)
        kept = [node for node in feasible if has_all_keys(node, constraints)]
        weights: list[float] = []
        counts: list[Mapping[str, int]] = []
        for c in constraints:
            tracked = self._selector(pod, c)
            if c.topology_key == HOSTNAME_LABEL:
                weights.append(topology_weight(len(kept)))
                counts.append(tracked.per_node)
            else:
                weights.append(topology_weight(len({node.metadata.labels[c.topology_key] for node in kept})))
                counts.append(self._view(pod, c, constraints).sums)
        raw: list[int | None] = []
        for node in feasible:
            if not has_all_keys(node, constraints):
                raw.append(None)
                continue
            labels = node.metadata.labels
            name = node.metadata.name
            found = [counts[i].get(name if c.topology_key == HOSTNAME_LABEL else labels[c.topology_key], 0)
                     for i, c in enumerate(constraints)]
            raw.append(score_one(constraints, found, weights))
        return normalize(raw)

    # ------------------------------------------------------------------------------------------ Filter as a bitset

    def feasible_mask(self, state: SpreadFilter, names: Sequence[str]) -> int:
        """The nodes of ``names`` (bit i: ``names[i]``, the scheduler's fixed node list) Filter lets through: what
        ``SpreadFilter.reason`` decides node by node, domain by domain."""
        domains = self._domain_masks(names)
        ok = (1 << len(names)) - 1
        for i, c in enumerate(state.constraints):
            counts, limit = state.counts[i], c.max_skew - state.self_match[i] + state.minimum[i]
            allowed = 0
            for value, bits in domains.get(c.topology_key, ()):
                if counts.get(value, 0) <= limit:
                    allowed |= bits
            ok &= allowed
        return ok

    def _domain_masks(self, names: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """Each node label key's values and their nodes, as bits of ``names`` (made once: nodes stay)."""
        if self._domains is None:
            pairs: dict[str, dict[str, int]] = {}
            for i, name in enumerate(names):
                self._positions[name] = i
                for key, value in self.state.nodes[name].metadata.labels.items():
                    values = pairs.setdefault(key, {})
                    values[value] = values.get(value, 0) | (1 << i)
            self._domains = {key: list(values.items()) for key, values in pairs.items()}
            for key, values in pairs.items():
                every = 0
                for bits in values.values():
                    every |= bits
                self._keys[key] = every
        return self._domains

    # ------------------------------------------------------------------------------------------ Score by groups

    def score_partition(self, pod: Pod, window: int, names: Sequence[str]) -> list[tuple[int, int]]:
        """``scores`` over the nodes of bitset ``window`` (bit i: ``names[i]``) as (normalised score, bitset of its
        nodes): the nodes cut by each constraint's domains (and, for the hostname, by the pods on each node), so
        its cost grows with the domains and the occupied nodes, not with the window."""
        constraints = constraints_of(pod, SCHEDULE_ANYWAY)
        if not constraints or not window:
            return [(0, window)]
        domains = self._domain_masks(names)
        kept = window
        for c in constraints:
            kept &= self._keys.get(c.topology_key, 0)
        weights: list[float] = []
        # Per constraint: (count, bitset) parts of the kept nodes, each part's nodes counting alike.
        parts: list[list[tuple[int, int]]] = []
        for c in constraints:
            if c.topology_key == HOSTNAME_LABEL:
                weights.append(topology_weight(kept.bit_count()))
                by_count: dict[int, int] = {}
                occupied = 0
                for name, count in self._selector(pod, c).per_node.items():
                    i = self._positions.get(name)
                    if i is not None and kept >> i & 1:
                        by_count[count] = by_count.get(count, 0) | (1 << i)
                        occupied |= 1 << i
                by_count[0] = by_count.get(0, 0) | (kept & ~occupied)
                parts.append(list(by_count.items()))
            else:
                sums = self._view(pod, c, constraints).sums
                cut = [(value, bits & kept) for value, bits in domains.get(c.topology_key, ()) if bits & kept]
                weights.append(topology_weight(len(cut)))
                parts.append([(sums.get(value, 0), bits) for value, bits in cut])
        groups: list[tuple[tuple[int, ...], int]] = [((), kept)] if kept else []
        for part in parts:
            cut_groups = []
            for counts, members in groups:
                for count, bits in part:
                    inside = members & bits
                    if inside:
                        cut_groups.append(((*counts, count), inside))
            groups = cut_groups
        raw = [score_one(constraints, counts, weights) for counts, _ in groups]
        out = list(zip(normalize(raw), (members for _, members in groups), strict=True))
        if window & ~kept:
            out.append((0, window & ~kept))  # lacking some constraint's key: ignored, 0
        return out
