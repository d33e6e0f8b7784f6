"""Consumable shares at N and 4N nodes (and pods): per-call allocator cost must not grow with the cluster.

Run: ``python benchmarks/shared_scaling.py [-n RUNS] [--nodes N] [--policy P]``. Each size is a fresh child
process; NodePools of 8 GPUs with ``sharing.shares: 4`` (every GPU a multi-allocatable device with a ``shares``
capacity), and as many one-share pods as half the cluster's shares (16 per node), all arriving at
once. Timed: ``Simulation.run()`` (whole run) and every call into the allocator (``Allocator.allocate``). With
per-call cost independent of the cluster, 4x the nodes and pods cost about 4x the run and the same µs per call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import yaml

from kubedra.objects.load import load_text
from kubedra.objects.parse import ParseLimits
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

GPUS = 8
SHARES = 4
PODS_PER_NODE = GPUS * SHARES // 2


def documents(nodes: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "shared"},
         "spec": {"count": nodes, "allocatable": {"cpu": "256", "memory": "2Ti", "pods": "110"},
                  "gpu": {"model": "A100-40GB", "count": GPUS}, "sharing": {"shares": SHARES}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "share", "namespace": "default"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"shares": "1"}}}}]}}}},
    ]
    for i in range(nodes * PODS_PER_NODE):
        docs.append({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "cuda:12", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "share"}]},
        })
    return docs


def run_one(nodes: int, policy: Policy) -> dict[str, Any]:
    text = yaml.safe_dump_all(documents(nodes))
    limits = ParseLimits(max_bytes=len(text.encode()) + 1, max_nodes=1 << 40)
    scenario = build_scenario(load_text(text, source="shared_scaling", limits=limits))
    simulation = prepare(scenario, Options(policy=policy))
    allocator = simulation.scheduler.backend.begin()
    allocate = allocator.allocate
    tally = {"calls": 0, "seconds": 0.0}
    clock = time.perf_counter

    def timed(node: Any, claims: Any) -> Any:
        start = clock()
        try:
            return allocate(node, claims)
        finally:
            tally["seconds"] += clock() - start
            tally["calls"] += 1

    allocator.allocate = timed  # type: ignore[method-assign]
    started = clock()
    result = simulation.run()
    run_s = clock() - started
    placed = sum(1 for r in result.state.pods.values() if r.started_at is not None)
    return {"nodes": nodes, "pods": len(result.state.pods), "placed": placed, "run_s": run_s,
            "calls": tally["calls"], "allocate_s": tally["seconds"],
            "us_per_call": tally["seconds"] * 1e6 / max(1, tally["calls"])}


def _child(nodes: int, policy: Policy) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(nodes), "--policy", policy.value]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{nodes} nodes: child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=100, help="N (the second size is 4N)")
    parser.add_argument("--policy", default=Policy.LEAST_ALLOCATED.value, choices=[p.value for p in Policy])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    policy = Policy(args.policy)
    if args.child:
        print(json.dumps(run_one(args.child, policy)))
        return 0
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, policy {policy.value}, "
          f"best of {args.runs}; {GPUS} GPUs x {SHARES} shares per node, {PODS_PER_NODE} one-share pods per node")
    print(f"{'nodes':>6} {'pods':>6} {'placed':>6} {'run s':>7} {'calls':>7} {'allocate s':>10} {'us/call':>8}")
    rows = []
    for nodes in (args.nodes, 4 * args.nodes):
        best = min((_child(nodes, policy) for _ in range(args.runs)), key=lambda r: r["run_s"])
        rows.append(best)
        print(f"{best['nodes']:>6} {best['pods']:>6} {best['placed']:>6} {best['run_s']:>7.2f} {best['calls']:>7} "
              f"{best['allocate_s']:>10.2f} {best['us_per_call']:>8.1f}", flush=True)
    small, large = rows
    per_call = large["us_per_call"] / small["us_per_call"]
    print(f"4x nodes and pods: run {large['run_s'] / small['run_s']:.1f}x, allocator time "
          f"{large['allocate_s'] / small['allocate_s']:.1f}x, per call {per_call:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
