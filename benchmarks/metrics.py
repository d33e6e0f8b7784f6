"""Scrape cost of the DRA metrics on a large simulated cluster: 5,000 nodes x 8 GPUs, 20,000 claims.

Run: python benchmarks/metrics.py [--nodes 5000] [--gpus 8] [--claims 20000] [--repeat 20]
The simulation that builds the state (pods with one claim each, from a template) is not timed. Then, timed:
the first full computation; a scrape when nothing changed; and a scrape after one claim was released (one node's
devices recomputed), each an ``update`` plus ``render`` as /metrics does; and for comparison prometheus-client's own
``generate_latest`` of the same families.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import threading
import time

import msgspec
from prometheus_client import generate_latest

from kubedra.allocator import Features
from kubedra.metrics.embedded import StateSource
from kubedra.metrics.serve import registry_for
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

SCENARIO = """
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {{name: gpu}}
spec:
  count: {nodes}
  allocatable: {{cpu: "192", memory: 2048Gi, pods: "110"}}
  gpu: {{model: H100-80GB, count: {gpus}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one, namespace: bench}}
spec: {{spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.nvidia.com}}}}]}}}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: train, namespace: bench}}
spec:
  replicas: {claims}
  selector: {{matchLabels: {{app: train}}}}
  template:
    metadata: {{labels: {{app: train}}}}
    spec:
      resourceClaims: [{{name: gpu, resourceClaimTemplateName: one}}]
      containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}, claims: [{{name: gpu}}]}}}}]
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--claims", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    text = SCENARIO.format(nodes=args.nodes, gpus=args.gpus, claims=args.claims)
    start = time.perf_counter()
    result = simulate(build_scenario(load_text(text, source="bench.yaml")), Options())
    state = result.state
    print(f"state: {len(state.nodes)} nodes, {len(state.device_node)} devices, {len(state.claims)} claims, "
          f"{len(state.pods)} pods (simulated in {time.perf_counter() - start:.1f} s, not timed below)")
    source = StateSource(state, Features.for_release(), threading.Lock())
    gc.collect()

    start = time.perf_counter()
    body = source.text()
    print(f"first scrape (everything computed): {time.perf_counter() - start:.2f} s, {len(body) / 1e6:.1f} MB, "
          f"{body.count(chr(10))} lines")

    unchanged = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        source.text()
        unchanged.append(time.perf_counter() - start)

    changed = []
    allocated = [k for k, c in state.claims.items() if c.status.allocation is not None]
    for key in allocated[: args.repeat]:
        claim = state.claims[key]
        status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=[])
        state.put_claim(msgspec.structs.replace(claim, status=status))
        start = time.perf_counter()
        source.text()
        changed.append(time.perf_counter() - start)

    start = time.perf_counter()
    generate_latest(registry_for(source))
    client = time.perf_counter() - start

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1e3:.0f} ms, max {max(values) * 1e3:.0f} ms"

    print(f"scrape, nothing changed: {ms(unchanged)} (n={len(unchanged)})")
    print(f"scrape after one claim released: {ms(changed)} (n={len(changed)})")
    print(f"prometheus-client generate_latest of the same families: {client:.2f} s")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
