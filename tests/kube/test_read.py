"""Reading a cluster once: the served version of each kind, pagination, and older clusters that serve only the
resource.k8s.io betas (1.32: v1beta1; 1.33: v1beta2), read through the same converters as files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube import builders as b

from kubedra.kube.api import connect, list_kind, served_version
from kubedra.kube.kinds import DEVICE_CLASS, KINDS, SPREAD_KINDS
from kubedra.kube.read import manifest, read_cluster, to_loaded
from kubedra.objects import model as m

pytestmark = pytest.mark.controlplane


def test_a_1_37_cluster_serves_every_kind_as_v1(control_plane: ControlPlane) -> None:
    with connect(str(control_plane.kubeconfig)) as client:
        documents = read_cluster(client)
    assert documents.versions == {k.kind: "v1" for k in (*KINDS, *SPREAD_KINDS)}
    assert documents.unread == {}
    assert documents.notes() == []


def test_lists_follow_continue_tokens(control_plane: ControlPlane, namespace: str) -> None:
    for i in range(5):
        control_plane.create(b.device_class(f"{namespace}-c{i}", f"{namespace}.example.com"))
    with connect(str(control_plane.kubeconfig)) as client:
        listing = list_kind(client, DEVICE_CLASS, "v1", page_size=2)
        assert served_version(client, DEVICE_CLASS) == "v1"
    ours = [d["metadata"]["name"] for d in listing.items if d["metadata"]["name"].startswith(namespace)]
    assert ours == [f"{namespace}-c{i}" for i in range(5)]
    assert all(d["apiVersion"] == "resource.k8s.io/v1" and d["kind"] == "DeviceClass" for d in listing.items)
    assert listing.resource_version.isdigit()


BETA_OBJECTS: dict[str, list[dict[str, Any]]] = {
    "v1beta1": [
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "old-a"},
         "spec": {"driver": "gpu.example.com", "nodeName": "old-a",
                  "pool": {"name": "old-a", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}},
                                                          "capacity": {"memory": {"value": "40Gi"}}}}]}},
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
         "metadata": {"name": "old", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu", "count": 2,
                                            "allocationMode": "ExactCount"}]}}},
    ],
    "v1beta2": [
        {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceSlice", "metadata": {"name": "old-a"},
         "spec": {"driver": "gpu.example.com", "nodeName": "old-a",
                  "pool": {"name": "old-a", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
                               "capacity": {"memory": {"value": "40Gi"}}}]}},
        {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim",
         "metadata": {"name": "old", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2,
                                                                       "allocationMode": "ExactCount"}}]}}},
    ],
}


@pytest.fixture(scope="module", params=["v1beta1", "v1beta2"])
def older_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[str, ControlPlane]]:
    """An API server serving only one beta of resource.k8s.io, as 1.32 (v1beta1) and 1.33 (v1beta2) did."""
    beta = str(request.param)
    runtime = f"resource.k8s.io/v1=false,resource.k8s.io/{beta}=true"
    with running_control_plane(apiserver_args=["--runtime-config", runtime],
                               only=("etcd", "kube-apiserver")) as plane:
        plane.create_node("old-a")
        for obj in BETA_OBJECTS[beta]:
            path = f"/apis/resource.k8s.io/{beta}/" + (
                "namespaces/default/resourceclaims" if obj["kind"] == "ResourceClaim" else "resourceslices"
            )
            plane.request("POST", path, obj)
        yield beta, plane


def test_an_older_cluster_is_read_through_the_beta_converters(older_cluster: tuple[str, ControlPlane]) -> None:
    beta, plane = older_cluster
    with connect(str(plane.kubeconfig)) as client:
        documents = read_cluster(client)
    dra = {k.kind for k in KINDS if k.group}
    assert {k: v for k, v in documents.versions.items() if k in dra} == {
        "DeviceClass": beta,
        "ResourceSlice": beta,
        "ResourceClaim": beta,
        "ResourceClaimTemplate": beta,
        # v1beta1 never had DeviceTaintRules; v1beta2 does (1.35+ servers).
        "DeviceTaintRule": None if beta == "v1beta1" else beta,
    }
    assert bool(documents.notes()) == (beta == "v1beta1")
    loaded = to_loaded(documents)
    (slice_,) = loaded.of_kind(m.ResourceSlice)
    assert slice_.spec.devices[0].attributes["model"].string == "a100"
    assert slice_.spec.devices[0].capacity["memory"].value == "40Gi"
    (claim,) = loaded.of_kind(m.ResourceClaim)
    request = claim.spec.devices.requests[0]
    assert request.exactly is not None
    assert (request.exactly.device_class_name, request.exactly.count) == ("gpu", 2)
    assert [n.metadata.name for n in loaded.of_kind(m.Node)] == ["old-a"]
    # A snapshot of it is written as v1.
    written = [manifest(d) for d in documents.by_kind["ResourceClaim"]]
    assert written[0]["apiVersion"] == "resource.k8s.io/v1"
    assert written[0]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
