"""What would make it fit, kind ``preemption`` (``sim.whatif_preemption``): the victims offered are deleted from the
manifests and the whole scenario simulated again, where the pod must then run; none is offered where the run's own
preemption would have removed them, nor victims of equal priority."""

from __future__ import annotations

import copy
from typing import Any

from fixtures.scenarios import claim_template, nodepool, pod, run
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.scheduler.scoring import Policy
from kubedra.sim.whatif import Inputs, Suggestion, what_would_fit
from kubedra.sim.whatif_preemption import NEVER

Doc = dict[str, Any]
HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
LOW = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": -10}


def _suggest(*docs: Doc) -> list[Suggestion]:
    result = run(*docs).result
    assert result.state.pods["default/waiting"].phase == "Pending"
    assert result.allocator is not None
    return what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER), "default/waiting")


def _preemptions(*docs: Doc) -> list[Suggestion]:
    return [s for s in _suggest(*docs) if s.cost.kind == "preemption"]


def _without(docs: list[Doc], suggestion: Suggestion) -> list[Doc]:
    """``docs`` with the victims deleted while the pod waits: they end at 2m, the pod arrived at 1m (other pods
    pending then compete, as kube-scheduler's queue orders them: by priority)."""
    gone = {d["name"] for d in suggestion.change["delete"]}
    out = copy.deepcopy(docs)
    for doc in out:
        if doc["kind"] == "Pod" and f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}" in gone:
            doc["metadata"].setdefault("annotations", {})["kubedra.io/run-for"] = "2m"
            gone.discard(f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}")
    assert not gone
    return out


def _runs(docs: list[Doc]) -> bool:
    return run(*docs).result.state.pods["default/waiting"].phase == "Running"


def test_devices_held_by_lower_priority_pods_are_not_freed_by_preemption_so_deleting_them_is_offered() -> None:
    """The 1.37 rule: the high-priority trainer waits for the 2 GPUs two low-priority pods hold; the run does not
    preempt them, and deleting both (not one) lets it run."""
    docs = [HIGH, LOW, nodepool("a100", count=1, gpus=2), claim_template("one-gpu"), claim_template("two", count=2),
            pod("batch-a", template="one-gpu", priorityClassName="low"),
            pod("batch-b", template="one-gpu", priorityClassName="low"),
            pod("waiting", template="two", priorityClassName="high", start_after="1m")]
    (preempt,) = _preemptions(*docs)
    assert [v["pod"] for v in preempt.change["victims"]] == ["default/batch-a", "default/batch-b"]
    # Pods that never end within the run, ended, are the same change as deleted: offered once, as the deletion.
    assert [s.cost.kind for s in _suggest(*docs)] == ["preemption", "nodes"]
    assert preempt.change["why"] == ["DRA devices are not freed by preemption in 1.37: the DynamicResources failure "
                                     "is UnschedulableAndUnresolvable, so DefaultPreemption skips the node"]
    assert preempt.text.startswith("fits on a100-0 if 2 lower-priority pods were deleted: default/batch-a (priority "
                                   "-10), default/batch-b (priority -10); kube-scheduler does not preempt them: DRA")
    assert preempt.cost.amount == 2
    assert _runs(_without(docs, preempt))


def test_the_fewest_victims_are_offered() -> None:
    docs = [HIGH, LOW, nodepool("a100", count=1, gpus=4), claim_template("one-gpu"), claim_template("two", count=2),
            *[pod(f"batch-{i}", template="one-gpu", priorityClassName="low") for i in range(3)],
            pod("waiting", template="two", priorityClassName="high", start_after="1m")]
    (preempt,) = _preemptions(*docs)
    assert len(preempt.change["victims"]) == 1
    assert _runs(_without(docs, preempt))


def test_a_pod_that_never_preempts_is_told_which_pods_are_in_its_way() -> None:
    docs = [HIGH, LOW, nodepool("small", count=1, gpus=None, allocatable={"cpu": "4", "memory": "16Gi"}),
            pod("batch", requests={"cpu": "3"}, priorityClassName="low"),
            pod("waiting", requests={"cpu": "2"}, priorityClassName="high", preemptionPolicy="Never", start_after="1m")]
    (preempt,) = _preemptions(*docs)
    assert preempt.change["why"] == [NEVER]
    assert _runs(_without(docs, preempt))
    may_preempt = [*docs[:-1], pod("waiting", requests={"cpu": "2"}, priorityClassName="high", start_after="1m")]
    assert _runs(may_preempt)  # the run's own preemption does it: nothing to suggest


def test_pods_of_equal_priority_are_not_offered() -> None:
    docs = [nodepool("a100", count=1, gpus=1), claim_template("one-gpu"), pod("batch", template="one-gpu"),
            pod("waiting", template="one-gpu", start_after="1m")]
    assert _preemptions(*docs) == []


@settings(max_examples=depth.examples(20, 200), deadline=None)
@given(gpus=st.integers(1, 4), holders=st.lists(st.sampled_from(["low", "high", None]), min_size=1, max_size=4),
       asked=st.integers(1, 4), never=st.booleans(), cpu=st.booleans())
def test_every_preemption_offered_runs_the_pod(
    gpus: int, holders: list[str | None], asked: int, never: bool, cpu: bool
) -> None:
    """The property: deleting the pods a preemption suggestion names lets the pod run; none is offered where the run
    preempted for it."""
    extra: Doc = {"preemptionPolicy": "Never"} if never else {}
    holder_pods = [pod(f"holder-{i}", template="one-gpu", requests={"cpu": "1"} if cpu else None,
                       **({"priorityClassName": p} if p else {})) for i, p in enumerate(holders)]
    docs = [HIGH, LOW, nodepool("a100", count=1, gpus=gpus, allocatable={"cpu": "2", "memory": "16Gi"}),
            claim_template("one-gpu"), claim_template("many", count=asked), *holder_pods,
            pod("waiting", template="many", requests={"cpu": "1"} if cpu else None, priorityClassName="high",
                start_after="1m", **extra)]
    result = run(*docs).result
    if result.state.pods["default/waiting"].phase != "Pending":
        return
    assert result.allocator is not None
    found = [s for s in what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER),
                                       "default/waiting") if s.cost.kind == "preemption"]
    for suggestion in found:
        assert all(v["priority"] < 1000 for v in suggestion.change["victims"])
        assert _runs(_without(docs, suggestion)), suggestion.text
