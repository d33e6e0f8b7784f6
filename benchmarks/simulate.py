"""Simulator speed on upstream's scheduler_perf DRA workloads (``benchmarks/workloads.py``), in-process.

Run: ``python benchmarks/simulate.py [-n RUNS] [--policy P ...] [--no-fast-path] [--quick] [--save [DIR]]
[NAME-SUBSTRING...]``. Each run of each workload is a fresh child process (so peak RSS is the workload's own); the
median of ``RUNS`` is kept (every run's value beside it in the results file). The policies default to the default one,
``kube-scheduler``, then ``least-allocated``. ``--save`` writes ``benchmarks/results/simulate.json``, which
``benchmarks/figures.py`` renders into docs/performance.md; ``--quick`` runs two tiny workloads instead.
Loading the manifests is not timed. What is timed, per pod, is the scheduling attempt that placed it plus binding
(claim status, events); ``pods/s`` is measured pods divided by the wall time from the first measured pod's first
attempt to the last measured pod's binding — everything the simulator does in between counts, including failed
attempts and the steady-state workloads' pod deletions, as scheduler_perf's SchedulingThroughput does. The
fragmentation series is not sampled (``Options.fragmentation_samples`` 0): scheduler_perf times scheduling, and
``kubedra simulate``'s 20 samples of the series (each a pass over the cluster's GPUs and the pending pods' claims)
cost more than the scheduling itself in these 1,000-pod windows on 500 nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kubedra.objects.load import load_text
from kubedra.objects.parse import ParseLimits
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.scoring import Policy
from kubedra.sim.run import Simulation
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare
from results import RESULTS, ROOT, Recorder, figure
from workloads import MEASURED, WORKLOADS, Workload, claim_template, steady_state, to_yaml

QUICK_WORKLOADS: dict[str, Callable[[], Workload]] = {  # --quick: proves the script works, not the speed
    "Quick/claim_template_40pods_10nodes": lambda: claim_template("Quick/claim_template_40pods_10nodes", 10, 4, 20, 20),
    "Quick/steady_state_10nodes": lambda: steady_state("Quick/steady_state_10nodes", 10, 4, 0, pods=30),
}
BUILDERS = {**WORKLOADS, **QUICK_WORKLOADS}
FIGURES = ("pods_per_s", "p50_us", "p99_us", "load_s", "prepare_s", "run_s", "rss_mb")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _instrument(simulation: Simulation, measured: set[str]) -> dict[str, Any]:
    """Wrap the scheduler and the bind step of one simulation to time every attempt; returns the live tallies."""
    tally: dict[str, Any] = {"first": None, "last": None, "latency": {}, "attempt_start": 0.0, "attempts": 0}
    schedule = simulation.scheduler.schedule
    bind = simulation._bind
    clock = time.perf_counter

    def timed_schedule(record: Any) -> Any:
        start = clock()
        tally["attempt_start"] = start
        tally["attempts"] += 1
        if tally["first"] is None and record.key in measured:
            tally["first"] = start
        outcome = schedule(record)
        if not isinstance(outcome, Placement):
            tally["latency"][record.key] = tally["latency"].get(record.key, 0.0) + clock() - start
        return outcome

    def timed_bind(record: Any, placement: Placement) -> None:
        bind(record, placement)
        end = clock()
        key = record.key
        tally["latency"][key] = tally["latency"].get(key, 0.0) + end - tally["attempt_start"]
        if key in measured:
            tally["last"] = end

    simulation.scheduler.schedule = timed_schedule  # type: ignore[method-assign]
    simulation._bind = timed_bind  # type: ignore[method-assign]
    return tally


def run_one(name: str, policy: Policy, fast_path: bool) -> dict[str, Any]:
    """One workload, this process: load (untimed), simulate (timed), report."""
    workload = BUILDERS[name]()
    text = to_yaml(workload)
    started = time.perf_counter()
    limits = ParseLimits(max_bytes=len(text.encode()) + 1, max_nodes=1 << 40)
    scenario = build_scenario(load_text(text, source=name, limits=limits))
    load_s = time.perf_counter() - started
    measured = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in workload.pods
                if p["metadata"].get("annotations", {}).get(MEASURED) == "true"}
    del workload, text
    started = time.perf_counter()
    simulation = prepare(scenario, Options(policy=policy, fast_path=fast_path, fragmentation_samples=0))
    prepare_s = time.perf_counter() - started
    tally = _instrument(simulation, measured)
    started = time.perf_counter()
    result = simulation.run()
    total_s = time.perf_counter() - started
    scheduled = [k for k in measured if result.state.pods[k].started_at is not None]
    window = (tally["last"] - tally["first"]) if tally["first"] is not None and tally["last"] is not None else 0.0
    latencies = [tally["latency"][k] * 1e6 for k in scheduled]
    return {
        "name": name,
        "measured": len(measured),
        "scheduled": len(scheduled),
        "pods_per_s": len(scheduled) / window if window > 0 else 0.0,
        "p50_us": _percentile(latencies, 0.50),
        "p99_us": _percentile(latencies, 0.99),
        "attempts": tally["attempts"],
        "load_s": load_s,
        "prepare_s": prepare_s,
        "run_s": total_s,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _child(name: str, policy: Policy, fast_path: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", name, "--policy", policy.value]
    if not fast_path:
        command.append("--no-fast-path")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'workload':<64} {'pods':>6} {'sched':>6} {'pods/s':>8} {'p50 us':>8} {'p99 us':>9} {'run s':>7} "
            f"{'RSS MB':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['name']:<64} {r['measured']:>6} {r['scheduled']:>6} {r['pods_per_s']:>8.0f} {r['p50_us']:>8.0f} "
            f"{r['p99_us']:>9.0f} {r['run_s']:>7.2f} {r['rss_mb']:>7.0f}"
        )
    return "\n".join(lines)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' medians, for the printed table."""
    return {**runs[0], **{k: statistics.median(r[k] for r in runs) for k in FIGURES}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("names", nargs="*", help="substrings of workload names (default: all)")
    parser.add_argument("-n", "--runs", type=int, default=3, help="runs per workload and policy; pages show the median")
    parser.add_argument("--policy", action="append", choices=[p.value for p in Policy],
                        help="repeatable (default: kube-scheduler, then least-allocated)")
    parser.add_argument("--no-fast-path", action="store_true")
    parser.add_argument("--quick", action="store_true", help="two tiny workloads, one run: checks the script")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/simulate.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args(argv)
    policies = [Policy(p) for p in args.policy or (Policy.KUBE_SCHEDULER.value, Policy.LEAST_ALLOCATED.value)]
    if args.child:
        print(json.dumps(run_one(args.child, policies[0], not args.no_fast_path)))
        return 0
    workloads, runs = (QUICK_WORKLOADS, 1) if args.quick else (WORKLOADS, args.runs)
    names = [n for n in workloads if not args.names or any(s in n for s in args.names)]
    recorder = Recorder("simulate", {"runs": runs, "quick": args.quick, "policies": [p.value for p in policies],
                                     "fast_path": not args.no_fast_path})
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, policies "
          f"{', '.join(p.value for p in policies)}, fast path {'off' if args.no_fast_path else 'on'}, median of {runs}",
          flush=True)
    tables: dict[Policy, list[dict[str, Any]]] = {p: [] for p in policies}
    for name in names:
        row: dict[str, Any] = {"workload": name, "policies": {}}
        for policy in policies:
            measured = [_child(name, policy, not args.no_fast_path) for _ in range(runs)]
            row["measured"] = measured[0]["measured"]
            row["policies"][policy.value] = {"scheduled": min(m["scheduled"] for m in measured),
                                             **{k: figure([m[k] for m in measured]) for k in FIGURES}}
            tables[policy].append(_median_run(measured))
            print(f"{policy.value:16s} " + _table([tables[policy][-1]]).splitlines()[-1], flush=True)
        recorder.add(row)
    for policy, rows in tables.items():
        print(f"\n# policy {policy.value}")
        print(_table(rows))
        if args.json:
            print(json.dumps(rows, indent=2))
    print(f"# load average {os.getloadavg()[0]:.2f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
