"""The report page: five Plotly charts over simulated time and the longest waiters, in one HTML file that carries
plotly.js itself (no network, no CDN). Each chart aggregates first and drills down on demand, so a 5,000-node run
reads as well as a 3-node one: GPUs in use per model (or pool, a button away), pending pods per reason (counts
stripped from the scheduler's messages), the distribution of pending times, free/usable/stranded GPUs and the FGD
measure at the fragmentation series' points, and the device timeline of one node at a time, picked from the
busiest nodes in a dropdown.
"""

from __future__ import annotations

import html
import zlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from kubedra.report.series import Hold, Series, gpu_use, holds, pending_by_reason, waits
from kubedra.sim.report import format_duration
from kubedra.sim.run import SimulationResult

TIMELINE_NODES = 40
"""Nodes in the device timeline's dropdown: the busiest by device-seconds held (all of them on a smaller cluster)."""
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DASHES = ("solid", "dash", "dot", "dashdot")
"""Lines that coincide (two models used alike) stay apart by their dash."""
CONFIG = {"displaylogo": False, "responsive": True}
STYLE = (
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}h1{font-size:20px}"
    "h2{font-size:16px;margin:24px 0 4px}section{margin:12px 0}p.note{color:#555;font-size:13px;margin:2px 0}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}"
)


def _span(result: SimulationResult) -> float:
    """The time axis' end: the run's, or 1 s for a run that ends where it starts (so its lines are drawn)."""
    return max(result.end_time, 1.0)


def _extend(series: Series, end: float) -> tuple[list[float], list[float]]:
    """A step series as x and y lists, held until ``end`` (the last value lasts to the end of the run)."""
    xs = [t for t, _ in series] + [max(end, series[-1][0])]
    ys = [v for _, v in series] + [series[-1][1]]
    return xs, ys


def _layout(title: str, xtitle: str, ytitle: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "xaxis": {"title": {"text": xtitle}},
            "yaxis": {"title": {"text": ytitle}, "rangemode": "tozero"},
            "height": 380, "showlegend": True, "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
            "legend": {"orientation": "h", "y": -0.2}, **extra}


def gpu_use_figure(result: SimulationResult) -> go.Figure:
    """GPUs in use over time, one line per model; a button switches to one line per pool."""
    models, pools, totals = gpu_use(result)
    end = _span(result)
    figure = go.Figure()
    for i, (name, series) in enumerate(models.items()):
        xs, ys = _extend(series, end)
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"shape": "hv", "dash": DASHES[i % len(DASHES)]},
                                    name=f"{name} (of {totals[name]})", legendgroup="model"))
    for name, series in pools.items():
        xs, ys = _extend(series, end)
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"shape": "hv"}, name=f"pool {name}",
                                    legendgroup="pool", visible=False))
    n_models, n_pools = len(models), len(pools)
    buttons = [
        {"label": "by model", "method": "update", "args": [{"visible": [True] * n_models + [False] * n_pools}]},
        {"label": "by pool", "method": "update", "args": [{"visible": [False] * n_models + [True] * n_pools}]},
    ]
    figure.update_layout(**_layout("GPUs in use", "simulated time (s)", "physical GPUs"),
                         updatemenus=[{"type": "buttons", "direction": "right", "x": 1, "xanchor": "right", "y": 1.18,
                                       "buttons": buttons}])
    return figure


def pending_figure(result: SimulationResult) -> go.Figure:
    """Pending pods over time, stacked by the reason they wait for."""
    figure = go.Figure()
    for reason, series in pending_by_reason(result).items():
        xs, ys = _extend(series, _span(result))
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"shape": "hv"}, stackgroup="pending",
                                    name=reason))
    figure.update_layout(**_layout("Pending pods by reason", "simulated time (s)", "pods pending"))
    if not figure.data:
        figure.add_annotation(text="no pod waited", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return figure


def pending_time_figure(result: SimulationResult, summary: dict[str, Any]) -> go.Figure:
    """How long pods waited from arrival to binding; still-pending pods count up to the end of the run."""
    found = waits(result)
    figure = go.Figure()
    figure.add_trace(go.Histogram(x=[w for _, w, still in found if not still], name="scheduled", nbinsx=40))
    figure.add_trace(go.Histogram(x=[w for _, w, still in found if still], name="still pending at the end",
                                  nbinsx=40))
    pending = summary.get("pendingTime", {})
    title = (f"Pending time: p50 {pending.get('p50', '0s')}, p99 {pending.get('p99', '0s')}, "
             f"max {pending.get('max', '0s')}")
    figure.update_layout(**_layout(title, "seconds from arrival to binding", "pods"), barmode="stack")
    return figure


def fragmentation_figure(summary: dict[str, Any]) -> go.Figure:
    """Free, usable and stranded GPUs at each point of the fragmentation series, and the FGD measure (GPUs)."""
    series = summary.get("fragmentation", {}).get("series", [])
    xs = [p["seconds"] for p in series]
    figure = go.Figure()
    for key, name in (("free", "free GPUs"), ("usable", "usable by pending pods"), ("stranded", "stranded"),
                      ("fgd", "FGD measure (GPUs)")):
        figure.add_trace(go.Scatter(x=xs, y=[p[key] for p in series], mode="lines+markers", name=name,
                                    line={"shape": "hv", "dash": "dot" if key == "fgd" else "solid"}))
    figure.update_layout(**_layout("Fragmentation and stranded GPUs", "simulated time (s)", "GPUs"))
    if not series:
        figure.add_annotation(text="not sampled", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return figure


def _color(claim: str) -> str:
    return PALETTE[zlib.crc32(claim.encode()) % len(PALETTE)]


def busiest_nodes(found: list[Hold], limit: int = TIMELINE_NODES) -> list[str]:
    """Nodes by device-seconds held, most first (ties by name)."""
    busy: dict[str, float] = defaultdict(float)
    for hold in found:
        busy[hold.node] += hold.end - hold.start
    return sorted(busy, key=lambda node: (-busy[node], node))[:limit]


def lanes(bars: list[Hold]) -> list[str]:
    """Each bar's row: the device, and for a shared device one row per claim held at once (``gpu-0 share 2``), so
    overlapping shares do not hide one another."""
    ends: dict[str, list[float]] = defaultdict(list)  # device -> when each of its lanes is free again
    rows = []
    for hold in bars:  # in start order per device (series.holds sorts them so)
        if not hold.shared:
            rows.append(hold.device)
            continue
        free = ends[hold.device]
        lane = next((i for i, until in enumerate(free) if until < hold.start), len(free))  # an instant apart: new row
        if lane == len(free):
            free.append(hold.end)
        else:
            free[lane] = hold.end
        rows.append(f"{hold.device} share {lane + 1}")
    return rows


def timeline_figure(result: SimulationResult) -> tuple[go.Figure, int]:
    """One node's devices over time, a bar per claim holding a device; a dropdown picks the node among the busiest.
    Returns the figure and how many nodes held devices at all."""
    found = holds(result)
    per_node: dict[str, list[Hold]] = defaultdict(list)
    for hold in found:
        per_node[hold.node].append(hold)
    nodes = busiest_nodes(found)
    shortest = _span(result) / 500  # an instant's hold stays visible
    figure = go.Figure()
    for i, node in enumerate(nodes):
        bars = per_node[node]
        figure.add_trace(go.Bar(
            orientation="h", base=[h.start for h in bars], x=[max(h.end - h.start, shortest) for h in bars],
            y=lanes(bars), name=node, visible=i == 0, marker={"color": [_color(h.claim) for h in bars]},
            customdata=[[h.claim, format_duration(h.start), format_duration(h.end),
                         "shared" if h.shared else "whole"] for h in bars],
            hovertemplate="%{y}: %{customdata[0]} (%{customdata[3]})<br>%{customdata[1]} to %{customdata[2]}"
                          "<extra></extra>"))
    buttons = [{"label": node, "method": "update",
                "args": [{"visible": [j == i for j in range(len(nodes))]},
                         {"title.text": f"Device timeline: {node}"}]} for i, node in enumerate(nodes)]
    title = f"Device timeline: {nodes[0]}" if nodes else "Device timeline: no device was allocated"
    figure.update_layout(**_layout(title, "simulated time (s)", "device", showlegend=False), barmode="overlay",
                         updatemenus=[{"buttons": buttons, "x": 1, "xanchor": "right", "y": 1.18}] if buttons else [])
    figure.update_yaxes(autorange="reversed")  # gpu-0 on top; categoryorder trips plotly.js over hidden traces
    return figure, len(per_node)


def _div(figure: go.Figure, chart: str) -> str:
    body: str = figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{chart}", config=CONFIG)
    return f'<section data-chart="{chart}">{body}</section>'


def html_report(result: SimulationResult, summary: dict[str, Any], lines: Sequence[str] = ()) -> str:
    """The page: the summary lines, the five charts, the longest waiters."""
    timeline, busy_nodes = timeline_figure(result)
    shown = min(busy_nodes, TIMELINE_NODES)
    waiters = summary.get("pendingTime", {}).get("longest", [])
    rows = "".join(
        f"<tr><td>{html.escape(w['pod'])}</td><td>{html.escape(w['waited'])}</td>"
        f"<td>{'still pending' if w['stillPending'] else ''}</td></tr>" for w in waiters)
    table = f"<table><tr><th>pod</th><th>waited</th><th></th></tr>{rows}</table>" if rows else ""
    summary_html = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kubedra simulation</title>'
        f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>kubedra simulation over {html.escape(format_duration(result.end_time))}</h1>"
        f'<section data-chart="summary">{summary_html}</section>'
        + _div(gpu_use_figure(result), "gpu-use")
        + _div(pending_figure(result), "pending")
        + _div(pending_time_figure(result, summary), "pending-time")
        + _div(fragmentation_figure(summary), "fragmentation")
        + _div(timeline, "timeline")
        + f'<p class="note">The dropdown holds the {shown} busiest of the {busy_nodes} nodes that held devices, by '
          "device-seconds; a bar is one claim holding one device (shares overlap).</p>"
        + (f"<section data-chart=\"waiters\"><h2>Longest waiters</h2>{table}</section>" if table else "")
        + "</body></html>\n"
    )
