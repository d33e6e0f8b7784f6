"""Simulator speed on upstream's scheduler_perf DRA workloads (``benchmarks/workloads.py``), in-process.

Run: ``python benchmarks/simulate.py [-n RUNS] [--policy P] [--no-fast-path] [NAME-SUBSTRING...]``.
Each run of each workload is a fresh child process (so peak RSS is the workload's own); the best of ``RUNS`` is kept.
Loading the manifests is not timed. What is timed, per pod, is the scheduling attempt that placed it plus binding
(claim status, events); ``pods/s`` is measured pods divided by the wall time from the first measured pod's first
attempt to the last measured pod's binding — everything the simulator does in between counts, including failed
attempts and the steady-state workloads' pod deletions, as scheduler_perf's SchedulingThroughput does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
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
from workloads import MEASURED, WORKLOADS, to_yaml


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
    workload = WORKLOADS[name]()
    text = to_yaml(workload)
    started = time.perf_counter()
    limits = ParseLimits(max_bytes=len(text.encode()) + 1, max_nodes=1 << 40)
    scenario = build_scenario(load_text(text, source=name, limits=limits))
    load_s = time.perf_counter() - started
    measured = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in workload.pods
                if p["metadata"].get("annotations", {}).get(MEASURED) == "true"}
    del workload, text
    started = time.perf_counter()
    simulation = prepare(scenario, Options(policy=policy, fast_path=fast_path))
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("names", nargs="*", help="substrings of workload names (default: all)")
    parser.add_argument("-n", "--runs", type=int, default=3)
    parser.add_argument("--policy", default=Policy.LEAST_ALLOCATED.value, choices=[p.value for p in Policy])
    parser.add_argument("--no-fast-path", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args(argv)
    policy = Policy(args.policy)
    if args.child:
        print(json.dumps(run_one(args.child, policy, not args.no_fast_path)))
        return 0
    names = [n for n in WORKLOADS if not args.names or any(s in n for s in args.names)]
    load = os.getloadavg()[0]
    print(f"# {os.cpu_count()} CPUs, load average {load:.2f}, policy {policy.value}, "
          f"fast path {'off' if args.no_fast_path else 'on'}, best of {args.runs}", flush=True)
    rows = []
    for name in names:
        runs = [_child(name, policy, not args.no_fast_path) for _ in range(args.runs)]
        best = max(runs, key=lambda r: r["pods_per_s"])
        rows.append(best)
        print(_table([best]).splitlines()[-1], flush=True)
    print()
    print(_table(rows))
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
