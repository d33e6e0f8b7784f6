"""deploy/grafana/kubedra-dra.json: a well-formed dashboard whose queries read only metrics kubedra exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kubedra.metrics.embedded import SIM_TIME
from kubedra.metrics.families import FAMILIES
from kubedra.metrics.live import LAST_SYNC, SERVED_AGE, SYNCED, UNDECODABLE, WATCH_UP

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "kubedra-dra.json"
EXPORTED = {spec.name for spec in (*FAMILIES, SIM_TIME, SYNCED, WATCH_UP, LAST_SYNC, SERVED_AGE, UNDECODABLE)}
PROMQL_WORDS = {"sum", "by", "count", "min", "max", "time", "ignoring", "on", "label_values"}


def dashboard_queries() -> list[str]:
    """Every panel query, with the dashboard's variables set to match everything (as "All" does)."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"].replace("$resource_class", ".*").replace("$node", ".*")
            for p in panels for t in p.get("targets", [])]


def _metric_names(expr: str) -> set[str]:
    without_strings = re.sub(r'"[^"]*"', '""', expr)
    without_labels = re.sub(r"\{[^}]*\}", "", without_strings)
    without_groupings = re.sub(r"\b(by|without|ignoring|on)\s*\([^)]*\)", "", without_labels)
    return {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", without_groupings) if w not in PROMQL_WORDS}


def test_the_dashboard_is_well_formed() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] == "kubedra-dra"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "resource_class", "node"}
    titles = {p["title"] for p in board["panels"]}
    assert {"Pending claims by device class", "Allocated vs available per node", "Shares in use by class"} <= titles


def test_every_query_reads_exported_metrics_only() -> None:
    queries = dashboard_queries()
    assert len(queries) >= 15
    used = set().union(*(_metric_names(q) for q in queries))
    assert used <= EXPORTED, used - EXPORTED
    assert {"kube_resourceclaim_pending", "node_dra_resource_available", "node_dra_resource_capacity"} <= used


def _not_kept(original: object, parsed: object, path: str = "") -> list[str]:
    """Where ``parsed`` (the dashboard after Grafana's schema) lost or changed something ``original`` has."""
    if isinstance(original, dict):
        if not isinstance(parsed, dict):
            return [f"{path}: {type(parsed).__name__} instead of an object"]
        lost = []
        for key, value in original.items():
            lost += [f"{path}.{key}: not in Grafana's schema"] if key not in parsed else _not_kept(
                value, parsed[key], f"{path}.{key}")
        return lost
    if isinstance(original, list):
        if not isinstance(parsed, list) or len(parsed) != len(original):
            return [f"{path}: the list did not survive"]
        return [m for i, (a, b) in enumerate(zip(original, parsed, strict=True)) for m in _not_kept(a, b, f"{path}[{i}]")]
    return [] if original == parsed else [f"{path}: {original!r} became {parsed!r}"]


def test_the_dashboard_is_what_grafanas_schema_reads() -> None:
    """grafana-foundation-sdk is Grafana's own schema (generated from its CUE kinds): the dashboard, each panel's
    options and field config as its panel plugin defines them, each query as the Prometheus data source's. Parsed
    through it and written back, nothing is dropped or changed: every key is one the schema knows, every panel
    type and query kind is a registered one."""
    from grafana_foundation_sdk.cog import runtime
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models import prometheus
    from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel

    register_default_plugins()
    board = json.loads(DASHBOARD.read_text())
    parsed = Dashboard.from_json(board)
    assert _not_kept(board, json.loads(json.dumps(parsed, cls=JSONEncoder))) == []
    assert parsed.panels is not None
    assert board["schemaVersion"] >= 36  # the schema's own version (dashboards older than that are migrated)
    for panel in parsed.panels:
        if isinstance(panel, RowPanel):
            continue
        assert isinstance(panel, Panel)
        assert runtime.panelcfg_config(str(panel.type_val)) is not None, panel.type_val
        assert panel.targets, panel.title
        assert all(isinstance(t, prometheus.Dataquery) for t in panel.targets), panel.title
        grid = panel.grid_pos
        assert grid is not None and grid.x >= 0 and grid.x + grid.w <= 24, panel.title  # Grafana's 24 columns
