from __future__ import annotations

import msgspec
import pytest

from kubedra.allocator.nodes import NodeSelectorError, node_matches
from kubedra.objects.model import Node, NodeSelector

NODE = msgspec.convert({"metadata": {"name": "n1", "labels": {"zone": "a", "gpus": "8"}}}, Node)


def _sel(*terms: dict[str, object]) -> NodeSelector:
    return msgspec.convert({"nodeSelectorTerms": list(terms)}, NodeSelector)


def test_operators_and_fields() -> None:
    assert node_matches(
        NODE, "", False, _sel({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})
    )
    assert node_matches(
        NODE, "", False, _sel({"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}]})
    )
    assert not node_matches(NODE, "", False, _sel({"matchExpressions": [{"key": "x", "operator": "Exists"}]}))
    assert node_matches(
        NODE, "", False, _sel({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    )
    assert not node_matches(NODE, "", False, _sel({}))  # an empty term matches nothing
    assert node_matches(NODE, "n1", False, None)
    assert node_matches(NODE, "", True, None)


def test_unparsable_selector_is_an_error() -> None:
    with pytest.raises(NodeSelectorError):
        node_matches(NODE, "", False, _sel({"matchExpressions": [{"key": "zone", "operator": "In"}]}))
