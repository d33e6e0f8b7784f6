"""Pod-level resources (PodLevelResources, on since 1.34) as v1.37.2 counts them: the API server's defaulting, then
``resourcehelper.PodRequests`` (the pod's own cpu, memory and huge pages in place of its containers'). The whole
path is compared with the real kube-scheduler in tests/kube/scenarios/pod-level-resources (placements, messages and
every score), which is where ``incoming`` comes from: NodeResourcesFit's scorer reads the pod being scheduled without
its pod-level requests, while nodes sum them."""

from __future__ import annotations

from typing import Any

import msgspec

from kubedra.cluster.usage import pod_requests, scoring_requests
from kubedra.objects.model import Pod
from kubedra.objects.quantity import Quantity


def pod(resources: dict[str, Any] | None, containers: list[dict[str, Any]]) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if resources is not None:
        spec["resources"] = resources
    return msgspec.convert({"metadata": {"name": "p"}, "spec": spec}, Pod)


def asked(p: Pod) -> dict[str, str]:
    return {name: str(q) for name, q in pod_requests(p).items()}


def test_pod_level_requests_stand_for_the_containers_cpu_and_memory_only() -> None:
    p = pod({"requests": {"cpu": "3", "memory": "1Gi"}},
            [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
                                         "limits": {"nvidia.com/gpu": "1"}}}])
    assert asked(p) == {"cpu": "3", "memory": "1Gi", "nvidia.com/gpu": "1"}


def test_limits_alone_default_the_requests() -> None:
    assert asked(pod({"limits": {"cpu": "2", "memory": "2Gi"}}, [{"name": "c"}])) == {"cpu": "2", "memory": "2Gi"}


def test_with_limits_a_missing_request_is_the_containers_aggregate_before_the_limit() -> None:
    p = pod({"limits": {"cpu": "4", "memory": "4Gi"}, "requests": {"memory": "3Gi"}},
            [{"name": "a", "resources": {"requests": {"cpu": "500m"}}},
             {"name": "b", "resources": {"requests": {"cpu": "250m"}}}])
    assert asked(p) == {"cpu": "750m", "memory": "3Gi"}


def test_without_pod_level_resources_nothing_changes() -> None:
    p = pod(None, [{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
    assert asked(p) == {"cpu": "1"}
    assert scoring_requests(p) == scoring_requests(p, incoming=True)


def test_the_incoming_pod_s_non_zero_requests_come_from_its_containers() -> None:
    p = pod({"requests": {"cpu": "3", "memory": "1Gi"}}, [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}])
    node_sum, incoming = scoring_requests(p), scoring_requests(p, incoming=True)
    gib = Quantity.parse("1Gi").value()
    assert (node_sum.milli_cpu, node_sum.memory, node_sum.nonzero_milli_cpu, node_sum.nonzero_memory) == (
        3000, gib, 3000, gib)
    assert (incoming.milli_cpu, incoming.memory, incoming.nonzero_milli_cpu, incoming.nonzero_memory) == (
        3000, gib, 100, 200 * 1024 * 1024)
