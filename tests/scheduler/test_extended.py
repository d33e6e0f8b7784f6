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
