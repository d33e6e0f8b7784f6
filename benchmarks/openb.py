"""The real Alibaba "openb" GPU trace replayed through `kubedra simulate`, whole process, the default policy first.

Run: ``python benchmarks/openb.py [-n RUNS] [--policy P ...] [--write DIR] [--quick] [--save]``. Reads
``../shared/data/openb/`` (or ``--data``); ``--write DIR`` only writes the manifests; ``--save`` writes
``benchmarks/results/openb.json``.

The replay follows the FGD artifact (``../shared/data/openb/README.md``): the default pod list shuffled with seed 42,
then pods drawn at random (same seed) and appended until the summed GPU requests would pass 1.3 x the cluster's GPU
capacity; every pod arrives once, in that order (one second apart), and never leaves. The mapping to DRA objects,
stated here once:

* each node of ``openb_node_list_gpu_node.csv`` is a Node (cpu, memory, 110 pods) and one ResourceSlice of
  ``gpu.nvidia.com`` with its GPUs, ``productName`` = the trace's model (``G2``, ``T4``, ``V100M16`` ...), shared as
  NVIDIA's driver shares them with consumable capacity: ``allowMultipleAllocations`` and a ``milli`` capacity of 1000
  (requests of 1-1000 in steps of 1, one whole GPU by default);
* a pod asking ``num_gpu`` whole GPUs claims ``count: num_gpu`` devices of 1000 milli each; a pod asking a share
  (``gpu_milli`` < 1000) claims one device with that many milli; ``gpu_spec`` ("V100M16|V100M32") becomes a CEL
  selector on ``productName``; pods without GPUs have no claim; cpu and memory are the pod's requests. Pods with the
  same GPU request share one ResourceClaimTemplate.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import RESULTS, ROOT, Recorder, figure
from shapes import POLICIES, run_once

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
DRIVER = "gpu.nvidia.com"
TUNE = 1.3
SEED = 42
Doc = dict[str, Any]


def _nodes(data: Path, limit: int | None = None) -> tuple[list[Doc], int]:
    docs: list[Doc] = []
    gpus = 0
    with (data / "openb_node_list_gpu_node.csv").open() as f:
        for row in list(csv.DictReader(f))[:limit]:
            name, count = row["sn"], int(row["gpu"])
            gpus += count
            docs.append({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                         "status": {"allocatable": {"cpu": f"{row['cpu_milli']}m",
                                                    "memory": f"{row['memory_mib']}Mi", "pods": "110"}}})
            devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                        "attributes": {"type": {"string": "gpu"}, "productName": {"string": row["model"]},
                                       "uuid": {"string": f"GPU-{name}-{i}"}},
                        "capacity": {"milli": {"value": "1000", "requestPolicy": {
                            "default": "1000", "validRange": {"min": "1", "max": "1000", "step": "1"}}}}}
                       for i in range(count)]
            if devices:
                docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                             "metadata": {"name": f"{name}-gpu"},
                             "spec": {"driver": DRIVER, "nodeName": name,
                                      "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                      "devices": devices}})
    return docs, gpus


def _pods(data: Path, gpus: int) -> list[dict[str, str]]:
    with (data / "openb_pod_list_default.csv").open() as f:
        rows = list(csv.DictReader(f))
    rng = random.Random(SEED)
    order = rows[:]
    rng.shuffle(order)
    capacity = TUNE * gpus * 1000

    def milli(row: dict[str, str]) -> int:
        return int(row["num_gpu"]) * int(row["gpu_milli"])

    total = sum(milli(r) for r in order)
    while True:
        extra = rng.choice(rows)
        if total + milli(extra) > capacity:
            break
        order.append(extra)
        total += milli(extra)
    return order


def documents(data: Path, limit: int | None = None) -> list[Doc]:
    """The replay's manifests; ``limit`` keeps the first nodes only, and ten arrivals per node."""
    nodes, gpus = _nodes(data, limit)
    templates: dict[tuple[int, int, str], str] = {}
    docs: list[Doc] = [*nodes]
    pods: list[Doc] = []
    arrivals = _pods(data, gpus)
    if limit is not None:
        arrivals = arrivals[:10 * limit]  # the cut's share of the trace: its pods would outnumber its nodes' room
    for i, row in enumerate(arrivals):
        count, share, spec = int(row["num_gpu"]), int(row["gpu_milli"]), row["gpu_spec"]
        pod_spec: Doc = {"containers": [{"name": "main", "image": "task", "resources": {
            "requests": {"cpu": f"{row['cpu_milli']}m", "memory": f"{row['memory_mib']}Mi"}}}]}
        if count:
            key = (count, share if count == 1 else 1000, spec)
            template = templates.get(key)
            if template is None:
                template = templates[key] = f"gpu-{len(templates)}"
                exactly: Doc = {"deviceClassName": "gpu.nvidia.com", "count": count,
                                "capacity": {"requests": {"milli": str(key[1])}}}
                if spec:
                    models = ", ".join(f'"{m}"' for m in spec.split("|"))
                    exactly["selectors"] = [{"cel": {"expression":
                                                     f'device.attributes["{DRIVER}"].productName in [{models}]'}}]
                docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                             "metadata": {"name": template, "namespace": "default"},
                             "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}})
            pod_spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            pod_spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"task-{i:05d}", "namespace": "default",
                                  "annotations": {"kubedra.io/start-after": f"{i}s"}},
                     "spec": pod_spec})
    return docs + pods


QUICK_NODES = 30  # --quick: the first 30 nodes and 300 arrivals; checks the script, not the speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs per policy; pages show their median")
    parser.add_argument("--policy", action="append", choices=POLICIES)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--write", type=Path, help="only write the manifests into this directory")
    parser.add_argument("--quick", action="store_true", help="a small cut, one run: checks the script, not the speed")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/openb.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    docs = documents(args.data, QUICK_NODES if args.quick else None)
    arrivals = sum(1 for d in docs if d["kind"] == "Pod")
    nodes = sum(1 for d in docs if d["kind"] == "Node")
    recorder = Recorder("openb", {"runs": runs, "quick": args.quick, "nodes": nodes, "arrivals": arrivals})
    with tempfile.TemporaryDirectory() as tmp:
        out = args.write or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "openb.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        if args.write:
            print(f"{path}: {nodes} nodes, {arrivals} arrivals")
            return
        print(f"# openb: {nodes:,} nodes, {arrivals:,} arrivals; {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f} at start, median of {runs}")
        print("| policy | wall s | CPU s | pods/s (wall) | peak RSS MB |")
        print("|---|---:|---:|---:|---:|")
        for policy in args.policy or POLICIES:
            measured = [run_once(path, policy) for _ in range(runs)]
            row = {"policy": policy, "wall_s": figure([m[0] for m in measured]),
                   "cpu_s": figure([m[1] for m in measured]), "rss_mb": figure([m[2] for m in measured])}
            recorder.add(row)
            wall = row["wall_s"]["median"]
            print(f"| {policy} | {wall:.1f} | {row['cpu_s']['median']:.1f} | {arrivals / wall:,.0f} | "
                  f"{row['rss_mb']['median']:.0f} |", flush=True)
        print(f"# load average {os.getloadavg()[0]:.1f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")


if __name__ == "__main__":
    main()
