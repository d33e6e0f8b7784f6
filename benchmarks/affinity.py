"""Inter-pod anti-affinity at the issue's size (issue 38, "Linear"): a Deployment of N one-cpu replicas with required
``podAntiAffinity`` on the hostname, on N nodes, against the same Deployment without the rule, with the default
policy.

``python benchmarks/affinity.py [--replicas 5000]`` prints the wall time of each run (build excluded), the pods
bound and the ratio. A plain program, never a test.
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


def _run(replicas: int, anti: bool) -> tuple[float, int]:
    scenario = build_scenario(load_text(yaml.safe_dump_all(_docs(replicas, anti))))
    start = time.perf_counter()
    result = simulate(scenario, Options())
    bound = sum(1 for r in result.state.pods.values() if r.pod.spec.node_name)
    return time.perf_counter() - start, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=5000)
    args = parser.parse_args()
    plain, plain_bound = _run(args.replicas, anti=False)
    anti, anti_bound = _run(args.replicas, anti=True)
    print(f"without anti-affinity: {plain:.2f} s, {plain_bound} bound")
    print(f"with hostname anti-affinity: {anti:.2f} s, {anti_bound} bound")
    print(f"ratio: {anti / plain:.2f}x")


if __name__ == "__main__":
    main()
