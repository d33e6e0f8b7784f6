"""Kueue's preemption in a cohort in ``kubedra simulate`` (``sim.kueue_reclaim``): expectations derived from Kueue
v0.17.0's ``pkg/scheduler/preemption`` (``classicalPreemptions``, ``NewCandidateIterator``,
``collectCandidatesForHierarchicalReclaim``, ``candidateIsValid``, ``workloadFits``), each test naming what it follows.
``tests/kueue/test_preemption_vs_kueue_controller.py`` runs the real controller on the first shapes."""

from __future__ import annotations

from typing import Any

import pytest
from tests.sim.test_kueue import QUOTA_8, V1B2, cluster_queue, flavor, job, nodes, run
from tests.sim.test_kueue_preemption import priority_class

from kubedra.sim.run import SimulationResult

QUOTA_4 = {"cpu": "64", "nvidia.com/gpu": "4"}


def queues(a: dict[str, Any], b: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ClusterQueues ``a`` and ``b`` of 4 GPUs each in cohort ``org`` (``a``'s and ``b``'s preemption given), a
    LocalQueue each, 16 GPUs of nodes, priority classes ``low`` (10) and ``high`` (100)."""
    docs: list[dict[str, Any]] = [flavor("default"), nodes(2), priority_class("low", 10),
                                  priority_class("high", 100)]
    for name, preemption in (("a", a), ("b", b or {})):
        cq = cluster_queue(QUOTA_4, cohortName="org", preemption=preemption)
        cq["metadata"]["name"] = name
        docs += [cq, {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"clusterQueue": name}}]
    return docs


def preempted(result: SimulationResult) -> list[tuple[float, str, str]]:
    return [(e.time, e.object.rsplit("/", 1)[1], (e.message or "").split(" due to ")[1].split(";")[0])
            for e in result.events if e.type == "Preempted" and (e.message or "").startswith("Preempted to accommo")]


@pytest.mark.parametrize(("policy", "expected"), [("Any", [(2.0, "b2", "reclamation within the cohort")]),
                                                  ("Never", []), ("LowerPriority", [])])
def test_a_cluster_queue_reclaims_the_nominal_quota_its_cohort_borrowed(
        policy: str, expected: list[tuple[float, str, str]]) -> None:
    """``b`` runs 4 + 2 GPUs (borrowing 2 of ``a``'s); ``a1`` (4, ``a``'s nominal quota) comes: ``a`` fits in its own
    quota, so ``b``'s workloads are hierarchical candidates (``b`` is above its nominal quota), the most recently
    admitted first: preempting ``b2`` is enough. ``reclaimWithinCohort: Never`` or ``LowerPriority`` (equal
    priorities) preempts nothing: ``a1`` waits."""
    result = run(*queues({"reclaimWithinCohort": policy}), job("b1", 4, queue="b"),
                 job("b2", 2, queue="b", start_after="1s"), job("a1", 4, queue="a", start_after="2s"))
    assert preempted(result) == expected
    admitted_a1 = [e.time for e in result.events if e.type == "Admitted" and e.object == "Job default/a1"]
    assert admitted_a1 == ([2.0] if expected else [3600.0])


def test_lower_priority_reclaims_only_from_lower_priority_workloads() -> None:
    """``SatisfiesPreemptionPolicy`` with ``reclaimWithinCohort: LowerPriority``: ``b2`` is of lower priority than
    ``a1``, ``b1`` of the same: only ``b2`` is a candidate, and preempted."""
    result = run(*queues({"reclaimWithinCohort": "LowerPriority"}), job("b1", 4, queue="b", priority="high"),
                 job("b2", 2, queue="b", start_after="1s", priority="low"),
                 job("a1", 4, queue="a", start_after="2s", priority="high"))
    assert preempted(result) == [(2.0, "b2", "reclamation within the cohort")]


def test_a_cluster_queue_not_above_its_nominal_quota_is_never_reclaimed_from() -> None:
    """``collectCandidatesInSubtree``: only members above their nominal quota give candidates; ``b`` uses its own 4,
    ``a`` runs 4 and ``a2`` (4, of ``a1``'s priority: no candidate in ``a``) waits."""
    result = run(*queues({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
                 job("b1", 4, queue="b"), job("a1", 4, queue="a", start_after="1s"),
                 job("a2", 4, queue="a", start_after="2s"))
    assert preempted(result) == []


def test_own_lower_priority_workloads_come_after_the_cohorts_borrowers() -> None:
    """``a`` runs ``a1`` (2, low); ``b`` runs 4 + 2 (borrowing 2 of ``a``'s); ``a2`` (4, high) comes. ``a`` would go
    beyond its nominal quota (2 + 4): ``b``'s workloads are priority candidates, taken only while ``a`` would not
    borrow (the attempt without borrowing first, as there is no hierarchical one), before ``a``'s own
    (``NewCandidateIterator``). ``b2`` removed (``b`` now within its nominal quota: ``b1`` is no longer valid,
    ``candidateIsValid``), then ``a1``: ``a2`` fits without borrowing; ``fillBackWorkloads`` cannot add ``b2`` back."""
    result = run(*queues({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
                 job("a1", 2, queue="a", priority="low"), job("b1", 4, queue="b", start_after="1s"),
                 job("b2", 2, queue="b", start_after="2s"), job("a2", 4, queue="a", start_after="3s",
                                                               priority="high"))
    assert sorted(preempted(result)) == [(3.0, "a1", "prioritization in the ClusterQueue"),
                                         (3.0, "b2", "reclamation within the cohort")]


def test_without_a_cohort_the_quota_is_the_nominal_one() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8, preemption={"withinClusterQueue": "LowerPriority"}),
                 {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"},
                  "spec": {"clusterQueue": "cq"}}, nodes(1), priority_class("low", 10), priority_class("high", 100),
                 job("low", 8, priority="low"), job("high", 8, priority="high", start_after="1s"))
    assert preempted(result) == [(1.0, "low", "prioritization in the ClusterQueue")]
    (message,) = [e.message for e in result.events if e.type == "Preempted" and e.object == "Job default/low"]
    assert message is not None and message.endswith("preemptor path: /cq; preemptee path: /cq")
