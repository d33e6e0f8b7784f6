"""The goal's plan: a 1,000-node / 20,000-pod workload searched over candidate pools with local workers.

Run: ``python benchmarks/plan.py [--scale 1000] [--workers N] [--keep DIR]``.

The workload: a Deployment of 6 x scale single-GPU replicas that stay, and a Job of 14 x scale single-GPU pods, 2 x
scale at a time, 10 minutes each (20 x scale pods; scale 1000: 20,000). The pools: examples/plan's A100 (8 GPUs) and
L4 (1 GPU, 4 shares), and an H100 pool of 8 GPUs; up to ``scale`` nodes each, goal p99 pending <= 5 min. A fresh
cache directory, so every candidate is simulated; the whole process is timed (wall clock, and the peak memory of the
largest process from ``resource``), with the candidates it simulated.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
H100 = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "h100"},
        "spec": {"count": 1, "allocatable": {"cpu": "192", "memory": "2048Gi"},
                 "gpu": {"model": "H100-80GB", "count": 8}}}


def workload(scale: int) -> list[dict[str, Any]]:
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]

    def spec(cpu: str, memory: str) -> dict[str, Any]:
        return {"containers": [{"name": "main", "image": "x", "resources": {
            "requests": {"cpu": cpu, "memory": memory}, "claims": [{"name": "gpu"}]}}], "resourceClaims": claims}

    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": "ml"},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": "ml"},
         "spec": {"replicas": 6 * scale, "selector": {"matchLabels": {"app": "infer"}},
                  "template": {"metadata": {"labels": {"app": "infer"}}, "spec": spec("2", "8Gi")}}},
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "train", "namespace": "ml", "annotations": {"kubedra.io/run-for": "10m"}},
         "spec": {"parallelism": 2 * scale, "completions": 14 * scale,
                  "template": {"spec": {"restartPolicy": "Never", **spec("4", "16Gi")}}}},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="write the inputs and the cache here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="kubedra-plan-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "workloads.yaml").write_text(yaml.safe_dump_all(workload(args.scale)))
    (work / "h100.yaml").write_text(yaml.safe_dump(H100))
    command = [sys.executable, "-m", "kubedra", "plan", "-f", str(work / "workloads.yaml"),
               "--pool", str(ROOT / "examples/plan/a100.yaml"), "--pool", str(ROOT / "examples/plan/l4.yaml"),
               "--pool", str(work / "h100.yaml"), "--goal", "p99-pending<=5m", "--cost-per-hour", "a100=3.7",
               "--cost-per-hour", "l4=0.8", "--cost-per-hour", "h100=9.8", "--max-nodes", str(args.scale),
               "--cache-dir", str(work / "cache")]
    if args.workers:
        command += ["--workers", str(args.workers)]
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    print(f"# exit {done.returncode}, wall {wall:.0f} s, largest process {peak:.0f} MiB, "
          f"load average {os.getloadavg()[0]:.1f} at end")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
