"""A real Prometheus (Debian's package) scrapes ``kubedra simulate --serve`` and fires DRAResourceExhausted, and
every query of the Grafana dashboard returns data (with ``kubedra exporter`` on the test control plane scraped too).

Both processes run on 127.0.0.1 on free ports, Prometheus with its own data directory; the test reads the rule state
and the dashboard's queries through Prometheus' HTTP API, and stops both processes by PID.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import free_port
from tests.metrics.test_dashboard import dashboard_queries

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "dra-rules.yaml"
EXHAUSTED = ROOT / "examples" / "monitoring" / "exhausted.yaml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed (Debian package prometheus; .ci/run installs it)"),
]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _until(what: str, probe: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:  # not listening yet
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; last: {last}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        for process in reversed(processes):
            _stop(process)


def _query(base: str, expr: str) -> Any:
    return _get(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")


def test_prometheus_fires_the_exhausted_alert_from_simulate_serve(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    kubedra_port, prometheus_port = free_port(), free_port()
    with (tmp_path / "kubedra.log").open("wb") as log:  # the child keeps its own copy of the descriptor
        started.append(subprocess.Popen(
            [sys.executable, "-m", "kubedra", "simulate", "-q", "-f", str(EXHAUSTED), "--serve", "--listen",
             f"127.0.0.1:{kubedra_port}"], stdout=log, stderr=subprocess.STDOUT))
    metrics = f"http://127.0.0.1:{kubedra_port}/metrics"
    _until("kubedra /metrics", lambda: urllib.request.urlopen(metrics, timeout=5).status == 200)

    rules = yaml.safe_load(RULES.read_text())
    for rule in rules["groups"][0]["rules"]:
        if rule["alert"] == "DRAResourceExhausted":
            rule["for"] = "3s"  # the test copy: the shipped rule waits 5m
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, allow_unicode=True))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yaml")],
        "scrape_configs": [{"job_name": "kubedra-exporter",
                            "static_configs": [{"targets": [f"127.0.0.1:{kubedra_port}"]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    with (tmp_path / "prometheus.log").open("wb") as log:
        started.append(subprocess.Popen(
            ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"], stdout=log, stderr=subprocess.STDOUT))
    base = f"http://127.0.0.1:{prometheus_port}"

    def firing() -> list[dict[str, Any]]:
        groups = _get(f"{base}/api/v1/rules")["data"]["groups"]
        return [a for g in groups for r in g["rules"] if r["name"] == "DRAResourceExhausted"
                for a in r.get("alerts", []) if a["state"] == "firing"]

    alerts = _until("DRAResourceExhausted firing", firing)
    assert [a["labels"] for a in alerts] == [
        {"alertname": "DRAResourceExhausted", "resource_class": "gpu.nvidia.com", "severity": "warning"}
    ]
    assert alerts[0]["annotations"]["summary"] == "gpu.nvidia.com资源不足，11个等待分配"  # noqa: RUF001 - the seed's text
    # The scrape itself is healthy.
    targets = _get(f"{base}/api/v1/targets")["data"]["activeTargets"]
    assert [t["health"] for t in targets] == ["up"]
    # Every dashboard query is valid PromQL over what was scraped; the pending panel says 11.
    for expr in dashboard_queries():
        assert _query(base, expr)["status"] == "success", expr
    pending = _query(base, 'sum by (resource_class) (kube_resourceclaim_pending)')["data"]["result"]
    assert {r["metric"]["resource_class"]: r["value"][1] for r in pending}["gpu.nvidia.com"] == "11"
    pids = [p.pid for p in started]
    for process in reversed(started):
        _stop(process)
    assert all(p.returncode is not None for p in started), pids


SHARED = ROOT / "examples" / "monitoring" / "shared.yaml"


def _serve(started: list[subprocess.Popen[bytes]], log: Path, *args: str) -> str:
    """Start ``kubedra ARGS --listen`` on a free port; its /metrics address once it answers."""
    port = free_port()
    with log.open("wb") as out:
        started.append(subprocess.Popen([sys.executable, "-m", "kubedra", *args, "--listen", f"127.0.0.1:{port}"],
                                        stdout=out, stderr=subprocess.STDOUT))
    url = f"http://127.0.0.1:{port}/metrics"
    _until(f"{args[0]} /metrics", lambda: urllib.request.urlopen(url, timeout=5).status == 200)
    return f"127.0.0.1:{port}"


@pytest.mark.controlplane
def test_every_dashboard_query_returns_data(
    tmp_path: Path, started: list[subprocess.Popen[bytes]], control_plane: Any
) -> None:
    """What each panel shows, from a real Prometheus: the claims and devices panels from ``simulate --serve`` of
    the exhausted example, the sharing panels from one with consumable shares, the exporter's health panels from
    ``kubedra exporter`` watching the test control plane. Every query of every panel returns at least one series."""
    targets = [
        _serve(started, tmp_path / "exhausted.log", "simulate", "-q", "-f", str(EXHAUSTED), "--serve"),
        _serve(started, tmp_path / "shared.log", "simulate", "-q", "-f", str(SHARED), "--serve"),
        _serve(started, tmp_path / "exporter.log", "exporter", "--kubeconfig", str(control_plane.kubeconfig)),
    ]
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "kubedra", "static_configs": [{"targets": targets}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with (tmp_path / "prometheus.log").open("wb") as log:
        started.append(subprocess.Popen(
            ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT))
    base = f"http://127.0.0.1:{port}"
    _until("all three targets up", lambda: [t["health"] for t in _get(f"{base}/api/v1/targets")["data"]
                                             ["activeTargets"]] == ["up"] * 3)
    queries = dashboard_queries()
    assert len(queries) >= 15

    def empty() -> list[str]:
        return [q for q in queries if not _query(base, q)["data"]["result"]]

    _until("every dashboard query to return data", lambda: not empty() or None, timeout=60)
    assert empty() == []
    shares = _query(base, 'count by (pool) (count by (pool, device) (kube_resourceclaim_allocation_device_info'
                          '{share_id!=""}))')["data"]["result"]
    assert [(r["metric"]["pool"], r["value"][1]) for r in shares] == [("l4-0", "2")]  # both L4 GPUs are shared
    synced = _query(base, "min(kubedra_exporter_synced)")["data"]["result"]
    assert synced[0]["value"][1] == "1"
