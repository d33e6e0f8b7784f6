"""The adapter edge: a prometheus-client registry of its own over the families, and the ``/metrics`` HTTP server.

``Source`` is what a server serves: something that returns the current families (for the registry's collector)
and their text (the fast path a scrape takes, rendered from per-object caches). The registry's ``generate_latest``
and :meth:`Source.text` give the same exposition; tests hold them to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric, UnknownMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from kubedra.metrics.model import Family

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


class Source(Protocol):
    def families(self) -> list[Family]: ...

    def text(self) -> str: ...


class FamiliesCollector(Collector):
    """A custom collector: each family as a prometheus-client gauge family."""

    def __init__(self, source: Callable[[], list[Family]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        for family in self._source():
            kind = GaugeMetricFamily if family.spec.type == "gauge" else UnknownMetricFamily
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
    """``/metrics`` (and ``/healthz``) over a source, in a background thread; ``stop`` ends it."""

    def __init__(self, source: Source, host: str, port: int) -> None:
        handler = _handler(source)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="kubedra-metrics", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler(source: Source) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, status, kind = source.text().encode(), 200, CONTENT_TYPE
            elif path in ("/healthz", "/"):
                body, status, kind = b"ok\n", 200, "text/plain; charset=utf-8"
            else:
                body, status, kind = b"not found; try /metrics\n", 404, "text/plain; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            return  # scrapes every few seconds would drown the terminal

    return Handler
