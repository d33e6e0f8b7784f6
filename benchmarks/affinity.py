"""Inter-pod anti-affinity and topology spread at the issue's size (issue 38, "Linear"): a Deployment of N one-cpu
replicas with required ``podAntiAffinity`` on the hostname, on N nodes, against the same Deployment without the rule;
and a Deployment of N replicas with a zone ``topologySpreadConstraint`` (maxSkew 1, DoNotSchedule) on N/10 nodes in
five zones, against it without the constraint; with the default policy.

``python benchmarks/affinity.py [--replicas 5000]`` prints the wall time of each run (build excluded), the pods
bound and the ratios. A plain program, never a test.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import yaml

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

Doc = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 5


def _docs(replicas: int, anti: bool) -> list[Doc]:
    docs: list[Doc] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}"}},
         "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
        for i in range(replicas)
    ]
    spec: Doc = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    if anti:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}]}}
    docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
    return docs


def _spread_docs(replicas: int, spread: bool) -> list[Doc]:
    nodes = max(1, replicas // 10)
    docs: list[Doc] = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}", ZONE: f"z{i % ZONES}"}},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
        for i in range(nodes)
    ]
    spec: Doc = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    if spread:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": "web"}}}]
    docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
    return docs


def _run(docs: list[Doc]) -> tuple[float, int]:
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    start = time.perf_counter()
    result = simulate(scenario, Options())
    bound = sum(1 for r in result.state.pods.values() if r.pod.spec.node_name)
    return time.perf_counter() - start, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=5000)
    args = parser.parse_args()
    plain, plain_bound = _run(_docs(args.replicas, anti=False))
    anti, anti_bound = _run(_docs(args.replicas, anti=True))
    print(f"without anti-affinity: {plain:.2f} s, {plain_bound} bound")
    print(f"with hostname anti-affinity: {anti:.2f} s, {anti_bound} bound")
    print(f"ratio: {anti / plain:.2f}x")
    loose, loose_bound = _run(_spread_docs(args.replicas, spread=False))
    spread, spread_bound = _run(_spread_docs(args.replicas, spread=True))
    print(f"without topology spread: {loose:.2f} s, {loose_bound} bound")
    print(f"with zone topology spread: {spread:.2f} s, {spread_bound} bound")
    print(f"ratio: {spread / loose:.2f}x")


if __name__ == "__main__":
    main()
