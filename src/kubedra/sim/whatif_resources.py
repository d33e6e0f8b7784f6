"""What would make it fit, kind ``resources``: a node pool publishes a resource the pod asks for that none of the
pool's nodes has. A NodePool written without ``allocatable.cpu`` leaves every pod "Insufficient cpu"; the fix is to
say what the nodes have, not to add nodes. Proven as every suggestion is (``sim.whatif``): the pool's nodes are
replaced on a copy of the end state, each publishing what the pod asks, and the scheduler's Filter places the pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

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


Unpublished = tuple[str, str, dict[str, str], dict[str, Node]]  # (label, pool, amounts, its nodes publishing them)


def unpublished(inputs: Inputs, record: PodRecord, limits: Limits) -> list[Unpublished]:
    """For each pool (first ``limits.pools``) missing some native resource the pod asks for: what it would publish
    (what the pod asks of each), and its nodes publishing it."""
    wanted = {name: amount for name, amount in record.requests.items()
              if amount.sign() > 0 and not is_extended_resource(name) and name != "pods"}
    if not wanted:
        return []
    pools: dict[tuple[str, str], list[Node]] = {}
    for node in inputs.state.nodes.values():
        found = pool_of(node)
        if found is not None:
            pools.setdefault(found, []).append(node)
    out = []
    for (label, pool), nodes in list(pools.items())[: limits.pools]:
        missing = sorted(name for name in wanted if all(name not in n.status.allocatable for n in nodes))
        if missing:
            amounts = {name: str(wanted[name]) for name in missing}
            out.append((label, pool, amounts,
                        {n.metadata.name: _publishing(n, amounts) for n in nodes[: limits.nodes_checked]}))
    return out


def _listed(amounts: dict[str, str]) -> str:
    return ", ".join(f"{name} (at least {amount})" for name, amount in amounts.items())


def published_resources(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    """The pool publishing what the pod asks, where that alone makes it fit."""
    for label, pool, amounts, replaced in unpublished(inputs, record, limits):
        fitting = _fits(inputs, _copy(inputs, replaced=replaced), record, list(replaced))
        if fitting:
            yield Suggestion(
                f"fits if the nodes of pool {pool} published {_listed(amounts)}: for a NodePool, spec.allocatable",
                Cost("resources", len(amounts), "resources", f"publish {', '.join(amounts)}"),
                {"pool": pool, "label": label, "allocatable": amounts,
                 "patches": _nodepool_patches(label, pool, amounts)}, fitting)


Kind = Callable[[Inputs, PodRecord, Limits], Iterator[Suggestion]]


def then_publishing(inputs: Inputs, record: PodRecord, limits: Limits, kinds: Iterable[Kind]) -> Iterator[Suggestion]:
    """Two changes at once, where no one change fits the pod (a first NodePool names no cpu, and its template asks
    what no device has): each other kind's change proven on the state where the pool publishes what the pod asks.
    Ranked by that change, after every single change of its kind (one more resource in its cost)."""
    for label, pool, amounts, replaced in unpublished(inputs, record, limits):
        published = Inputs(_copy(inputs, replaced=replaced), inputs.features, inputs.policy, inputs.blocked_nodes)
        again = published.state.pods.get(record.key)
        if again is None:
            continue
        for kind in kinds:
            for second in kind(published, again, limits):
                change = {"pool": pool, "label": label, "allocatable": amounts}
                yield Suggestion(
                    f"with pool {pool} publishing {_listed(amounts)} (a NodePool's spec.allocatable): {second.text}",
                    Cost(second.cost.kind, second.cost.amount + len(amounts), second.cost.unit,
                         f"publish {', '.join(amounts)}; {second.cost.text}"),
                    {"and": [change, second.change],
                     "patches": [*_nodepool_patches(label, pool, amounts), *second.change.get("patches", [])]},
                    second.nodes)


def _nodepool_patches(label: str, pool: str, amounts: dict[str, str]) -> list[dict[str, object]]:
    ops = [{"op": "add", "path": f"/spec/allocatable/{name.replace('~', '~0').replace('/', '~1')}", "value": amount}
           for name, amount in amounts.items()]
    found = nodepool(label, pool, ops)
    return [found] if found is not None else []
