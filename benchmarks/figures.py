"""The documentation's performance tables, rendered from ``benchmarks/results/*.json``, never typed by hand.

Run: ``python benchmarks/figures.py`` rewrites every section of the pages below that sits between
``<!-- BEGIN figures:NAME ... -->`` and ``<!-- END figures:NAME -->`` from ``benchmarks/results/NAME.json``
(``--check`` only reports the stale ones and exits 1). ``benchmarks/run`` measures and then calls this;
``tests/docs/test_figures.py`` fails when a page differs from what its results file renders. Each section says the
commit and machine its figures came from; a ``--quick`` results file is refused (it proves a script runs, not a speed).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, load

PAGES = (ROOT / "docs" / "performance.md", ROOT / "benchmarks" / "README.md")
POLICIES = ("kube-scheduler", "least-allocated", "first-fit")
SHAPE_NAMES = {
    "deployment": "Deployment, 1 GPU per replica",
    "statefulset": "StatefulSet, 2 GPUs per replica",
    "job": "Job, parallelism 2,000, 30-minute pods",
    "bare": "bare pods",
    "mixed": "mixed: Deployment, StatefulSet, Job, pods on H100 and A100",
    "shares": "consumable shares (`sharing.shares: 4`), a Deployment",
    "large": "a Deployment on 10,000 nodes x 8 GPUs",
}
BEGIN = re.compile(r"^<!-- BEGIN figures:(?P<name>[a-z0-9_-]+) .*-->\n", re.M)


def _median(cell: dict[str, Any]) -> float:
    return float(cell["median"])


def _spread(cell: dict[str, Any]) -> str:
    runs = cell["runs"]
    return "" if len(runs) < 2 else f" ({min(runs):.2f}-{max(runs):.2f})"


def _rate_spread(cell: dict[str, Any]) -> str:
    """A rate's median with the runs' range: 6,970 (3,188-7,418)."""
    runs = cell["runs"]
    spread = "" if len(runs) < 2 else f" ({min(runs):,.0f}-{max(runs):,.0f})"
    return f"{_median(cell):,.0f}{spread}"


def provenance(document: dict[str, Any]) -> str:
    machine, load_avg = document["machine"], document["load"]
    dirty = " plus uncommitted changes" if document["dirty"] else ""
    count = document["settings"]["runs"]
    runs = "one run" if count == 1 else f"medians of {count} runs"
    return (f"*Measured {document['date']} at commit `{document['commit']}`{dirty} on {machine['cores']} cores "
            f"({machine['cpu']}, Python {machine['python']}), load average {load_avg['before']:.1f} before and "
            f"{load_avg['after']:.1f} after; `{document['command']}`; {runs}.*\n")


def shapes(document: dict[str, Any]) -> str:
    lines = ["| workload | nodes | pods | kube-scheduler (default) | least-allocated | first-fit | default / "
             "least-allocated |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in document["rows"]:
        cells = []
        by_policy = row["policies"]
        for policy in POLICIES:
            cell = by_policy.get(policy)
            if cell is None:
                cells.append("")
                continue
            wall = _median(cell["wall_s"])
            text = f"{wall:.2f} s{_spread(cell['wall_s'])}"
            if policy == "kube-scheduler":
                text += f", {row['pods'] / wall:,.0f} pods/s, {_median(cell['rss_mb']):,.0f} MB"
            cells.append(text)
        ratio = ""
        if {"kube-scheduler", "least-allocated"} <= by_policy.keys():
            default, least = (_median(by_policy[p]["wall_s"]) for p in ("kube-scheduler", "least-allocated"))
            ratio = f"{default / least:.2f}x"
        lines.append(f"| {SHAPE_NAMES.get(row['shape'], row['shape'])} | {row['nodes']:,} | {row['pods']:,} | "
                     + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


MILLION_PODS, MILLION_SECONDS, MILLION_MB = 1_000_000, 180, 12 * 1024  # issue 39's goal for the largest row


def scaling(document: dict[str, Any]) -> str:
    """Cost per pod by size (building the cluster and running it, and the run alone), and the whole process's CPU
    (interpreter start and imports too: a fixed ~0.3 s)."""
    rows = document["rows"]
    lines = [f"Policy `{document['settings']['policy']}`.", "",
             "| nodes | GPUs | pods (running) | µs per pod (build + run) | run µs per pod | build CPU s | run CPU s | "
             "process CPU s | peak RSS MB |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['nodes']:,} | {row['gpus']:,} | {row['pods']:,} ({row['running']:,}) | "
                     f"{_median(row['us_per_pod']):.0f} | {_median(row['run_us_per_pod']):.0f} | "
                     f"{_median(row['build_cpu_s']):.1f} | {_median(row['run_cpu_s']):.1f} | "
                     f"{_median(row['process_cpu_s']):.1f} | {_median(row['rss_mb']):,.0f} |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        low, high = (_median(r["us_per_pod"]) for r in (first, last))
        lines += ["", f"CPU per pod from {first['pods']:,} to {last['pods']:,} pods: {low:.0f} -> {high:.0f} µs "
                      f"({high / low:.2f}x over {last['pods'] // first['pods']:,}x the pods)."]
    million = [r for r in rows if r["pods"] >= MILLION_PODS]
    if million:
        seconds, memory = _median(million[0]["process_cpu_s"]), _median(million[0]["rss_mb"])
        met = "met" if seconds < MILLION_SECONDS and memory < MILLION_MB else "not met"
        lines.append(f"Target (issue 39): {million[0]['pods']:,} pods on {million[0]['nodes']:,} nodes under "
                     f"{MILLION_SECONDS // 60} minutes of process CPU and {MILLION_MB // 1024} GB: {met} "
                     f"({seconds:.0f} s, {memory / 1024:.1f} GB).")
    return "\n".join(lines) + "\n"


def openb(document: dict[str, Any]) -> str:
    settings = document["settings"]
    walls = {row["policy"]: _median(row["wall_s"]) for row in document["rows"]}
    first_fit = walls.get("first-fit")
    lines = [f"{settings['nodes']:,} nodes, {settings['arrivals']:,} arrivals.", "",
             "| policy | wall s | CPU s | arrivals/s | peak RSS MB | x first-fit |", "|---|---:|---:|---:|---:|---:|"]
    for row in document["rows"]:
        wall = _median(row["wall_s"])
        ratio = f"{wall / first_fit:.2f}x" if first_fit else ""
        lines.append(f"| {row['policy']} | {wall:.1f}{_spread(row['wall_s'])} | {_median(row['cpu_s']):.1f} | "
                     f"{settings['arrivals'] / wall:,.0f} | {_median(row['rss_mb']):,.0f} | {ratio} |")
    return "\n".join(lines) + "\n"


def affinity(document: dict[str, Any]) -> str:
    lines = ["| rule | nodes | pods | without it, run CPU s | with it | with / without | bound with it |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in document["rows"]:
        without, with_ = _median(row["without_cpu_s"]), _median(row["with_cpu_s"])
        lines.append(f"| {row['rule']} | {row['nodes']:,} | {row['pods']:,} | {without:.2f}"
                     f"{_spread(row['without_cpu_s'])} | {with_:.2f}{_spread(row['with_cpu_s'])} | "
                     f"{with_ / without:.2f}x | {row['bound']['with']:,} |")
    return "\n".join(lines) + "\n"


def _us(value: float) -> str:
    """Microseconds, with the digits that matter: 1.25 ms, 46 µs, 3.9 µs, 0.12 µs."""
    if value >= 1000:
        return f"{value / 1000:.2f} ms"
    return f"{value:.0f} µs" if value >= 10 else f"{value:.1f} µs" if value >= 1 else f"{value:.2f} µs"


def _rate(per_s: float) -> str:
    """A rate rounded to two significant digits: ~22,000/s."""
    digits = max(0, len(f"{per_s:.0f}") - 2)
    return f"{round(per_s, -digits):,.0f}"


ALLOCATOR_CASES = {  # row -> (what the claim is, target µs of a search)
    "allocator/one-gpu": ("1-GPU claim", 100),
    "allocator/four-gpu-match": ("4-GPU claim with `matchAttribute` on `resource.kubernetes.io/pcieRoot`", 100),
    "allocator/unsatisfiable": ("unsatisfiable claim (count 9)", 1000),
}


def micro(document: dict[str, Any]) -> str:
    settings = document["settings"]
    rows = {row["benchmark"]: row for row in document["rows"]}
    lines = ["| benchmark | figure |", "|---|---|"]
    for i, (key, (claim, target)) in enumerate(ALLOCATOR_CASES.items()):
        row = rows[key]
        search, reused = _median(row["search_us"]), _median(row["reused_us"])
        where = ("`benchmarks/allocator.py`, node with 8 GPUs (4 MIG-partitionable counter sets)" if i == 0
                 else "same")
        verdict = "met" if search <= target else "not met"
        goal = f"{target // 1000} ms" if target >= 1000 else f"{target} µs"
        lines.append(f"| {where}: {claim}, {row['steps']} `allocateOne` calls | search {_us(search)} per node decision "
                     f"(~{_rate(1e6 / search)}/s; target ≤ {goal}: {verdict}); an answer reused for a node "
                     f"alike {_us(reused)} |")
    cel = rows["cel"]
    lines.append(f"| `benchmarks/cel.py`, three-clause selector over {settings['cel_devices']:,} GPUs, precompiled | "
                 f"{_rate(_median(cel['warm_per_s']))} evaluations/s; {_rate(_median(cel['cold_per_s']))}/s when each "
                 "device's activation is built on first use |")
    load = rows["load"]
    lines.append(f"| `benchmarks/load.py`, {settings['slices']:,} ResourceSlices of 8 GPUs | "
                 f"{_rate(_median(load['yaml_per_s']))} objects/s from YAML, {_rate(_median(load['json_per_s']))} "
                 "objects/s from a JSON List |")
    inventory = rows["inventory"]
    lines.append(f"| `benchmarks/inventory.py`, NodePools of {settings['nodes']:,} nodes x 8 GPUs (MIG: "
                 f"{settings['mig_nodes']:,} nodes) | plain {_median(inventory['plain_s']):.2f} s, `sharing.shares: "
                 f"4` {_median(inventory['shares_s']):.2f} s, MIG {_median(inventory['mig_s']):.2f} s |")
    quantity = rows["quantity"]
    uncached, cached = _median(quantity["parse_uncached_us"]), _median(quantity["parse_cached_us"])
    lines.append(f"| `benchmarks/quantity.py` | parse {_us(uncached)} uncached / {_us(cached)} cached; "
                 f"compare {_us(_median(quantity['compare_us']))} |")
    return "\n".join(lines) + "\n"


WORKLOAD_NAMES = {"Large/40000pods_5000nodes": "Large: 40,000 pods on 5,000 nodes x 8 GPUs"}
THROUGHPUT_TARGETS = {  # workload -> pods/s the default policy must reach (issue 21)
    "SchedulingWithResourceClaimTemplate/5000pods_500nodes": 2700,
    "SteadyStateClusterResourceClaimTemplate/match_empty_500nodes": 1200,
}
LARGE, LARGE_SECONDS, LARGE_MB = "Large/40000pods_5000nodes", 60, 2048


def _workload(name: str) -> str:
    return WORKLOAD_NAMES.get(name, name.replace("SteadyStateClusterResourceClaimTemplate/", "SteadyState…/"))


def simulate(document: dict[str, Any]) -> str:
    policies = document["settings"]["policies"]
    default = policies[0]
    lines = ["| workload | " + " | ".join(f"{p}{' (default)' * (p == default)} pods/s | p50 µs" for p in policies)
             + f" | RSS MB ({default}) |", "|---|" + "---:|---:|" * len(policies) + "---:|"]
    rows = {row["workload"]: row for row in document["rows"]}
    for row in document["rows"]:
        cells = []
        for policy in policies:
            cell = row["policies"][policy]
            cells += [f"{_median(cell['pods_per_s']):,.0f}", f"{_median(cell['p50_us']):,.0f}"]
        lines.append(f"| {_workload(row['workload'])} | " + " | ".join(cells)
                     + f" | {_median(row['policies'][default]['rss_mb']):,.0f} |")
    verdicts = []
    for name, target in THROUGHPUT_TARGETS.items():
        if name in rows:
            got = _median(rows[name]["policies"][default]["pods_per_s"])
            verdicts.append(f"≥ {target:,} pods/s on {name.split('/')[1]}: {'met' if got >= target else 'not met'} "
                            f"({got:,.0f})")
    if LARGE in rows:
        cell = rows[LARGE]["policies"][default]
        seconds = sum(_median(cell[k]) for k in ("load_s", "prepare_s", "run_s"))
        memory = _median(cell["rss_mb"])
        met = "met" if seconds < LARGE_SECONDS and memory < LARGE_MB else "not met"
        verdicts.append(f"{_workload(LARGE)[7:]} loaded and simulated in under a minute and 2 GB: {met} "
                        f"({seconds:.1f} s, {memory:,.0f} MB)")
    if verdicts:
        lines += ["", f"Targets, with `{default}`: " + "; ".join(verdicts) + "."]
    return "\n".join(lines) + "\n"


CONTROL_PLANE_SHAPES = {"SchedulingWithResourceClaimTemplate": "ResourceClaimTemplate",
                        "SchedulingWithResourceClaim": "ResourceClaim (shared)",
                        "SchedulingWithExtendedResource": "ExtendedResource"}


def vs_kube_scheduler(document: dict[str, Any]) -> str:
    lines = ["| shape | kube-scheduler pods/s | kubedra pods/s | ratio | pods bound (kube-scheduler / kubedra) | "
             "same pods per node |", "|---|---:|---:|---:|---:|---|"]
    for row in document["rows"]:
        real, sim = _median(row["real_pods_per_s"]), _median(row["kubedra_pods_per_s"])
        lines.append(f"| {CONTROL_PLANE_SHAPES.get(row['shape'], row['shape'])} {row['pods']:,} pods / "
                     f"{row['nodes']:,} nodes | {_rate_spread(row['real_pods_per_s'])} | "
                     f"{_rate_spread(row['kubedra_pods_per_s'])} | {sim / real:,.1f}x | "
                     f"{row['real_bound']:,} / {row['kubedra_bound']:,} | "
                     f"{'yes' if row['same_pods_per_node'] else 'no'} |")
    return "\n".join(lines) + "\n"


def side_by_side(document: dict[str, Any]) -> str:
    lines = ["| workload | upstream pods/s | kubedra pods/s | ratio | µs per node decision, upstream | kubedra | "
             "upstream µs per `Allocate` |", "|---|---:|---:|---:|---:|---:|---:|"]
    alike = []
    for row in document["rows"]:
        upstream, kubedra = _median(row["upstream_pods_per_s"]), _median(row["kubedra_pods_per_s"])
        lines.append(f"| {_workload(row['workload'])} | {upstream:,.0f} | {kubedra:,.0f} | "
                     f"{kubedra / upstream:,.1f}x | {_median(row['upstream_decision_us_per_node']):,.1f} | "
                     f"{_median(row['kubedra_decision_us_per_node']):,.1f} | "
                     f"{_median(row['upstream_allocate_us_per_call']):,.1f} |")
        alike.append(row["placement_differences"] == 0 and row["upstream_scheduled"] == row["kubedra_scheduled"])
    if all(alike):
        verdict = "Both sides placed every pod on the same node in every workload."
    else:
        differ = [_workload(r["workload"]) for r, same in zip(document["rows"], alike, strict=True) if not same]
        verdict = f"The placements differ in {', '.join(differ)} (the script lists the pods)."
    return "\n".join([*lines, "", verdict]) + "\n"


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "shapes": shapes, "scaling": scaling, "openb": openb, "affinity": affinity, "micro": micro, "simulate": simulate,
    "vs_kube_scheduler": vs_kube_scheduler, "side_by_side": side_by_side,
}


def render(name: str, directory: Path = RESULTS) -> str:
    """A section's body: the provenance line, a blank line, the table."""
    if name not in RENDERERS:
        raise LookupError(f"no renderer for figures:{name} (known: {', '.join(sorted(RENDERERS))})")
    document = load(name, directory)
    if document["settings"].get("quick"):
        raise ValueError(f"{directory / name}.json is a --quick run: measure it at full size before rendering")
    return provenance(document) + "\n" + RENDERERS[name](document)


def sections(text: str) -> list[tuple[str, int, int]]:
    """(name, body start, body end) of each figures section of a page."""
    found = []
    for match in BEGIN.finditer(text):
        name = match["name"]
        end = text.find(f"<!-- END figures:{name} -->", match.end())
        if end < 0:
            raise LookupError(f"figures:{name} has no END marker")
        found.append((name, match.end(), end))
    return found


def rendered(text: str, directory: Path = RESULTS) -> str:
    """The page with every figures section rendered from its results file."""
    for name, start, end in reversed(sections(text)):
        text = text[:start] + render(name, directory) + text[end:]
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    args = parser.parse_args()
    stale = []
    for page in PAGES:
        text = page.read_text()
        new = rendered(text)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new)
    verb = "stale" if args.check else "rewrote"
    print("\n".join(f"{verb} {p}" for p in stale) or "every page is current")
    if args.check and stale:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
