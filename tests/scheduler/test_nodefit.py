"""Node-level rules: resources, selectors, affinity, taints — with kube-scheduler's reasons."""

from __future__ import annotations

import msgspec

from kubedra.cluster.usage import NodeUsage, pod_requests
from kubedra.objects.model import Node, Pod
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.nodefit import is_extended_resource, node_fit_reason


def node(**doc: object) -> Node:
    base: dict[str, object] = {"metadata": {"name": "n1", "labels": {"zone": "a", "gpu": "a100", "rank": "5"}}}
    base.update(doc)
    return msgspec.convert(base, Node)


def pod(spec: dict[str, object]) -> Pod:
    return msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}, Pod)


def fit(p: Pod, n: Node, usage: NodeUsage | None = None, served: frozenset[str] = frozenset()) -> str | None:
    return node_fit_reason(p, pod_requests(p), n, usage or NodeUsage(), served)


def test_pod_requests_sum_containers_and_take_the_largest_init_container() -> None:
    p = pod({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}},
                       {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
    })
    reqs = pod_requests(p)
    assert reqs["cpu"] == Quantity.parse("2")
    assert reqs["memory"] == Quantity.parse("1Gi")


def test_insufficient_cpu_and_pods() -> None:
    n = node(status={"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "1"}})
    p = pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1500m"}}}]})
    assert fit(p, n) == "Insufficient cpu"
    small = pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]})
    assert fit(small, n) is None
    used = NodeUsage()
    used.add(pod_requests(small))
    assert fit(small, n, used) == "Too many pods"


def test_a_node_without_allocatable_has_room_for_cpu_but_not_for_extended_resources() -> None:
    n = node()
    p = pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": "64"}}}]})
    assert fit(p, n) is None
    gpu = pod({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]})
    assert fit(gpu, n) == "Insufficient nvidia.com/gpu"
    assert fit(gpu, n, served=frozenset({"nvidia.com/gpu"})) is None


def test_device_plugin_extended_resource_counts_against_allocatable() -> None:
    n = node(status={"allocatable": {"nvidia.com/gpu": "2"}})
    gpu = pod({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]})
    usage = NodeUsage()
    assert fit(gpu, n, usage) is None
    usage.add(pod_requests(gpu))
    assert fit(gpu, n, usage) == "Insufficient nvidia.com/gpu"
    usage.remove(pod_requests(gpu))
    assert fit(gpu, n, usage) is None


def test_node_selector_and_required_affinity() -> None:
    n = node()
    assert fit(pod({"nodeSelector": {"gpu": "a100"}}), n) is None
    assert fit(pod({"nodeSelector": {"gpu": "h100"}}), n) == "node(s) didn't match Pod's node affinity/selector"
    def affinity(op: str, values: list[str], key: str = "rank") -> Pod:
        return pod({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": op, "values": values}]}]}}}})
    assert fit(affinity("Gt", ["4"]), n) is None
    assert fit(affinity("Lt", ["4"]), n) is not None
    assert fit(affinity("In", ["a", "b"], "zone"), n) is None
    assert fit(affinity("NotIn", ["a"], "zone"), n) is not None
    assert fit(affinity("DoesNotExist", [], "zone"), n) is not None
    assert fit(affinity("Exists", [], "missing"), n) is not None


def test_taints_need_tolerations_except_prefer_no_schedule() -> None:
    n = node(spec={"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                              {"key": "soft", "effect": "PreferNoSchedule"}]})
    assert fit(pod({}), n) == "node(s) had untolerated taint(s)"
    tolerant = pod({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]})
    assert fit(tolerant, n) is None
    wrong_value = pod({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "x"}]})
    assert fit(wrong_value, n) is not None
    everything = pod({"tolerations": [{"operator": "Exists"}]})
    assert fit(everything, n) is None


def test_filter_order_is_upstreams_node_name_unschedulable_taints_then_affinity() -> None:
    """v1.37.2's default plugins: NodeName, NodeUnschedulable, TaintToleration, NodeAffinity; the first failure is
    the node's reason."""
    tainted = node(spec={"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]})
    selective = pod({"nodeSelector": {"gpu": "h100"}})
    assert fit(selective, tainted) == "node(s) were unschedulable"
    tainted = node(spec={"taints": [{"key": "k", "effect": "NoExecute"}]})
    assert fit(selective, tainted) == "node(s) had untolerated taint(s)"


def test_unschedulable_node_and_node_name() -> None:
    assert fit(pod({}), node(spec={"unschedulable": True})) == "node(s) were unschedulable"
    cordon_tolerant = pod({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]})
    assert fit(cordon_tolerant, node(spec={"unschedulable": True})) is None
    assert fit(pod({"nodeName": "other"}), node()) == "node(s) didn't match the requested node name"


def test_filter_order_is_the_default_profiles() -> None:
    """NodeUnschedulable, then TaintToleration, then NodeAffinity: a node failing several gives the first's reason,
    as kube-scheduler v1.37.2 reports it (seen against the real scheduler: a cordoned node whose labels the pod's
    nodeSelector misses is "were unschedulable", a tainted one "had untolerated taint(s)")."""
    selective = pod({"nodeSelector": {"zone": "elsewhere"}})
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    assert fit(selective, node(spec={"unschedulable": True, "taints": [taint]})) == "node(s) were unschedulable"
    assert fit(selective, node(spec={"taints": [taint]})) == "node(s) had untolerated taint(s)"
    assert fit(selective, node()) == "node(s) didn't match Pod's node affinity/selector"


def test_extended_resource_names() -> None:
    assert is_extended_resource("nvidia.com/gpu")
    assert is_extended_resource("deviceclass.resource.kubernetes.io/gpu.nvidia.com")
    assert not is_extended_resource("cpu")
    assert not is_extended_resource("hugepages-2Mi")
    assert not is_extended_resource("kubernetes.io/foo")
