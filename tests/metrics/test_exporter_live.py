"""``kubedra exporter``'s live source against the real control plane: same numbers as the embedded source on the
same objects, nothing served before the first sync, and an API server restart survived with no wrong number."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b

from kubedra.allocator import Features
from kubedra.kube import mirror as mirror_module
from kubedra.kube.api import Listing, connect
from kubedra.kube.mirror import Backoff, KindStats, Mirror
from kubedra.kube.read import slim, to_loaded
from kubedra.metrics.live import LiveSource
from kubedra.metrics.model import DraMetrics
from kubedra.metrics.serve import MetricsServer
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
DRA_PREFIXES = ("kube_", "node_dra_", "dynamic_resource_allocation_")


def _samples(text: str) -> Samples:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _ours(samples: Samples, namespace: str) -> Samples:
    """The DRA samples about this test's objects (the control plane is shared with other tests)."""
    def mine(labels: tuple[tuple[str, str], ...]) -> bool:
        values = dict(labels)
        return (values.get("namespace") == namespace or values.get("node") == f"{namespace}-node"
                or values.get("resource_class") == f"{namespace}-gpu" or values.get("deviceclass") == f"{namespace}-gpu")
    return {k: v for k, v in samples.items() if k[0].startswith(DRA_PREFIXES) and mine(k[1])}


def _total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


@dataclass
class _Unsynced:
    """A mirror that has not listed everything yet."""

    synced: bool = False
    generation: int = 0
    kinds: dict[str, KindStats] = field(default_factory=lambda: {"Pod": KindStats(), "Node": KindStats(up=True)})

    def stats(self) -> dict[str, KindStats]:
        return self.kinds


def test_no_dra_number_is_served_before_the_first_sync() -> None:
    source = LiveSource(_Unsynced())
    assert not source.refresh()
    samples = _samples(source.text())
    assert not [k for k in samples if k[0].startswith(DRA_PREFIXES)]
    assert samples[("kubedra_exporter_synced", ())] == 0.0
    assert samples[("kubedra_exporter_watch_up", (("kind", "Pod"),))] == 0.0
    assert samples[("kubedra_exporter_watch_up", (("kind", "Node"),))] == 1.0
    assert samples[("kubedra_exporter_last_sync_timestamp_seconds", ())] == 0.0


@pytest.fixture
def live(control_plane: ControlPlane) -> Iterator[LiveSource]:
    kubeconfig = str(control_plane.kubeconfig)
    mirror = Mirror(lambda: connect(kubeconfig), watch_timeout=5, backoff=Backoff(initial=0.1, maximum=1.0),
                    trim=slim)  # as kubedra exporter keeps them
    mirror.start()
    source = LiveSource(mirror, Features.for_release()).start()
    try:
        yield source
    finally:
        source.stop()
        mirror.stop()


def _wait(source: LiveSource, namespace: str, predicate: Callable[[Samples], bool], timeout: float = 60.0) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        samples = _samples(source.text())
        if samples.get(("kubedra_exporter_synced", ())) == 1.0 and predicate(_ours(samples, namespace)):
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"exporter did not converge: {_ours(samples, namespace)}")
        time.sleep(0.2)


def _embedded(source: LiveSource, namespace: str) -> Samples:
    """The embedded source on the same objects: a simulation started from the mirror's snapshot."""
    result = simulate(build_scenario(to_loaded(source.mirror.snapshot())), Options())
    model = DraMetrics(Features.for_release())
    model.update(result.state)
    return _ours(_samples(model.render()), namespace)


@pytest.mark.controlplane
@pytest.mark.slow
def test_live_numbers_match_the_embedded_source_and_survive_a_restart(
    control_plane: ControlPlane, namespace: str, live: LiveSource
) -> None:
    node, driver, gpu_class = f"{namespace}-node", f"{namespace}.example.com", f"{namespace}-gpu"
    control_plane.create_node(node)
    control_plane.create(b.device_class(gpu_class, driver))
    control_plane.create(b.node_slice(node, driver, 2))
    control_plane.create(b.template("one-gpu", namespace, gpu_class))
    for i in range(3):
        control_plane.create(b.pod(f"p{i}", namespace, template_name="one-gpu", node_selector={"kubernetes.io/hostname": node}))

    def settled(s: Samples) -> bool:
        # Every pod's status names its claim too: until the controller's status update lands, the exporter shows
        # the pod's claim as not made while the embedded simulation adopts the claim (both right, not equal).
        named = [dict(labels).get("resourceclaim") for (n, labels) in s if n == "kube_pod_resourceclaim_info"]
        return (_total(s, "kube_resourceclaim_allocated") == 2 and _total(s, "kube_resourceclaim_pending") == 1
                and _total(s, "kube_pod_resourceclaim_info") == 3 and all(named))

    # The real scheduler allocates two GPUs; the third pod's claim (made by the real claim controller) waits.
    samples = _ours(_wait(live, namespace, settled), namespace)
    available = ("node_dra_resource_available", (("attribute", "devices"), ("node", node), ("resource_class", gpu_class)))
    assert samples[available] == 0.0
    assert _total(samples, "kube_resourceclaim_allocation_device_info") == 2
    assert samples[("kube_resourceslice_devices_total", (("driver", driver), ("node", node), ("pool", node),
                                                           ("resourceslice", f"{node}-{namespace.split('.', maxsplit=1)[0]}")))] == 2
    embedded = _embedded(live, namespace)
    assert samples == embedded

    # API server restart mid-watch: every scrape meanwhile serves the numbers of the state before, or none at all.
    wrong: list[Samples] = []
    stop = threading.Event()

    def scrape() -> None:
        while not stop.is_set():
            now = _samples(live.text())
            if _ours(now, namespace) != samples:
                wrong.append(_ours(now, namespace))
            time.sleep(0.05)

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    try:
        control_plane.restart_apiserver(downtime=1.0)
        time.sleep(1.0)
    finally:
        stop.set()
        scraper.join(5)
    assert wrong == []
    stats = live.mirror.stats()
    assert sum(s.reconnects + s.gone for s in stats.values()) >= 1, stats  # the watches did drop

    # After the restart the watches carry new changes: one pod ends, the waiting pod gets its GPU.
    control_plane.delete_pod("p0", namespace)

    def moved_on(s: Samples) -> bool:
        return (_total(s, "kube_resourceclaim_pending") == 0 and _total(s, "kube_resourceclaim_allocated") == 2
                and _total(s, "kube_pod_resourceclaim_info") == 2)

    after = _wait(live, namespace, moved_on)
    assert all(v == 1.0 for (n, _), v in after.items() if n == "kubedra_exporter_watch_up")
    assert _ours(after, namespace) == _embedded(live, namespace)
    assert time.time() - after[("kubedra_exporter_last_sync_timestamp_seconds", ())] < 30


@pytest.mark.controlplane
@pytest.mark.slow
def test_watch_up_and_each_kinds_sync_time_are_exact_through_an_api_server_restart(
    control_plane: ControlPlane, live: LiveSource
) -> None:
    """Scraped from /metrics every 50 ms while the API server is killed and started again: each kind's watch_up
    goes 1, then 0 from the failure until the kind has been listed again, then 1 (never back to 1 in between, as
    a reconnect attempt alone would have it); its sync time is now while up and frozen while down."""
    server = MetricsServer(live, "127.0.0.1", 0).start()
    url = "http://{}:{}/metrics".format(*server.address)
    scrapes: list[tuple[float, Samples]] = []
    stop = threading.Event()

    def scrape() -> None:
        while not stop.is_set():
            with urllib.request.urlopen(url, timeout=5) as response:
                scrapes.append((time.time(), _samples(response.read().decode())))
            time.sleep(0.05)

    try:
        _wait(live, "none", lambda _s: True)
        kinds = sorted(live.mirror.stats())
        lists_before = {k: s.lists for k, s in live.mirror.stats().items()}
        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        time.sleep(0.3)
        control_plane.restart_apiserver(downtime=1.5)
        deadline = time.monotonic() + 30
        while not all(s.up for s in live.mirror.stats().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        stop.set()
        server.stop()
    stats = live.mirror.stats()
    for kind in kinds:
        up = [s[("kubedra_exporter_watch_up", (("kind", kind),))] for _, s in scrapes]
        changes = [v for i, v in enumerate(up) if i == 0 or v != up[i - 1]]
        assert changes == [1.0, 0.0, 1.0], (kind, up)
        assert stats[kind].lists > lists_before[kind], (kind, stats[kind])  # up again only after a new list
        synced = [(at, s[("kubedra_exporter_watch_last_sync_timestamp_seconds", (("kind", kind),))])
                  for at, s in scrapes]
        down = [value for (at, value), u in zip(synced, up, strict=True) if u == 0.0]
        assert len(set(down)) == 1, (kind, down)  # frozen at the failure
        assert all(at - value < 1.0 for (at, value), u in zip(synced, up, strict=True) if u == 1.0)  # current
        assert down[0] <= min(at for (at, _), u in zip(synced, up, strict=True) if u == 0.0)
    # The numbers' own sync time never ran ahead while a watch was down.
    last = [s[("kubedra_exporter_last_sync_timestamp_seconds", ())] for _, s in scrapes]
    assert last == sorted(last)


@pytest.mark.controlplane
@pytest.mark.slow
def test_a_410_gone_is_survived_with_no_wrong_number_served(
    control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first list of claims says it was taken at resourceVersion 1, long compacted away: the real server
    answers the watch with 410 Gone; the mirror lists again and watches on, and meanwhile every scrape serves the
    claims as they were (or none before the first sync), never a state without them."""
    real = mirror_module.list_kind
    stale: list[str] = []

    def first_one_stale(client: Any, kind: Any, version: str, **kwargs: Any) -> Listing:
        listing = real(client, kind, version, **kwargs)
        if kind.kind == "ResourceClaim" and not stale:
            stale.append(listing.resource_version)
            # etcd forgets every revision before the list's (as its periodic compaction would): resourceVersion 1
            # is then gone for the watch cache and etcd alike.
            body = json.dumps({"revision": listing.resource_version}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{control_plane.etcd_port}/v3/kv/compaction", body)
            urllib.request.urlopen(request, timeout=10).close()
            return dataclasses.replace(listing, resource_version="1")
        return listing

    monkeypatch.setattr(mirror_module, "list_kind", first_one_stale)
    control_plane.create(b.claim("before", namespace, "no-such-class"))
    # A fresh API server's watch cache starts at the current revision (one started with the cluster would still
    # reach back to resourceVersion 1 and replay from there).
    control_plane.restart_apiserver(graceful=True)
    kubeconfig = str(control_plane.kubeconfig)
    mirror = Mirror(lambda: connect(kubeconfig), watch_timeout=5, backoff=Backoff(initial=0.1, maximum=1.0))
    mirror.start()
    source = LiveSource(mirror, Features.for_release()).start()
    seen: list[float] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            samples = _samples(source.text())
            if samples.get(("kubedra_exporter_synced", ())) == 1.0:
                seen.append(_total(_ours(samples, namespace), "kube_resourceclaim_info"))
                if seen[-1] == 1.0 and mirror.stats()["ResourceClaim"].lists >= 2 and len(seen) > 3:
                    break
            time.sleep(0.05)
        control_plane.create(b.claim("after", namespace, "no-such-class"))
        after = _wait(source, namespace, lambda s: _total(s, "kube_resourceclaim_info") == 2)
        stats = mirror.stats()["ResourceClaim"]
    finally:
        source.stop()
        mirror.stop()
    assert stale and stats.gone == 1 and stats.lists == 2 and stats.reconnects == 0, stats
    assert set(seen) == {1.0}, seen  # from the first sync on: the claim, through the 410 and the new list
    assert after[("kubedra_exporter_watch_up", (("kind", "ResourceClaim"),))] == 1.0
