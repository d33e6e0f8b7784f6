"""The real kube-scheduler v1.37.2 and ``kubedra simulate`` on the same scheduler_perf shapes, in one run.

Run: ``python benchmarks/vs_kube_scheduler.py [-n RUNS] [--pods 500] [--nodes 50] [--quick] [--save [DIR]]`` (needs
the test control plane: ``tests/controlplane/build.sh``). Each side's pods/s is the median of ``RUNS``; ``--save``
writes ``benchmarks/results/vs_kube_scheduler.json``, which ``benchmarks/figures.py`` renders into
docs/performance.md; ``--quick`` runs 20 pods on 4 nodes once. For each shape (benchmarks/workloads.py's builders,
scaled to ``--pods`` pods on ``--nodes`` nodes of 10 devices; no init pods):

* real: a fresh control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager on this machine); every
  object is created with the scheduler stopped and the resourceclaim controller has made the template claims; then
  the scheduler starts and the pods are polled until all are bound. pods/s = pods / (time the last pod was seen bound
  - time the first was), so process start and cache sync are left out; the scheduler's client QPS is the fixture's
  (500, burst 1000), and every pod costs it two API writes (claim status, binding);
* kubedra: ``simulate`` on the same objects in-process with ``--policy kube-scheduler``, pods / wall time of the whole
  simulation (state, index and scheduling; not YAML loading).

Both sides' placements are compared: bound and pending counts, and the pods per node (ties break on the real
scheduler's parallel Filter order, so single placements are not comparable here).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from tests.controlplane.fixture import ControlPlane, running_control_plane  # noqa: E402
from tests.kube.vs_kube_scheduler import KIND_ORDER, PATHS  # noqa: E402

from kubedra.objects.load import load_text  # noqa: E402
from kubedra.scheduler.scoring import Policy  # noqa: E402
from kubedra.sim.scenario import build_scenario  # noqa: E402
from kubedra.sim.simulate import Options, simulate  # noqa: E402
from results import RESULTS, ROOT, Recorder, figure  # noqa: E402
from workloads import Workload, claim_template, extended_resource, shared_claims  # noqa: E402

NAMESPACE = "test"
DEVICES = 10
THREADS = 8


def shapes(pods: int, nodes: int) -> list[Workload]:
    suffix = f"{pods}pods_{nodes}nodes"
    return [
        claim_template(f"SchedulingWithResourceClaimTemplate/{suffix}", nodes, DEVICES, 0, pods),
        shared_claims(f"SchedulingWithResourceClaim/{suffix}", nodes, 2, 0, pods),
        extended_resource(f"SchedulingWithExtendedResource/{suffix}", nodes, DEVICES, pods, 0, pods),
    ]


def _path(doc: dict[str, Any]) -> str:
    prefix, plural, namespaced = PATHS[doc["kind"]]
    return f"{prefix}/namespaces/{NAMESPACE}/{plural}" if namespaced else f"{prefix}/{plural}"


def _create_all(plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    """Cluster objects in order, then the pods from a few threads (one client alone would be the bottleneck)."""
    pods = [d for d in docs if d["kind"] == "Pod"]
    for doc in sorted((d for d in docs if d["kind"] != "Pod"), key=lambda d: KIND_ORDER.index(d["kind"])):
        body = {k: v for k, v in doc.items() if k != "status"} if doc["kind"] == "ResourceClaim" else doc
        plane.request("POST", _path(doc), body)
    chunks = [pods[i::THREADS] for i in range(THREADS)]
    errors: list[BaseException] = []

    def worker(chunk: list[dict[str, Any]]) -> None:
        try:
            for pod in chunk:
                plane.request("POST", _path(pod), pod)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run_real(workload: Workload) -> dict[str, Any]:
    docs = _documents(workload)
    pods = sum(1 for d in docs if d["kind"] == "Pod")
    templates = sum(1 for d in docs if d["kind"] == "Pod" and d["spec"].get("resourceClaims", [{}])[0].get(
        "resourceClaimTemplateName"))
    with running_control_plane() as plane:
        plane.components["kube-scheduler"].stop()
        plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": NAMESPACE}})
        _create_all(plane, docs)
        claims_path = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"
        plane.wait_for(lambda: len(plane.get(claims_path)["items"]) >= templates, timeout=300, interval=0.5,
                       what="claims from templates")
        plane._start_and_wait("kube-scheduler")  # the fixture's own start-and-wait-for-/readyz
        first = last = 0.0
        pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            items = plane.get(pods_path)["items"]
            now = time.monotonic()
            bound = [p for p in items if p["spec"].get("nodeName")]
            if bound and not first:
                first = now
            undecided = [p for p in items if not p["spec"].get("nodeName") and not _unschedulable(p)]
            if not undecided:
                last = now
                break
            time.sleep(0.1)
        per_node = Counter(p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName"))
    seconds = max(last - first, 1e-9)
    return {"pods": pods, "bound": sum(per_node.values()), "seconds": seconds,
            "pods_per_s": sum(per_node.values()) / seconds, "per_node": sorted(per_node.values())}


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
               for c in pod.get("status", {}).get("conditions", []))


def _in_namespace(doc: dict[str, Any]) -> dict[str, Any]:
    if PATHS[doc["kind"]][2]:
        doc = {**doc, "metadata": {**doc["metadata"], "namespace": NAMESPACE}}
    return doc


def _documents(workload: Workload) -> list[dict[str, Any]]:
    """The workload's objects, all namespaced ones in one namespace (the builders' ``init`` copies dropped)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for doc in map(_in_namespace, workload.documents()):
        key = (doc["kind"], doc["metadata"]["name"])
        if key not in seen:
            seen.add(key)
            out.append(doc)
    return out


def run_kubedra(workload: Workload) -> dict[str, Any]:
    docs = _documents(workload)
    loaded = load_text(yaml.safe_dump_all(docs))
    began = time.perf_counter()
    result = simulate(build_scenario(loaded), Options(policy=Policy.KUBE_SCHEDULER))
    seconds = time.perf_counter() - began
    per_node = Counter(r.pod.spec.node_name for r in result.state.pods.values() if r.pod.spec.node_name)
    return {"bound": sum(per_node.values()), "seconds": seconds, "pods_per_s": sum(per_node.values()) / seconds,
            "per_node": sorted(per_node.values())}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs per shape and side (the median is reported)")
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="20 pods on 4 nodes, one run: checks the script")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/vs_kube_scheduler.json (default DIR: {RESULTS.relative_to(ROOT)}), read by "
                             "the docs")
    args = parser.parse_args(argv)
    pods, nodes, runs = (20, 4, 1) if args.quick else (args.pods, args.nodes, args.runs)
    recorder = Recorder("vs_kube_scheduler", {"runs": runs, "quick": args.quick, "pods": pods, "nodes": nodes,
                                              "devices": DEVICES})
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, median of {runs}", flush=True)
    print("| shape | real kube-scheduler pods/s | kubedra pods/s | ratio | bound (real / kubedra) "
          "| same pods per node |")
    print("|---|---:|---:|---:|---|---|")
    for workload in shapes(pods, nodes):
        reals = [run_real(workload) for _ in range(runs)]
        sims = [run_kubedra(workload) for _ in range(runs)]
        real, sim = reals[0], sims[0]
        row = {"shape": workload.name.split("/")[0], "pods": pods, "nodes": nodes,
               "real_pods_per_s": figure([r["pods_per_s"] for r in reals]),
               "kubedra_pods_per_s": figure([r["pods_per_s"] for r in sims]),
               "real_bound": min(r["bound"] for r in reals), "kubedra_bound": min(r["bound"] for r in sims),
               "same_pods_per_node": all(r["per_node"] == s["per_node"] for r in reals for s in sims)}
        recorder.add(row)
        real_rate, sim_rate = row["real_pods_per_s"]["median"], row["kubedra_pods_per_s"]["median"]
        same = "yes" if row["same_pods_per_node"] else f"no ({real['per_node']} / {sim['per_node']})"
        print(f"| {workload.name} | {real_rate:,.0f} | {sim_rate:,.0f} | {sim_rate / real_rate:,.1f}x | "
              f"{row['real_bound']} / {row['kubedra_bound']} | {same} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.1f} at end")
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
