"""NodeAffinity's Score: the weights of the preferred terms a node matches (its Filter is ``nodefit.py``'s)."""

from __future__ import annotations

from collections.abc import Sequence

from kubedra.objects.model import Node, Pod, PreferredSchedulingTerm
from kubedra.objects.selection import term_matches


def preferred_terms(pod: Pod) -> list[PreferredSchedulingTerm]:
    """The pod's preferred node-affinity terms that count (weight set, some requirement)."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return []
    return [
        t
        for t in affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
        if t.weight != 0 and (t.preference.match_expressions or t.preference.match_fields)
    ]


def preferred_affinity(node: Node, terms: Sequence[PreferredSchedulingTerm]) -> int:
    """NodeAffinity's raw score: the sum of the weights of the preferred terms the node matches."""
    return sum(t.weight for t in terms if term_matches(t.preference, node.metadata.name, node.metadata.labels))
