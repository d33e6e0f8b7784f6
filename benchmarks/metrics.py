"""Cost of the DRA metrics on a large cluster: 5,000 nodes x 8 GPUs, 20,000 claims.

Run: python benchmarks/metrics.py [--nodes 5000] [--gpus 8] [--claims 20000] [--repeat 20] [--live-only]

Embedded source (simulate --serve): the simulation that builds the state (pods with one claim each, from a template)
is not timed. Then, timed: the first full computation; a scrape when nothing changed; and a scrape after one claim
was released (one node's devices recomputed), each an ``update`` plus ``render`` as /metrics does; and for
comparison prometheus-client's own ``generate_latest`` of the same families.

Live source (kubedra exporter): the same shape as API documents (one slice of 8 GPUs per node, 20,000 allocated
claims each reserved for a running pod) fed to a mirror by hand, as its watches would. Timed: the first sync (every
document decoded, everything computed); a full re-read as the exporter did before it was incremental (every document
decoded again and compared); then per watch event of each kind, the refresh it triggers (decode the changed
document, update what it touches, render); and a scrape after N events.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import threading
import time
from typing import Any

import msgspec
from prometheus_client import generate_latest

from kubedra.allocator import Features
from kubedra.kube.api import Listing
from kubedra.kube.kinds import KINDS
from kubedra.kube.mirror import Mirror
from kubedra.kube.read import to_loaded
from kubedra.metrics.embedded import StateSource
from kubedra.metrics.live import LiveSource, state_from_loaded
from kubedra.metrics.model import DraMetrics
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
    parser.add_argument("--live-only", action="store_true")
    parser.add_argument("--events", type=int, default=1000, help="live: events before the last scrape")
    args = parser.parse_args()
    if not args.live_only:
        embedded(args)
    live(args)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def embedded(args: argparse.Namespace) -> None:
    print("== embedded source (simulate --serve)")

    text = SCENARIO.format(nodes=args.nodes, gpus=args.gpus, claims=args.claims)
    start = time.perf_counter()
    result = simulate(build_scenario(load_text(text, source="bench.yaml")), Options())
    state = result.state
    print(f"state: {len(state.nodes)} nodes, {len(state.devices.by_key)} devices, {len(state.claims)} claims, "
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


DRIVER = "gpu.nvidia.com"


def _node(i: int, zone: str = "a") -> dict[str, Any]:
    name = f"gpu-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": name,
                                                                           "zone": zone}}}


def _slice(i: int, gpus: int, generation: int = 1) -> dict[str, Any]:
    node = f"gpu-{i:05d}"
    devices = [{"name": f"gpu-{j}", "attributes": {"index": {"int": j}, "model": {"string": "H100-80GB"}},
                "capacity": {"memory": {"value": "80Gi"}}} for j in range(gpus)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpu", "resourceVersion": str(generation)},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1}, "devices": devices}}


def _class(version: int = 1) -> dict[str, Any]:
    expression = f'device.driver == "{DRIVER}"' + (" && device.attributes[\"gpu.nvidia.com\"].index >= 0"
                                                   if version > 1 else "")
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": DRIVER, "resourceVersion": str(version)},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def _claim(i: int, gpus: int, allocated: bool = True, version: int = 1) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"train-{i:05d}-gpu", "namespace": "bench", "uid": f"c-{i}",
                     "resourceVersion": str(version),
                     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": f"train-{i:05d}",
                                          "uid": f"p-{i}", "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
    }
    if allocated:
        node = f"gpu-{i // gpus:05d}"
        document["status"] = {
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node,
                                                    "device": f"gpu-{i % gpus}"}]}},
            "reservedFor": [{"resource": "pods", "name": f"train-{i:05d}", "uid": f"p-{i}"}],
        }
    return document


def _pod(i: int, phase: str = "Running") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"train-{i:05d}", "namespace": "bench", "uid": f"p-{i}", "resourceVersion": "1"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]},
            "status": {"phase": phase, "resourceClaimStatuses": [{"name": "gpu",
                                                                  "resourceClaimName": f"train-{i:05d}-gpu"}]}}


def _listing(kind_name: str, items: list[dict[str, Any]]) -> Listing:
    kind = next(k for k in KINDS if k.kind == kind_name)
    return Listing(kind, kind.versions[0], items, "1")


def live(args: argparse.Namespace) -> None:
    print("== live source (kubedra exporter), fed by hand")
    gpus, claims = args.gpus, min(args.claims, args.nodes * args.gpus)
    # Claims fill the first claims/gpus nodes' GPUs (spread one per node would be as fast: work is per node).
    spread = max(1, args.nodes * gpus // max(1, claims))
    indexes = [n * gpus + g for n in range(0, args.nodes, spread) for g in range(gpus)][:claims]
    mirror = Mirror(lambda: None)  # type: ignore[arg-type, return-value]  # never started: fed below
    mirror.prepare({k.kind: k.versions[0] for k in KINDS})
    mirror.replace(_listing("Node", [_node(i) for i in range(args.nodes)]))
    mirror.replace(_listing("DeviceClass", [_class()]))
    mirror.replace(_listing("ResourceSlice", [_slice(i, gpus) for i in range(args.nodes)]))
    mirror.replace(_listing("DeviceTaintRule", []))
    mirror.replace(_listing("ResourceClaimTemplate", []))
    mirror.replace(_listing("ResourceClaim", [_claim(i, gpus) for i in indexes]))
    mirror.replace(_listing("Pod", [_pod(i) for i in indexes]))
    source = LiveSource(mirror, Features.for_release(), on_first_sync=gc.freeze)  # as kubedra exporter does
    gc.collect()
    start = time.perf_counter()
    source.refresh()
    body = source.text()
    first = time.perf_counter() - start
    print(f"state: {args.nodes} nodes, {args.nodes * gpus} devices, {len(indexes)} claims, {len(indexes)} pods; "
          f"{len(body) / 1e6:.1f} MB, {body.count(chr(10))} lines")
    print(f"first sync (decode everything, compute everything, render): {first:.2f} s")

    start = time.perf_counter()
    state = state_from_loaded(to_loaded(mirror.snapshot()))
    decoded = time.perf_counter() - start
    source.model.update(state)
    source.model.render()
    before = time.perf_counter() - start
    print(f"before (every change: re-read every document, then update): {before:.2f} s "
          f"(decode {decoded:.2f} s + update {before - decoded:.2f} s)")
    gc.unfreeze()
    source = LiveSource(mirror, Features.for_release(), on_first_sync=gc.freeze)
    source.refresh()  # a fresh start after that full re-read, so the events below start from a clean state
    source.text()

    version = 10

    def timed(kind: str, event_type: str, documents: list[dict[str, Any]]) -> list[float]:
        nonlocal version
        spent = []
        for document in documents:
            version += 1
            document["metadata"]["resourceVersion"] = str(version)
            start = time.perf_counter()
            mirror.apply(kind, event_type, document)
            source.refresh()
            spent.append(time.perf_counter() - start)
        return spent

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1e3:.1f} ms, max {max(values) * 1e3:.1f} ms (n={len(values)})"

    n = args.repeat
    released = timed("ResourceClaim", "MODIFIED", [_claim(i, gpus, allocated=False) for i in indexes[:n]])
    print(f"event: claim released (its node recomputed): {ms(released)}")
    allocated = timed("ResourceClaim", "MODIFIED", [_claim(i, gpus) for i in indexes[:n]])
    print(f"event: claim allocated: {ms(allocated)}")
    added = timed("Pod", "ADDED", [_pod(10**6 + i, "Pending") for i in range(n)])
    print(f"event: pod added (new key, out of order: dicts re-sorted): {ms(added)}")
    finished = timed("Pod", "MODIFIED", [_pod(i, "Succeeded") for i in indexes[:n]])
    print(f"event: pod finished: {ms(finished)}")
    labels = timed("Node", "MODIFIED", [_node(i, "b") for i in range(n)])
    print(f"event: node labels changed (that node recomputed): {ms(labels)}")
    slices = timed("ResourceSlice", "MODIFIED", [_slice(i, gpus, 2) for i in range(n)])
    print(f"event: slice changed (its pool's node recomputed): {ms(slices)}")
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "broken"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": "gpu-00001"},
                     "taint": {"key": "example.com/broken", "effect": "NoSchedule"}}}
    print(f"event: taint rule of one pool added: {ms(timed('DeviceTaintRule', 'ADDED', [rule]))}")
    changed_class = timed("DeviceClass", "MODIFIED", [_class(2)])
    print(f"event: device class changed (that class on every node): {ms(changed_class)}")

    events = [_claim(i, gpus, allocated=bool(k % 2)) for k, i in enumerate(indexes[: args.events])]
    many = timed("ResourceClaim", "MODIFIED", events)
    print(f"{len(many)} more claim events, a refresh after each: {ms(many)}")
    start = time.perf_counter()
    source.text()
    print(f"scrape after those events (renders what they changed): {(time.perf_counter() - start) * 1e3:.0f} ms")
    scrapes = []
    for i in indexes[: args.repeat]:
        mirror.apply("ResourceClaim", "MODIFIED", _claim(i, gpus, allocated=False))
        source.refresh()
        start = time.perf_counter()
        source.text()
        scrapes.append(time.perf_counter() - start)
    print(f"scrape after one claim event each: {ms(scrapes)}")
    scrapes = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        source.text()
        scrapes.append(time.perf_counter() - start)
    print(f"scrape, nothing changed: {ms(scrapes)}")
    batch = [_claim(i, gpus, allocated=not bool(k % 2)) for k, i in enumerate(indexes[: args.events])]
    for document in batch:
        mirror.apply("ResourceClaim", "MODIFIED", document)
    start = time.perf_counter()
    source.refresh()
    source.text()
    print(f"{len(batch)} claim events, one refresh and scrape: {(time.perf_counter() - start) * 1e3:.0f} ms")
    full = DraMetrics(Features.for_release())
    full.update(state_from_loaded(to_loaded(mirror.snapshot())))
    print(f"incremental exposition equals a full rebuild at the end: {source.model.render() == full.render()}")


if __name__ == "__main__":
    main()
