"""``kubedra migrate plan --html``: the rollout report as a person sees it, rendered by headless Chromium, and what
it holds: both orders' totals and per-wave bars as the table prints them, each wave's moves, a normal file written
whole, exit 2 where it cannot be written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.report.test_page import _chromium, _texts, needs_chromium

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]
ROLLOUT = ROOT / "examples" / "migrate" / "rollout"


def _write(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Path, str]:
    out = tmp_path / "rollout.html"
    assert main(["migrate", "plan", str(ROLLOUT), *args, "--html", str(out)]) == 0
    return out, capsys.readouterr().out


def test_the_page_holds_the_plan_the_table_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, table = _write(tmp_path, capsys)
    page = out.read_text()
    assert not re.findall(r"<script[^>]+src=|<link[^>]+href=|<img[^>]+src=", page)  # nothing fetched
    totals = re.findall(r"^(smart \(chosen\)|naive)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", table, re.M)
    assert len(totals) == 2
    for order, *numbers in totals:
        assert f"<tr><td>{order}</td>" + "".join(f"<td>{n}</td>" for n in numbers) + "</tr>" in page
    waves = re.findall(r"^WAVE (\d+): (.+)$", table, re.M)
    assert re.findall(r'<section data-wave="(\d+)"><h2>Wave \d+: ([^<]+)</h2>', page) == waves
    assert "no, preempted" in page and "lost (bare pod)" in page and "PodDisruptionBudget default/inference" in page
    assert not list(tmp_path.glob(".rollout.html.*"))


def test_an_unwritable_html_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "plan", str(ROLLOUT), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "error: --html" in capsys.readouterr().err


@needs_chromium
def test_headless_chromium_shows_both_orders_wave_by_wave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page, _ = _write(tmp_path, capsys, "--max-unavailable", "2")
    run = _chromium(tmp_path, page, "--dump-dom")
    assert "Uncaught" not in run.stderr, run.stderr
    dom = run.stdout
    assert re.findall(r'data-chart="([^"]+)"', dom) == ["totals", "disruption", "waiting"]
    titles = _texts(dom, "gtitle")
    assert "Pods each wave disrupts" in titles and "Pods pending after each wave (0: before the first)" in titles
    assert {"smart: 3 waves", "naive: 3 waves"} <= set(_texts(dom, "annotation-text"))
    assert {"evicted, recreated", "preempted", "lost (bare pods)", "left waiting"} <= set(_texts(dom, "legendtext"))
