"""The micro-benchmarks in one results file: allocator, CEL, object loading, NodePool expansion and Quantity.

Run: ``python benchmarks/micro.py [-n RUNS] [--quick] [--save [DIR]]``. Each run measures, in this process, what
``allocator.py``, ``cel.py``, ``load.py``, ``inventory.py`` and ``quantity.py`` print (their own functions, at their
own sizes): the allocator's three claims on one node of 8 GPUs (4 MIG-partitionable), searched and reused; a
three-clause CEL selector over 10,000 GPUs; 1,000 ResourceSlices of 8 GPUs loaded from YAML and from a JSON List;
NodePools of 5,000 nodes x 8 GPUs expanded; Quantity parsing and comparison. ``--save`` writes
``benchmarks/results/micro.json`` (every run's value and their median), which ``benchmarks/figures.py`` renders into
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import allocator
import cel
import inventory
import load
import quantity as quantity_bench
from kubedra.objects import quantity
from kubedra.objects.quantity import Quantity
from results import RESULTS, ROOT, Recorder, figure

FULL = {"allocator_s": 1.0, "cel_devices": 10_000, "slices": 1000, "nodes": 5000, "mig_nodes": 500, "repeat": 3}
QUICK = {"allocator_s": 0.02, "cel_devices": 200, "slices": 20, "nodes": 20, "mig_nodes": 4, "repeat": 1}


def _quantity(repeat: int) -> dict[str, float]:
    texts = quantity_bench.TEXTS
    a, b = Quantity.parse("80Gi"), Quantity.parse("81920Mi")

    def parse_uncached() -> None:
        for t in texts:
            quantity._parse(t)

    def parse_cached() -> None:
        for t in texts:
            Quantity.parse(t)

    return {"parse_uncached_us": 1e6 / quantity_bench.ops_per_s(parse_uncached, len(texts), repeat),
            "parse_cached_us": 1e6 / quantity_bench.ops_per_s(parse_cached, len(texts), repeat),
            "compare_us": 1e6 / quantity_bench.ops_per_s(lambda: a < b, 1, repeat)}


def run_once(size: dict[str, Any]) -> dict[str, dict[str, float]]:
    """One run of every micro-benchmark: row key -> figure name -> value."""
    got: dict[str, dict[str, float]] = {}
    for m in allocator.measure(size["allocator_s"]):
        row = got.setdefault(f"allocator/{m['key']}", {"steps": m["steps"]})
        row[f"{m['mode']}_us"] = m["us"]
    measured = cel.measure(size["cel_devices"])
    got["cel"] = {"warm_per_s": measured["devices"] / measured["warm_s"],
                  "cold_per_s": measured["devices"] / measured["cold_s"]}
    got["load"] = {f"{name.split()[0].lower()}_per_s": size["slices"] / load.measure(text, size["repeat"],
                                                                                     size["slices"])
                   for name, text in load.texts(size["slices"])}
    got["inventory"] = {}
    for key, raw in (("plain_s", inventory.pool(size["nodes"], 8, "A100-40GB")),
                     ("shares_s", inventory.pool(size["nodes"], 8, "H100-80GB", sharing={"shares": 4})),
                     ("mig_s", inventory.pool(size["mig_nodes"], 8, "H100-80GB", mig={"enabled": True}))):
        got["inventory"][key] = inventory.measure(raw, size["repeat"])[0]
    got["quantity"] = _quantity(4 if size["repeat"] > 1 else 1)
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=3, help="runs of the whole set; pages show their median")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run: checks the script, not the speed")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/micro.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    args = parser.parse_args()
    size, runs = (QUICK, 1) if args.quick else (FULL, args.runs)
    recorder = Recorder("micro", {"runs": runs, "quick": args.quick, **size})
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, median of {runs}", flush=True)
    measured = []
    for i in range(runs):
        measured.append(run_once(size))
        print(f"# run {i + 1} of {runs} done", flush=True)
    for key, first in measured[0].items():
        row: dict[str, Any] = {"benchmark": key}
        for name in first:
            values = [m[key][name] for m in measured]
            row[name] = int(values[0]) if name == "steps" else figure(values)
        recorder.add(row)
        print(f"{key:28s} " + "  ".join(f"{name} {first[name] if name == 'steps' else row[name]['median']:,.3f}"
                                        for name in first))
    print(f"# load average {os.getloadavg()[0]:.1f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")


if __name__ == "__main__":
    main()
