"""The queueing hints for a pod being bound (``scheduler/queueing_hints``), case by case as v1.37.2's
``isSchedulableAfterAssignedPodChange`` decides them (its plugin_test.go's Add cases, plus the namespace rules its
code reads); the whole behaviour is compared with the real kube-scheduler in ``tests/kube/scenarios/requeue-on-bind``.
Then the hints for an assigned pod leaving (``delete_hint``), compared in ``random_preemption_scenario``'s seeds 15
and 42 (``tests/kube/test_controllers_vs_kube_scheduler``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubedra.objects.model import Pod
from kubedra.scheduler.dynamicresources import UNSCHEDULABLE_CLAIMS
from kubedra.scheduler.interpodaffinity import AFFINITY_REASON, ANTI_AFFINITY_REASON
from kubedra.scheduler.nodefit import (
    NODE_AFFINITY_REASON,
    NODE_NAME_MISMATCH,
    REASON_SEPARATOR,
    TAINT_REASON,
    UNSCHEDULABLE_REASON,
)
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, MISSING_LABEL_REASON
from kubedra.scheduler.queueing_hints import (
    INTER_POD_AFFINITY,
    NEVER_ON_DELETE,
    ON_DEALLOCATION,
    ON_POD_DELETE,
    POD_TOPOLOGY_SPREAD,
    bind_hinted_plugins,
    delete_hint,
    requeue_after_bind,
    requeue_after_delete,
)
from kubedra.sim.queue import SchedulingQueue

Z = "topology.kubernetes.io/zone"
IPA = frozenset({INTER_POD_AFFINITY})
PTS = frozenset({POD_TOPOLOGY_SPREAD})


def _pod(labels: dict[str, str], namespace: str = "default", **spec: Any) -> Pod:
    return msgspec.convert({"metadata": {"name": "p", "namespace": namespace, "labels": labels},
                            "spec": {"containers": [{"name": "c"}], "nodeName": "n0", **spec}}, Pod)


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def _spread(match: dict[str, str], when: str = "DoNotSchedule") -> dict[str, Any]:
    return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": Z, "whenUnsatisfiable": when,
                                           "labelSelector": {"matchLabels": match}}]}


def test_the_plugins_with_a_hint_are_read_from_the_filter_reasons() -> None:
    assert bind_hinted_plugins({AFFINITY_REASON: ["n0"], "Insufficient cpu": ["n1"]}) == IPA
    assert bind_hinted_plugins({MISSING_LABEL_REASON: ["n0"], ANTI_AFFINITY_REASON: ["n1"]}) == IPA | PTS
    assert bind_hinted_plugins({f"Insufficient cpu{REASON_SEPARATOR}{CONSTRAINTS_REASON}": ["n0"]}) == PTS
    assert bind_hinted_plugins({"Insufficient cpu": ["n0"], "node(s) didn't have free ports": ["n1"]}) == frozenset()


def test_inter_pod_affinity_queues_a_pod_whose_every_required_term_the_bound_pod_matches() -> None:
    pending = _pod({}, **_affinity({"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": Z},
                                   {"labelSelector": {"matchLabels": {"tier": "fast"}}, "topologyKey": Z}))
    assert requeue_after_bind(pending, IPA, _pod({"app": "cache", "tier": "fast"}))
    assert not requeue_after_bind(pending, IPA, _pod({"app": "cache"}))  # one term only: skipped
    assert not requeue_after_bind(pending, PTS, _pod({"app": "cache", "tier": "fast"}))  # not a rejector


def test_anti_affinity_alone_is_never_helped_by_a_pod_being_bound() -> None:
    pending = _pod({}, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": Z}]}})
    assert not requeue_after_bind(pending, IPA, _pod({"app": "y"}))
    assert not requeue_after_bind(pending, IPA, _pod({"app": "x"}))


def test_the_hint_reads_a_namespace_selector_against_no_labels() -> None:
    """``Matches(pod, nil)``: an empty selector selects every namespace; one on the name label selects none, so only
    the term's ``namespaces`` count (Filter itself lists the namespaces the selector selects)."""
    term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": Z}
    everywhere = _pod({}, **_affinity({**term, "namespaceSelector": {}}))
    assert requeue_after_bind(everywhere, IPA, _pod({"app": "cache"}, namespace="other"))
    named = _pod({}, **_affinity({**term, "namespaces": ["ml"],
                                  "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}}))
    assert not requeue_after_bind(named, IPA, _pod({"app": "cache"}, namespace="other"))
    assert requeue_after_bind(named, IPA, _pod({"app": "cache"}, namespace="ml"))


def test_topology_spread_queues_on_a_bound_pod_of_its_namespace_its_selector_matches() -> None:
    pending = _pod({"app": "web"}, **_spread({"app": "web"}))
    assert requeue_after_bind(pending, PTS, _pod({"app": "web"}))
    assert not requeue_after_bind(pending, PTS, _pod({"app": "db"}))
    assert not requeue_after_bind(pending, PTS, _pod({"app": "web"}, namespace="other"))
    soft = _pod({"app": "web"}, **_spread({"app": "web"}, when="ScheduleAnyway"))  # only DoNotSchedule ones count
    assert not requeue_after_bind(soft, PTS, _pod({"app": "web"}))


# ------------------------------------------------------------------------------------ an assigned pod leaving


def test_a_pod_rejected_by_dynamic_resources_alone_waits_for_a_deallocation() -> None:
    """DynamicResources registers no hint for an assigned pod's deletion, only for claim updates (a deallocation:
    ``Queue``), so a preemption victim without claims leaving does not retry a pod refused for devices everywhere."""
    hint = delete_hint({UNSCHEDULABLE_CLAIMS: ["n0", "n1"]})
    assert hint == ON_DEALLOCATION
    assert not requeue_after_delete(hint, deallocated=False)
    assert requeue_after_delete(hint, deallocated=True)
    assert delete_hint({UNSCHEDULABLE_CLAIMS: ["n0"], TAINT_REASON: ["n1"]}) == ON_DEALLOCATION


def test_a_pod_some_node_refused_for_cpu_is_retried_when_any_assigned_pod_leaves() -> None:
    """NodeResourcesFit's ``isSchedulableAfterPodEvent``: ``Queue`` for any assigned pod deleted."""
    hint = delete_hint({UNSCHEDULABLE_CLAIMS: ["n0"], "Insufficient cpu": ["n1"]})
    assert hint == ON_POD_DELETE
    assert requeue_after_delete(hint, deallocated=False)
    assert delete_hint({f"Insufficient cpu{REASON_SEPARATOR}Insufficient memory": ["n0"]}) == ON_POD_DELETE
    assert delete_hint({}) == ON_POD_DELETE  # no Filter reasons (a PreFilter message): as before, retried


def test_node_rules_alone_are_never_helped_by_a_pod_leaving() -> None:
    hint = delete_hint({TAINT_REASON: ["n0"], NODE_AFFINITY_REASON: ["n1"], UNSCHEDULABLE_REASON: ["n2"],
                        NODE_NAME_MISMATCH: ["n3"]})
    assert hint == NEVER_ON_DELETE
    assert not requeue_after_delete(hint, deallocated=True)


def test_the_queue_moves_back_only_the_pods_a_leaving_pod_may_help() -> None:
    queue = SchedulingQueue()
    for key in ("cpu", "gpu", "taint"):
        queue.enqueue(key, 0.0)
    queue.take_active(lambda key: (0, 0.0, 0))
    for key, hint in (("cpu", ON_POD_DELETE), ("gpu", ON_DEALLOCATION), ("taint", NEVER_ON_DELETE)):
        queue.failed(key, 1.0, on_delete=hint)
    queue.pod_left(deallocated=False)
    assert queue.active == ["cpu"] and list(queue.unschedulable) == ["gpu", "taint"]
    queue.pod_left(deallocated=True)
    assert queue.active == ["cpu", "gpu"] and list(queue.unschedulable) == ["taint"]
