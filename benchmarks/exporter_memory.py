"""What the exporter keeps of the cluster, whole documents versus slim Nodes and Pods (``kube.read.slim``).

Nodes and Pods shaped as a production API server returns them (``tests/kube/realistic.py``: managedFields, a GPU
node's labels, images and conditions, a pod's volumes, env, probes and container statuses), with a slice of 8 GPUs
per node and an allocated claim per pod. Each variant runs in a fresh child process: the mirror is fed the whole
cluster (as its lists would), then the live source's first refresh decodes everything and renders the exposition.
Printed per variant: the bytes the mirror's documents hold (tracemalloc, everything allocated while they were stored
and still alive), the process's resident size after the first sync, the time of that sync, and a digest of the
exposition (the variants must agree).

    python benchmarks/exporter_memory.py --nodes 5000 --pods 20000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(nodes: int, pods: int, slim: bool) -> dict[str, float | str]:
    sys.path.insert(0, str(ROOT))
    from tests.kube import realistic

    from kubedra.allocator import Features
    from kubedra.kube.api import Listing
    from kubedra.kube.kinds import KINDS
    from kubedra.kube.mirror import Mirror
    from kubedra.kube.read import slim as slim_documents
    from kubedra.metrics.live import LiveSource

    mirror = Mirror(lambda: None, trim=slim_documents if slim else None)  # type: ignore[arg-type, return-value]
    mirror.prepare({k.kind: k.versions[0] for k in KINDS})
    gc.collect()
    tracemalloc.start()
    core = [k for k in KINDS if k.kind in ("Node", "Pod")]
    for kind in core:
        # Built one kind at a time and dropped after: what stays allocated is what the mirror keeps.
        mirror.replace(Listing(kind, kind.versions[0], realistic.documents(kind.kind, nodes, pods), "1"))
    gc.collect()
    held, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for kind in KINDS:
        if kind not in core:
            mirror.replace(Listing(kind, kind.versions[0], realistic.documents(kind.kind, nodes, pods), "1"))
    gc.collect()
    source = LiveSource(mirror, Features.for_release(), on_first_sync=gc.freeze)  # as kubedra exporter does
    start = time.perf_counter()
    assert source.refresh()
    text = source.text()
    first_sync = time.perf_counter() - start
    dra = text[: text.index("# HELP kubedra_exporter_synced")]
    gc.collect()
    return {"nodes_and_pods_mb": held / 2**20, "rss_mb": _rss_mb(), "first_sync_s": first_sync,
            "exposition_sha256": hashlib.sha256(dra.encode()).hexdigest()[:16], "exposition_mb": len(dra) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--child", choices=["whole", "slim"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.nodes, args.pods, args.child == "slim")))
        return
    print(f"{args.nodes} nodes (a slice of 8 GPUs each), {args.pods} pods (an allocated claim each)")
    results = {}
    for variant in ("whole", "slim"):
        out = subprocess.run([sys.executable, __file__, "--nodes", str(args.nodes), "--pods", str(args.pods),
                              "--child", variant], capture_output=True, text=True, check=True)
        results[variant] = json.loads(out.stdout)
        r = results[variant]
        print(f"{variant:>5}: Nodes and Pods held {r['nodes_and_pods_mb']:.1f} MiB; process RSS after the first sync "
              f"{r['rss_mb']:.0f} MiB; first sync {r['first_sync_s']:.1f} s; exposition {r['exposition_mb']:.1f} MB "
              f"sha256 {r['exposition_sha256']}")
    whole, slim = results["whole"], results["slim"]
    print(f"slim keeps {slim['nodes_and_pods_mb'] / whole['nodes_and_pods_mb']:.0%} of the Nodes' and Pods' memory; "
          f"RSS {whole['rss_mb'] - slim['rss_mb']:.0f} MiB less; same exposition: "
          f"{whole['exposition_sha256'] == slim['exposition_sha256']}")


if __name__ == "__main__":
    main()
