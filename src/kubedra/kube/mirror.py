"""The cluster kept in memory as an informer keeps it: list every kind, then watch from the list's resourceVersion.

One thread per kind, each with its own client. A watch that fails for any reason (the API server restarted, the
network broke, a 410 Gone: the server no longer has that version, a line that is not a watch event, a stream that
hangs: no byte for ``read_timeout`` seconds, longer than the server's own watch timeout) lists the kind again, after
a backoff that grows with each failure in a row (none after a 410), and watches on from the new list's
resourceVersion; a watch the server ends normally (its timeout) is simply resumed. Whatever ends a worker's attempt,
even an exception no code expects, the worker marks its kind down and starts over: it never dies while the mirror
runs. So a kind's ``up`` is exact: false from the failure until the kind has been listed again, and ``synced_at``
is when its copy was last known current (for a hung stream, the last moment a byte could have arrived). A new list
replaces the kind's objects in one step, so :meth:`Mirror.snapshot` only ever returns states the cluster was in:
never a half-listed kind, and nothing before every kind has been listed once.

Every object a list or an event changed is also written to a journal, so an incremental reader
(:meth:`Mirror.changes`) gets only what changed since it last asked: the documents as they are now, or None for
those deleted. A re-list journals only the objects that differ from what the mirror had (compared as documents),
so a 410 Gone costs the reader the changes it missed, not the whole cluster again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
from lightkube import Client
from lightkube.core.exceptions import ApiError

from kubedra.kube.api import (
    DEFAULT_PAGE_SIZE,
    READ_ERRORS,
    KubeError,
    Listing,
    all_namespaces,
    describe_error,
    is_gone,
    limit_watch_reads,
    list_kind,
    resource,
    served_version,
)
from kubedra.kube.kinds import KINDS, Kind
from kubedra.kube.read import ClusterDocuments, object_key


class NotSyncedError(Exception):
    """The mirror has not listed every kind yet."""


@dataclass(frozen=True)
class Changes:
    """What changed since a reader's cursor: by kind name, ``key -> document`` (None once deleted).

    ``complete`` when it holds every object (the first call, or a reader so far behind that the journal no longer
    reaches back to its cursor): the reader then starts over from these documents alone."""

    cursor: int
    documents: dict[str, dict[str, dict[str, Any] | None]]
    complete: bool

    def __len__(self) -> int:
        return sum(len(d) for d in self.documents.values())


@dataclass(frozen=True)
class Backoff:
    """Delay before retry ``n`` (1-based): ``initial * factor**(n-1)``, at most ``maximum`` seconds."""

    initial: float = 0.2
    factor: float = 2.0
    maximum: float = 5.0

    def delay(self, failures: int) -> float:
        return float(min(self.maximum, self.initial * self.factor ** max(0, failures - 1)))


@dataclass
class KindStats:
    """What a kind's worker has done: for tests and for a status line."""

    lists: int = 0
    events: int = 0
    reconnects: int = 0
    gone: int = 0
    last_error: str = ""
    up: bool = False  # listed and watching; false from a failure until the kind has been listed again
    synced_at: float = 0.0  # Unix time of the last list, or of the failure that ended the watch after it


@dataclass
class _KindState:
    kind: Kind
    version: str
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_version: str = ""
    synced: bool = False
    stats: KindStats = field(default_factory=KindStats)


class Mirror:
    """List+watch of ``kinds`` through clients made by ``connect`` (one per kind); see the module docstring."""

    def __init__(
        self,
        connect: Callable[[], Client],
        kinds: Sequence[Kind] = KINDS,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        watch_timeout: int = 30,
        read_timeout: float | None = None,
        backoff: Backoff = Backoff(),
        journal_limit: int = 200_000,
        clock: Callable[[], float] = time.time,
        trim: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        """``watch_timeout``: the server ends each watch after that many seconds (it is then resumed);
        ``read_timeout``: a watch silent that long is hung (default: ``watch_timeout`` and half as much again, at
        least 10 s more). ``journal_limit``: changes kept for an incremental reader; past it the journal is dropped
        (a reader that never asks costs no memory) and the next :meth:`changes` is complete. ``trim(kind,
        document)``: what is kept of each document (``kube.read.slim`` keeps what the model reads); all of it
        without."""
        self._connect = connect
        self._trim = trim
        self._kinds = list(kinds)
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._read_timeout = read_timeout if read_timeout is not None else watch_timeout + max(10.0, watch_timeout / 2)
        self._backoff = backoff
        self._states: dict[str, _KindState] = {}
        self._versions: dict[str, str | None] = {}
        self._changed = threading.Condition()
        self._generation = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._journal: list[tuple[str, str]] = []  # (kind name, key) of each change, oldest first
        self._journal_start = 0  # the cursor of the journal's first entry (entries before it were read and dropped)
        self._journal_limit = journal_limit
        self._clock = clock

    # ---------------------------------------------------------------------------------------------- control

    def start(self) -> None:
        """Find the served version of each kind, then start one list+watch worker per served kind; KubeError when
        the server cannot be asked."""
        with self._connect() as client:
            for kind in self._kinds:
                try:
                    self._versions[kind.kind] = served_version(client, kind)
                except READ_ERRORS as exc:
                    raise KubeError(describe_error(exc, f"discovering {kind.plural}")) from exc
        self.prepare(self._versions)
        for name, state in self._states.items():
            thread = threading.Thread(target=self._run, args=(name,), name=f"kubedra-watch-{state.kind.plural}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def prepare(self, versions: dict[str, str | None]) -> None:
        """Hold the kinds served (kind name -> version; None: not served) with nothing listed yet. ``start`` calls
        it after discovery; without ``start``, :meth:`replace` and :meth:`apply` feed the mirror by hand."""
        with self._changed:
            self._versions = dict(versions)
            for kind in self._kinds:
                version = versions.get(kind.kind)
                if version is not None:
                    self._states[kind.kind] = _KindState(kind, version)
            self._started = True

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the workers, waiting at most ``timeout`` seconds. A worker still blocked on a quiet watch ends when
        the server closes it (``watch_timeout``, or ``read_timeout`` for a hung one); it is a daemon thread and
        changes nothing after this call.

        Each worker closes its own client as it ends. Closing it from here would free the socket's file
        descriptor while the worker may still be inside a read on it: the number is reused at once (by the next
        pipe or file the process opens) and the worker's pending read then consumes someone else's bytes."""
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Mirror:
        self.start()
        return self

    def __exit__(self, *args: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------------------------------- reading

    @property
    def synced(self) -> bool:
        with self._changed:
            return self._all_synced()

    @property
    def generation(self) -> int:
        """Bumped by every list and event applied: a reader that saw this number has seen everything before it."""
        with self._changed:
            return self._generation

    def wait_change(self, since: int, timeout: float) -> int:
        """The generation once it differs from ``since`` (or after ``timeout`` seconds, or on stop)."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != since or self._stop.is_set(), timeout)
            return self._generation

    def stats(self) -> dict[str, KindStats]:
        with self._changed:
            return {name: KindStats(**vars(state.stats)) for name, state in self._states.items()}

    def snapshot(self) -> ClusterDocuments:
        """A copy of the cluster as of the last events seen; NotSyncedError before every kind was listed."""
        with self._changed:
            if not self._all_synced():
                raise NotSyncedError("not every kind has been listed yet")
            return self._copy()

    def changes(self, cursor: int | None = None) -> Changes:
        """What changed since ``cursor`` (from an earlier call; None for everything); NotSyncedError before every
        kind was listed. Entries up to the cursor returned are dropped: one incremental reader per mirror."""
        with self._changed:
            if not self._all_synced():
                raise NotSyncedError("not every kind has been listed yet")
            end = self._journal_start + len(self._journal)
            documents: dict[str, dict[str, dict[str, Any] | None]]
            if cursor is None or cursor < self._journal_start or cursor > end:
                documents = {name: {key: state.objects[key] for key in sorted(state.objects)}
                             for name, state in self._states.items()}
                found = Changes(end, documents, complete=True)
            else:
                touched: dict[str, dict[str, None]] = {name: {} for name in self._states}
                for name, key in self._journal[cursor - self._journal_start:]:
                    touched[name][key] = None
                documents = {name: {key: self._states[name].objects.get(key) for key in keys}
                             for name, keys in touched.items()}
                found = Changes(end, documents, complete=False)
            self._journal = []
            self._journal_start = end
            return found

    def wait(
        self, predicate: Callable[[ClusterDocuments], bool] = lambda _: True, timeout: float = 30.0
    ) -> ClusterDocuments:
        """The first synced snapshot for which ``predicate`` holds; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if self._all_synced():
                    documents = self._copy()
                    if predicate(documents):
                        return documents
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"the mirror did not reach the expected state in {timeout}s")
                self._changed.wait(remaining)

    # ---------------------------------------------------------------------------------------------- workers

    def _all_synced(self) -> bool:
        return self._started and all(state.synced for state in self._states.values())

    def _copy(self) -> ClusterDocuments:
        by_kind = {
            name: [state.objects[key] for key in sorted(state.objects)] for name, state in self._states.items()
        }
        return ClusterDocuments(by_kind, dict(self._versions))

    def _journal_trim(self) -> None:
        if len(self._journal) > self._journal_limit:
            self._journal_start += len(self._journal)
            self._journal = []

    def replace(self, listing: Listing) -> None:
        """A kind listed anew: its objects replaced in one step (the workers call it after each list)."""
        with self._changed:
            if self._stop.is_set():
                return
            state = self._states[listing.kind.kind]
            name = listing.kind.kind
            trim = self._trim
            objects = {object_key(item): trim(name, item) if trim else item for item in listing.items}
            old = state.objects
            self._journal.extend((name, key) for key, item in objects.items() if old.get(key) != item)
            self._journal.extend((name, key) for key in old.keys() - objects.keys())
            state.objects = objects
            self._journal_trim()
            state.resource_version = listing.resource_version
            state.synced = True
            state.stats.up = True
            state.stats.synced_at = self._clock()
            state.stats.lists += 1
            self._generation += 1
            self._changed.notify_all()

    def apply(self, name: str, event_type: str, document: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of kind ``name``."""
        with self._changed:
            if self._stop.is_set():
                return
            state = self._states[name]
            key = object_key(document)
            if event_type == "DELETED":
                state.objects.pop(key, None)
                self._journal.append((name, key))
            elif event_type in ("ADDED", "MODIFIED"):
                state.objects[key] = self._trim(name, document) if self._trim else document
                self._journal.append((name, key))
            self._journal_trim()
            version = document.get("metadata", {}).get("resourceVersion")
            if version:
                state.resource_version = version
            state.stats.events += 1
            self._generation += 1
            self._changed.notify_all()

    def _note_failure(self, name: str, message: str, gone: bool, *, current_until: float | None = None) -> None:
        """The kind is down; ``current_until``: when its copy was last known current, if before now."""
        with self._changed:
            stats = self._states[name].stats
            stats.last_error = message
            if stats.up:
                now = self._clock()
                stats.synced_at = now if current_until is None else min(now, current_until)
            stats.up = False
            if gone:
                stats.gone += 1
            else:
                stats.reconnects += 1

    def _run(self, name: str) -> None:
        """The kind's worker: :meth:`_work`, started over after a backoff whatever ends it before the mirror
        stops (even an exception that is not an Exception, as one raised into the thread from outside)."""
        owned: list[Client] = []
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    self._work(name, owned)
                except BaseException as exc:  # noqa: BLE001 - a worker that ends leaves its kind "up" for ever
                    if self._stop.is_set():
                        return
                    plural = self._states[name].kind.plural
                    why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    self._note_failure(name, f"watch {plural}: worker failed: {why}", False)
                    _close_all(owned)
                    failures += 1
                    if self._stop.wait(self._backoff.delay(failures)):
                        return
        finally:
            _close_all(owned)

    def _work(self, name: str, owned: list[Client]) -> None:
        state = self._states[name]
        kind, version = state.kind, state.version
        failures = 0
        need_list = True
        client: Client | None = None
        while not self._stop.is_set():
            try:
                if client is None:
                    client = self._connect()
                    owned.append(client)
                    limit_watch_reads(client, self._read_timeout)
                if need_list:
                    self.replace(list_kind(client, kind, version, page_size=self._page_size))
                    need_list = False
                    failures = 0
                with self._changed:
                    since = state.resource_version
                events = client.watch(
                    resource(kind, version),
                    resource_version=since,
                    server_timeout=self._watch_timeout,
                    **all_namespaces(kind),
                )
                for event_type, obj in events:
                    if self._stop.is_set():
                        return
                    failures = 0
                    self.apply(name, event_type, dict(obj))
            except Exception as exc:  # noqa: BLE001 - whatever breaks a watch, the kind is down until listed again
                if self._stop.is_set():
                    return
                expected = self._watch_failed(name, exc)
                need_list = True
                if not expected and client is not None:  # its connection may be half-read: start on a new one
                    owned.remove(client)
                    client.close()
                    client = None
                if is_gone(exc):
                    continue
                failures += 1
                if self._stop.wait(self._backoff.delay(failures)):
                    return

    def _watch_failed(self, name: str, exc: Exception) -> bool:
        """Note the failure (the kind is down); whether it is one a client expects (the server's or the network's)."""
        plural = self._states[name].kind.plural
        expected = isinstance(exc, ApiError | httpx2.HTTPError | OSError)
        hung = isinstance(exc, httpx2.ReadTimeout)
        if hung:
            message = f"watch {plural}: nothing received for {self._read_timeout:g}s: the stream hung"
        elif expected:
            message = describe_error(exc, f"watch {plural}")
        else:
            message = f"watch {plural}: {type(exc).__name__}: {exc}"
        until = self._clock() - self._read_timeout if hung else None
        self._note_failure(name, message, is_gone(exc), current_until=until)
        return expected


def _close_all(clients: list[Client]) -> None:
    while clients:
        clients.pop().close()
