"""The disruptions a PodDisruptionBudget allows as the disruption controller counts them (``countHealthyPods``): a
pod being deleted, by a preemption or by its own controller, is not healthy while it terminates."""

from __future__ import annotations

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ObjectMeta, Pod
from kubedra.sim.budgets import BudgetSpec, PodDisruptionBudget, current_budgets
from kubedra.sim.manifests import LabelSelector


def _db(name: str) -> PodRecord:
    pod = Pod(metadata=ObjectMeta(name=name, namespace="default", labels={"app": "db"}))
    return PodRecord(pod=pod, requests={}, started_at=0.0)


def test_a_pod_being_deleted_leaves_its_budget_one_disruption_short() -> None:
    state = ClusterState()
    pods = [_db(f"db-{i}") for i in range(3)]
    for record in pods:
        state.add_pod(record)
    budget = PodDisruptionBudget(api_version="policy/v1", kind="PodDisruptionBudget",
                                 metadata=ObjectMeta(name="db", namespace="default"),
                                 spec=BudgetSpec(min_available=1, selector=LabelSelector(match_labels={"app": "db"})))
    assert [b.allowed for b in current_budgets([budget], state)] == [2]
    state.terminate(pods[0], "n-0", "1970-01-01T00:01:00Z")  # its controller deleted it: still there, terminating
    assert pods[0].pod.metadata.deletion_timestamp == "1970-01-01T00:01:00Z"
    assert [b.allowed for b in current_budgets([budget], state)] == [1]
    assert [b.allowed for b in current_budgets([budget], state, leaving=["default/db-1"])] == [0]
