"""The live source's own health: how old the served state is, and a refresh that fails (logged, counted, retried)
instead of ending the refresher thread while the health families still say all is well."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.metrics.test_live_incremental import BUILDERS, KIND_NAMES, _full, _listing, _mirror

from kubedra.allocator import Features
from kubedra.kube.mirror import Backoff, Mirror
from kubedra.kube.read import ClusterDocuments, Decoded, decode_cluster
from kubedra.metrics.live import LiveSource


def _listed(mirror: Mirror) -> None:
    for name in KIND_NAMES:
        build, count = BUILDERS[name]
        mirror.replace(_listing(name, [build(i, 2) for i in range(count)], 1))


def _value(source: LiveSource, name: str) -> float | None:
    found = [x for x in source.text().splitlines() if x.startswith(f"{name} ")]
    return float(found[0].rsplit(" ", 1)[1]) if found else None


def _eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_served_state_age_grows_while_a_watch_is_down_and_falls_once_it_is_listed_again() -> None:
    mirror = _mirror()
    source = LiveSource(mirror, Features.for_release())
    assert _value(source, "kubedra_exporter_served_state_age_seconds") is None  # nothing served yet
    _listed(mirror)
    source.start()
    try:
        _eventually(lambda: _value(source, "kubedra_exporter_synced") == 1.0)
        time.sleep(1.5)
        # Current while all watches are up: the refresher keeps the age below its one-second wake-up (polled, so a
        # loaded machine's late wake-up does not fail it; a stuck age never comes down).
        _eventually(lambda: (_value(source, "kubedra_exporter_served_state_age_seconds") or 99) < 1.5)
        mirror._note_failure("Pod", "watch pods: the test broke it", gone=False)
        time.sleep(2.5)
        age = _value(source, "kubedra_exporter_served_state_age_seconds")
        assert age is not None and age >= 2.0, age
        build, count = BUILDERS["Pod"]
        mirror.replace(_listing("Pod", [build(i, 2) for i in range(count)], 2))
        _eventually(lambda: (_value(source, "kubedra_exporter_served_state_age_seconds") or 99) < 1.5)
    finally:
        source.stop()


def test_a_refresh_that_fails_is_logged_counted_and_retried_and_the_last_state_stays_served() -> None:
    """Before: an exception from applying a batch propagated out of refresh() and ended the refresher thread; the
    numbers froze while kubedra_exporter_synced and every watch_up stayed 1."""
    mirror = _mirror()
    _listed(mirror)
    failing = [False]

    def decode(documents: ClusterDocuments) -> Decoded:
        if failing[0]:
            failing[0] = False
            raise RuntimeError("a bug in the model")
        return decode_cluster(documents)

    errors: list[str] = []
    source = LiveSource(mirror, Features.for_release(), decode=decode, on_error=errors.append,
                        retry=Backoff(initial=0.05, maximum=0.1))
    source.start()
    try:
        _eventually(lambda: _value(source, "kubedra_exporter_synced") == 1.0)
        before = source.text()
        failing[0] = True
        build, _count = BUILDERS["ResourceClaim"]
        changed: dict[str, Any] = build(1, 4)
        changed["metadata"]["resourceVersion"] = "9"
        mirror.apply("ResourceClaim", "MODIFIED", changed)
        _eventually(lambda: _value(source, "kubedra_exporter_refresh_errors_total") == 1.0)
        assert errors == ["cannot apply the cluster's state, serving the last one: RuntimeError: a bug in the model"]
        # Retried (reading everything again): the refresher is alive and the exposition catches up.
        _eventually(lambda: source.text().split("# HELP kubedra_exporter_synced")[0] == _full(mirror))
        assert source.text().split("# HELP kubedra_exporter_synced")[0] != before.split(
            "# HELP kubedra_exporter_synced")[0]
        assert source._thread.is_alive()
    finally:
        source.stop()
