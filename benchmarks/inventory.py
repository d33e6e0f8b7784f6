"""Time to expand NodePools into Nodes and ResourceSlices: 5,000 nodes x 8 GPUs, plain, shared and MIG.

Run: python benchmarks/inventory.py [--nodes 5000] [--gpus 8] [--repeat 3]
Prints wall time per layout (best of --repeat), objects made, and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from dataclasses import dataclass
from typing import Any

from kubedra.cluster.nodepool import expand_nodepools
from kubedra.objects.errors import Location


@dataclass
class Raw:
    location: Location
    data: dict[str, Any]


def pool(nodes: int, gpus: int, model: str, **extra: Any) -> Raw:
    spec: dict[str, Any] = {
        "count": nodes,
        "allocatable": {"cpu": "96", "memory": "1152Gi", "pods": "110"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "gpu": {"model": model, "count": gpus},
        **extra,
    }
    doc = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "gpu"}, "spec": spec}
    return Raw(Location("bench.yaml", 0), doc)


def measure(raw: Raw, repeat: int) -> tuple[float, int, int, int]:
    best = float("inf")
    nodes: list[Any] = []
    slices: list[Any] = []
    for _ in range(repeat):
        nodes, slices = [], []
        gc.collect()
        start = time.perf_counter()
        nodes, slices = expand_nodepools([raw])
        best = min(best, time.perf_counter() - start)
    devices = sum(len(s.spec.devices) for s in slices)
    return best, len(nodes), len(slices), devices


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mig-nodes", type=int, default=500, help="nodes for the MIG layout (26 devices per GPU)")
    args = parser.parse_args(argv)
    layouts = [
        ("plain A100-40GB", pool(args.nodes, args.gpus, "A100-40GB")),
        ("shares=4 H100-80GB", pool(args.nodes, args.gpus, "H100-80GB", sharing={"shares": 4})),
        ("MIG H100-80GB", pool(args.mig_nodes, args.gpus, "H100-80GB", mig={"enabled": True})),
    ]
    print(f"{'layout':<22} {'nodes':>6} {'slices':>7} {'devices':>8} {'seconds':>8} {'devices/s':>10}")
    for label, raw in layouts:
        seconds, nodes, slices, devices = measure(raw, args.repeat)
        print(f"{label:<22} {nodes:>6} {slices:>7} {devices:>8} {seconds:>8.3f} {devices / seconds:>10.0f}")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
