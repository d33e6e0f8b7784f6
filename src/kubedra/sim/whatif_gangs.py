"""What would make a waiting gang fit: more nodes of a pool, proven by simulating the whole run again.

A gang's members are placed together (``minCount`` of them in one cycle, GenericWorkload), so the single-pod proof of
``sim.whatif`` (Filter for one pod on a copy of the end state) says nothing about them: one more node may fit one
member and still leave the group short. Here the change is made to the scenario itself (the pool's nodes and their
ResourceSlices copied, empty) and the whole run repeated with the same options; the change is offered only where
every member of the gang then runs (or has run) in that run.

Tried per pool (the first ``Limits.pools`` of them): 1, 2, 4 … up to ``Limits.gang_nodes`` more nodes, then the
smallest count that works bisected below the first that did; at most ``Limits.gang_runs`` runs in all, so a large
scenario's explain stays bounded. Cost: the nodes added. Pure: the scenario and options in, suggestions out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from kubedra.objects.model import Node
from kubedra.sim.scenario import Scenario
from kubedra.sim.simulate import Options, simulate
from kubedra.sim.whatif import Cost, Limits, Suggestion, clone_node, new_names, pool_of
from kubedra.sim.whatif_patches import nodepool


def _grown(scenario: Scenario, pool: str, template: Node, count: int) -> Scenario:
    """The scenario with ``count`` more nodes like ``template``, named as the pool's next nodes."""
    names = new_names({n.metadata.name for n in scenario.nodes}, pool, count)
    added = [clone_node(scenario.slices, template, name) for name in names]
    return replace(scenario, nodes=[*scenario.nodes, *(n for n, _ in added)],
                   slices=[*scenario.slices, *(s for _, ss in added for s in ss)])


def _members_run(scenario: Scenario, options: Options, group: str) -> list[str] | None:
    """The nodes the gang's members run on in a run of ``scenario``; None where some member still waits."""
    result = simulate(scenario, options)
    members = [r for r in result.state.pods.values() if r.group == group]
    if not members or any(r.phase == "Pending" for r in members):
        return None
    return sorted({r.pod.spec.node_name for r in members if r.pod.spec.node_name})


def _smallest(runs: Callable[[int], list[str] | None], most: int, budget: list[int]) -> tuple[int, list[str]] | None:
    """The fewest nodes (up to ``most``) with which ``runs`` succeeds: doubling, then bisecting; ``budget`` counts
    the runs left (shared by every pool)."""
    low, count, found = 0, 1, None
    while count <= most and budget[0] > 0:
        budget[0] -= 1
        nodes = runs(count)
        if nodes is not None:
            found = (count, nodes)
            break
        low, count = count, min(count * 2, most) if count < most else most + 1
    if found is None:
        return None
    high = found[0]
    while high - low > 1 and budget[0] > 0:
        budget[0] -= 1
        middle = (low + high) // 2
        nodes = runs(middle)
        if nodes is not None:
            high, found = middle, (middle, nodes)
        else:
            low = middle
    return found


def gang_suggestions(
    scenario: Scenario, options: Options, group: str, limits: Limits | None = None
) -> list[Suggestion]:
    """More nodes of a pool with which every member of the waiting gang ``group`` (``ns/name``) runs, fewest first."""
    limits = limits or Limits()
    return sorted(_pools(scenario, options, group, limits), key=lambda s: s.cost.rank())[: limits.suggestions]


def _pools(scenario: Scenario, options: Options, group: str, limits: Limits) -> Iterator[Suggestion]:
    pools: dict[tuple[str, str], Node] = {}
    for node in scenario.nodes:
        found = pool_of(node)
        if found is not None and found not in pools:
            pools[found] = node
    budget = [limits.gang_runs]
    for (label, pool), template in list(pools.items())[: limits.pools]:
        current = sum(1 for n in scenario.nodes if n.metadata.labels.get(label) == pool)

        def runs(count: int, pool: str = pool, template: Node = template) -> list[str] | None:
            return _members_run(_grown(scenario, pool, template, count), options, group)

        smallest = _smallest(runs, limits.gang_nodes, budget)
        if smallest is None:
            continue
        count, fits_on = smallest
        many = "s" * (count > 1)
        change: dict[str, object] = {"pool": pool, "label": label, "nodes": count, "like": template.metadata.name}
        patch = nodepool(label, pool, [{"op": "replace", "path": "/spec/count", "value": current + count}])
        if patch is not None:
            change["object"], change["patch"] = patch["object"], patch["patch"]
        change["patches"] = [patch] if patch is not None else []
        yield Suggestion(
            f"the gang {group} runs if {count} more node{many} of pool {pool} were added (like "
            f"{template.metadata.name}; proven by simulating the whole run again)",
            Cost("nodes", count, "nodes", f"add {count} node{many}"), change, fits_on)
