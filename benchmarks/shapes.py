"""Whole `kubedra simulate` runs on the shapes users write, the default policy first, then the others in the same run.

Run: ``python benchmarks/shapes.py [-n RUNS] [--shape NAME ...] [--policy P ...] [--scale K] [--quick] [--save]``.

Each workload is one manifest file (NodePools, a ResourceClaimTemplate, the workload objects), written to a temporary
directory and run as ``kubedra simulate -f FILE -q -o name --policy P`` in a fresh process: the figure is the whole
process (interpreter start, imports, loading, the run, the report), as a user sees it. Per policy: the
``-n`` runs' median wall time, CPU seconds (user + system) and peak RSS, and pods/s over the median wall time;
``--save`` writes every run to ``benchmarks/results/shapes.json``, from which the docs' tables are rendered.
``--scale K`` multiplies nodes and pods (``--scale 4`` beside ``--scale 1`` shows how the cost grows).

Shapes (scheduler_perf's DRA workloads, written as users write them):

* ``deployment``: a Deployment of 5,000 replicas, one GPU each (a claim template), on 500 nodes x 10 GPUs.
* ``statefulset``: a StatefulSet of 2,000 replicas, two GPUs each, on 500 nodes x 8 GPUs.
* ``job``: a Job of 4,000 completions, parallelism 2,000, one GPU each, each pod running 30 minutes.
* ``bare``: 5,000 bare pods of one GPU each (scheduler_perf's SchedulingWithResourceClaimTemplate as pods).
* ``mixed``: a Deployment (inference, one GPU), a StatefulSet (two GPUs), a Job (training, four GPUs, with
  parallelism), bare pods (one GPU), on H100 and A100 pools.
* ``shares``: consumable shares (``sharing.shares: 4``) on 100 L4 nodes x 8 GPUs, a Deployment of 1,600 one-share
  pods.
* ``large``: 100,000 one-GPU replicas of a Deployment on 10,000 nodes x 8 GPUs (``--shape large``; not in the default
  set: ~a minute per policy).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, Recorder, figure

Doc = dict[str, Any]
POLICIES = ("kube-scheduler", "least-allocated", "first-fit")  # the default first
# As on a user's machine: Python writes and reuses bytecode (some sandboxes set PYTHONDONTWRITEBYTECODE, which makes
# every process compile kubedra's sources again: ~0.2 s); the first run of each shape warms it and is not counted.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _pool(name: str, count: int, model: str, gpus: int, **extra: Any) -> Doc:
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"count": count, "allocatable": {"cpu": 128, "memory": "1Ti", "pods": 110},
                     "gpu": {"model": model, "count": gpus}, **extra}}


def _template(name: str, count: int = 1, shares: int | None = None) -> Doc:
    exactly: Doc = {"deviceClassName": "gpu.nvidia.com", "count": count}
    if shares is not None:
        exactly["capacity"] = {"requests": {"shares": shares}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def _pod_spec(template: str, cpu: int = 4, memory: str = "16Gi") -> Doc:
    return {"containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}, "claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}


def _controller(kind: str, name: str, replicas: int, template: str, **extra: Any) -> Doc:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    spec: Doc = {"template": {"metadata": {"labels": {"app": name}, **extra.pop("metadata", {})},
                              "spec": _pod_spec(template, **extra.pop("pod", {}))}}
    if kind == "Job":
        spec.update(completions=replicas, parallelism=extra.pop("parallelism"))
        spec["template"]["spec"]["restartPolicy"] = "Never"
    else:
        spec.update(replicas=replicas, selector={"matchLabels": {"app": name}})
        if kind == "StatefulSet":
            spec["serviceName"] = name
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _n(base: int, k: float) -> int:
    """``base`` scaled by ``k`` (``--scale`` multiplies; ``--quick`` divides), never below one."""
    return max(1, round(base * k))


def _bare(prefix: str, count: int, template: str) -> list[Doc]:
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
             "spec": _pod_spec(template)} for i in range(count)]


def deployment(k: float) -> list[Doc]:
    return [_pool("a100", _n(500, k), "A100-80GB", 10), _template("one-gpu"),
            _controller("Deployment", "inference", _n(5000, k), "one-gpu")]


def statefulset(k: float) -> list[Doc]:
    return [_pool("h100", _n(500, k), "H100-80GB", 8), _template("two-gpus", 2),
            _controller("StatefulSet", "trainer", _n(2000, k), "two-gpus")]


def job(k: float) -> list[Doc]:
    run = {"annotations": {"kubedra.io/run-for": "30m"}}
    return [_pool("a100", _n(500, k), "A100-80GB", 8), _template("one-gpu"),
            _controller("Job", "sweep", _n(4000, k), "one-gpu", parallelism=_n(2000, k), metadata=run)]


def bare(k: float) -> list[Doc]:
    return [_pool("a100", _n(500, k), "A100-80GB", 10), _template("one-gpu"), *_bare("pod", _n(5000, k), "one-gpu")]


def mixed(k: float) -> list[Doc]:
    return [
        _pool("h100", _n(250, k), "H100-80GB", 8), _pool("a100", _n(250, k), "A100-80GB", 8),
        _template("one-gpu"), _template("two-gpus", 2), _template("four-gpus", 4),
        _controller("Deployment", "inference", _n(1500, k), "one-gpu", pod={"cpu": 2, "memory": "8Gi"}),
        _controller("StatefulSet", "vector-db", _n(300, k), "two-gpus", pod={"cpu": 8, "memory": "64Gi"}),
        _controller("Job", "finetune", _n(400, k), "four-gpus", parallelism=_n(200, k),
                    metadata={"annotations": {"kubedra.io/run-for": "2h"}}),
        *_bare("notebook", _n(500, k), "one-gpu"),
    ]


def shares(k: float) -> list[Doc]:
    return [_pool("l4", _n(100, k), "L4", 8, sharing={"shares": 4}), _template("one-share", shares=1),
            _controller("Deployment", "inference", _n(1600, k), "one-share", pod={"cpu": 1, "memory": "4Gi"})]


def large(k: float) -> list[Doc]:
    return [_pool("a100", _n(10000, k), "A100-80GB", 8), _template("one-gpu"),
            _controller("Deployment", "inference", _n(100000, k), "one-gpu", pod={"cpu": 1, "memory": "4Gi"})]


SHAPES: dict[str, Callable[[float], list[Doc]]] = {
    "deployment": deployment, "statefulset": statefulset, "job": job, "bare": bare, "mixed": mixed, "shares": shares,
    "large": large,
}
DEFAULT_SHAPES = ("deployment", "statefulset", "job", "bare", "mixed", "shares")


def pod_count(docs: list[Doc]) -> int:
    total = 0
    for doc in docs:
        spec = doc.get("spec", {})
        if doc["kind"] == "Pod":
            total += 1
        elif doc["kind"] in ("Deployment", "StatefulSet"):
            total += spec["replicas"]
        elif doc["kind"] == "Job":
            total += spec["completions"]
    return total


def run_once(path: Path, policy: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one whole ``kubedra simulate`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    code = (
        "import resource, sys\n"
        "from kubedra.cli import entrypoint\n"
        "sys.argv = ['kubedra', 'simulate', '-f', sys.argv[1], '-q', '-o', 'name', '--policy', sys.argv[2]]\n"
        "try:\n    entrypoint()\nexcept SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path), policy], capture_output=True, text=True, check=True,
                          env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss_kb = int(done.stderr.strip().splitlines()[-1])
    return wall, cpu, rss_kb // 1024


QUICK = 0.02  # --quick: a fiftieth of each shape (10 nodes, 100 replicas), one run: proves the script still works


def measure(shapes: list[str], policies: list[str], runs: int, scale: float, recorder: Recorder) -> None:
    """Each shape as a whole process per policy, ``runs`` times (after one warm-up run); rows into ``recorder``."""
    print("| shape | nodes | pods | " + " | ".join(f"{p} s (CPU s, pods/s, MB)" for p in policies)
          + " | default / least-allocated |")
    print("|---|---:|---:|" + "---:|" * len(policies) + "---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            docs = SHAPES[shape](scale)
            path = Path(tmp) / f"{shape}.yaml"
            path.write_text(yaml.safe_dump_all(docs))
            pods = pod_count(docs)
            nodes = sum(d["spec"]["count"] for d in docs if d["kind"] == "NodePool")
            run_once(path, policies[0])  # bytecode and page cache warm
            row: dict[str, Any] = {"shape": shape, "nodes": nodes, "pods": pods, "policies": {}}
            cells = []
            for policy in policies:
                measured = [run_once(path, policy) for _ in range(runs)]
                walls = figure([m[0] for m in measured])
                row["policies"][policy] = {"wall_s": walls, "cpu_s": figure([m[1] for m in measured]),
                                           "rss_mb": figure([m[2] for m in measured])}
                wall = walls["median"]
                cells.append(f"{wall:.2f} ({row['policies'][policy]['cpu_s']['median']:.2f}, {pods / wall:,.0f}, "
                             f"{row['policies'][policy]['rss_mb']['median']:.0f})")
            recorder.add(row)
            medians = {p: v["wall_s"]["median"] for p, v in row["policies"].items()}
            ratio = (f"{medians['kube-scheduler'] / medians['least-allocated']:.2f}x"
                     if {"kube-scheduler", "least-allocated"} <= medians.keys() else "")
            print(f"| {shape} | {nodes:,} | {pods:,} | " + " | ".join(cells) + f" | {ratio} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=3, help="runs per policy; pages show their median")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="repeatable (default: all but large)")
    parser.add_argument("--policy", action="append", choices=POLICIES, help="repeatable (default: all three)")
    parser.add_argument("--scale", type=int, default=1, help="multiply nodes and pods")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run: checks the script, not the speed")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/shapes.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    args = parser.parse_args()
    policies = args.policy or list(POLICIES)
    runs, scale = (1, QUICK) if args.quick else (args.runs, float(args.scale))
    recorder = Recorder("shapes", {"runs": runs, "scale": scale, "quick": args.quick})
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, scale {scale:g}, "
          f"median of {runs}")
    measure(list(args.shape or DEFAULT_SHAPES), policies, runs, scale, recorder)
    print(f"# load average {os.getloadavg()[0]:.1f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")


if __name__ == "__main__":
    main()
