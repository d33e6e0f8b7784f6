"""Where each µs per pod goes: per-phase timers and a cProfile of one workload, first-fit, GC as in the benchmarks.

Run: ``python benchmarks/profile_pods.py [-n RUNS] [--profile] [--top N] NAME-SUBSTRING ...``. For each matching
workload of ``benchmarks/workloads.py``: load and prepare (untimed), then run the simulation with timers around
``Simulation._arrive``, ``Scheduler.schedule``, ``Allocator.allocate`` (inside schedule), ``Simulation._bind`` and
``Simulation._finish``; the rest of ``run`` is "queue and loop". Figures are µs per pod over every pod of the
workload, best of ``RUNS`` (each run in a fresh simulation of the same loaded scenario). ``--profile`` adds one
cProfile run and prints the functions with the most own time, in µs per pod.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kubedra.objects.load import ParseLimits, load_text  # noqa: E402
from kubedra.scheduler.scoring import Policy  # noqa: E402
from kubedra.sim.scenario import Scenario, build_scenario  # noqa: E402
from kubedra.sim.simulate import Options, prepare  # noqa: E402
from workloads import WORKLOADS, to_yaml  # noqa: E402

PHASES = ("arrive", "schedule", "allocate", "bind", "finish")


def _scenario(name: str) -> Scenario:
    text = to_yaml(WORKLOADS[name]())
    limits = ParseLimits(max_bytes=len(text.encode()) + 1, max_nodes=1 << 40)
    return build_scenario(load_text(text, source=name, limits=limits))


def timed_run(scenario: Scenario, cpu: bool = False) -> dict[str, float]:
    """One run with a timer around each phase; seconds per phase and in all (``cpu``: this thread's CPU time, which
    other processes on a loaded machine disturb far less than the wall clock)."""
    simulation = prepare(scenario, Options(policy=Policy.FIRST_FIT))
    spent = dict.fromkeys(PHASES, 0.0)
    clock = time.thread_time if cpu else time.perf_counter

    def wrap(owner: Any, attribute: str, phase: str) -> None:
        inner = getattr(owner, attribute)

        def timed(*args: Any) -> Any:
            start = clock()
            try:
                return inner(*args)
            finally:
                spent[phase] += clock() - start

        setattr(owner, attribute, timed)

    wrap(simulation, "_arrive", "arrive")
    wrap(simulation.scheduler, "schedule", "schedule")
    wrap(simulation, "_bind", "bind")
    wrap(simulation, "_finish", "finish")
    allocator = simulation.scheduler.backend.begin()
    wrap(allocator, "allocate", "allocate")
    gc.collect()
    started = clock()
    simulation.run()
    spent["total"] = clock() - started
    spent["pods"] = len(simulation.state.pods)
    return spent


def profile_run(scenario: Scenario, top: int) -> str:
    simulation = prepare(scenario, Options(policy=Policy.FIRST_FIT))
    pods = len(simulation.state.pods)
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    simulation.run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (path, line, function), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((own, cumulative, calls, f"{Path(path).name}:{line}({function})"))
    rows.sort(reverse=True)
    out = io.StringIO()
    total_calls = sum(calls for _, _, calls, _ in rows)
    out.write(f"calls per pod, all functions (the profiler's count, machine-independent): {total_calls / pods:.1f}\n")
    out.write(f"{'own us/pod':>10} {'cum us/pod':>10} {'calls/pod':>9}  function\n")
    for own, cumulative, calls, where in rows[:top]:
        out.write(f"{own * 1e6 / pods:>10.2f} {cumulative * 1e6 / pods:>10.2f} {calls / pods:>9.2f}  {where}\n")
    return out.getvalue()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("names", nargs="+", help="substrings of workload names")
    parser.add_argument("-n", "--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--cpu", action="store_true", help="time with the thread's CPU clock, not the wall clock")
    args = parser.parse_args(argv)
    names = [n for n in WORKLOADS if any(s in n for s in args.names)]
    if not names:
        print(f"no workload matches {args.names}", file=sys.stderr)
        return 2
    import os

    clock = "thread CPU time" if args.cpu else "wall clock"
    print(f"# load average {os.getloadavg()[0]:.2f}; µs per pod ({clock}), best of {args.runs}")
    print(f"{'workload':<62} " + " ".join(f"{p:>9}" for p in (*PHASES, "loop", "total")))
    for name in names:
        scenario = _scenario(name)
        runs = [timed_run(scenario, args.cpu) for _ in range(args.runs)]
        best = min(runs, key=lambda r: r["total"])
        pods = best["pods"]
        loop = best["total"] - sum(best[p] for p in PHASES if p != "allocate")
        figures = [best[p] for p in PHASES] + [loop, best["total"]]
        print(f"{name:<62} " + " ".join(f"{f * 1e6 / pods:>9.1f}" for f in figures), flush=True)
        if args.profile:
            print(profile_run(scenario, args.top), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
