"""``kubedra simulate --html``: the series over simulated time, the page, and the page in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.metrics.test_model import EXHAUSTED, PACED

from kubedra.cli import main
from kubedra.objects.load import load_paths, load_text
from kubedra.sim.html import device_series, html_report, pod_series
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_series_follow_the_run() -> None:
    """Three 1-hour Job pods on one GPU run one after another: 2, then 1, then 0 wait."""
    result = simulate(build_scenario(load_text(PACED, source="paced.yaml")), Options())
    pods = pod_series(result)
    assert pods["pending"] == [(0.0, 2.0), (3600.0, 1.0), (7200.0, 0.0)]
    assert pods["running"] == [(0.0, 1.0), (10800.0, 0.0)]
    devices = device_series(result)
    assert devices["devices held"] == [(0.0, 1.0), (10800.0, 0.0)]  # released and taken again at 1h and 2h
    assert devices["claims allocated"][0] == (0.0, 1.0)


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["simulate", "-q", "-f", str(EXHAUSTED), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.count("<svg") == 3
    assert "<script" not in page
    assert re.findall(r"https?://[^\"]+", page) == ["http://www.w3.org/2000/svg"] * 3  # only the SVG namespace
    assert "11 pending of 13" in page


def test_an_unwritable_html_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-q", "-f", str(EXHAUSTED), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "error: --html" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package chromium)")
def test_headless_chromium_renders_the_plots(tmp_path: Path) -> None:
    result = simulate(build_scenario(load_paths([str(EXHAUSTED)])), Options())
    page = tmp_path / "report.html"
    page.write_text(html_report(result, build_report(result).summary, ["summary line"]))
    assert CHROMIUM is not None
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert dom.count("<svg") == 3
    assert set(re.findall(r'data-series="([^"]+)"', dom)) == {"pending", "running", "devices held",
                                                              "claims allocated"}
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=900,1000", page.as_uri()], capture_output=True,
                   timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000  # drawn, not blank
