"""The queueing hints for a pod being bound (``scheduler/queueing_hints``), case by case as v1.37.2's
``isSchedulableAfterAssignedPodChange`` decides them (its plugin_test.go's Add cases, plus the namespace rules its
code reads); the whole behaviour is compared with the real kube-scheduler in ``tests/kube/scenarios/requeue-on-bind``.
Then the hints for an assigned pod leaving (``delete_hinted_plugins``, ``requeue_after_delete``): the Delete cases of
v1.37.2's plugin tests, and DynamicResources' waiting for a deallocation compared in ``random_preemption_scenario``'s
seeds 15 and 42 (``tests/kube/test_controllers_vs_kube_scheduler``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubedra.objects.model import Pod
from kubedra.scheduler.dynamicresources import UNSCHEDULABLE_CLAIMS
from kubedra.scheduler.interpodaffinity import AFFINITY_REASON, ANTI_AFFINITY_REASON
from kubedra.scheduler.nodefit import (
    NODE_AFFINITY_REASON,
    NODE_NAME_MISMATCH,
    PORTS_REASON,
    REASON_SEPARATOR,
    TAINT_REASON,
    UNSCHEDULABLE_REASON,
)
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, MISSING_LABEL_REASON
from kubedra.scheduler.queueing_hints import (
    DYNAMIC_RESOURCES,
    INTER_POD_AFFINITY,
    NODE_PORTS,
    ON_ANY_DELETE,
    POD_TOPOLOGY_SPREAD,
    bind_hinted_plugins,
    delete_hinted_plugins,
    requeue_after_bind,
    requeue_after_delete,
)
from kubedra.sim.queue import SchedulingQueue

Z = "topology.kubernetes.io/zone"
IPA = frozenset({INTER_POD_AFFINITY})
PTS = frozenset({POD_TOPOLOGY_SPREAD})
PORTS = frozenset({NODE_PORTS})
DRA = frozenset({DYNAMIC_RESOURCES})


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


def _anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def _in(key: str, *values: str, topology: str = "region") -> dict[str, Any]:
    """``st.PodAntiAffinityIn(key, topology, values, ...)``'s term."""
    return {"labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]},
            "topologyKey": topology}


def _left(pending: Pod, plugins: frozenset[str], gone: Pod, deallocated: bool = False) -> bool:
    return requeue_after_delete(pending, plugins, [gone], deallocated)


def test_a_pod_rejected_by_dynamic_resources_alone_waits_for_a_deallocation() -> None:
    """DynamicResources registers no hint for an assigned pod's deletion, only for claim updates (a deallocation:
    ``Queue``), so a preemption victim without claims leaving does not retry a pod refused for devices everywhere."""
    plugins = delete_hinted_plugins({UNSCHEDULABLE_CLAIMS: ["n0", "n1"]})
    assert plugins == DRA
    assert not _left(_pod({}), plugins, _pod({}), deallocated=False)
    assert _left(_pod({}), plugins, _pod({}), deallocated=True)
    assert delete_hinted_plugins({UNSCHEDULABLE_CLAIMS: ["n0"], TAINT_REASON: ["n1"]}) == DRA


def test_a_pod_some_node_refused_for_cpu_is_retried_when_any_assigned_pod_leaves() -> None:
    """NodeResourcesFit's ``isSchedulableAfterPodEvent``: ``Queue`` for any assigned pod deleted."""
    plugins = delete_hinted_plugins({UNSCHEDULABLE_CLAIMS: ["n0"], "Insufficient cpu": ["n1"]})
    assert plugins == ON_ANY_DELETE
    assert _left(_pod({}), plugins, _pod({}))
    assert delete_hinted_plugins({f"Insufficient cpu{REASON_SEPARATOR}Insufficient memory": ["n0"]}) == ON_ANY_DELETE
    assert delete_hinted_plugins({}) == ON_ANY_DELETE  # no Filter reasons (a PreFilter message): as before, retried


def test_node_rules_alone_are_never_helped_by_a_pod_leaving() -> None:
    plugins = delete_hinted_plugins({TAINT_REASON: ["n0"], NODE_AFFINITY_REASON: ["n1"], UNSCHEDULABLE_REASON: ["n2"],
                                     NODE_NAME_MISMATCH: ["n3"]})
    assert plugins == frozenset()
    assert not _left(_pod({}), plugins, _pod({}), deallocated=True)


def test_the_placement_plugins_are_read_from_the_filter_reasons() -> None:
    reasons = {ANTI_AFFINITY_REASON: ["n0"], CONSTRAINTS_REASON: ["n1"], PORTS_REASON: ["n2"], TAINT_REASON: ["n3"]}
    assert delete_hinted_plugins(reasons) == IPA | PTS | PORTS


# v1.37.2 interpodaffinity/plugin_test.go, TestIsSchedulableAfterAssignedPodChange's Delete cases: the pending pod,
# the deleted (assigned) pod, the hint.
SECURITYSCAN = _in("service", "securityscan", "value2")
IPA_DELETE_CASES = {
    "delete a pod which doesn't match pod's anti-affinity": (
        _pod({}, **_anti(SECURITYSCAN)), _pod({"aaa": "a"}), False),
    "delete a pod which matches pod's anti-affinity": (
        _pod({}, **_anti(SECURITYSCAN)), _pod({"service": "securityscan"}), True),
    "delete a pod with anti-affinity that matches pending pod": (
        _pod({"service": "securityscan"}), _pod({}, **_anti(SECURITYSCAN)), True),
    "delete a pod with anti-affinity that doesn't match pending pod": (
        _pod({"service": "foo"}), _pod({}, **_anti(SECURITYSCAN)), False),
    "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match pending pod": (
        _pod({"service": "foo"}, **_anti(SECURITYSCAN)), _pod({"service": "foo"}, **_anti(SECURITYSCAN)), False),
    "delete a pod which matches only one of target pod's anti-affinity terms": (
        _pod({}, **_anti(_in("service", "securityscan"), _in("app", "web"))), _pod({"service": "securityscan"}), True),
    "delete a pod with anti-affinity that matches pending pod on only one term": (
        _pod({"service": "securityscan"}), _pod({}, **_anti(_in("service", "securityscan"), _in("app", "web"))), True),
}


@pytest.mark.parametrize("name", sorted(IPA_DELETE_CASES))
def test_inter_pod_affinity_queues_a_pod_when_a_pod_of_an_anti_affinity_leaves(name: str) -> None:
    pending, gone, queue = IPA_DELETE_CASES[name]
    assert _left(pending, IPA, gone) is queue


def test_a_leaving_pod_matching_only_the_pending_pods_affinity_does_not_help() -> None:
    """Only anti-affinity counts on Delete: a pod the pending one wants to be near leaving cannot make it fit."""
    pending = _pod({}, **_affinity({"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": Z}))
    assert not _left(pending, IPA, _pod({"app": "cache"}))


def test_an_anti_affinity_term_reads_the_namespaces_as_the_bind_hint_does() -> None:
    """The pending pod's terms default to its own namespace; a pod of another namespace with the label leaving is
    skipped; the deleted pod's terms default to the deleted pod's namespace."""
    pending = _pod({}, namespace="ml", **_anti(_in("app", "x")))
    assert not _left(pending, IPA, _pod({"app": "x"}, namespace="web"))
    assert _left(pending, IPA, _pod({"app": "x"}, namespace="ml"))
    assert not _left(_pod({"app": "x"}, namespace="ml"), IPA, _pod({}, namespace="web", **_anti(_in("app", "x"))))


# podtopologyspread/plugin_test.go, TestPodTopologySpreadIsSchedulableAfterPodChange's Delete cases on assigned pods.
def test_pod_topology_spread_queues_a_pod_when_a_pod_its_selectors_count_leaves() -> None:
    pending = _pod({"app": "web"}, **_spread({"app": "web"}))
    assert _left(pending, PTS, _pod({"app": "web"}))  # labels that match the selector
    assert not _left(pending, PTS, _pod({"app": "db"}))  # labels that don't
    assert not _left(pending, PTS, _pod({"app": "web"}, namespace="other"))  # another namespace
    soft = _pod({"app": "web"}, **_spread({"app": "web"}, when="ScheduleAnyway"))  # only DoNotSchedule counts
    assert not _left(soft, PTS, _pod({"app": "web"}))


def _ports(*ports: tuple[int, str, str]) -> dict[str, Any]:
    return {"containers": [{"name": "c", "ports": [
        {"containerPort": port, "hostPort": port, "protocol": protocol, **({"hostIP": ip} if ip else {})}
        for port, protocol, ip in ports]}]}


def test_node_ports_queues_a_pod_when_a_pod_holding_one_of_its_host_ports_leaves() -> None:
    """``isSchedulableAfterAssignedPodDeleted``: ``QueueSkip`` when the deleted pod has no host port or
    ``fitsPorts`` says none of them conflicts with the pending pod's (0.0.0.0 conflicts with any IP)."""
    pending = _pod({}, **_ports((8080, "TCP", "")))
    assert _left(pending, PORTS, _pod({}, **_ports((8080, "TCP", "10.0.0.1"))))
    assert not _left(pending, PORTS, _pod({}, **_ports((8080, "UDP", ""))))
    assert not _left(pending, PORTS, _pod({}, **_ports((9090, "TCP", ""))))
    assert not _left(pending, PORTS, _pod({}))
    on_ip = _pod({}, **_ports((8080, "TCP", "10.0.0.1")))
    assert _left(on_ip, PORTS, _pod({}, **_ports((8080, "TCP", ""))))
    assert not _left(on_ip, PORTS, _pod({}, **_ports((8080, "TCP", "10.0.0.2"))))


def test_any_of_the_pods_leaving_at_once_may_help() -> None:
    pending = _pod({}, **_anti(_in("service", "securityscan")))
    assert requeue_after_delete(pending, IPA, [_pod({"aaa": "a"}), _pod({"service": "securityscan"})], False)
    assert not requeue_after_delete(pending, IPA, [_pod({"aaa": "a"}), _pod({"bbb": "b"})], False)


def test_the_queue_moves_back_only_the_pods_a_leaving_pod_may_help() -> None:
    queue = SchedulingQueue()
    keys = ("cpu", "gpu", "taint", "anti")
    pods = {key: _pod({}) for key in keys}
    pods["anti"] = _pod({}, **_anti(_in("app", "scan")))
    for key in keys:
        queue.enqueue(key, 0.0)
    queue.take_active(lambda key: (0, 0.0, 0))
    for key, plugins in (("cpu", ON_ANY_DELETE), ("gpu", DRA), ("taint", frozenset()), ("anti", IPA)):
        queue.failed(key, 1.0, on_delete=plugins)
    later = 60.0  # their back-off long over: straight to the active queue
    queue.pod_left([_pod({"app": "web"})], False, pods.__getitem__, later)
    assert queue.active == ["cpu"] and list(queue.unschedulable) == ["gpu", "taint", "anti"]
    queue.pod_left([_pod({"app": "web"})], True, pods.__getitem__, later)
    assert queue.active == ["cpu", "gpu"] and list(queue.unschedulable) == ["taint", "anti"]
    queue.pod_left([_pod({"app": "scan"})], False, pods.__getitem__, later)
    assert queue.active == ["cpu", "gpu", "anti"] and list(queue.unschedulable) == ["taint"]
