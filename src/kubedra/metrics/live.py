"""The live source: the families of a real cluster, from the ``kube/`` adapter's list+watch mirror.

A refresher thread waits for the mirror to change, takes a snapshot (only ever a state the cluster was in, and only
once every kind was listed), reads it through the same loader as files, and recomputes the families incrementally;
a scrape serves the last complete result. Before the first complete sync no DRA number is served at all, only the
exporter's health: ``kubedra_exporter_synced``, ``kubedra_exporter_watch_up{kind}`` and the time of the state the
numbers describe. While the API server is away, the numbers stay those of the last state seen (never a partial one)
and the health families say so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubedra.allocator import Features
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.metrics.model import DraMetrics, Family, FamilySpec, render_families
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import Loaded
from kubedra.objects.model import (
    DeviceClass,
    DeviceTaintRule,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

SYNCED = FamilySpec(
    "kubedra_exporter_synced",
    "1 once every kind has been listed and the DRA numbers served describe the cluster; 0 before (none are served).",
    (),
)
WATCH_UP = FamilySpec(
    "kubedra_exporter_watch_up",
    "1 while the exporter's watch of the kind is open (or being opened), 0 from a failure until the next attempt.",
    ("kind",),
)
LAST_SYNC = FamilySpec(
    "kubedra_exporter_last_sync_timestamp_seconds",
    "Unix time at which the state the DRA numbers describe was read from the watches (0 before the first sync).",
    (),
)


def state_from_loaded(loaded: Loaded) -> ClusterState:
    """The cluster as it is: its own classes only (no built-in defaults), every pod as the API has it."""
    state = ClusterState.build(
        nodes=loaded.of_kind(Node),
        slices=loaded.of_kind(ResourceSlice),
        classes=loaded.of_kind(DeviceClass),
        taint_rules=loaded.of_kind(DeviceTaintRule),
        claims=loaded.of_kind(ResourceClaim),
        templates=loaded.of_kind(ResourceClaimTemplate),
    )
    for pod in loaded.of_kind(Pod):
        state.add_pod(PodRecord(pod=pod, requests={}))
    return state


class LiveSource:
    """Families of a mirrored cluster; ``start`` runs the refresher thread, ``stop`` ends it."""

    def __init__(
        self,
        mirror: Any,
        features: Features | None = None,
        *,
        to_loaded: Callable[[Any], Loaded] | None = None,
        clock: Callable[[], float] = time.time,
        on_error: Callable[[str], None] = lambda _message: None,
    ) -> None:
        from kubedra.kube.read import to_loaded as read_documents

        self.mirror = mirror
        self.model = DraMetrics(features)
        self._to_loaded = to_loaded or read_documents
        self._clock = clock
        self._on_error = on_error
        self._lock = threading.Lock()
        self._text = ""
        self._families: list[Family] = []
        self._synced_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubedra-exporter-refresh", daemon=True)

    # ------------------------------------------------------------------------------------------ refreshing

    def refresh(self) -> bool:
        """Recompute from the mirror's current snapshot; False (numbers unchanged) while it is not synced."""
        if not self.mirror.synced:
            return False
        read_at = self._clock()
        documents = self.mirror.snapshot()
        try:
            state = state_from_loaded(self._to_loaded(documents))
        except InvalidInputError as exc:
            self._on_error(f"the cluster's objects cannot be read; serving the last state: {exc}")
            return False
        self.model.update(state)
        text, families = self.model.render(), self.model.families()
        with self._lock:
            self._text, self._families, self._synced_at = text, families, read_at
        return True

    def _loop(self) -> None:
        seen = -1
        while not self._stop.is_set():
            generation = self.mirror.generation
            if generation != seen and self.refresh():
                seen = generation
            elif generation == seen:
                with self._lock:  # nothing new, and every watch up: the numbers are current as of now
                    if all(s.up for s in self.mirror.stats().values()):
                        self._synced_at = self._clock()
            self.mirror.wait_change(generation, timeout=1.0)

    def start(self) -> LiveSource:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------------------------------ serving

    def _health(self) -> list[Family]:
        stats = self.mirror.stats()
        with self._lock:
            synced = bool(self._families)
            at = self._synced_at
        return [
            Family(SYNCED, [((), 1.0 if synced else 0.0)]),
            Family(WATCH_UP, [((kind,), 1.0 if s.up else 0.0) for kind, s in sorted(stats.items())]),
            Family(LAST_SYNC, [((), at)]),
        ]

    def families(self) -> list[Family]:
        health = self._health()
        with self._lock:
            return [*self._families, *health]

    def text(self) -> str:
        health = self._health()
        with self._lock:
            return self._text + render_families(health)
