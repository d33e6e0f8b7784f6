"""What would make a waiting gang fit (``sim.whatif_gangs``): more nodes of a pool, each count proven by simulating
the whole run again. Here each suggestion's patch is applied to the manifests and the scenario simulated from the
files, where every member must then run; one node fewer must leave the gang waiting (the count is the smallest)."""

from __future__ import annotations

import copy
from typing import Any

from fixtures.scenarios import claim_template, nodepool
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gangs import GANGS, gang, pod_group, run
from tests import depth

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options
from kubedra.sim.whatif import Limits, Suggestion
from kubedra.sim.whatif_gangs import gang_suggestions

Doc = dict[str, Any]


def _suggest(docs: list[Doc], limits: Limits | None = None) -> list[Suggestion]:
    from fixtures.scenarios import text_of

    scenario = build_scenario(load_text(text_of(*docs)), generic_workload=True)
    return gang_suggestions(scenario, Options(features=GANGS, fragmentation_samples=0), "default/train", limits)


def _members_run(docs: list[Doc], size: int) -> bool:
    sim = run(*docs)
    return all(sim.phase(f"w{i}") != "Pending" for i in range(size))


def _patched(docs: list[Doc], suggestion: Suggestion) -> list[Doc]:
    """The NodePool the suggestion names, with its patch (``replace /spec/count``) applied."""
    out = copy.deepcopy(docs)
    (target,) = [d for d in out if d["kind"] == "NodePool" and d["metadata"]["name"] == suggestion.change["pool"]]
    (op,) = suggestion.change["patch"]
    assert (op["op"], op["path"]) == ("replace", "/spec/count")
    target["spec"]["count"] = op["value"]
    return out


def test_a_gang_larger_than_the_pool_is_told_how_many_nodes_it_needs() -> None:
    """A gang of 14 one-GPU workers on 2 nodes of 4: 2 more nodes, and not 1, let all 14 run."""
    docs = [nodepool("n", count=2, gpus=4), claim_template("one-gpu"), pod_group("train", 14), *gang(14)]
    assert not _members_run(docs, 14)
    (more,) = _suggest(docs)
    assert more.cost.kind == "nodes" and more.change["nodes"] == 2
    assert more.change["object"] == {"kind": "NodePool", "name": "n"}
    assert more.text == ("the gang default/train runs if 2 more nodes of pool n were added (like n-0; proven by "
                         "simulating the whole run again)")
    assert _members_run(_patched(docs, more), 14)
    fewer = _patched(docs, more)
    fewer[0]["spec"]["count"] -= 1
    assert not _members_run(fewer, 14)


def test_no_number_of_nodes_is_offered_where_none_helps() -> None:
    """Each worker asks 8 GPUs of nodes with 4: no count of such nodes runs the gang, and none is offered."""
    docs = [nodepool("n", count=1, gpus=4), claim_template("one-gpu", count=8), pod_group("train", 2), *gang(2)]
    assert _suggest(docs) == []


def test_the_runs_are_bounded() -> None:
    """Two more nodes are needed: one run tries 1 and stops; two runs try 1, then 2."""
    docs = [nodepool("n", count=1, gpus=1), claim_template("one-gpu"), pod_group("train", 3), *gang(3)]
    assert _suggest(docs, Limits(gang_runs=1)) == []
    assert [s.change["nodes"] for s in _suggest(docs, Limits(gang_runs=2))] == [2]


@settings(max_examples=depth.examples(8, 60), deadline=None)
@given(nodes=st.integers(1, 3), gpus=st.integers(1, 4), size=st.integers(2, 12), per_member=st.integers(1, 2))
def test_the_count_offered_is_the_smallest_that_runs_the_gang(nodes: int, gpus: int, size: int,
                                                               per_member: int) -> None:
    docs = [nodepool("n", count=nodes, gpus=gpus), claim_template("one-gpu", count=per_member),
            pod_group("train", size), *gang(size)]
    if _members_run(docs, size):
        return
    found = _suggest(docs)

    def runs_with(more: int) -> bool:
        grown = copy.deepcopy(docs)
        grown[0]["spec"]["count"] = nodes + more
        return _members_run(grown, size)

    smallest = next((k for k in range(1, Limits().gang_nodes + 1) if runs_with(k)), None)
    assert [s.change["nodes"] for s in found] == ([] if smallest is None else [smallest])
