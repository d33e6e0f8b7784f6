"""The live source: the families of a real cluster, from the ``kube/`` adapter's list+watch mirror.

A refresher thread waits for the mirror to change and takes only what changed since it last looked
(``Mirror.changes``): :class:`LiveState` decodes just those documents, through the same loader as files, and puts
them into a ``ClusterState`` in which every other object keeps its identity, so ``DraMetrics`` (the collectors the
simulation uses too) recomputes only what they touch. Every state applied is one the cluster was in, and none before
every kind was listed; a scrape serves the last complete result. Before the first sync no DRA number is served at
all, only the exporter's health: ``kubedra_exporter_synced``, ``kubedra_exporter_watch_up{kind}``, the time of the
state the numbers describe and when each kind's copy was last known current. While the API server is away, the
numbers stay those of the last state seen (never a partial one) and the health families say so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubedra.allocator import Features
from kubedra.cluster.devices import DeviceTable
from kubedra.cluster.nodetree import tree_order
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.cluster.usage import NodeUsage
from kubedra.kube.mirror import Backoff, Changes, NotSyncedError
from kubedra.kube.read import ClusterDocuments, Decoded, Undecodable
from kubedra.metrics.families import Family, FamilySpec, render_families
from kubedra.metrics.model import Changed, DraMetrics
from kubedra.objects.builder import Loaded
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
SERVED_AGE = FamilySpec(
    "kubedra_exporter_served_state_age_seconds",
    "Seconds since the state the DRA numbers describe was known current (now minus "
    "kubedra_exporter_last_sync_timestamp_seconds, on the exporter's clock); absent before the first sync. It grows "
    "while a watch is down or the exporter cannot apply what it reads.",
    (),
)
DECODE_ERRORS = FamilySpec(
    "kubedra_exporter_decode_errors_total",
    "Versions of cluster objects of the kind that could not be decoded (each logged with its name, field and "
    "error); such an object is left out of the DRA numbers until a version of it decodes.",
    ("kind",),
    "counter",
)
UNDECODABLE = FamilySpec(
    "kubedra_exporter_undecodable_objects",
    "Objects of the kind left out of the DRA numbers now because they could not be decoded.",
    ("kind",),
)
REFRESH_ERRORS = FamilySpec(
    "kubedra_exporter_refresh_errors_total",
    "Times the exporter failed to apply what its watches read (logged; the last state stays served and its age "
    "grows until a refresh succeeds).",
    (),
    "counter",
)
KIND_SYNC = FamilySpec(
    "kubedra_exporter_watch_last_sync_timestamp_seconds",
    "Unix time up to which the exporter's copy of the kind is known current: now while its watch is up, else the "
    "moment the watch failed (0 before the kind was first listed).",
    ("kind",),
)

REFRESH_RETRY = Backoff(initial=1.0, maximum=60.0)

# Where each kind lives in a ClusterState (lists of slices and taint rules are kept in key order too).
_DICTS = {"Node": "nodes", "DeviceClass": "classes", "ResourceClaim": "claims",
          "ResourceClaimTemplate": "templates", "Pod": "pods"}
_LISTS = {"ResourceSlice": "slices", "DeviceTaintRule": "taint_rules"}


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


def _key(obj: Any) -> str:
    """The mirror's key of a decoded object (``kube.read.object_key`` of its document)."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


class LiveState:
    """A ``ClusterState`` kept from a mirror's changes: what a full read of the same documents would build, object
    for object and in the same (key) order, but decoding only the documents that changed.

    An object that cannot be decoded is set aside: absent from the state (as a full read leaves it out), listed in
    ``undecodable`` until a later version of it decodes or it is deleted, and in ``failed`` for the batch that met
    it (a version already set aside, met again by a complete batch, is not counted twice)."""

    def __init__(self, decode: Callable[[ClusterDocuments], Decoded]) -> None:
        self._decode = decode
        self.state = ClusterState()
        self._lists: dict[str, dict[str, Any]] = {kind: {} for kind in _LISTS}  # slices and rules by key
        self.undecodable: dict[tuple[str, str], Undecodable] = {}
        self.failed: list[Undecodable] = []

    def apply(self, changes: Changes) -> Changed | None:
        """Apply one batch: the claims, pods and nodes it changed (None after a complete batch: everything may
        have)."""
        present = {kind: [d for d in docs.values() if d is not None] for kind, docs in changes.documents.items()}
        read = self._decode(ClusterDocuments(present))
        self._set_aside(changes, read.undecodable)
        decoded: dict[str, dict[str, Any]] = {}
        for obj in read.loaded.objects:
            decoded.setdefault(obj.KIND, {})[_key(obj)] = obj
        if changes.complete:
            self.state = state_from_loaded(read.loaded)
            self._lists = {kind: {_key(o): o for o in getattr(self.state, attr)} for kind, attr in _LISTS.items()}
            return None
        state = self.state
        for kind, docs in changes.documents.items():
            new = decoded.get(kind, {})
            if kind in _LISTS:
                self._put(self._lists[kind], docs, new)
                setattr(state, _LISTS[kind], list(self._lists[kind].values()))
            elif kind in _DICTS:
                target: dict[str, Any] = getattr(state, _DICTS[kind])
                if kind == "Pod":
                    new = {k: PodRecord(pod=pod, requests={}) for k, pod in new.items()}
                if kind == "Node":
                    for name in docs:
                        if name in new:
                            state.usage.setdefault(name, NodeUsage())
                        else:
                            state.usage.pop(name, None)
                    # A full read adds the nodes by name and keeps them in NodeTree order (``ClusterState.build``).
                    by_name = dict(sorted(target.items()))
                    self._put(by_name, docs, new)
                    target.clear()
                    target.update((node.metadata.name, node) for node in tree_order(by_name.values()))
                    continue
                self._put(target, docs, new)
        if changes.documents.get("ResourceSlice"):
            self._index_devices()
        documents = changes.documents
        return Changed(frozenset(documents.get("ResourceClaim", ())), frozenset(documents.get("Pod", ())),
                       frozenset(documents.get("Node", ())))

    def _set_aside(self, changes: Changes, undecodable: list[Undecodable]) -> None:
        before = dict(self.undecodable)
        if changes.complete:
            self.undecodable = {}
        else:
            for kind, docs in changes.documents.items():
                for key in docs:
                    self.undecodable.pop((kind, key), None)
        self.failed = []
        for item in undecodable:
            known = before.get((item.kind, item.key))
            if known is None or (known.resource_version, known.problems) != (item.resource_version, item.problems):
                self.failed.append(item)
            self.undecodable[item.kind, item.key] = item

    @staticmethod
    def _put(target: dict[str, Any], docs: dict[str, dict[str, Any] | None], new: dict[str, Any]) -> None:
        """Deletions and replacements in place (an object that did not decode is removed, as a full read leaves it
        out); a new key out of order sorts the dict again (key order, as a full read has it)."""
        last = next(reversed(target), "") if target else ""
        resort = False
        for key, document in docs.items():
            if document is None or key not in new:
                target.pop(key, None)
            else:
                if key not in target and key < last:
                    resort = True
                target[key] = new[key]
                last = max(last, key)
        if resort:
            ordered = {k: target[k] for k in sorted(target)}
            target.clear()
            target.update(ordered)

    def _index_devices(self) -> None:
        """The state's device table over the new slices (what ``ClusterState.build`` derives from them)."""
        self.state.devices = DeviceTable(self.state.slices)


class LiveSource:
    """Families of a mirrored cluster; ``start`` runs the refresher thread, ``stop`` ends it."""

    def __init__(
        self,
        mirror: Any,
        features: Features | None = None,
        *,
        decode: Callable[[ClusterDocuments], Decoded] | None = None,
        clock: Callable[[], float] = time.time,
        on_error: Callable[[str], None] = lambda _message: None,
        on_first_sync: Callable[[], None] = lambda: None,
        retry: Backoff = REFRESH_RETRY,
    ) -> None:
        """``on_first_sync`` runs once the first complete state is in the model (the exporter freezes the garbage
        collector's view of the objects then: a cluster's worth of them scanned on every full collection would
        cost each scrape a pause). ``on_error`` gets one line per object that cannot be decoded and per failed
        refresh; ``retry`` spaces refreshes after failures in a row."""
        from kubedra.kube.read import decode_cluster

        self.mirror = mirror
        self._features = features
        self.model = DraMetrics(features)
        self.live = LiveState(decode or decode_cluster)
        self._cursor: int | None = None  # None: the next refresh reads everything
        self._clock = clock
        self._on_error = on_error
        self._on_first_sync: Callable[[], None] | None = on_first_sync
        self._retry = retry
        self._lock = threading.Lock()  # guards what a scrape reads: the text, and whether and when synced
        self._model_lock = threading.Lock()  # guards the model while a refresh updates it
        self._text = ""
        self._synced = False
        self._pending_at: float | None = None  # read time of a state applied to the model but not rendered yet
        self._synced_at = 0.0
        self._decode_errors: dict[str, int] = {}  # by kind: versions of objects that did not decode
        self._undecodable: dict[str, int] = {}  # by kind: objects left out now
        self._refresh_errors = 0
        self._failures = 0  # refreshes failed in a row
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubedra-exporter-refresh", daemon=True)

    # ------------------------------------------------------------------------------------------ refreshing

    def refresh(self) -> bool:
        """Apply what changed in the mirror since the last refresh; False (numbers unchanged) while it is not
        synced, or when applying failed: then the error is logged and counted, the model starts over, and the next
        refresh reads everything again. An object that cannot be decoded does not fail a refresh: it is left out,
        logged and counted (see :class:`LiveState`)."""
        if not self.mirror.synced:
            return False
        read_at = self._clock()
        try:
            changes = self.mirror.changes(self._cursor)
        except NotSyncedError:
            return False
        with self._model_lock:
            try:
                changed = self.live.apply(changes)
                self._note_undecodable(self.live.failed)
                self.model.update(self.live.state, changed)
            except Exception as exc:  # noqa: BLE001 - a refresher that dies freezes every number while health says ok
                self._cursor = None
                self.model = DraMetrics(self._features)  # an update that stopped half-way left it inconsistent
                self._refresh_errors += 1
                self._failures += 1
                self._on_error(f"cannot apply the cluster's state, serving the last one: {type(exc).__name__}: {exc}")
                return False
            self._cursor = changes.cursor
            self._failures = 0
            self._pending_at = read_at  # rendered by the next scrape (a burst of events costs one render)
        if self._on_first_sync is not None:
            first, self._on_first_sync = self._on_first_sync, None
            first()
        return True

    def _note_undecodable(self, failed: list[Undecodable]) -> None:
        for item in failed:
            self._decode_errors[item.kind] = self._decode_errors.get(item.kind, 0) + 1
            self._on_error(f"{item}; left out of the metrics until it changes")
        counts: dict[str, int] = {}
        for kind, _key in self.live.undecodable:
            counts[kind] = counts.get(kind, 0) + 1
        with self._lock:
            self._undecodable = counts

    @property
    def undecodable(self) -> list[Undecodable]:
        """The objects left out now (they could not be decoded), in kind and key order."""
        with self._model_lock:
            return [self.live.undecodable[k] for k in sorted(self.live.undecodable)]

    def _render(self) -> None:
        """The text of the model's state, when a refresh left it unrendered and none is under way (a scrape
        never waits for one: it serves the state before it)."""
        if not self._model_lock.acquire(blocking=False):
            return
        try:
            at = self._pending_at  # under the lock: another scrape may have rendered it meanwhile
            if at is not None:
                text = self.model.render()
                self._pending_at = None
                with self._lock:
                    self._text, self._synced, self._synced_at = text, True, at
        finally:
            self._model_lock.release()

    def _loop(self) -> None:
        seen = -1
        while not self._stop.is_set():
            generation = self.mirror.generation
            if generation != seen and self.refresh():
                seen = generation
            elif self._failures:
                self._stop.wait(self._retry.delay(self._failures))
                continue
            elif generation == seen:
                self._render()
                with self._lock:  # nothing new, and every watch up: the numbers are current as of now
                    if self._pending_at is None and all(s.up for s in self.mirror.stats().values()):
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
        now = self._clock()
        with self._lock:
            synced, at = self._synced, self._synced_at
            errors, undecodable = dict(self._decode_errors), dict(self._undecodable)
            refresh_errors = self._refresh_errors
        kinds = sorted(stats)
        return [
            Family(SYNCED, [((), 1.0 if synced else 0.0)]),
            Family(WATCH_UP, [((kind,), 1.0 if stats[kind].up else 0.0) for kind in kinds]),
            Family(LAST_SYNC, [((), at)]),
            Family(SERVED_AGE, [((), max(0.0, now - at))] if synced else []),
            Family(KIND_SYNC, [((kind,), now if stats[kind].up else stats[kind].synced_at) for kind in kinds]),
            Family(DECODE_ERRORS, [((kind,), float(errors.get(kind, 0))) for kind in kinds]),
            Family(UNDECODABLE, [((kind,), float(undecodable.get(kind, 0))) for kind in kinds]),
            Family(REFRESH_ERRORS, [((), float(refresh_errors))]),
        ]

    def families(self) -> list[Family]:
        """Every family (the registry's path: built on demand, after any refresh under way)."""
        self._render()
        with self._model_lock:
            synced = self._synced or self._pending_at is not None
            return [*(self.model.families() if synced else []), *self._health()]

    def text(self) -> str:
        """The exposition: the last state refreshed (or, while a refresh is under way, the one before) and the
        health now."""
        self._render()
        health = self._health()
        with self._lock:
            return self._text + render_families(health)
