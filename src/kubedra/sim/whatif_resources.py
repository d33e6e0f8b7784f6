"""What would make it fit, kind ``resources``: a node pool publishes a resource the pod asks for that none of the
pool's nodes has. A NodePool written without ``allocatable.cpu`` leaves every pod "Insufficient cpu"; the fix is to
say what the nodes have, not to add nodes. Proven as every suggestion is (``sim.whatif``): the pool's nodes are
replaced on a copy of the end state, each publishing what the pod asks, and the scheduler's Filter places the pod.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from kubedra.cluster.state import PodRecord
from kubedra.objects.model import Node
from kubedra.scheduler.nodefit import is_extended_resource
from kubedra.sim.whatif import Cost, Inputs, Limits, Suggestion, _copy, _fits, pool_of
from kubedra.sim.whatif_patches import nodepool


def _publishing(node: Node, amounts: dict[str, str]) -> Node:
    allocatable = {**node.status.allocatable, **amounts}
    status = msgspec.structs.replace(node.status, allocatable=allocatable,
                                     capacity={**node.status.capacity, **amounts})
    return msgspec.structs.replace(node, status=status)


def published_resources(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    """For each pool (first ``limits.pools``) missing some native resource the pod asks for: the pool publishing
    what the pod asks of each, where that makes it fit."""
    wanted = {name: amount for name, amount in record.requests.items()
              if amount.sign() > 0 and not is_extended_resource(name) and name != "pods"}
    if not wanted:
        return
    pools: dict[tuple[str, str], list[Node]] = {}
    for node in inputs.state.nodes.values():
        found = pool_of(node)
        if found is not None:
            pools.setdefault(found, []).append(node)
    for (label, pool), nodes in list(pools.items())[: limits.pools]:
        missing = sorted(name for name in wanted if all(name not in n.status.allocatable for n in nodes))
        if not missing:
            continue
        amounts = {name: str(wanted[name]) for name in missing}
        replaced = {n.metadata.name: _publishing(n, amounts) for n in nodes[: limits.nodes_checked]}
        fitting = _fits(inputs, _copy(inputs, replaced=replaced), record, list(replaced))
        if fitting:
            listed = ", ".join(f"{name} (at least {amounts[name]})" for name in missing)
            yield Suggestion(
                f"fits if the nodes of pool {pool} published {listed}: for a NodePool, spec.allocatable",
                Cost("resources", len(missing), "resources", f"publish {', '.join(missing)}"),
                {"pool": pool, "label": label, "allocatable": amounts,
                 "patches": _nodepool_patches(label, pool, amounts)}, fitting)


def _nodepool_patches(label: str, pool: str, amounts: dict[str, str]) -> list[dict[str, object]]:
    ops = [{"op": "add", "path": f"/spec/allocatable/{name.replace('~', '~0').replace('/', '~1')}", "value": amount}
           for name, amount in amounts.items()]
    found = nodepool(label, pool, ops)
    return [found] if found is not None else []
