"""The adapter edge: a prometheus-client registry of its own over the families, and the ``/metrics`` HTTP server.

``Source`` is what a server serves: something that returns the current families (for the registry's collector)
and their text (the fast path a scrape takes, rendered from per-object caches). The registry's ``generate_latest``
and :meth:`Source.text` give the same exposition; tests hold them to it.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from kubedra.metrics.families import Family

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


class Source(Protocol):
    def families(self) -> list[Family]: ...

    def text(self) -> str: ...


class FamiliesCollector(Collector):
    """A custom collector: each family as a prometheus-client family of its type."""

    def __init__(self, source: Callable[[], list[Family]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        types = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily}
        for family in self._source():
            kind = types.get(family.spec.type, UnknownMetricFamily)
            gauge = kind(family.spec.name, family.spec.help, labels=list(family.spec.labels))
            for labels, value in family.rows:
                gauge.add_metric(list(labels), value)
            yield gauge


def registry_for(source: Source) -> CollectorRegistry:
    """A registry of its own (never the global one), holding only the source's families."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FamiliesCollector(source.families))
    return registry


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9400`` for IPv6); ValueError with the reason otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9400")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 - ":9400" means every interface, as Go servers


class MetricsServer:
    """``/metrics`` (and ``/healthz``) over a source, in background threads; ``stop`` ends it.

    No client can hold what a scrape needs. One thread reads every connection's request head without blocking, so
    an idle connection costs a socket, never a thread; a head that has not arrived ``header_timeout`` seconds after
    the connection was accepted closes it; when ``max_connections`` are open (or the process runs out of files) the
    connection idle the longest is closed to admit the next. A complete request goes to one of ``workers`` threads,
    which must have written the whole answer within ``write_timeout`` seconds (a client that does not read is cut
    off). Every answer closes its connection (HTTP/1.1 with ``Connection: close``), as Prometheus handles."""

    def __init__(
        self,
        source: Source,
        host: str,
        port: int,
        *,
        header_timeout: float = 5.0,
        write_timeout: float = 10.0,
        max_connections: int = 256,
        workers: int = 4,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self._source = source
        self._header_timeout = header_timeout
        self._write_timeout = write_timeout
        self._max_connections = max_connections
        self._selector = selectors.DefaultSelector()
        self._pending: dict[socket.socket, _Pending] = {}  # connections waiting for their head, oldest first
        self._busy = 0  # connections handed to the workers, not closed yet
        self._busy_lock = threading.Lock()
        self._paused_until = 0.0  # accepting paused until then (out of files, nothing idle to close)
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix="kubedra-metrics-worker")
        self._stop = threading.Event()
        self._wake_read, self._wake_write = socket.socketpair()
        self._thread = threading.Thread(target=self._loop, name="kubedra-metrics", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> MetricsServer:
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        self._thread.join(timeout=5)
        self._workers.shutdown(wait=True, cancel_futures=True)
        for sock in (self._listener, self._wake_read, self._wake_write):
            sock.close()
        self._selector.close()

    # ------------------------------------------------------------------------------------ the reading thread

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                for key, _events in self._selector.select(timeout=0.25):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_read:
                        self._wake_read.recv(64)
                    else:
                        assert isinstance(key.fileobj, socket.socket)
                        self._read(key.fileobj)
                self._expire(time.monotonic())
        finally:
            for sock in list(self._pending):
                self._drop(sock)

    def _accept(self) -> None:
        while True:
            try:
                sock, _address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno not in _OUT_OF_FILES:
                    continue  # that client gave up before it was accepted
                if self._evict():
                    continue
                # Nothing idle to give way: stop accepting a moment rather than spin on a listener always ready.
                self._selector.unregister(self._listener)
                self._paused_until = time.monotonic() + 0.05
                return
            with self._busy_lock:
                full = len(self._pending) + self._busy >= self._max_connections
            if full and not self._evict():
                sock.close()  # every connection is being answered: shed this one
                continue
            sock.setblocking(False)
            self._pending[sock] = _Pending(time.monotonic() + self._header_timeout)
            self._selector.register(sock, selectors.EVENT_READ)

    def _read(self, sock: socket.socket) -> None:
        pending = self._pending[sock]
        try:
            chunk = sock.recv(_MAX_HEAD)
        except BlockingIOError:
            return
        except OSError:
            self._drop(sock)
            return
        if not chunk:
            self._drop(sock)
            return
        pending.head += chunk
        if b"\r\n\r\n" in pending.head:
            self._selector.unregister(sock)
            del self._pending[sock]
            with self._busy_lock:
                self._busy += 1
            self._workers.submit(self._answer, sock, bytes(pending.head))
        elif len(pending.head) > _MAX_HEAD:
            self._drop(sock)

    def _expire(self, now: float) -> None:
        for sock, pending in list(self._pending.items()):
            if pending.deadline > now:
                break  # oldest first: the rest are younger
            self._drop(sock)
        if self._paused_until and now >= self._paused_until:
            self._paused_until = 0.0
            self._selector.register(self._listener, selectors.EVENT_READ)

    def _evict(self) -> bool:
        """Close the connection idle the longest; False when none is."""
        oldest = next(iter(self._pending), None)
        if oldest is None:
            return False
        self._drop(oldest)
        return True

    def _drop(self, sock: socket.socket) -> None:
        self._pending.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)
        sock.close()

    # ------------------------------------------------------------------------------------ the workers

    def _answer(self, sock: socket.socket, head: bytes) -> None:
        try:
            sock.setblocking(True)
            status, kind, body, extra = self._respond(head)
            method = head.split(b" ", 1)[0]
            lines = [f"HTTP/1.1 {status} {_REASONS[status]}", f"Content-Type: {kind}",
                     f"Content-Length: {len(body)}", "Connection: close", *extra]
            data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if method == b"HEAD" else body)
            self._send(sock, data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the client went away, or would not read in time
        finally:
            sock.close()
            with self._busy_lock:
                self._busy -= 1

    def _respond(self, head: bytes) -> tuple[int, str, bytes, list[str]]:
        """Status, content type, body and extra headers for a request head."""
        plain = "text/plain; charset=utf-8"
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return 400, plain, b"bad request\n", []
        method, target, _version = parts
        if method not in ("GET", "HEAD"):
            return 405, plain, b"only GET and HEAD\n", ["Allow: GET, HEAD"]
        path = target.split("?", 1)[0]
        if path == "/metrics":
            try:
                return 200, CONTENT_TYPE, self._source.text().encode(), []
            except Exception as exc:  # noqa: BLE001 - a scrape gets an answer, not a dropped connection
                return 500, plain, f"cannot render the metrics: {type(exc).__name__}: {exc}\n".encode(), []
        if path in ("/healthz", "/"):
            return 200, plain, b"ok\n", []
        return 404, plain, b"not found; try /metrics\n", []

    def _send(self, sock: socket.socket, data: bytes) -> None:
        """All of ``data`` within ``write_timeout`` seconds, or TimeoutError."""
        deadline = time.monotonic() + self._write_timeout
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the client did not read the answer in time")
            sock.settimeout(remaining)
            sent = sock.send(view[:_SEND_CHUNK])
            view = view[sent:]


@dataclass
class _Pending:
    deadline: float
    head: bytearray = field(default_factory=bytearray)


_MAX_HEAD = 16 * 1024  # a scrape's request head is a few hundred bytes
_SEND_CHUNK = 256 * 1024
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            500: "Internal Server Error"}
