"""Gangs and preemption at the issue's sizes: a gang of 256 pods x 8 GPUs on 512 nodes x 8 GPUs (against the same
pods scheduled one by one), and a preemption-heavy mix, with the default policy.

``python benchmarks/gangs.py [--nodes 512] [--gang 256] [--low 2000] [--high 200]`` prints the wall time of each run
(build excluded) and pods scheduled per second. A plain program, never a test.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import yaml

from kubedra.allocator import Features
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

Doc = dict[str, Any]


def _cluster(nodes: int, cpu: str = "128") -> list[Doc]:
    return [
        {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "h100"},
         "spec": {"count": nodes, "allocatable": {"cpu": cpu, "memory": "2Ti"},
                  "gpu": {"model": "H100-80GB", "count": 8}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "eight"},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]}}}},
    ]


def _gang(size: int, grouped: bool) -> list[Doc]:
    docs: list[Doc] = []
    if grouped:
        docs.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
                     "spec": {"schedulingPolicy": {"gang": {"minCount": size}}}})
    template: Doc = {
        "containers": [{"name": "c", "image": "x",
                        "resources": {"requests": {"cpu": "16"}, "claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "eight"}],
    }
    if grouped:
        template["schedulingGroup"] = {"podGroupName": "train"}
    docs.extend({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"w{i}"}, "spec": template}
                for i in range(size))
    return docs


def _preemption_mix(low: int, high: int) -> list[Doc]:
    docs: list[Doc] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in (("batch", 100), ("online", 10000))
    ]
    for name, count, cls, cpu, after in (("batch", low, "batch", "8", None), ("online", high, "online", "32", "1m")):
        meta: Doc = {"name": name}
        if after:
            meta["annotations"] = {"kubedra.io/start-after": after}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                     "spec": {"replicas": count, "selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {"app": name}},
                                           "spec": {"priorityClassName": cls, "containers": [
                                               {"name": "c", "image": "x",
                                                "resources": {"requests": {"cpu": cpu}}}]}}}})
    return docs


def _gang_over_batch(low: int, members: int) -> list[Doc]:
    """Batch pods (priority 100) fill the cpu; a gang of higher priority must preempt as a group."""
    docs = [d for d in _preemption_mix(low, 0) if d["kind"] != "Deployment" or d["metadata"]["name"] != "online"]
    docs.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": members}}, "priorityClassName": "online"}})
    docs.extend({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"m{i}", "annotations": {"kubedra.io/start-after": "1m"}},
                 "spec": {"priorityClassName": "online", "schedulingGroup": {"podGroupName": "train"},
                          "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "32"}}}]}}
                for i in range(members))
    return docs


def _time(label: str, docs: list[Doc], features: Features) -> None:
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)), generic_workload=features.generic_workload)
    began = time.perf_counter()
    result = simulate(scenario, Options(features=features))
    seconds = time.perf_counter() - began
    bound = sum(1 for e in result.events if e.type == "Scheduled" and e.object.startswith("Pod "))
    preempted = sum(1 for e in result.events if e.type == "Preempted")
    print(f"{label}: {seconds:.2f} s, {bound} pods bound ({bound / seconds:,.0f}/s), {preempted} preempted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--gang", type=int, default=256)
    parser.add_argument("--low", type=int, default=2000)
    parser.add_argument("--high", type=int, default=200)
    args = parser.parse_args()
    gangs = Features.for_release().with_gates({"GenericWorkload": True})
    _time(f"one by one: {args.gang} pods x 8 GPUs on {args.nodes} nodes",
          [*_cluster(args.nodes), *_gang(args.gang, grouped=False)], gangs)
    _time(f"gang:       {args.gang} pods x 8 GPUs on {args.nodes} nodes",
          [*_cluster(args.nodes), *_gang(args.gang, grouped=True)], gangs)
    _time(f"gang short: {args.nodes + 1} pods x 8 GPUs on {args.nodes} nodes (reverted whole)",
          [*_cluster(args.nodes), *_gang(args.nodes + 1, grouped=True)], gangs)
    _time(f"preemption: {args.low} batch + {args.high} online pods on {args.nodes // 4} nodes",
          [*_cluster(args.nodes // 4), *_preemption_mix(args.low, args.high)], Features.for_release())
    _time(f"gang preemption: {args.low} batch pods, then a gang of {args.high // 4} x 32 cpu "
          f"on {args.nodes // 4} nodes",
          [*_cluster(args.nodes // 4), *_gang_over_batch(args.low, args.high // 4)], gangs)


if __name__ == "__main__":
    main()
