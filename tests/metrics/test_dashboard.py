"""deploy/grafana/kubedra-dra.json: a well-formed dashboard whose queries read only metrics kubedra exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kubedra.metrics.embedded import SIM_TIME
from kubedra.metrics.live import LAST_SYNC, SERVED_AGE, SYNCED, UNDECODABLE, WATCH_UP
from kubedra.metrics.model import FAMILIES

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
