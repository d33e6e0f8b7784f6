"""List+watch against the real API server: every kind synced, pages followed, an API server restart survived."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b

from kubedra.kube.api import connect
from kubedra.kube.mirror import Backoff, Mirror, NotSyncedError
from kubedra.kube.read import ClusterDocuments

pytestmark = pytest.mark.controlplane


@pytest.fixture
def mirror(control_plane: ControlPlane) -> Iterator[Mirror]:
    kubeconfig = str(control_plane.kubeconfig)
    watcher = Mirror(lambda: connect(kubeconfig), page_size=3, watch_timeout=5,
                     backoff=Backoff(initial=0.1, maximum=1.0))
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.stop()


def names(documents: ClusterDocuments, kind: str) -> set[str]:
    return set(documents.named(kind))


def test_every_kind_is_listed_then_watched(control_plane: ControlPlane, namespace: str, mirror: Mirror) -> None:
    driver = f"{namespace}.example.com"
    node = f"{namespace}-node"
    initial = mirror.wait()
    assert f"{namespace}/first" not in names(initial, "Pod")
    created = [
        control_plane.create_node(node),
        control_plane.create(b.device_class(f"{namespace}-gpu", driver)),
        control_plane.create(b.node_slice(node, driver, 2)),
        control_plane.create(b.taint_rule(f"{namespace}-broken", driver, "gpu-1")),
        control_plane.create(b.template("one-gpu", namespace, f"{namespace}-gpu")),
        control_plane.create(b.claim("shared", namespace, f"{namespace}-gpu")),
        control_plane.create(b.pod("first", namespace, claim_name="shared")),
    ]
    expected = {obj["kind"]: _key(obj) for obj in created}

    def has_all(documents: ClusterDocuments) -> bool:
        return all(key in names(documents, kind) for kind, key in expected.items())

    documents = mirror.wait(has_all)
    # The scheduler binds the pod and allocates its claim: the watch carries the updates.
    documents = mirror.wait(
        lambda d: b.is_bound(d.named("Pod").get(f"{namespace}/first", {}))
        and bool(d.named("ResourceClaim").get(f"{namespace}/shared", {}).get("status", {}).get("allocation"))
    )
    assert documents.named("Pod")[f"{namespace}/first"]["spec"]["nodeName"] == node
    control_plane.delete_pod("first", namespace)
    documents = mirror.wait(lambda d: f"{namespace}/first" not in names(d, "Pod"))
    assert f"{namespace}/shared" in names(documents, "ResourceClaim")
    assert documents.versions["ResourceSlice"] == "v1"
    stats = mirror.stats()
    assert set(stats) == {"Node", "Pod", "DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                          "DeviceTaintRule"}
    assert all(s.lists >= 1 for s in stats.values())
    assert stats["Pod"].events >= 3  # added, bound, deleted


def _key(obj: dict[str, object]) -> str:
    metadata = obj["metadata"]
    assert isinstance(metadata, dict)
    return f"{metadata['namespace']}/{metadata['name']}" if metadata.get("namespace") else str(metadata["name"])


def test_a_list_longer_than_a_page_is_read_whole(control_plane: ControlPlane, namespace: str) -> None:
    for i in range(8):
        control_plane.create(b.claim(f"c{i}", namespace, "no-such-class"))
    # The server really pages: a limit of 3 returns 3 items and a continue token.
    page = control_plane.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims?limit=3")
    assert len(page["items"]) == 3
    assert page["metadata"]["continue"]
    kubeconfig = str(control_plane.kubeconfig)
    with Mirror(lambda: connect(kubeconfig), page_size=3, watch_timeout=5) as watcher:
        documents = watcher.wait()
    ours = {k for k in names(documents, "ResourceClaim") if k.startswith(f"{namespace}/")}
    assert ours == {f"{namespace}/c{i}" for i in range(8)}


def test_nothing_is_shown_before_every_kind_is_listed(control_plane: ControlPlane) -> None:
    kubeconfig = str(control_plane.kubeconfig)
    watcher = Mirror(lambda: connect(kubeconfig))
    with pytest.raises(NotSyncedError):
        watcher.snapshot()


@pytest.mark.slow
def test_an_api_server_restart_is_survived_without_a_half_state(
    control_plane: ControlPlane, namespace: str, mirror: Mirror
) -> None:
    before = {f"{namespace}/keep", f"{namespace}/gone"}
    for name in ("keep", "gone"):
        control_plane.create(b.claim(name, namespace, "no-such-class"))
    mirror.wait(lambda d: before <= names(d, "ResourceClaim"))
    control_plane.restart_apiserver(downtime=1.0)
    # While the watches reconnect, every snapshot is a whole state: all kinds present, our claims all there.
    during = mirror.snapshot()
    assert set(during.by_kind) == set(mirror.stats())
    assert before <= names(during, "ResourceClaim")
    tag = secrets.token_hex(3)
    control_plane.create(b.claim(f"after-{tag}", namespace, "no-such-class"))
    control_plane.request("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/gone")
    expected = {f"{namespace}/keep", f"{namespace}/after-{tag}"}
    documents = mirror.wait(
        lambda d: {k for k in names(d, "ResourceClaim") if k.startswith(f"{namespace}/")} == expected, timeout=60
    )
    assert {k for k in names(documents, "ResourceClaim") if k.startswith(f"{namespace}/")} == expected
    stats = mirror.stats()
    # Every watch broke and every kind was listed again before it watched on.
    assert all(s.reconnects + s.gone >= 1 and s.lists >= 2 for s in stats.values()), stats
    assert all(s.up for s in stats.values()), stats
