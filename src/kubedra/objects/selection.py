"""core/v1 selection semantics shared by the allocator and the scheduler: node selectors and tolerations.

These follow ``k8s.io/component-helpers/scheduling/corev1`` to the letter: terms are ORed, the requirements of a term
are ANDed, an empty term matches nothing, ``Gt``/``Lt`` compare integers, and ``matchFields`` knows only
``metadata.name``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubedra.objects.model import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

NODE_NAME_FIELD = "metadata.name"


def parse_int64(text: str) -> int | None:
    """The value of a ``Gt``/``Lt`` operand, or None when it is not a base-10 int64."""
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


def requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    """One requirement against one label (or field) value; ``None`` means the key is absent."""
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(req.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(req.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def term_matches(term: NodeSelectorTerm, node_name: str, labels: Mapping[str, str]) -> bool:
    """All requirements of a term hold; a term without requirements matches no node (as upstream)."""
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if not requirement_matches(req, labels.get(req.key)):
            return False
    if not node_name:
        return True  # upstream matches fields only against a named node
    for req in term.match_fields:
        value = node_name if req.key == NODE_NAME_FIELD else None
        if not requirement_matches(req, value):
            return False
    return True


def node_selector_matches(selector: NodeSelector, node_name: str, labels: Mapping[str, str]) -> bool:
    """Any term matches (an empty selector matches nothing)."""
    return any(term_matches(term, node_name, labels) for term in selector.node_selector_terms)


def toleration_tolerates(
    *, key: str, operator: str, value: str, effect: str, taint_key: str, taint_value: str, taint_effect: str
) -> bool:
    """Whether one toleration tolerates one taint (core/v1 ``Toleration.ToleratesTaint``).

    An empty effect matches every effect; an empty key with ``Exists`` matches every taint; the operator defaults
    to ``Equal``.
    """
    if effect and effect != taint_effect:
        return False
    if key and key != taint_key:
        return False
    if operator == "Exists":
        return True
    if operator in ("", "Equal"):
        return value == taint_value
    return False
