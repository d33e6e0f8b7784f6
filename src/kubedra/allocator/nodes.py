"""core/v1 node selection as the allocator needs it: ``nodeName``, ``allNodes`` or a ``NodeSelector``.

Matching itself is :mod:`kubedra.objects.selection` (shared with the scheduler); this module adds the parse errors
upstream reports for selectors that API validation would have refused.
"""

from __future__ import annotations

from kubedra.objects.model import Node, NodeSelector, NodeSelectorRequirement
from kubedra.objects.selection import node_selector_matches, parse_int64

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class NodeSelectorError(ValueError):
    """A selector that cannot be parsed (upstream's API validation normally prevents these)."""


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
        if parse_int64(values[0]) is None:
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


def selector_matches(selector: NodeSelector, node: Node) -> bool:
    """Whether any non-empty term matches; raises :class:`NodeSelectorError` for an unparsable selector."""
    errors = selector_errors(selector)
    if errors:
        raise NodeSelectorError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return node_selector_matches(selector, node.metadata.name, node.metadata.labels)


def node_matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """Upstream's ``NodeMatches``: a node name, then ``allNodes``, then a selector; nothing set matches nothing."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False
