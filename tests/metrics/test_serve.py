"""The /metrics server under clients that hold on: idle connections, requests that never finish, readers that do not
read. None may keep a scrape from being served, and the server lets go of each of them in bounded time."""

from __future__ import annotations

import contextlib
import re
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubedra.metrics.families import Family
from kubedra.metrics.serve import MetricsServer

ROOT = Path(__file__).resolve().parents[2]
EXHAUSTED = ROOT / "examples" / "monitoring" / "exhausted.yaml"
FILES = 160  # the served process's open-file limit: fewer than the idle clients below


def _limit_files() -> None:  # pragma: no cover - runs in the child before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES))


@contextlib.contextmanager
def _simulate_serve() -> Iterator[int]:
    """``kubedra simulate --serve`` in a process allowed FILES open files; its port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kubedra", "simulate", "-q", "-f", str(EXHAUSTED), "--serve", "--listen",
         "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_limit_files)  # noqa: PLW1509
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        found = re.search(r"Serving http://127\.0\.0\.1:(\d+)/metrics", line)
        assert found, line
        yield int(found.group(1))
    finally:
        process.kill()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _scrape(port: int, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        return str(response.read().decode())


def _closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset


def test_a_burst_of_idle_and_unfinished_clients_does_not_starve_a_scrape() -> None:
    """400 connections that send nothing and 20 that send half a request head, against a server allowed 160 open
    files. Before, each held a server thread and a file for ever: once the files ran out the server could accept
    nothing more and the scrape never got an answer. Now an idle connection costs no thread, the oldest idle one
    gives way when the server is full, and each is closed after the header timeout."""
    idle: list[socket.socket] = []
    with _simulate_serve() as port:
        assert "kube_resourceclaim_pending" in _scrape(port)
        try:
            for i in range(420):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                except TimeoutError:
                    continue  # the kernel's backlog was full (before, it stayed full): this client is not counted
                idle.append(sock)
                if i >= 400:
                    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            body = _scrape(port, timeout=10)  # answered: a server held up by the idle clients times this out
            assert "kube_resourceclaim_pending" in body
            # Every idle connection is let go: the oldest when newer ones pushed them out, the rest on the timeout.
            deadline = time.monotonic() + 20
            while not all(_closed_by_server(s) for s in idle) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert sum(not _closed_by_server(s) for s in idle) == 0
            assert len(idle) > 300  # most of the burst reached the server
        finally:
            for sock in idle:
                sock.close()


class _Big:
    """A source whose exposition is far larger than a socket's buffers."""

    text_value = "# a comment line to fill the body\n" * 600_000

    def families(self) -> list[Family]:
        return []

    def text(self) -> str:
        return self.text_value


def test_clients_that_do_not_read_are_cut_off_and_do_not_hold_the_workers() -> None:
    server = MetricsServer(_Big(), "127.0.0.1", 0, write_timeout=1.0, workers=2).start()
    host, port = server.address
    stuck: list[socket.socket] = []
    try:
        for _ in range(4):  # twice as many as there are workers; none reads its answer
            sock = socket.create_connection((host, port), timeout=5)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            stuck.append(sock)
        time.sleep(0.2)
        # Answered although every worker is stuck writing to a client that does not read (else: the timeout).
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
            assert len(response.read()) == len(_Big.text_value)
    finally:
        for sock in stuck:
            sock.close()
        server.stop()


def test_methods_and_paths() -> None:
    server = MetricsServer(_Big(), "127.0.0.1", 0).start()
    host, port = server.address
    try:
        request = urllib.request.Request(f"http://{host}:{port}/metrics", method="HEAD")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert int(response.headers["Content-Length"]) == len(_Big.text_value)
            assert response.read() == b""
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=10) as response:
            assert response.read() == b"ok\n"
        with pytest.raises(urllib.error.HTTPError, match="405") as refused:
            urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/metrics", data=b"x"), timeout=10)
        refused.value.close()
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(b"nonsense\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 400 ")
    finally:
        server.stop()


def test_stop_ends_the_server_and_frees_the_port() -> None:
    server = MetricsServer(_Big(), "127.0.0.1", 0).start()
    host, port = server.address
    server.stop()
    assert not any(t.name == "kubedra-metrics" and t.is_alive() for t in threading.enumerate())
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind((host, port))
