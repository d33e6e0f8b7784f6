"""A real HTTP/1.1 proxy in front of the test API server that breaks what it relays, on purpose.

The real kube-apiserver cannot be made to send a garbled watch line, stop a stream half-way or go silent, nor (a
v1.37.2 server validates and prunes every object) send a field kubedra does not know or an integer out of range.
This proxy speaks the real wire format on both sides: clients (lightkube, through a kubeconfig pointing here) talk
plain HTTP/1.1 with keep-alive, the proxy talks HTTPS to the API server with the client's own headers (its bearer
token) and relays status, headers and body; a watch is relayed event line by event line, each line as one chunk of
a chunked response, as the API server writes it. What it breaks is chosen by the test:

* ``rewrite(plural, fn)``: every object of that resource, in list responses and watch events, passes through
  ``fn`` (an unknown field, a bad integer: what a newer or broken server would send);
* ``break_next_event(plural, how)``: the next watch event line of that resource is ``"garble"``d (bytes that are
  not JSON), ``"truncate"``d (half of it, then the response ends properly), ``"cut"`` (half of it, then the
  connection is closed without the final chunk) or held for ever (``"hang"``: nothing more is sent on that stream,
  which stays open until the client gives up);
* ``hold_next_page(plural)``: the next list page of that resource after the first (a request with a ``continue``
  token) is held until released: the client is then mid-list.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from tests.controlplane.fixture import ControlPlane

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "te",
              "trailer", "upgrade", "proxy-connection", "host", "accept-encoding"}
HOWS = ("garble", "truncate", "cut", "hang")


@dataclass
class Hold:
    """A held response: ``reached`` once the proxy holds it, sent on when ``release`` is set."""

    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Faults:
    rewrites: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=dict)
    next_event: dict[str, str] = field(default_factory=dict)
    pages: dict[str, Hold] = field(default_factory=dict)
    broken: list[tuple[str, str]] = field(default_factory=list)  # (plural, how) of each fault applied
    watches: dict[str, int] = field(default_factory=dict)  # watch requests seen, by plural
    holds: list[Hold] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet: a client that gives up on a stream (as the tests make it) breaks the pipe on purpose."""


class FaultProxy:
    """See the module docstring; ``kubeconfig`` points a client at the proxy with the control plane's token."""

    def __init__(self, plane: ControlPlane, workdir: Path) -> None:
        self.plane = plane
        self.faults = _Faults()
        context = ssl.create_default_context(cafile=str(plane.cert_dir / "apiserver.crt"))
        self._server = _Server(("127.0.0.1", 0), _handler(plane.apiserver_port, context, self.faults))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self.kubeconfig = workdir / "proxy.kubeconfig"
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "admin", "user": {"token": plane.token}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "admin"}}],
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *args: object) -> None:
        with self.faults.lock:
            for hold in self.faults.holds:
                hold.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def rewrite(self, plural: str, fn: Callable[[dict[str, Any]], dict[str, Any]] | None) -> None:
        with self.faults.lock:
            if fn is None:
                self.faults.rewrites.pop(plural, None)
            else:
                self.faults.rewrites[plural] = fn

    def break_next_event(self, plural: str, how: str) -> None:
        assert how in HOWS, how
        with self.faults.lock:
            self.faults.next_event[plural] = how

    def hold_next_page(self, plural: str) -> Hold:
        hold = Hold()
        with self.faults.lock:
            self.faults.pages[plural] = hold
            self.faults.holds.append(hold)
        return hold

    @property
    def broken(self) -> list[tuple[str, str]]:
        with self.faults.lock:
            return list(self.faults.broken)

    def watches(self, plural: str) -> int:
        with self.faults.lock:
            return self.faults.watches.get(plural, 0)


def _plural(path: str) -> str:
    parts = [p for p in urllib.parse.urlsplit(path).path.split("/") if p]
    return parts[-1] if parts else ""


def _query(path: str) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)


def _is_watch(path: str) -> bool:
    return _query(path).get("watch", [""])[0] in ("true", "1")


def _handler(port: int, context: ssl.SSLContext, faults: _Faults) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, and chunked watch responses, as the API server serves them

        def log_message(self, *_args: object) -> None:
            return

        def do_GET(self) -> None:
            self._relay()

        def do_POST(self) -> None:
            self._relay()

        def do_PUT(self) -> None:
            self._relay()

        def do_PATCH(self) -> None:
            self._relay()

        def do_DELETE(self) -> None:
            self._relay()

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Accept-Encoding"] = "identity"  # bodies are rewritten: never compressed
            upstream = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=120)
            response: http.client.HTTPResponse | None = None
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                plural = _plural(self.path)
                if _is_watch(self.path) and response.status == 200:
                    with faults.lock:
                        faults.watches[plural] = faults.watches.get(plural, 0) + 1
                    self._relay_watch(response, plural)
                else:
                    self._relay_whole(response, plural)
            finally:
                if response is not None:  # it holds the socket open past the connection's close
                    response.close()
                upstream.close()

        def _start(self, response: http.client.HTTPResponse, chunked: bool, length: int = 0) -> None:
            self.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(length))
            self.end_headers()

        def _relay_whole(self, response: http.client.HTTPResponse, plural: str) -> None:
            data = response.read()
            later_page = self.command == "GET" and "continue" in _query(self.path)
            with faults.lock:
                rewrite = faults.rewrites.get(plural)
                hold = faults.pages.pop(plural, None) if later_page else None
            if rewrite is not None and response.status == 200 and self.command == "GET":
                document = json.loads(data)
                if isinstance(document.get("items"), list):
                    document["items"] = [rewrite(item) for item in document["items"]]
                data = json.dumps(document).encode()
            if hold is not None:
                hold.reached.set()
                hold.release.wait()
            self._start(response, chunked=False, length=len(data))
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _relay_watch(self, response: http.client.HTTPResponse, plural: str) -> None:
            self._start(response, chunked=True)
            while True:
                line = response.readline()
                if not line:
                    break
                with faults.lock:
                    how = faults.next_event.pop(plural, None)
                    rewrite = faults.rewrites.get(plural)
                    if how is not None:
                        faults.broken.append((plural, how))
                if rewrite is not None:
                    event = json.loads(line)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        event["object"] = rewrite(event["object"])
                    line = json.dumps(event).encode() + b"\n"
                if how == "garble":
                    line = b'{"type":"MODIFIED","object":\x00\xff not json at all}\n'
                elif how in ("truncate", "cut"):
                    self._chunk(line[: len(line) // 2])
                    if how == "cut":
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    break
                elif how == "hang":
                    self._hang()
                    return
                self._chunk(line)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _hang(self) -> None:
            """Send nothing more, keeping the connection open until the client closes it (or the proxy stops)."""
            hold = Hold()
            with faults.lock:
                faults.holds.append(hold)
            hold.reached.set()
            self.close_connection = True
            while not hold.release.wait(0.1):
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return  # the client gave up and closed its end

    return Handler
