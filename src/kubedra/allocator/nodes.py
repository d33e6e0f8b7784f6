"""core/v1 node selection as the allocator needs it: ``nodeName``, ``allNodes`` or a ``NodeSelector``.

Follows ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: terms are ORed, a term's requirements are
ANDed, an empty term matches nothing, ``Gt``/``Lt`` compare integers, ``matchFields`` knows ``metadata.name`` with
``In``/``NotIn`` and one value. Unlike a plain matcher it reports the parse errors upstream reports.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubedra.objects.model import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class NodeSelectorError(ValueError):
    """A selector that cannot be parsed (upstream's API validation normally prevents these)."""


def _int64(text: str) -> int | None:
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


def _requirement_errors(req: NodeSelectorRequirement, path: str, *, field: bool) -> list[str]:
    op, values = req.operator, req.values
    if field:
        if op not in ("In", "NotIn"):
            return [f'{path}.operator: Unsupported value: "{op}": supported values: "In", "NotIn"']
        if len(values) != 1:
            return [f"{path}.values: Invalid value: {values}: must have one element"]
        return []
    if op not in _LABEL_OPERATORS:
        supported = ", ".join(f'"{o}"' for o in _LABEL_OPERATORS)
        return [f'{path}.operator: Unsupported value: "{op}": supported values: {supported}']
    if op in ("In", "NotIn") and not values:
        return [f"{path}.values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"]
    if op in ("Exists", "DoesNotExist") and values:
        return [f"{path}.values: Invalid value: {values}: values set must be empty for exists and does not exist"]
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            return [f"{path}.values: Invalid value: {values}: for 'Gt', 'Lt' operators, exactly one value is required"]
        if _int64(values[0]) is None:
            return [
                f"{path}.values[0]: Invalid value: {values[0]!r}: "
                "for 'Gt', 'Lt' operators, the value must be an integer"
            ]
    return []


def selector_errors(selector: NodeSelector) -> list[str]:
    """Every parse error of a selector (empty terms are skipped, as upstream skips them)."""
    errors: list[str] = []
    for i, term in enumerate(selector.node_selector_terms):
        base = f"nodeSelectorTerms[{i}]"
        for j, req in enumerate(term.match_expressions):
            errors += _requirement_errors(req, f"{base}.matchExpressions[{j}]", field=False)
        for j, req in enumerate(term.match_fields):
            errors += _requirement_errors(req, f"{base}.matchFields[{j}]", field=True)
    return errors


def _label_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    value = labels.get(req.key)
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None:
        return False
    have, want = _int64(value), _int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    labels = node.metadata.labels
    if not all(_label_matches(req, labels) for req in term.match_expressions):
        return False
    name = node.metadata.name
    if not name:
        return True
    for req in term.match_fields:
        value = name if req.key == "metadata.name" else ""
        if (value == req.values[0]) != (req.operator == "In"):
            return False
    return True


def selector_matches(selector: NodeSelector, node: Node) -> bool:
    """Whether any non-empty term matches; raises :class:`NodeSelectorError` for an unparsable selector."""
    errors = selector_errors(selector)
    if errors:
        raise NodeSelectorError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return any(
        _term_matches(term, node)
        for term in selector.node_selector_terms
        if term.match_expressions or term.match_fields
    )


def node_matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """Upstream's ``NodeMatches``: a node name, then ``allNodes``, then a selector; nothing set matches nothing."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False
