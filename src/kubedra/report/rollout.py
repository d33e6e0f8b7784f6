"""The rollout report (``kubedra migrate plan --html``): the chosen order compared with the other, wave by wave, in
one HTML file that carries plotly.js itself. Two charts -- the pods each wave disrupts (evicted, preempted, lost,
deleted with a group or JobSet, left waiting), one panel per order on a shared scale, and the pods pending after each
wave, one line per order -- after the totals side by side -- and, for the chosen order, each wave's nodes, moves,
waiting pods, broken budgets, Jobs' failures and the groups and JobSets it restarts, as the table shows them."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from kubedra.report.page import CONFIG, STYLE

# (count, legend, colour): each pod the wave disrupts in one bar (the first four add up to the wave's disrupted pods);
# "left waiting" are those of them, or others, pending after it
KINDS = (("evicted", "evicted, recreated", "#1f77b4"), ("preempted", "preempted", "#ff7f0e"),
         ("lost", "lost (bare pods, failed Jobs)", "#d62728"),
         ("deleted", "deleted with its group or JobSet, recreated", "#8c564b"), ("waiting", "left waiting", "#9467bd"))


def _counts(wave: Any) -> dict[str, int]:
    """A lost pod may have been evicted (a bare pod) or not (its Job or JobSet failed and deleted it)."""
    evicted, preempted, lost = set(wave.evicted), set(wave.preempted), set(wave.lost)
    return {"evicted": len(evicted - lost), "preempted": len(preempted - evicted - lost), "lost": len(lost),
            "deleted": len(set(wave.recreated) - evicted - preempted - lost), "waiting": len(wave.waiting)}


def disruption_figure(plans: list[Any]) -> go.Figure:
    """Stacked bars per wave: the pods the wave disrupts, one panel per order (the chosen first)."""
    figure = make_subplots(rows=len(plans), cols=1, shared_xaxes=True, shared_yaxes=True, vertical_spacing=0.12,
                           subplot_titles=[f"{p.order}: {len(p.waves)} waves" for p in plans])
    for row, plan in enumerate(plans, start=1):
        waves = [_counts(w) for w in plan.waves]
        x = [f"wave {i}" for i in range(1, len(waves) + 1)]
        hover = [", ".join(w.switching) for w in plan.waves]
        for kind, legend, color in KINDS:
            figure.add_trace(go.Bar(x=x, y=[w[kind] for w in waves], name=legend, legendgroup=kind,
                                    showlegend=row == 1, marker={"color": color}, customdata=hover,
                                    hovertemplate=f"%{{x}} (%{{customdata}}): %{{y}} {legend}<extra></extra>"),
                             row=row, col=1)
    figure.update_layout(title={"text": "Pods each wave disrupts", "y": 0.98, "yanchor": "top"}, barmode="stack",
                         height=260 * len(plans) + 110, margin={"t": 110, "l": 60, "r": 20, "b": 40},
                         legend={"orientation": "h", "x": 0, "y": 0.94, "yanchor": "top", "yref": "container"})
    figure.update_yaxes(title_text="pods", rangemode="tozero")
    return figure


def waiting_figure(plans: list[Any]) -> go.Figure:
    """Pods pending after each wave, one line per order: what waits meanwhile, and for how many waves."""
    figure = go.Figure()
    most = 0
    for plan in plans:
        counts = [len(plan.waiting_at_start), *(len(w.waiting) for w in plan.waves)]
        most = max(most, *counts)
        names = ["", *(", ".join(w.switching) for w in plan.waves)]
        figure.add_trace(go.Scatter(x=list(range(len(counts))), y=counts, mode="lines+markers", name=plan.order,
                                    customdata=names, hovertemplate="after wave %{x} (%{customdata}): %{y} pending"
                                                                    "<extra>" + plan.order + "</extra>"))
    figure.update_layout(title={"text": "Pods pending after each wave (0: before the first)"},
                         xaxis={"title": {"text": "after wave"}, "dtick": 1},
                         yaxis={"title": {"text": "pods"}, "rangemode": "tozero", "dtick": 1 if most <= 10 else None},
                         height=320,
                         margin={"t": 60, "l": 60, "r": 20, "b": 40})
    return figure


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _totals(plans: list[Any], chosen: Any) -> str:
    from kubedra.migrate.waves import totals_row

    return _table(["order", "waves", "evictions", "preempted", "lost", "waiting", "budgets broken"],
                  [totals_row(p, chosen) for p in plans])


def _wave(index: int, wave: Any, cronjobs: dict[str, Any]) -> str:
    from kubedra.migrate.waves import detail_lines, wave_rows

    rows = [list(row) for row in wave_rows(wave)]
    parts = [f"<h2>Wave {index}: {html.escape(', '.join(wave.switching))}</h2>"]
    parts.append(_table(["pod", "evicted", "now"], rows) if rows else '<p class="note">no pod evicted or waiting</p>')
    parts += [f'<p class="note">{html.escape(line)}</p>' for line in detail_lines(wave, cronjobs)]
    return f'<section data-wave="{index}">{"".join(parts)}</section>'


def _start(cronjobs: dict[str, Any]) -> str:
    """The CronJobs' next Jobs before the first wave (``cronjob_probe``)."""
    lines = "".join(f'<p class="note">{html.escape(c.line(name))}</p>' for name, c in cronjobs.items())
    return f'<section data-start="cronjobs"><h2>Before the first wave</h2>{lines}</section>'


def _div(figure: go.Figure, chart: str) -> str:
    body: str = figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{chart}", config=CONFIG)
    return f'<section data-chart="{chart}">{body}</section>'


def rollout_report(plan: Any, other: Any | None, notes: list[str]) -> str:
    """The page for ``plan`` (a ``migrate.waves.Plan``), compared with ``other`` where the run made one."""
    plans = [plan, *([other] if other is not None else [])]
    nodes = sum(len(w.switching) for w in plan.waves)
    note_html = "".join(f'<p class="note">note: {html.escape(n)}</p>' for n in notes)
    if any(p.restarted for p in plans):  # as the table says it
        restarts = ", ".join(f"{p.order} {p.restarted}" for p in plans)
        note_html = f'<p class="note">groups, JobSets and RayJobs restarted or failed: {restarts}</p>' + note_html
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kubedra rollout plan</title>'
        f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>Rollout from the device plugin to DRA: {nodes} nodes, {len(plan.waves)} waves ({html.escape(plan.order)}"
        " order)</h1>"
        f'<section data-chart="totals">{_totals(plans, plan)}{note_html}</section>'
        + _div(disruption_figure(plans), "disruption")
        + _div(waiting_figure(plans), "waiting")
        + (_start(plan.cronjobs[0]) if plan.cronjobs else "")
        + "".join(_wave(i, w, plan.cronjobs[i] if plan.cronjobs else {}) for i, w in enumerate(plan.waves, start=1))
        + "</body></html>\n"
    )
