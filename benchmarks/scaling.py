"""Cost per pod against cluster size, with the default policy: a Deployment filling clusters of 500 to 10,000 nodes.

Run: ``python benchmarks/scaling.py [--nodes N ...] [--policy P]``. Each size runs in a fresh process: NodePools of 8
A100s (128 cpu, 1Ti), one Deployment of 10 one-GPU replicas per node (8 per node fit; the other 2 stay pending, so
refusals are part of the cost, as in a full cluster). Printed per size: CPU seconds of building the cluster
(load, NodePools, workloads, indexes) and of ``Simulation.run()``, CPU microseconds per pod of the run, the whole
process's CPU seconds and peak RSS. A cost per pod that does not grow with the cluster is the goal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import ENV, _controller, _pool, _template

SIZES = (500, 1000, 2000, 5000, 10000)
CHILD = """
import json, resource, sys, time
t0 = time.process_time()
from kubedra.objects.load import load_paths
from kubedra.objects.parse import ParseLimits
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare
from kubedra.cli.collector import batch_collection
path, policy = sys.argv[1], sys.argv[2]
limits = ParseLimits(max_bytes=1 << 34, max_nodes=1 << 40)
sim = prepare(build_scenario(load_paths([path], limits=limits)), Options(policy=Policy(policy)))
with batch_collection():  # as kubedra simulate runs it
    t1 = time.process_time()
    result = sim.run(None)
    t2 = time.process_time()
running = sum(1 for r in result.state.pods.values() if r.phase == "Running")
print(json.dumps({"build": t1 - t0, "run": t2 - t1, "pods": len(result.state.pods), "running": running,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, action="append", help="repeatable (default: 500 to 10,000)")
    parser.add_argument("--policy", default="kube-scheduler")
    args = parser.parse_args()
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, policy {args.policy}")
    print("| nodes | GPUs | pods (running) | build CPU s | run CPU s | run µs per pod | process CPU s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in args.nodes or SIZES:
            docs = [_pool("a100", nodes, "A100-80GB", 8), _template("one-gpu"),
                    _controller("Deployment", "inference", 10 * nodes, "one-gpu", pod={"cpu": 1, "memory": "4Gi"})]
            path = Path(tmp) / f"scaling-{nodes}.yaml"
            path.write_text(yaml.safe_dump_all(docs))
            done = subprocess.run([sys.executable, "-c", CHILD, str(path), args.policy], capture_output=True,
                                  text=True, check=True, env=ENV)
            got = json.loads(done.stdout)
            total = got["build"] + got["run"]
            print(f"| {nodes:,} | {8 * nodes:,} | {got['pods']:,} ({got['running']:,}) | {got['build']:.1f} | "
                  f"{got['run']:.1f} | {got['run'] / got['pods'] * 1e6:.0f} | {total:.1f} | {got['rss']:,} |",
                  flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
