"""DefaultPreemption as kube-scheduler v1.37.2's PostFilter runs it: victims by priority then start time, the
preemptor nominated and bound once they are gone, and never for devices (a DRA failure is unresolvable in 1.37)."""

from __future__ import annotations

from typing import Any

from fixtures.scenarios import claim_template, nodepool, pod, run

from kubedra.sim.report import build_report

Doc = dict[str, Any]
CPU = {"cpu": "64", "memory": "512Gi"}


def priority_class(name: str, value: int, **extra: Any) -> Doc:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def cpu_pod(name: str, cpu: str, start_after: str | None = None, **spec: Any) -> Doc:
    return pod(name, requests={"cpu": cpu}, start_after=start_after, **spec)


def test_a_high_priority_pod_evicts_the_fewest_lowest_priority_pods_and_binds_after_their_grace_period() -> None:
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "8", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("mid", 100), priority_class("high", 1000),
        cpu_pod("mid-a", "4", priorityClassName="mid"),
        cpu_pod("low-a", "2", priorityClassName="low"),
        cpu_pod("low-b", "2", priorityClassName="low", start_after="1m"),
        cpu_pod("urgent", "4", priorityClassName="high", start_after="2m"),
    )
    preempted = sorted(e["object"] for e in sim.events if e["type"] == "Preempted")
    assert preempted == ["Pod default/low-a", "Pod default/low-b"]  # both low ones, not the one mid pod
    assert sim.phase("mid-a") == "Running"
    assert sim.pods["urgent"]["status"]["nominatedNodeName"] == "n-0"
    assert sim.times("Pod", "Scheduled")["urgent"] == 120.0 + 30.0  # the victims' default grace period


def test_a_preempted_pod_s_line_says_who_preempted_it() -> None:
    """Failed before the fix: the victim's line read ``Deleted`` with reason ``<none>``."""
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("high", 1000),
        cpu_pod("batch", "4", priorityClassName="low"),
        cpu_pod("urgent", "4", priorityClassName="high", start_after="1m"),
    )
    lines = {line.pod: line for line in build_report(sim.result).pods}
    assert (lines["default/batch"].phase, lines["default/batch"].reason) == (
        "Deleted", "Preempted by pod default/urgent on node n-0")
    assert [e["message"] for e in sim.events if e["type"] == "Deleted" and e["object"] == "Pod default/batch"] == [
        "Preempted by pod default/urgent on node n-0"]


def test_of_equal_priority_victims_the_one_started_last_goes_first() -> None:
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("high", 1000),
        cpu_pod("older", "2", priorityClassName="low"),
        cpu_pod("newer", "2", priorityClassName="low", start_after="1m"),
        cpu_pod("urgent", "2", priorityClassName="high", start_after="2m"),
    )
    assert [e["object"] for e in sim.events if e["type"] == "Preempted"] == ["Pod default/newer"]
    assert sim.phase("older") == "Running"


def test_equal_priority_never_preempts_and_preemption_policy_never_is_respected() -> None:
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("polite", 1000, preemptionPolicy="Never"),
        cpu_pod("a", "4", priorityClassName="low"),
        cpu_pod("b", "4", priorityClassName="low", start_after="1m"),
        cpu_pod("c", "4", priorityClassName="polite", start_after="2m"),
    )
    assert not any(e["type"] == "Preempted" for e in sim.events)
    assert [sim.phase(p) for p in "abc"] == ["Running", "Pending", "Pending"]


def test_devices_are_never_freed_by_preemption() -> None:
    sim = run(
        nodepool("n", gpus=1, allocatable=CPU),
        claim_template("one-gpu"),
        priority_class("low", 10), priority_class("high", 1000),
        pod("batch", template="one-gpu", priorityClassName="low"),
        pod("inference", template="one-gpu", priorityClassName="high", start_after="1m"),
    )
    assert not any(e["type"] == "Preempted" for e in sim.events)
    assert sim.phase("batch") == "Running"
    assert sim.pending_reason("inference") == (
        "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    answer = sim.result.preemptions["default/inference"]
    assert answer.message == "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    assert answer.unresolvable == ["cannot allocate all claims"]


def test_a_victims_claims_are_released_and_deallocated_when_it_is_gone() -> None:
    sim = run(
        nodepool("n", gpus=1, allocatable={"cpu": "4", "memory": "64Gi"}),
        claim_template("one-gpu"),
        priority_class("low", 10), priority_class("high", 1000),
        pod("batch", template="one-gpu", requests={"cpu": "4"}, priorityClassName="low"),
        cpu_pod("urgent", "4", priorityClassName="high", start_after="1m"),
    )
    assert sim.phase("urgent") == "Running"
    claim = [e["object"] for e in sim.events if e["type"] == "Deallocated"]
    assert len(claim) == 1 and claim[0].startswith("ResourceClaim default/batch-gpu-")


def _pdb_cluster(*extra: Doc) -> list[Doc]:
    pinned = {"cpu": "2"}
    return [
        nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("high", 1000),
        pod("db-0", requests=pinned, priorityClassName="low", nodeName="n-0"),
        pod("batch-0", requests=pinned, priorityClassName="low", nodeName="n-0"),
        pod("batch-1", requests=pinned, priorityClassName="low", nodeName="n-1"),
        pod("batch-2", requests=pinned, priorityClassName="low", nodeName="n-1"),
        cpu_pod("urgent", "3", priorityClassName="high", start_after="1m"),
        *extra,
    ]


def _with_db_label(docs: list[Doc]) -> list[Doc]:
    for doc in docs:
        if doc.get("metadata", {}).get("name") == "db-0":
            doc["metadata"]["labels"] = {"app": "db"}
    return docs


def budget(**spec: Any) -> Doc:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec}}


def test_a_disruption_budget_steers_preemption_to_the_node_whose_victims_violate_none() -> None:
    """The same choice kube-scheduler v1.37.2 makes (``tests/kube/scenarios/preemption-pdb``); without the budget
    both nodes tie and the first is taken."""
    without = run(*_with_db_label(_pdb_cluster()))
    assert sorted(e["object"] for e in without.events if e["type"] == "Preempted") == [
        "Pod default/batch-0", "Pod default/db-0"]
    with_budget = run(*_with_db_label(_pdb_cluster(budget(minAvailable=1))))
    assert sorted(e["object"] for e in with_budget.events if e["type"] == "Preempted") == [
        "Pod default/batch-1", "Pod default/batch-2"]
    assert with_budget.node_of("urgent") == "n-1"


def test_a_budget_that_allows_the_disruption_is_not_violated() -> None:
    allowing = run(*_with_db_label(_pdb_cluster(budget(maxUnavailable="100%"))))
    assert sorted(e["object"] for e in allowing.events if e["type"] == "Preempted") == [
        "Pod default/batch-0", "Pod default/db-0"]


def test_a_budget_with_both_or_neither_bound_is_refused_naming_the_field() -> None:
    import pytest
    from fixtures.scenarios import text_of

    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_text
    from kubedra.sim.scenario import build_scenario

    for spec in ({}, {"minAvailable": 1, "maxUnavailable": 1}):
        with pytest.raises(InvalidInputError) as caught:
            build_scenario(load_text(text_of(budget(**spec))))
        assert [p.location.field for p in caught.value.problems] == ["spec"]
    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(text_of(budget(minAvailable="half"))))
    assert [p.location.field for p in caught.value.problems] == ["spec.minAvailable"]


def test_a_request_beyond_the_node_s_size_is_not_helped_by_evicting() -> None:
    """v1.37.2's NodeResourcesFit marks a request above the node's allocatable UnschedulableAndUnresolvable: no
    victim is taken even though a lower-priority pod runs there (checked on the real scheduler by
    tests/kube/test_extended_gate_vs_kube_scheduler.py for an extended resource the node lacks)."""
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("high", 1000),
        cpu_pod("small", "2", priorityClassName="low"),
        cpu_pod("huge", "8", priorityClassName="high", start_after="1m"),
    )
    assert not any(e["type"] == "Preempted" for e in sim.events)
    assert sim.pending_reason("huge") == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                                          "available: 1 Preemption is not helpful for scheduling.")


def test_a_second_preemptor_takes_the_victim_already_terminating_and_counts_the_nominated_one() -> None:
    """Upstream's SelectVictimsOnNode takes every lower-priority pod as a potential victim, one already terminating
    included (its executor sends no second deletion), and counts the pods nominated on the node. Failed before the
    fix: the second pod of ``hi`` preempted ``a0`` too (scenario ``preemptor-reuses-terminating-victim``, as the real
    kube-scheduler decided it; ``random_preemption_scenario(13)``)."""
    pinned = {"nodeSelector": {"kubernetes.io/hostname": "n-0"}}
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "16Gi"}, count=2),
        priority_class("low", 10), priority_class("mid", 50), priority_class("high", 1000),
        pod("a0", requests={"cpu": "1", "memory": "8Gi"}, priorityClassName="low", terminationGracePeriodSeconds=30,
            **pinned),
        pod("a1", requests={"cpu": "1", "memory": "8Gi"}, start_after="1m", priorityClassName="low",
            terminationGracePeriodSeconds=30, **pinned),
        pod("m0", requests={"cpu": "4", "memory": "2Gi"}, start_after="2m", priorityClassName="mid",
            nodeSelector={"kubernetes.io/hostname": "n-1"}),
        *(pod(f"hi-{i}", requests={"cpu": "500m", "memory": "4Gi"}, start_after="3m", priorityClassName="high")
          for i in range(2)),
    )
    assert [e["object"] for e in sim.events if e["type"] == "Preempted"] == ["Pod default/a1"]
    assert [e["message"] for e in sim.events if e["type"] == "Nominated"] == ["preempting 1 pod(s) on n-0"] * 2
    assert sim.phase("a0") == "Running" and sim.phase("m0") == "Running"
    assert sim.times("Pod", "Scheduled")["hi-1"] == 180.0 + 30.0  # on n-0, once a1 is gone


def test_among_nodes_that_tie_the_one_whose_victim_bound_later_in_the_instant_is_taken() -> None:
    """``pickOneNodeForPreemption``'s last rule, the latest start of the highest-priority victims: two victims bound at
    one instant started in bind order (a kubelet starts pods as they bind; ``status.startTime`` then differs), so
    the node of the later one is taken, not the first node."""
    sim = run(
        nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}),
        priority_class("low", 10), priority_class("high", 1000),
        cpu_pod("low-a", "2", priorityClassName="low"),
        cpu_pod("low-b", "2", priorityClassName="low"),
        cpu_pod("urgent", "3", priorityClassName="high", start_after="1m"),
    )
    scheduled = [(e["object"], e["node"]) for e in sim.events if e["type"] == "Scheduled"]
    times = sim.times("Pod", "Scheduled")
    assert times["low-a"] == times["low-b"] == 0.0
    (_, first_node), (second, second_node) = scheduled[:2]
    assert first_node != second_node
    assert [e["object"] for e in sim.events if e["type"] == "Preempted"] == [second]
    assert sim.node_of("urgent") == second_node
    assert second_node != "n-0"  # not the first node either: the bind order decided
