"""The scheduler's node list in kube-scheduler's order: its ``nodeTree`` interleaves zones."""

from __future__ import annotations

import msgspec

from kubedra.cluster.nodetree import tree_order as node_tree_order
from kubedra.cluster.nodetree import zone_key as labels_zone_key
from kubedra.cluster.state import ClusterState
from kubedra.objects.model import Node


def zone_key(node: Node) -> str:
    return labels_zone_key(node.metadata.labels)


def _node(name: str, **labels: str) -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Node)


def test_nodes_are_listed_zone_by_zone_as_the_node_tree_lists_them() -> None:
    """``nodeTree.list()``: each zone's nodes in the order added, zones in the order first seen, one node of every
    zone per round. Seen against kube-scheduler v1.37.2 (``random_user_scenario(3)``): nodes n0 (zone-c), n1
    (zone-c), n2 (no zone), n3 (zone-a), n4 (no zone) are scored and tie-broken in the order n0, n2, n3, n1, n4."""
    zone = "topology.kubernetes.io/zone"
    nodes = [_node("n0", **{zone: "zone-c"}), _node("n1", **{zone: "zone-c"}), _node("n2"),
             _node("n3", **{zone: "zone-a"}), _node("n4")]
    order = ["n0", "n2", "n3", "n1", "n4"]
    assert [n.metadata.name for n in node_tree_order(nodes)] == order
    assert list(ClusterState.build(nodes=nodes, slices=[], classes=[]).nodes) == order
    assert [n.metadata.name for n in node_tree_order(nodes[:3:2] + nodes[1:2])] == ["n0", "n2", "n1"]
    assert node_tree_order([]) == []


def test_the_zone_key_is_region_and_zone_the_beta_labels_first() -> None:
    assert zone_key(_node("a")) == ""
    assert zone_key(_node("a", **{"topology.kubernetes.io/zone": "z"})) == ":\x00:z"
    assert zone_key(_node("a", **{"topology.kubernetes.io/region": "r"})) == "r:\x00:"
    beta = {"failure-domain.beta.kubernetes.io/zone": "old", "topology.kubernetes.io/zone": "new"}
    assert zone_key(_node("a", **beta)) == ":\x00:old"
