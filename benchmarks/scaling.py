"""Cost per pod against cluster size, with the default policy: a Deployment filling clusters of 100 to 100,000 nodes,
1,000 to 1,000,000 pods.

Run: ``python benchmarks/scaling.py [--nodes N ...] [--policy P] [-n RUNS] [--quick] [--save]``. Each size runs
in a fresh process: NodePools of 8 A100s (128 cpu, 1Ti), one Deployment of 10 one-GPU replicas per node (8 per node
fit; the other 2 stay pending, so refusals are part of the cost, as in a full cluster; past 10,000 nodes, Deployments
of 100,000 replicas each: ``--nodes 100000`` is a million pods, ~8 GB and minutes). Printed per size: CPU seconds
of building the cluster (load, NodePools, workloads, indexes; after kubedra's imports) and of ``Simulation.run()``, CPU
microseconds per pod of both and of the run alone, the whole process's CPU seconds (interpreter start, imports, build
and run: ``getrusage``) and peak RSS. A cost per pod that does not grow with the cluster is the goal (issue 39: a
million pods under 3 minutes of process CPU and 12 GB); ``--save`` writes ``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, Recorder, figure
from shapes import ENV, _controller, _pool, _template

SIZES = (100, 1000, 10000, 100000)  # 1,000 to 1,000,000 pods, a decade a row
CHILD = """
import json, resource, sys, time
from kubedra.objects.load import load_paths
from kubedra.objects.parse import ParseLimits
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare
from kubedra.cli.collector import batch_collection
t0 = time.process_time()  # after the imports: a fixed cost, in the whole process's figure only
path, policy = sys.argv[1], sys.argv[2]
limits = ParseLimits(max_bytes=1 << 34, max_nodes=1 << 40)
with batch_collection():  # as kubedra simulate runs it: from loading the files to the end of the run
    sim = prepare(build_scenario(load_paths([path], limits=limits)), Options(policy=Policy(policy)))
    t1 = time.process_time()
    result = sim.run(None)
    t2 = time.process_time()
running = sum(1 for r in result.state.pods.values() if r.phase == "Running")
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"build": t1 - t0, "run": t2 - t1, "pods": len(result.state.pods), "running": running,
                  "process": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss // 1024}))
"""


QUICK_SIZES = (10, 20)  # --quick: proves the script works, not how it scales


def _one(path: Path, policy: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), policy], capture_output=True, text=True,
                          check=False, env=ENV)
    if done.returncode != 0:  # say why (a limit, memory), not only that it failed
        raise SystemExit(f"scaling: the run of {path.name} exited {done.returncode}:\n{done.stderr[-3000:]}")
    got: dict[str, Any] = json.loads(done.stdout)
    return got


PER_DEPLOYMENT = 100_000  # kubedra expands at most this many pods per workload, as no user writes more


def _deployments(pods: int) -> list[dict[str, Any]]:
    """One Deployment of ``pods`` replicas; past 100,000 pods (a million on 100,000 nodes), several of 100,000."""
    counts = [min(PER_DEPLOYMENT, pods - start) for start in range(0, pods, PER_DEPLOYMENT)]
    return [_controller("Deployment", "inference" if i == 0 else f"inference-{i}", count, "one-gpu",
                        pod={"cpu": 1, "memory": "4Gi"}) for i, count in enumerate(counts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, action="append", help="repeatable (default: 100 to 100,000)")
    parser.add_argument("--policy", default="kube-scheduler")
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs per size; pages show their median")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run: checks the script, not the speed")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/scaling.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    args = parser.parse_args()
    sizes, runs = (QUICK_SIZES, 1) if args.quick else (tuple(args.nodes or SIZES), args.runs)
    recorder = Recorder("scaling", {"policy": args.policy, "runs": runs, "quick": args.quick})
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, policy {args.policy}, "
          f"median of {runs}")
    print("| nodes | GPUs | pods (running) | build CPU s | run CPU s | µs per pod | run µs per pod | process CPU s | "
          "peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in sizes:
            docs = [_pool("a100", nodes, "A100-80GB", 8), _template("one-gpu"), *_deployments(10 * nodes)]
            path = Path(tmp) / f"scaling-{nodes}.yaml"
            path.write_text(yaml.safe_dump_all(docs))
            measured = [_one(path, args.policy) for _ in range(runs)]
            pods, running = measured[0]["pods"], measured[0]["running"]
            row = {"nodes": nodes, "gpus": 8 * nodes, "pods": pods, "running": running,
                   "build_cpu_s": figure([m["build"] for m in measured]),
                   "run_cpu_s": figure([m["run"] for m in measured]),
                   "us_per_pod": figure([(m["build"] + m["run"]) / pods * 1e6 for m in measured]),
                   "run_us_per_pod": figure([m["run"] / pods * 1e6 for m in measured]),
                   "process_cpu_s": figure([m["process"] for m in measured]),
                   "rss_mb": figure([m["rss"] for m in measured])}
            recorder.add(row)
            build, run = row["build_cpu_s"]["median"], row["run_cpu_s"]["median"]
            print(f"| {nodes:,} | {8 * nodes:,} | {pods:,} ({running:,}) | {build:.1f} | {run:.1f} | "
                  f"{row['us_per_pod']['median']:.0f} | {row['run_us_per_pod']['median']:.0f} | "
                  f"{row['process_cpu_s']['median']:.1f} | {row['rss_mb']['median']:,.0f} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")


if __name__ == "__main__":
    main()
