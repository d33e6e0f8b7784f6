"""``simulate --html``: one self-contained HTML page with plots over simulated time (inline SVG, no script, no
network), built from the run's own records and events, so it says what the table and the timeline say.

Series: pods pending and running (from each pod's arrival, start and end), devices held by allocations (from the
Allocated and Deallocated events; a shared device counts once however many shares it serves), and claims allocated.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from kubedra.sim.report import format_duration
from kubedra.sim.run import SimulationResult

Series = list[tuple[float, float]]  # (seconds, value) steps: the value holds from that time until the next
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 780, 220, 56, 36, 28, 36
COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e")


def _steps(changes: list[tuple[float, int]], start: float = 0.0) -> Series:
    """Cumulative sums of (time, delta), one point per instant (after all of its changes)."""
    series: Series = [(0.0, start)]
    value = start
    for time, delta in sorted(changes, key=lambda c: c[0]):
        value += delta
        if series[-1][0] == time:
            series[-1] = (time, value)
        else:
            series.append((time, value))
    return series


def _compact(series: Series) -> Series:
    """Only the points where the value changes (a device freed and taken at one instant is no step)."""
    out: Series = []
    for point in series:
        if not out or point[1] != out[-1][1]:
            out.append(point)
    return out


def pod_series(result: SimulationResult) -> dict[str, Series]:
    pending: list[tuple[float, int]] = []
    running: list[tuple[float, int]] = []
    for record in result.state.pods.values():
        if record.started_at is None:
            pending.append((record.arrive_at, 1))
            continue
        if record.started_at > record.arrive_at:
            pending += [(record.arrive_at, 1), (record.started_at, -1)]
        running.append((record.started_at, 1))
        if record.finished_at is not None:
            running.append((record.finished_at, -1))
    return {"pending": _compact(_steps(pending)), "running": _compact(_steps(running))}


def device_series(result: SimulationResult) -> dict[str, Series]:
    """Devices held and claims allocated; what was allocated before the run holds from time 0."""
    held: Counter[str] = Counter()
    claims = 0
    for claim in result.state.claims.values():
        allocation = claim.status.allocation
        if allocation is not None:
            claims += 1
            held.update(f"{r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results if not r.admin_access)
    events = [e for e in result.events if e.type in ("Allocated", "Deallocated")]
    for event in reversed(events):  # undo the timeline to find the start
        sign = -1 if event.type == "Allocated" else 1
        claims += sign
        for device in event.devices:
            held[device] += sign
    device_points: Series = [(0.0, float(sum(1 for n in held.values() if n > 0)))]
    claim_points: Series = [(0.0, float(claims))]
    for event in events:
        sign = 1 if event.type == "Allocated" else -1
        claims += sign
        for device in event.devices:
            held[device] += sign
        for points, value in ((device_points, sum(1 for n in held.values() if n > 0)), (claim_points, claims)):
            if points[-1][0] == event.time:
                points[-1] = (event.time, float(value))
            else:
                points.append((event.time, float(value)))
    return {"devices held": _compact(device_points), "claims allocated": _compact(claim_points)}


def _ticks(top: float) -> list[float]:
    step = 1.0
    while top / step > 5:
        step *= 2 if str(step)[0] in "15" else 2.5
    return [i * step for i in range(int(top // step) + 1)]


def chart(title: str, series: dict[str, Series], end: float) -> str:
    """An SVG step chart of the series over [0, end] seconds."""
    end = max(end, 1.0)
    top = max([v for points in series.values() for _, v in points] + [1.0])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + plot_w * t / end

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>',
             f'<text x="{LEFT}" y="16" class="t">{html.escape(title)}</text>']
    for tick in _ticks(top):
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="g"/>'
                     f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" class="l" text-anchor="end">{tick:g}</text>')
    for i in range(5):
        t = end * i / 4
        parts.append(f'<text x="{x(t):.1f}" y="{HEIGHT - BOTTOM + 16}" class="l" text-anchor="middle">'
                     f'{html.escape(format_duration(t))}</text>')
    for i, (name, points) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        path = [f"M{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
        for (_, v0), (t1, v1) in pairwise(points):
            path.append(f"H{x(t1):.1f}V{y(v1):.1f}" if v1 != v0 else f"H{x(t1):.1f}")
        path.append(f"H{x(end):.1f}")
        parts.append(f'<path d="{"".join(path)}" fill="none" stroke="{color}" stroke-width="2" '
                     f'data-series="{html.escape(name)}"/>')
        parts.append(f'<text x="{LEFT + 10 + 220 * i}" y="{HEIGHT - 6}" class="l" style="fill:{color}">'
                     f'&#9632; {html.escape(name)} (last {points[-1][1]:g}, max {max(v for _, v in points):g})</text>')
    parts.append("</svg>")
    return "".join(parts)


STYLE = (
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px}section{margin:16px 0}"
    ".t{font-size:14px;font-weight:600}.l{font-size:11px;fill:#444}.g{stroke:#e5e5e5}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}"
)


def html_report(result: SimulationResult, summary: dict[str, Any], lines: Sequence[str] = ()) -> str:
    """The page: the summary lines, the three charts, the longest waiters."""
    end = result.end_time
    pods, devices = pod_series(result), device_series(result)
    charts = [
        chart("Pods pending and running", pods, end),
        chart("Devices held by allocations", {"devices held": devices["devices held"]}, end),
        chart("Claims allocated", {"claims allocated": devices["claims allocated"]}, end),
    ]
    waiters = summary.get("pendingTime", {}).get("longest", [])
    rows = "".join(
        f"<tr><td>{html.escape(w['pod'])}</td><td>{html.escape(w['waited'])}</td>"
        f"<td>{'still pending' if w['stillPending'] else ''}</td></tr>"
        for w in waiters
    )
    table = f"<table><tr><th>pod</th><th>waited</th><th></th></tr>{rows}</table>" if rows else ""
    summary_html = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kubedra simulation</title>"
        f"<style>{STYLE}</style></head><body><h1>kubedra simulation over {html.escape(format_duration(end))}</h1>"
        f"<section>{summary_html}</section>"
        + "".join(f"<section>{c}</section>" for c in charts)
        + (f"<section><h2>Longest waiters</h2>{table}</section>" if table else "")
        + "</body></html>\n"
    )
