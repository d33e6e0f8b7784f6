"""KEP-5004: extended resources served by DRA where no device plugin advertises them."""

from __future__ import annotations

import msgspec

from kubedra.objects.model import DeviceClass, Node, Pod
from kubedra.scheduler.extended import (
    EXTENDED_CLAIM_ANNOTATION,
    ExtendedResourceMap,
    claim_name_base,
    dra_served_resources,
    extended_requests,
    request_mappings,
    special_claim,
)


def device_class(name: str, ext: str | None = None, created: str | None = None) -> DeviceClass:
    meta: dict[str, object] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec = {"extendedResourceName": ext} if ext else {}
    return msgspec.convert({"metadata": meta, "spec": spec}, DeviceClass)


GPU_POD = msgspec.convert(
    {
        "metadata": {"name": "legacy", "namespace": "default", "uid": "u"},
        "spec": {
            "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "1"}}}],
            "containers": [
                {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "2", "example.com/nic": "1"}}},
                {"name": "side", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
            ],
        },
    },
    Pod,
)


def test_newest_class_wins_then_lowest_name() -> None:
    mapping = ExtendedResourceMap([
        device_class("b-old", "nvidia.com/gpu", "2026-01-01T00:00:00Z"),
        device_class("a-new", "nvidia.com/gpu", "2026-02-01T00:00:00Z"),
    ])
    assert mapping.class_for("nvidia.com/gpu") == "a-new"
    tie = ExtendedResourceMap([
        device_class("zeta", "nvidia.com/gpu", "2026-01-01T00:00:00Z"),
        device_class("alpha", "nvidia.com/gpu", "2026-01-01T00:00:00Z"),
    ])
    assert tie.class_for("nvidia.com/gpu") == "alpha"
    assert tie.class_for("deviceclass.resource.kubernetes.io/zeta") == "zeta"
    assert tie.class_for("deviceclass.resource.kubernetes.io/missing") is None
    assert tie.class_for("example.com/nic") is None


def test_requests_are_named_by_container_and_sorted_resource_index() -> None:
    requests = extended_requests(GPU_POD)
    names = {(r.container_name, r.resource): r.request_name for r in requests}
    # init container is index 0; "main" sorts cpu, example.com/nic, nvidia.com/gpu
    assert names[("main", "nvidia.com/gpu")] == "container-1-request-2"
    assert names[("main", "example.com/nic")] == "container-1-request-1"
    assert names[("side", "nvidia.com/gpu")] == "container-2-request-0"


def test_special_claim_only_where_no_device_plugin_serves_the_resource() -> None:
    mapping = ExtendedResourceMap([device_class("gpu.nvidia.com", "nvidia.com/gpu")])
    requests = extended_requests(GPU_POD)
    plugin_node = msgspec.convert({"metadata": {"name": "old"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
                                  Node)
    dra_node = msgspec.convert({"metadata": {"name": "new"}}, Node)
    assert dra_served_resources(requests, plugin_node, mapping) == frozenset()
    served = dra_served_resources(requests, dra_node, mapping)
    assert served == frozenset({"nvidia.com/gpu"})
    claim = special_claim(GPU_POD, requests, served, mapping, "in-memory")
    assert claim is not None
    assert [(r.name, r.exactly.count if r.exactly else None) for r in claim.spec.devices.requests] == [
        ("container-1-request-2", 2), ("container-2-request-0", 1)]
    assert claim.metadata.annotations == {EXTENDED_CLAIM_ANNOTATION: "true"}
    assert claim.metadata.generate_name == "legacy-extended-resources-"
    assert [m.request_name for m in request_mappings(requests, served)] == [
        "container-1-request-2", "container-2-request-0"]
    assert special_claim(GPU_POD, requests, frozenset(), mapping, "x") is None


def test_generated_name_base_is_truncated() -> None:
    assert len(claim_name_base("p" * 80)) == 58


def _gpu_pod(init: list[tuple[str, int, bool]], app: list[tuple[str, int]]) -> Pod:
    """Init containers (name, GPUs, sidecar?) and app containers (name, GPUs), each asking ``nvidia.com/gpu``."""
    def container(name: str, gpus: int, sidecar: bool = False) -> dict[str, object]:
        body: dict[str, object] = {"name": name, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
        if sidecar:
            body["restartPolicy"] = "Always"
        return body
    return msgspec.convert({
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"initContainers": [container(*c) for c in init], "containers": [container(*c) for c in app]},
    }, Pod)


def _claim_of(pod: Pod) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    mapping = ExtendedResourceMap([device_class("gpu.nvidia.com", "nvidia.com/gpu")])
    requests = extended_requests(pod)
    served = frozenset({"nvidia.com/gpu"})
    claim = special_claim(pod, requests, served, mapping, "in-memory")
    assert claim is not None
    made = [(r.name, r.exactly.count if r.exactly else -1) for r in claim.spec.devices.requests]
    return made, [(m.container_name, m.request_name) for m in request_mappings(requests, served)]


def test_a_plain_init_container_reuses_the_app_containers_devices() -> None:
    """An init container and the app container each asking 1 GPU: one device, both mapped to the app's request."""
    made, mappings = _claim_of(_gpu_pod([("init", 1, False)], [("app", 1)]))
    assert made == [("container-1-request-0", 1)]
    assert mappings == [("app", "container-1-request-0"), ("init", "container-1-request-0")]


def test_a_sidecar_is_long_lived_and_an_init_container_after_it_cannot_reuse_its_devices() -> None:
    made, mappings = _claim_of(_gpu_pod([("side", 1, True), ("init", 1, False)], [("app", 1)]))
    assert made == [("container-0-request-0", 1), ("container-2-request-0", 1)]
    assert mappings == [("side", "container-0-request-0"), ("app", "container-2-request-0"),
                        ("init", "container-2-request-0")]
    # An init container before the sidecar reuses the sidecar's devices and the app's.
    made, mappings = _claim_of(_gpu_pod([("init", 2, False), ("side", 1, True)], [("app", 1)]))
    assert made == [("container-1-request-0", 1), ("container-2-request-0", 1)]
    assert ("init", "container-1-request-0") in mappings and ("init", "container-2-request-0") in mappings


def test_init_containers_share_one_request_for_the_largest_shortfall() -> None:
    made, mappings = _claim_of(_gpu_pod([("a", 2, False), ("b", 3, False)], [("app", 1)]))
    assert made == [("container-1-request-0", 2), ("container-2-request-0", 1)]  # 3 devices = max(2, 3, 1)
    assert mappings == [("app", "container-2-request-0"), ("a", "container-2-request-0"),
                        ("a", "container-1-request-0"), ("b", "container-2-request-0"),
                        ("b", "container-1-request-0")]


def test_pod_requests_count_sidecars_as_long_lived() -> None:
    """NodeResourcesFit's side of the same rule (device-plugin nodes): ``resourcehelper.PodRequests``."""
    from kubedra.cluster.usage import pod_requests
    from kubedra.objects.quantity import Quantity
    assert pod_requests(_gpu_pod([("init", 1, False)], [("app", 1)]))["nvidia.com/gpu"] == Quantity.parse("1")
    assert pod_requests(_gpu_pod([("side", 1, True), ("init", 1, False)], [("app", 1)]))["nvidia.com/gpu"] == (
        Quantity.parse("2"))
    assert pod_requests(_gpu_pod([("side", 1, True), ("init", 3, False)], [("app", 1)]))["nvidia.com/gpu"] == (
        Quantity.parse("4"))


def test_a_remembered_refusal_tells_a_sidecar_from_a_plain_init_container() -> None:
    """Two pods alike but for one init container's restartPolicy need 2 devices and 1: the first's refusal on a
    1-device node must not answer for the second."""
    import yaml

    from kubedra.objects.load import load_text
    from kubedra.sim.scenario import build_scenario
    from kubedra.sim.simulate import Options, prepare

    def pod(name: str, sidecar: bool) -> dict[str, object]:
        first: dict[str, object] = {"name": "a", "image": "x", "resources": {"limits": {"example.com/gpu": "1"}}}
        if sidecar:
            first["restartPolicy"] = "Always"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"initContainers": [first, {"name": "b", "image": "x",
                                                    "resources": {"limits": {"example.com/gpu": "1"}}}],
                         "containers": [{"name": "c", "image": "x",
                                         "resources": {"limits": {"example.com/gpu": "1"}}}]}}

    docs = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                  "extendedResourceName": "example.com/gpu"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}},
        pod("with-sidecar", True),
        pod("plain", False),
    ]
    result = prepare(build_scenario(load_text(yaml.safe_dump_all(docs))), Options()).run()
    phases = {r.pod.metadata.name: bool(r.pod.spec.node_name) for r in result.state.pods.values()}
    assert phases == {"with-sidecar": False, "plain": True}
