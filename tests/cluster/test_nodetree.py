"""kube-scheduler's NodeTree order (v1.37.2 node_tree.go), the order kubedra's scheduler walks nodes in."""

from __future__ import annotations

import msgspec

from kubedra.cluster.nodetree import NodeTree, tree_order, zone_key
from kubedra.cluster.state import ClusterState
from kubedra.objects.model import Node


def node(name: str, zone: str = "", region: str = "", **labels: str) -> Node:
    found = dict(labels)
    if zone:
        found["topology.kubernetes.io/zone"] = zone
    if region:
        found["topology.kubernetes.io/region"] = region
    return msgspec.convert({"metadata": {"name": name, "labels": found}}, Node)


def test_list_interleaves_zones_round_robin_in_first_added_order() -> None:
    nodes = [node("a1", "a"), node("a2", "a"), node("a3", "a"), node("b1", "b")]
    assert NodeTree(nodes).list() == ["a1", "b1", "a2", "a3"]
    mixed = [node("c1", "c"), node("a1", "a"), node("c2", "c"), node("b1", "b"), node("a2", "a"), node("c3", "c")]
    assert NodeTree(mixed).list() == ["c1", "a1", "b1", "c2", "a2", "c3"]


def test_nodes_without_zone_labels_keep_their_order_in_one_zone() -> None:
    nodes = [node("z"), node("y"), node("x", "a"), node("w")]
    assert NodeTree(nodes).list() == ["z", "x", "y", "w"]
    assert NodeTree([node("z"), node("y"), node("w")]).list() == ["z", "y", "w"]


def test_zone_key_is_region_and_zone_beta_labels_first() -> None:
    assert zone_key({}) == ""
    assert zone_key({"topology.kubernetes.io/zone": "a"}) == ":\x00:a"
    assert zone_key({"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "a"}) == "r:\x00:a"
    beta = {"failure-domain.beta.kubernetes.io/zone": "old", "topology.kubernetes.io/zone": "a"}
    assert zone_key(beta) == ":\x00:old"
    # The same zone name in two regions is two zones.
    assert NodeTree([node("r1a", "a", "r1"), node("r1b", "a", "r1"), node("r2a", "a", "r2")]).list() == [
        "r1a", "r2a", "r1b"]


def test_remove_drops_the_node_and_an_emptied_zone_from_the_zone_order() -> None:
    tree = NodeTree([node("a1", "a"), node("b1", "b"), node("a2", "a"), node("c1", "c")])
    assert tree.list() == ["a1", "b1", "c1", "a2"]
    tree.remove("b1")
    assert tree.list() == ["a1", "c1", "a2"]
    tree.add(node("b2", "b"))  # zone b comes back last
    assert tree.list() == ["a1", "c1", "b2", "a2"]
    tree.remove("a1")
    tree.remove("missing")
    assert tree.list() == ["a2", "c1", "b2"]
    assert len(tree) == 3


def test_add_twice_keeps_the_place_and_a_zone_change_moves_the_node_last_in_its_new_zone() -> None:
    tree = NodeTree([node("a1", "a"), node("a2", "a"), node("b1", "b")])
    tree.add(node("a1", "a"))
    assert tree.list() == ["a1", "b1", "a2"]
    tree.update(node("a1", "a", extra="label"))  # same zone: nothing moves
    assert tree.list() == ["a1", "b1", "a2"]
    tree.update(node("a1", "b"))
    assert tree.list() == ["a2", "b1", "a1"]


def test_cluster_state_keeps_nodes_in_node_tree_order() -> None:
    nodes = [node("a1", "a"), node("a2", "a"), node("a3", "a"), node("b1", "b")]
    state = ClusterState.build(nodes=nodes, slices=[], classes=[])
    assert list(state.nodes) == ["a1", "b1", "a2", "a3"]
    assert list(state.usage) == ["a1", "b1", "a2", "a3"]
    # Built again from its own order (a what-if copy), the order holds; a node added afterwards goes last in its zone.
    again = ClusterState.build(nodes=[*state.nodes.values(), node("b2", "b"), node("c1", "c")], slices=[], classes=[])
    assert list(again.nodes) == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert [n.metadata.name for n in tree_order(nodes)] == list(state.nodes)


def _node_doc(name: str, zone: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}


def test_the_live_state_keeps_the_order_a_full_read_builds() -> None:
    """A full read adds nodes by name (the API's list order); nodes the watches add or remove later leave the state
    as a full read of the same documents would build it."""
    from kubedra.kube.mirror import Changes
    from kubedra.kube.read import decode_cluster
    from kubedra.metrics.live import LiveState

    live = LiveState(decode_cluster)
    docs = {n: _node_doc(n, z) for n, z in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c")]}
    live.apply(Changes(1, {"Node": dict(docs)}, complete=True))
    assert list(live.state.nodes) == ["a1", "b1", "c1", "a2"]
    live.apply(Changes(2, {"Node": {"b0": _node_doc("b0", "b"), "a1": None}}, complete=False))
    assert list(live.state.nodes) == ["a2", "b0", "c1", "b1"]
    assert set(live.state.usage) == set(live.state.nodes)
