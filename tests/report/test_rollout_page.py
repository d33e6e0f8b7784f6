"""``kubedra migrate plan --html``: the rollout report as a person sees it, rendered by headless Chromium, and what
it holds: both orders' totals and per-wave bars as the table prints them, each wave's moves, a normal file written
whole, exit 2 where it cannot be written."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from tests.report.test_page import _chromium, _texts, needs_chromium

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]
ROLLOUT = ROOT / "examples" / "migrate" / "rollout"
GANGS = ROOT / "examples" / "migrate" / "gang-rollout"


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


def test_the_page_says_what_each_wave_does_to_jobs_groups_and_jobsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gang example: a LeaderWorkerSet group recreated twice, a JobSet restarted once its Job failed; each line
    the table prints under a wave is on the page under that wave, and the restarts line after the totals."""
    out = tmp_path / "gangs.html"
    assert main(["migrate", "plan", str(GANGS), "--html", str(out)]) == 0
    table, page = capsys.readouterr().out, html.unescape(out.read_text())
    sections = re.findall(r'<section data-wave="(\d+)">(.*?)</section>', page)
    lines = {i: re.findall(r"^  ((?:LeaderWorkerSet|JobSet|Job) .+)$", block, re.M)
             for i, block in re.findall(r"^WAVE (\d+): .+\n((?:.+\n)+)", table, re.M)}
    assert sum(len(v) for v in lines.values()) >= 4
    for index, body in sections:
        assert re.findall(r'<p class="note">((?:LeaderWorkerSet|JobSet|Job) [^<]+)</p>', body) == lines[index]
    restarts = re.search(r"^groups, JobSets and RayJobs restarted or failed: .+$", table, re.M)
    assert restarts is not None and f'<p class="note">{restarts.group(0)}</p>' in page


FAILING_JOB = """
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: dgx}
spec: {count: 2, devicePlugin: true, gpu: {model: H100-80GB, count: 1}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 2
  completions: 2
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
"""


def test_each_waves_bars_count_every_pod_it_disrupts_once(tmp_path: Path) -> None:
    """The disruption chart's first four bars of a wave add up to the plan's own count of the pods it disrupts: on
    the examples, and where a Job's failure loses its pod on the other node, never evicted (lost, not taken from the
    evicted bar)."""
    from kubedra.report.rollout import KINDS, _counts

    failing = tmp_path / "failing-job.yaml"
    failing.write_text(FAILING_JOB)
    lost_unevicted = 0
    for path in (GANGS, ROLLOUT, failing):
        for plan in _plans(path):
            for wave in plan.waves:
                counts = _counts(wave)
                assert min(counts.values()) >= 0
                assert sum(counts[kind] for kind, _, _ in KINDS if kind != "waiting") == wave.disrupted
                lost_unevicted += len(set(wave.lost) - set(wave.evicted))
    assert lost_unevicted > 0


def _plans(path: Path) -> list[Any]:
    from kubedra.allocator import Features
    from kubedra.migrate import waves
    from kubedra.migrate.rollout import read_cluster
    from kubedra.objects.load import load_paths
    from kubedra.sim.scenario import build_scenario

    loaded = load_paths([str(path)])
    cluster = read_cluster(loaded, build_scenario(loaded))
    features = Features.for_release("1.37")
    naive = waves.naive(cluster, features, 1)
    return [naive, waves.smart(cluster, features, 1, naive)]


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
    assert {"evicted, recreated", "preempted", "lost (bare pods, failed Jobs)",
            "deleted with its group or JobSet, recreated", "left waiting"} <= set(_texts(dom, "legendtext"))
