"""``kubedra simulate --html``: the page as a person sees it, rendered by headless Chromium (what is on it, not its
pixels), self-contained, a normal file, and built only when asked for."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.depth import DEEP, DEEP_REASON
from tests.metrics.test_model import EXHAUSTED

from kubedra.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package chromium)")
ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    assert main(["simulate", "-q", *args, "--html", str(out)]) == 0
    return out


def _chromium(tmp_path: Path, page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={tmp_path / 'profile'}", *flags, page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=True)


def _texts(dom: str, css_class: str) -> list[str]:
    """The text of each SVG <text> of a class (plotly draws titles, legends and buttons as SVG text)."""
    return [re.sub(r"<[^>]+>", "", t) for t in re.findall(rf'<text class="{css_class}"[^>]*>(.*?)</text>', dom)]


def test_the_page_is_self_contained_and_a_normal_file(tmp_path: Path) -> None:
    out = _write(tmp_path, "-f", str(EXHAUSTED))
    page = out.read_text()
    assert page.count("<script") == 6  # plotly.js once, then one per chart
    assert not re.findall(r"<script[^>]+src=|<link[^>]+href=|<img[^>]+src=", page)  # nothing fetched
    assert "11 pending of 13" in page
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert not list(tmp_path.glob(".report.html.*"))


def test_simulate_without_html_does_not_load_plotly() -> None:
    code = ("import sys, contextlib, io; from kubedra.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['simulate', '-q'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('plotly', 'kubedra.report')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_an_unwritable_html_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-q", "-f", str(EXHAUSTED), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "error: --html" in capsys.readouterr().err


@needs_chromium
def test_headless_chromium_shows_the_five_charts(tmp_path: Path) -> None:
    page = _write(tmp_path, "-f", str(EXHAUSTED))
    run = _chromium(tmp_path, page, "--dump-dom")
    assert "Uncaught" not in run.stderr, run.stderr
    dom = run.stdout
    assert re.findall(r'data-chart="([^"]+)"', dom) == ["summary", "gpu-use", "pending", "pending-time",
                                                        "fragmentation", "timeline"]
    assert dom.count('class="main-svg"') >= 10  # plotly drew every chart (two SVG layers each)
    assert _texts(dom, "gtitle") == ["GPUs in use", "Pending pods by reason", "Pending time: p50 0s, p99 0s, max 0s",
                                     "Fragmentation and stranded GPUs", "Device timeline: small-0"]
    assert {"free GPUs", "usable by pending pods", "stranded", "FGD measure (GPUs)"} <= set(_texts(dom, "legendtext"))
    legends = _texts(dom, "legendtext")
    assert "NVIDIA A100-SXM4-80GB (of 2)" in legends
    assert "cannot allocate all claims" in legends
    assert {"scheduled", "still pending at the end"} <= set(legends)
    assert {"by model", "by pool", "small-0"} <= set(_texts(dom, "updatemenu-item-text"))
    timeline = dom[dom.index('id="chart-timeline"'):]
    assert timeline.count('class="point"') == 2  # a bar per claim holding a GPU: two claims, gpu-0 and gpu-1
    assert set(re.findall(r'<g class="ytick"><text[^>]*data-unformatted="([^"]+)"', timeline)) == {"gpu-0", "gpu-1"}
    shot = tmp_path / "report.png"
    _chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1200,2200")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 40_000  # five charts drawn, not a blank page


def _mixed(tmp_path: Path, scale: int) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import shapes

    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump_all(shapes.mixed(scale)))
    return path


def _readable_at_scale(tmp_path: Path, scale: int) -> None:
    """Aggregates stay a few lines however many nodes; the timeline offers the busiest 40, one at a time."""
    page = _write(tmp_path, "-f", str(_mixed(tmp_path, scale)))
    assert page.stat().st_size < 30_000_000
    if CHROMIUM is None:
        return
    run = _chromium(tmp_path, page, "--dump-dom")
    assert "Uncaught" not in run.stderr, run.stderr
    dom = run.stdout
    legends = _texts(dom, "legendtext")
    assert {"NVIDIA H100 80GB HBM3 (of " + str(250 * scale * 8) + ")", f"NVIDIA A100-SXM4-80GB (of {2000 * scale})"} \
        <= set(legends)
    nodes = [t for t in _texts(dom, "updatemenu-item-text") if t not in ("by model", "by pool")]
    assert len(nodes) == 1  # a closed dropdown shows its current choice
    (held,) = re.findall(r"The dropdown holds the 40 busiest of the (\d+) nodes that held devices", dom)
    assert 40 < int(held) <= 500 * scale


@needs_chromium
def test_a_500_node_run_reads_as_aggregates_and_a_node_picker(tmp_path: Path) -> None:
    _readable_at_scale(tmp_path, 1)


@pytest.mark.deep
@pytest.mark.skipif(not DEEP, reason=DEEP_REASON)
def test_a_5000_node_run_reads_as_aggregates_and_a_node_picker(tmp_path: Path) -> None:
    _readable_at_scale(tmp_path, 10)
