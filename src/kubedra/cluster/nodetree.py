"""kube-scheduler's NodeTree: the order its snapshot lists nodes in, which is the order Filter walks them.

v1.37.2 ``pkg/scheduler/backend/cache/node_tree.go``: nodes are grouped by zone key (region and zone labels, the
deprecated ``failure-domain.beta`` ones first, ``GetZoneKey``), zones in the order their first node was added, nodes
within a zone in add order; ``list()`` takes the first node of every zone, then the second of every zone, and so on.
Removing a node drops it from its zone's list, and a zone left empty from the zone order (a node added to it later
puts the zone last). A node whose zone key changes is removed and added again (``updateNode``).

The scheduler's cache adds nodes as its informer delivers them: in creation order while it runs, in the API's list
order (by name) when it starts on an existing cluster. Nodes with no zone labels share one zone, so without zones
the order is the add order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubedra.objects.model import Node

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """``GetZoneKey``: region and zone, each from the deprecated beta label when the node has it (even empty), else
    the GA one; "" when both are empty."""
    zone = labels[BETA_ZONE] if BETA_ZONE in labels else labels.get(ZONE, "")
    region = labels[BETA_REGION] if BETA_REGION in labels else labels.get(REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names by zone key, as ``nodeTree`` keeps them (see the module docstring)."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self._tree: dict[str, list[str]] = {}  # zone key -> node names in add order; dict order is the zone order
        self._zone_of: dict[str, str] = {}  # node name -> its zone key when added
        for node in nodes:
            self.add(node)

    def __len__(self) -> int:
        return len(self._zone_of)

    def add(self, node: Node) -> None:
        """``addNode``: a node already present is left where it is."""
        name = node.metadata.name
        if name in self._zone_of:
            return
        zone = zone_key(node.metadata.labels)
        self._tree.setdefault(zone, []).append(name)
        self._zone_of[name] = zone

    def remove(self, name: str) -> None:
        """``removeNode``: out of its zone's list; a zone left empty leaves the zone order. Unknown names are
        ignored (upstream logs them)."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        members = self._tree[zone]
        members.remove(name)
        if not members:
            del self._tree[zone]

    def update(self, node: Node) -> None:
        """``updateNode``: a node whose zone key changed moves to the end of its new zone."""
        name = node.metadata.name
        if name in self._zone_of and self._zone_of[name] == zone_key(node.metadata.labels):
            return
        self.remove(name)
        self.add(node)

    def list(self) -> list[str]:
        """``list()``: zones round-robin, the i-th node of every zone (in zone order) before any (i+1)-th."""
        zones = list(self._tree.values())
        if len(zones) == 1:
            return list(zones[0])
        out: list[str] = []
        depth = max((len(z) for z in zones), default=0)
        for i in range(depth):
            out.extend(z[i] for z in zones if i < len(z))
        return out


def tree_order(nodes: Iterable[Node]) -> list[Node]:
    """The nodes as a NodeTree that added them in this order lists them."""
    by_name = {n.metadata.name: n for n in nodes}
    return [by_name[name] for name in NodeTree(by_name.values()).list()]
