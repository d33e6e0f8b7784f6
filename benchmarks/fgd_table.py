"""The FGD paper's table on kubedra: the share of the cluster's GPU capacity allocated when 100 % of it has arrived.

Run: ``python benchmarks/fgd_table.py [--seed S ...] [--workload W ...] [--policy P ...] [--data DIR]``.

The replay is the FGD artifact's (``../shared/data/openb/README.md``), written by ``kubedra trace openb --arrived
1.0 --pool-per-node`` (nodes named after the trace's, so ties go where the artifact's scheduler sends them): the pod
list shuffled with the seed and topped up as the artifact does, cut where the arrived milli-GPU requests reach 100 %
of the cluster's capacity; every pod arrives once, in order, and never leaves, so the cluster at the end of the run
is the cluster at the artifact's sample point. The figure is the report's ``summary.gpus.capacityInUsePercent``:
milli-GPUs in use / the cluster's (a GPU held whole counts 1000, a share its shares), the artifact's
``used_gpu_milli / total_gpus / 10``. Beside it, the artifact's published figure for each of its policies (averaged
over its seeds 42-51), from ``fgd-expected-allocation.csv``.

kubedra's policies are kube-scheduler's default scoring and kubedra's least-allocated, most-allocated and first-fit;
a pod that fits nowhere stays pending (the artifact skips it: with no departures nothing changes for it).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
POLICIES = ("kube-scheduler", "least-allocated", "most-allocated", "first-fit", "fgd", "best-fit", "random")
WORKLOADS = ("default", "gpushare100", "multigpu50", "gpuspec33")
ARTIFACT = ("01-Random", "02-DotProd", "03-GpuClustering", "04-GpuPacking", "05-BestFit", "06-FGD")


def published(data: Path) -> dict[tuple[str, str], float]:
    with (data / "fgd-expected-allocation.csv").open() as f:
        return {(row["workload"], row["policy"]): float(row["alloc_at_100"]) for row in csv.DictReader(f)}


def allocated_at_100(data: Path, workload: str, seed: int, policy: str) -> tuple[float, int, int, float]:
    """(capacity in use %, pods, pods pending, wall seconds) of one replay."""
    import yaml

    from kubedra.objects.load import load_text
    from kubedra.scheduler.scoring import Policy
    from kubedra.sim.report import build_report
    from kubedra.sim.scenario import build_scenario
    from kubedra.sim.simulate import Options, simulate
    from kubedra.traces import openb

    nodes = openb.read_nodes((data / openb.NODE_FILE).read_text())
    tasks = openb.read_tasks((data / openb.pod_file(workload)).read_text(), openb.pod_file(workload))
    docs = openb.documents(nodes, tasks, seed=seed, arrived=1.0, pool_per_node=True)
    start = time.perf_counter()
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)), seed=seed)
    result = simulate(scenario, Options(policy=Policy(policy), seed=seed))
    report = build_report(result)
    wall = time.perf_counter() - start
    pods = report.summary["pods"]
    return report.summary["gpus"]["capacityInUsePercent"], pods["total"], pods["pending"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, action="append", help="artifact seeds (42-51); default 42")
    parser.add_argument("--workload", action="append", choices=WORKLOADS)
    parser.add_argument("--policy", action="append", choices=POLICIES)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    seeds = args.seed or [42]
    paper = published(args.data)
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; seeds {seeds}")
    print("| workload | policy | kubedra % at 100 % arrived (mean over seeds) | per seed | pods | pending | wall s |")
    print("|---|---|---:|---|---:|---:|---:|")
    for workload in args.workload or ["default"]:
        for policy in args.policy or POLICIES:
            runs = [allocated_at_100(args.data, workload, seed, policy) for seed in seeds]
            mean = sum(r[0] for r in runs) / len(runs)
            each = " ".join(f"{r[0]:.1f}" for r in runs)
            print(f"| {workload} | {policy} | {mean:.1f} | {each} | {runs[0][1]} | {runs[0][2]} | "
                  f"{sum(r[3] for r in runs) / len(runs):.0f} |", flush=True)
        row = ", ".join(f"{p[3:]} {paper[(f'openb_pod_list_{workload}', p)]:.1f}" for p in ARTIFACT
                        if (f"openb_pod_list_{workload}", p) in paper)
        print(f"| {workload} | artifact (10 seeds) | {row} | | | | |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} at end", file=sys.stderr)


if __name__ == "__main__":
    main()
