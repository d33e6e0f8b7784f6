"""The placement rules' cost (issue 38, "Linear"): each rule on a Deployment beside the same Deployment without it,
with the default policy. Hostname ``podAntiAffinity`` (required): N one-cpu replicas on N nodes. Zone
``topologySpreadConstraints`` (maxSkew 1), DoNotSchedule and ScheduleAnyway: N replicas on N/10 nodes in five
zones. Preferred ``podAffinity`` to the Deployment's own pods over zones, and preferred ``podAntiAffinity`` over
hostnames: the same cluster.

Run: ``python benchmarks/affinity.py [--replicas N] [-n RUNS] [--quick] [--save [DIR]]`` prints each pair's run CPU
seconds (building the scenario excluded), the pods bound and the ratio; ``--save`` writes
``benchmarks/results/affinity.json``, which ``figures.py`` renders into docs/performance.md. A plain program, never a
test.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate
from results import RESULTS, ROOT, Recorder, figure

Doc = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 5


QUICK_REPLICAS = 50  # --quick: proves the script works, not how fast


def _anti_docs(replicas: int, anti: bool) -> list[Doc]:
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


def _zoned_docs(replicas: int, rule: Doc | None) -> list[Doc]:
    nodes = max(1, replicas // 10)
    docs: list[Doc] = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}", ZONE: f"z{i % ZONES}"}},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
        for i in range(nodes)
    ]
    spec: Doc = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}], **(rule or {})}
    docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
    return docs


def _spread(when: str) -> Doc:
    return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": when,
                                           "labelSelector": {"matchLabels": {"app": "web"}}}]}


PREFERRED = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}}]}}}

PREFERRED_APART = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}}]}}}

# rule -> (the cluster and Deployment with it, and without it)
RULES: dict[str, Callable[[int, bool], list[Doc]]] = {
    "hostname anti-affinity": _anti_docs,
    "zone spread, DoNotSchedule": lambda n, on: _zoned_docs(n, _spread("DoNotSchedule") if on else None),
    "zone spread, ScheduleAnyway": lambda n, on: _zoned_docs(n, _spread("ScheduleAnyway") if on else None),
    "preferred zone affinity": lambda n, on: _zoned_docs(n, PREFERRED if on else None),
    "preferred hostname anti-affinity": lambda n, on: _zoned_docs(n, PREFERRED_APART if on else None),
}


def _run(docs: list[Doc]) -> tuple[float, int]:
    """Run CPU seconds (the scenario built before) and the pods bound."""
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    start = time.process_time()
    result = simulate(scenario, Options())
    bound = sum(1 for r in result.state.pods.values() if r.pod.spec.node_name)
    return time.process_time() - start, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=5000)
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs of each; pages show their median")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run: checks the script, not the speed")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/affinity.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the docs")
    args = parser.parse_args()
    replicas, runs = (QUICK_REPLICAS, 1) if args.quick else (args.replicas, args.runs)
    recorder = Recorder("affinity", {"replicas": replicas, "runs": runs, "quick": args.quick})
    print("| rule | nodes | pods | without s | with s | bound without / with | with / without |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rule, make in RULES.items():
        plain_docs, ruled_docs = make(replicas, False), make(replicas, True)
        nodes = sum(1 for d in plain_docs if d["kind"] == "Node")
        plain = [_run(plain_docs) for _ in range(runs)]
        ruled = [_run(ruled_docs) for _ in range(runs)]
        row = {"rule": rule, "nodes": nodes, "pods": replicas,
               "bound": {"without": plain[0][1], "with": ruled[0][1]},
               "without_cpu_s": figure([t for t, _ in plain]), "with_cpu_s": figure([t for t, _ in ruled])}
        recorder.add(row)
        without, with_ = row["without_cpu_s"]["median"], row["with_cpu_s"]["median"]
        print(f"| {rule} | {nodes:,} | {replicas:,} | {without:.2f} | {with_:.2f} | {plain[0][1]:,} / "
              f"{ruled[0][1]:,} | {with_ / without:.2f}x |", flush=True)
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")


if __name__ == "__main__":
    main()
