"""``--resource-api-version``: slices written as v1beta2 or v1beta1 (Kubernetes 1.33, 1.32) through the one v1 → beta
converter, read back through v1 equal to those written as v1; claims read in a beta come back as the v1 claim."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.driver import helpers
from tests.driver.conftest import Dirs
from tests.driver.helpers import write_inventory

from kubedra.driver.devices import Sharing
from kubedra.driver.fake import FakeBackend
from kubedra.driver.inventory import DriverError
from kubedra.driver.publish import KubeClaims, SlicePublisher
from kubedra.kube.api import connect

pytestmark = pytest.mark.controlplane

MIG = [
    {"profile": "1g.5gb", "profileID": 19, "count": 7, "memory": "4864Mi", "multiprocessors": 14},
    {"profile": "3g.20gb", "profileID": 9, "count": 2, "memory": "19968Mi", "multiprocessors": 42},
]


@pytest.fixture(scope="module")
def all_versions() -> Iterator[ControlPlane]:
    """A kube-apiserver serving resource.k8s.io v1, v1beta2 and v1beta1 (the betas are off by default in 1.37)."""
    runtime = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
    with running_control_plane(apiserver_args=["--runtime-config", runtime], only=("etcd", "kube-apiserver")) as p:
        yield p


def _slices(plane: ControlPlane, driver: str, node: str) -> list[dict[str, Any]]:
    selector = f"spec.driver={driver},spec.nodeName={node}"
    items = plane.get(f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector={selector}")["items"]
    return sorted(items, key=lambda s: s["metadata"]["name"])


def _comparable(item: dict[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in item["spec"].items() if k != "driver"}
    assert item["metadata"]["annotations"]["kubedra.io/pool-hash"]  # (of names that hold the driver: not compared)
    return {"index": item["metadata"]["name"].split("-", 1)[0], "spec": spec}


@pytest.mark.parametrize("shares", [None, "4"])
def test_slices_written_in_each_version_read_back_equal_through_v1(
    all_versions: ControlPlane, dirs: Dirs, shares: str | None
) -> None:
    node = f"gpu-node-{secrets.token_hex(3)}"
    all_versions.create_node(node)
    mig = None if shares else MIG  # consumable shares and MIG partitions are published apart, as NVIDIA's are
    extra = {"migProfiles": mig} if mig else {}
    inventory = FakeBackend(write_inventory(dirs.root / "inv.yaml", 2, **extra)).discover()
    read: dict[str, list[dict[str, Any]]] = {}
    with connect(str(all_versions.kubeconfig)) as client:
        for version in ("v1", "v1beta2", "v1beta1"):
            driver = f"gpu-{version}-{secrets.token_hex(2)}.nvidia.com"
            publisher = SlicePublisher(client, driver, node, Sharing.parse(shares), version)
            assert publisher.publish(inventory).changed
            assert not publisher.publish(inventory).changed  # read back in its own version: nothing to rewrite
            read[version] = [_comparable(s) for s in _slices(all_versions, driver, node)]
    assert read["v1"], "nothing was published"
    devices = [d for s in read["v1"] for d in s["spec"].get("devices", [])]
    if mig:
        assert any("consumesCounters" in d for d in devices)
        assert any(s["spec"].get("sharedCounters") for s in read["v1"])
    else:
        assert all(d.get("allowMultipleAllocations") for d in devices)
    assert read["v1beta2"] == read["v1"]
    assert read["v1beta1"] == read["v1"]


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_a_claim_read_in_a_beta_is_the_v1_claim(all_versions: ControlPlane, version: str) -> None:
    namespace = all_versions.create_namespace()
    document = helpers.claim("c", ["gpu-0"], namespace=namespace)
    allocation = document.pop("status")
    del document["metadata"]["uid"]
    created = all_versions.create(document)
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/c/status"
    allocation["allocation"]["devices"]["results"][0]["pool"] = "node-1"
    written = all_versions.request("PUT", path, {**created, "status": allocation})
    with connect(str(all_versions.kubeconfig)) as client:
        assert KubeClaims(client, version).get_claim(namespace, "c") == KubeClaims(client).get_claim(namespace, "c")
        assert KubeClaims(client).get_claim(namespace, "c")["metadata"] == written["metadata"]


def test_a_version_the_server_does_not_serve_is_a_clear_error(control_plane: ControlPlane, dirs: Dirs) -> None:
    """The suite's control plane serves only v1 (1.37's defaults): the error names the version it does serve."""
    with connect(str(control_plane.kubeconfig)) as client:
        publisher = SlicePublisher(client, "gpu.nvidia.com", "n", version="v1beta1")
        with pytest.raises(DriverError) as refused:
            publisher.publish(FakeBackend(write_inventory(dirs.root / "inv.yaml", 1)).discover())
    assert str(refused.value) == (
        "the API server does not serve resource.k8s.io/v1beta1 ResourceSlices (it serves v1: --resource-api-version v1)"
    )


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(DriverError, match="--resource-api-version: 'v2' is not one of v1, v1beta2, v1beta1"):
        SlicePublisher(None, "gpu.nvidia.com", "n", version="v2")
