"""The exporter under faults the chosen paths do not reach, against the real control plane through a real HTTP proxy
(``tests/kube/faultproxy.py``) that breaks what the API server sends: fields a newer server would add, an integer
no Go int64 holds, garbled, truncated and cut watch lines, a watch stream that hangs, and a worker thread killed in
the middle of a list. After each, the exposition must equal a fresh full build of the exporter's own documents and a
strict read of the real API server's whole objects (with the object that cannot be read left out), which also holds
the exporter's slim Nodes and Pods to the exposition whole ones give."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b
from tests.kube.faultproxy import FaultProxy

from kubedra.allocator import Features
from kubedra.cli import main
from kubedra.kube.api import connect
from kubedra.kube.mirror import Backoff, Mirror
from kubedra.kube.read import decode_cluster, read_cluster, slim
from kubedra.metrics.live import LiveSource, state_from_loaded
from kubedra.metrics.model import DraMetrics
from kubedra.objects.load import load_paths

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

FUTURE = "futureField"
TOO_BIG = 2**64


@dataclass
class Exporter:
    proxy: FaultProxy
    mirror: Mirror
    source: LiveSource
    errors: list[str]


@contextmanager
def _proxy(plane: ControlPlane, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy(plane, tmp_path) as proxy:
        yield proxy


@contextmanager
def _exporter(proxy: FaultProxy, **mirror_options: Any) -> Iterator[Exporter]:
    """The exporter's mirror and live source, reading through ``proxy``."""
    kubeconfig = str(proxy.kubeconfig)
    options: dict[str, Any] = {"page_size": 3, "watch_timeout": 5, "backoff": Backoff(initial=0.1, maximum=1.0),
                               "trim": slim}  # slim Nodes and Pods, as kubedra exporter keeps them
    mirror = Mirror(lambda: connect(kubeconfig), **(options | mirror_options))
    errors: list[str] = []
    source = LiveSource(mirror, Features.for_release(), on_error=errors.append)
    mirror.start()
    source.start()
    try:
        yield Exporter(proxy, mirror, source, errors)
    finally:
        source.stop()
        mirror.stop()


def _dra_text(source: LiveSource) -> str:
    text = source.text()
    return text[: text.index("# HELP kubedra_exporter_synced")]


def _render(documents: list[dict[str, Any]], strict: bool) -> str:
    loaded = load_paths([], documents=[("cluster", d) for d in documents], lenient_documents=not strict)
    model = DraMetrics(Features.for_release())
    model.update(state_from_loaded(loaded))
    return model.render()


def _fresh_build(source: LiveSource) -> str:
    """A full build of the exporter's own documents: decoded again (those that cannot be, left out), a new model."""
    decoded = decode_cluster(source.mirror.snapshot())
    model = DraMetrics(Features.for_release())
    model.update(state_from_loaded(decoded.loaded))
    return model.render()


def _server(plane: ControlPlane, leave_out: str = "") -> str:
    """The real API server's objects, read directly (no proxy) and decoded strictly, ``leave_out`` (a name) left
    out."""
    with plane.client() as client:
        documents = read_cluster(client)
    return _render([d for d in documents.documents() if d["metadata"]["name"] != leave_out], strict=True)


def _settled(source: LiveSource, expected: Callable[[], str], timeout: float = 60.0) -> str:
    """The exposition once it equals ``expected()`` and a fresh full build (the cluster may still be moving)."""
    deadline = time.monotonic() + timeout
    while True:
        text = _dra_text(source) if source.mirror.synced else ""
        want = expected()
        if text and text == want and text == _fresh_build(source):
            return text
        if time.monotonic() > deadline:
            stats = source.mirror.stats()
            raise AssertionError(f"the exposition did not settle: synced={source.mirror.synced}, "
                                 f"{len(text)} vs {len(want)} characters; {stats}")
        time.sleep(0.2)


@contextmanager
def _watch_up(source: LiveSource, kind: str) -> Iterator[list[float]]:
    """``kubedra_exporter_watch_up{kind}`` as scraped every 20 ms while the block runs."""
    seen: list[float] = []
    stop = threading.Event()
    line = f'kubedra_exporter_watch_up{{kind="{kind}"}} '

    def scrape() -> None:
        while not stop.is_set():
            found = [x for x in source.text().splitlines() if x.startswith(line)]
            if found:
                seen.append(float(found[0].rsplit(" ", 1)[1]))
            time.sleep(0.02)

    thread = threading.Thread(target=scrape, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(5)


def _transitions(values: list[float]) -> list[float]:
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _sample(source: LiveSource, name: str, kind: str) -> float:
    line = next(x for x in source.text().splitlines() if x.startswith(f'{name}{{kind="{kind}"}} '))
    return float(line.rsplit(" ", 1)[1])


def _inventory(plane: ControlPlane, namespace: str) -> tuple[str, str, str]:
    """A node with a 2-GPU slice, a class and a claim of this test; (node, driver, class)."""
    node, driver, gpu_class = f"{namespace}-node", f"{namespace}.example.com", f"{namespace}-gpu"
    plane.create_node(node)
    plane.create(b.device_class(gpu_class, driver))
    plane.create(b.node_slice(node, driver, 2))
    plane.create(b.claim("first", namespace, gpu_class))
    return node, driver, gpu_class


def _from_the_future(document: dict[str, Any]) -> dict[str, Any]:
    """The object as a newer API server might send it: fields kubedra does not know, at every level."""
    document = {**document, FUTURE: {"a": 1}, "metadata": {**document["metadata"], FUTURE: "x"}}
    spec = document.get("spec")
    if isinstance(spec, dict):
        spec = {**spec, FUTURE: [1, 2]}
        devices = spec.get("devices")
        if isinstance(devices, list) and devices:
            spec["devices"] = [{**devices[0], FUTURE: True}, *devices[1:]]
        requests = spec.get("devices", {}).get("requests") if isinstance(spec.get("devices"), dict) else None
        if isinstance(requests, list) and requests:
            spec["devices"] = {**spec["devices"], "requests": [{**requests[0], FUTURE: 3}, *requests[1:]]}
        document["spec"] = spec
    return document


def test_fields_a_newer_api_server_sends_are_ignored(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """Before: the first slice or claim with a field kubedra's model lacks made every refresh fail; the exporter
    served no DRA number at all (and, had it synced before, would have frozen them), its health saying synced."""
    node, driver, gpu_class = _inventory(control_plane, namespace)
    with _proxy(control_plane, tmp_path) as proxy:
        for plural in ("resourceslices", "resourceclaims", "deviceclasses", "resourceclaimtemplates",
                       "devicetaintrules", "nodes", "pods"):
            proxy.rewrite(plural, _from_the_future)
        with _exporter(proxy) as exporter:
            _settled(exporter.source, lambda: _server(control_plane))
            # Events from the future too: a new slice and a new claim arrive through the watches.
            control_plane.create(b.node_slice(f"{node}-2", driver, 1))
            control_plane.create(b.claim("second", namespace, gpu_class))
            text = _settled(exporter.source, lambda: _server(control_plane))
            assert f'resourceslice="{node}-2-{namespace.split(".", maxsplit=1)[0]}"' in text
            assert 'resourceclaim="second"' in text
            assert exporter.errors == []
            assert exporter.source.undecodable == []
            assert _sample(exporter.source, "kubedra_exporter_decode_errors_total", "ResourceSlice") == 0.0


def test_an_object_with_a_bad_integer_is_left_out_named_and_counted_and_the_rest_stays_current(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """Before: one slice whose pool generation no int64 holds made every refresh fail for good, with
    kubedra_exporter_synced and every watch_up at 1."""
    node, driver, gpu_class = _inventory(control_plane, namespace)
    bad = b.node_slice(node, driver, 2)["metadata"]["name"]

    def broken(document: dict[str, Any]) -> dict[str, Any]:
        if document["metadata"]["name"] != bad:
            return document
        spec = document["spec"]
        return {**document, "spec": {**spec, "pool": {**spec["pool"], "generation": TOO_BIG}}}

    with _proxy(control_plane, tmp_path) as proxy:
        proxy.rewrite("resourceslices", broken)
        with _exporter(proxy) as exporter:
            source = exporter.source
            text = _settled(source, lambda: _server(control_plane, leave_out=bad))
            assert f'resourceslice="{bad}"' not in text
            assert [(u.kind, u.key) for u in source.undecodable] == [("ResourceSlice", bad)]
            assert exporter.errors == [f"ResourceSlice {bad}: spec.pool.generation: Invalid value: {TOO_BIG}: cannot "
                                       "unmarshal number into Go value of type int64; left out of the metrics until "
                                       "it changes"]
            assert _sample(source, "kubedra_exporter_decode_errors_total", "ResourceSlice") == 1.0
            assert _sample(source, "kubedra_exporter_undecodable_objects", "ResourceSlice") == 1.0
            assert "kubedra_exporter_synced 1.0" in source.text()
            # The rest stays current: a claim made now is served.
            control_plane.create(b.claim("later", namespace, gpu_class))
            text = _settled(source, lambda: _server(control_plane, leave_out=bad))
            assert 'resourceclaim="later"' in text
            # The server sends a version that decodes: the slice is back, the count of errors stays.
            proxy.rewrite("resourceslices", None)
            control_plane.request("PATCH", f"/apis/resource.k8s.io/v1/resourceslices/{bad}",
                                  {"metadata": {"labels": {"fixed": "yes"}}},
                                  content_type="application/merge-patch+json")
            text = _settled(source, lambda: _server(control_plane))
            assert f'resourceslice="{bad}"' in text
            assert source.undecodable == []
            assert _sample(source, "kubedra_exporter_undecodable_objects", "ResourceSlice") == 0.0
            assert _sample(source, "kubedra_exporter_decode_errors_total", "ResourceSlice") == 1.0


def test_exporter_once_names_what_it_left_out_and_exits_1(
    control_plane: ControlPlane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: with one slice it could not decode, ``kubedra exporter --once`` printed the health families alone
    (no DRA number) and exited 0."""
    node, driver, gpu_class = _inventory(control_plane, namespace)
    bad = b.node_slice(node, driver, 2)["metadata"]["name"]

    def broken(document: dict[str, Any]) -> dict[str, Any]:
        if document["metadata"]["name"] == bad:
            document = {**document, "metadata": {**document["metadata"], "generation": TOO_BIG}}
        return document

    with _proxy(control_plane, tmp_path) as proxy:
        proxy.rewrite("resourceslices", broken)
        code = main(["exporter", "--kubeconfig", str(proxy.kubeconfig), "--once", "--sync-timeout", "30"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert f"warning: ResourceSlice {bad}: metadata.generation: Invalid value: {TOO_BIG}: cannot unmarshal number " \
           "into Go value of type int64; left out of the metrics until it changes" in err
    assert "error: 1 object(s) could not be decoded and are left out of the metrics" in err
    assert f'kube_resourceclaim_info{{namespace="{namespace}",resourceclaim="first"' in out  # the rest is served
    assert f'kube_deviceclass_info{{deviceclass="{gpu_class}"' in out
    assert 'kubedra_exporter_decode_errors_total{kind="ResourceSlice"} 1.0' in out
    assert f'resourceslice="{bad}"' not in out


@pytest.mark.parametrize("how", ["garble", "truncate", "cut"])
def test_a_broken_watch_line_marks_the_kind_down_and_it_is_listed_again(
    control_plane: ControlPlane, namespace: str, tmp_path: Path, how: str
) -> None:
    """garble (bytes that are not JSON) and truncate (half a line, then the response ends) raise a ValueError in
    lightkube: before, it ended the claims' watch thread for good, the claims froze and watch_up stayed 1. cut (half
    a line, then the connection drops) is an HTTP error, which was handled before too."""
    _node, _driver, gpu_class = _inventory(control_plane, namespace)
    with _proxy(control_plane, tmp_path) as proxy, _exporter(proxy) as exporter:
        source = exporter.source
        _settled(source, lambda: _server(control_plane))
        lists = source.mirror.stats()["ResourceClaim"].lists
        with _watch_up(source, "ResourceClaim") as up:
            proxy.break_next_event("resourceclaims", how)
            control_plane.create(b.claim(f"after-{how}", namespace, gpu_class))
            text = _settled(source, lambda: _server(control_plane))
            _wait(lambda: bool(up) and up[-1] == 1.0, "watch_up back to 1")
        assert ("resourceclaims", how) in proxy.broken
        assert f'resourceclaim="after-{how}"' in text
        stats = source.mirror.stats()["ResourceClaim"]
        assert stats.lists > lists and stats.up, stats
        assert _transitions(up) == [1.0, 0.0, 1.0], up
        expected = {"garble": "watch resourceclaims: DecodeError: JSON is malformed",
                    "truncate": "watch resourceclaims: DecodeError: Input data was truncated",
                    "cut": "watch resourceclaims: cannot reach the API server"}[how]
        assert stats.last_error.startswith(expected), stats


def test_a_watch_stream_that_hangs_is_detected_and_restarted(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """The proxy stops sending on the claims' watch (the connection stays open). Before, the watch blocked for ever
    (lightkube reads watches without a timeout) and the kind read up and current; now the stream is given up after
    read_timeout seconds of silence, the kind is down from then (its sync time frozen at the last moment a byte could
    have arrived), and it is listed again."""
    _node, _driver, gpu_class = _inventory(control_plane, namespace)
    with _proxy(control_plane, tmp_path) as proxy, _exporter(proxy, watch_timeout=2, read_timeout=4.0) as exporter:
        source = exporter.source
        _settled(source, lambda: _server(control_plane))
        lists = source.mirror.stats()["ResourceClaim"].lists
        with _watch_up(source, "ResourceClaim") as up:
            proxy.break_next_event("resourceclaims", "hang")
            control_plane.create(b.claim("during-the-hang", namespace, gpu_class))
            hung_at = time.time()
            _wait(lambda: ("resourceclaims", "hang") in proxy.broken, "the proxy to hold the stream")
            _wait(lambda: not source.mirror.stats()["ResourceClaim"].up, "the hang to be detected", timeout=15)
            detected = time.time()
            down = source.mirror.stats()["ResourceClaim"]
            text = _settled(source, lambda: _server(control_plane))
            _wait(lambda: bool(up) and up[-1] == 1.0, "watch_up back to 1")
        assert 'resourceclaim="during-the-hang"' in text
        assert 3.0 <= detected - hung_at <= 10.0, detected - hung_at
        assert down.last_error == "watch resourceclaims: nothing received for 4s: the stream hung", down
        assert down.synced_at <= hung_at + 0.5, (down.synced_at, hung_at)  # frozen when the silence began
        assert source.mirror.stats()["ResourceClaim"].lists > lists
        assert _transitions(up) == [1.0, 0.0, 1.0], up


class Killed(BaseException):
    """Raised into a worker thread from outside: the thread is killed, not handed an error."""


def test_a_worker_killed_mid_list_starts_over_and_the_kind_syncs(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """The claims' worker is killed while it waits for the second page of its first list. Before, the thread died
    and the exporter never synced (every other kind up, ResourceClaim never listed); now it is marked down, starts
    over after a backoff with a new client, and the claims are listed whole."""
    _node, _driver, gpu_class = _inventory(control_plane, namespace)
    for i in range(6):
        control_plane.create(b.claim(f"more-{i}", namespace, gpu_class))
    with _proxy(control_plane, tmp_path) as proxy:
        held = proxy.hold_next_page("resourceclaims")
        with _exporter(proxy) as exporter:
            source = exporter.source
            assert held.reached.wait(30), "the claims' list never reached its second page"
            worker = next(t for t in threading.enumerate() if t.name == "kubedra-watch-resourceclaims")
            assert worker.ident is not None
            raised = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(Killed))
            assert raised == 1
            held.release.set()
            text = _settled(source, lambda: _server(control_plane))
            stats = source.mirror.stats()["ResourceClaim"]
            assert worker.is_alive()  # the same thread, started over
            assert stats.last_error == "watch resourceclaims: worker failed: Killed", stats
            assert stats.up and stats.lists == 1 and stats.reconnects == 1, stats
            assert all(f'resourceclaim="more-{i}"' in text for i in range(6))
