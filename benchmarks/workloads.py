"""Upstream's scheduler_perf DRA workloads as plain Kubernetes manifests, for kubedra and for a Go harness alike.

``WORKLOADS`` maps a name (``SchedulingWithResourceClaimTemplate/5000pods_500nodes``) to a builder; call
``write_workload(name, directory)`` to get ONE multi-document YAML file (``<name with / as __>.yaml``).

File format (every document a real ``v1`` / ``resource.k8s.io/v1`` object, no kubedra kinds):

1. ``Node`` objects ``scheduler-perf-dra-<i>`` (4 cpu, 32Gi, 110 pods in ``status.capacity`` and ``allocatable``).
2. One ``ResourceSlice`` per node, as scheduler_perf's ``createResourceDriver`` publishes it: driver
   ``test-driver.cdi.k8s.io``, ``pool = nodeName`` (generation 1, one slice), devices ``instance-<i>`` with attributes
   ``model="A100"``, ``family="GPU"``, ``driverVersion=1.2.3`` (version), ``dra.example.com/numa=<i>`` (int) and
   capacity ``memory=1Gi``.
3. ``DeviceClass`` objects: ``test-class`` selecting ``device.driver == "test-driver.cdi.k8s.io"`` (the extended
   resource workload has ``test-class-<i>`` with ``extendedResourceName: example.com/gpu-<i>`` instead).
4. ``ResourceClaimTemplate`` / ``ResourceClaim`` objects in namespaces ``init`` and ``test``. Preallocated claims
   (SteadyState half/full) carry ``status.allocation`` (one device, ``nodeSelector`` on ``metadata.name``, filled
   node by node in inventory order as upstream's ``allocResourceClaims`` does) and no ``reservedFor``.
5. ``Pod`` objects in scheduling order (names ``test-dra-<i>``, namespace ``init`` or ``test``). Measured pods carry
   the annotation ``kubedra.io/measured: "true"``; init pods do not. Steady-state pods carry
   ``kubedra.io/start-after`` and ``kubedra.io/run-for`` (Go durations): batches of ``STEADY_BATCH`` pods arrive
   one second apart and finish after half a second, so each batch is scheduled into a cluster whose previous
   batch has just been deleted — scheduler_perf's "create 10, wait until scheduled, delete, repeat".
   A harness that ignores the timing annotations may schedule every pod of a file at once only when the workload
   has no ``run-for`` annotations (the non-steady ones).

Choices where upstream's YAML was not available (documented, not guessed silently):

* ``match_empty_500nodes``: the claim has two requests of one device each and two ``matchAttribute`` constraints,
  one over both requests on ``test-driver.cdi.k8s.io/model`` (equal on every device) and one on
  ``dra.example.com/numa`` restricted to ``req-0``. The fake driver gives every device its own numa value, so a
  numa constraint spanning two devices could never be met; this shape exercises the constraint machinery of the
  allocator for every candidate while staying satisfiable.
* Steady-state workloads measure ``STEADY_PODS`` pods (upstream runs for 10 s of wall-clock time).
* ``Large/40000pods_5000nodes``: 5,000 nodes of 8 devices, 40,000 measured pods of one claim each (fills it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
MEASURED = "kubedra.io/measured"
START_AFTER = "kubedra.io/start-after"
RUN_FOR = "kubedra.io/run-for"
STEADY_BATCH = 10
STEADY_PODS = 1000
SELECTOR = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)

Doc = dict[str, Any]


@dataclass
class Workload:
    """The objects of one workload, in the order the file lists them."""

    name: str
    nodes: list[Doc] = field(default_factory=list)
    slices: list[Doc] = field(default_factory=list)
    classes: list[Doc] = field(default_factory=list)
    claims: list[Doc] = field(default_factory=list)  # templates first, then claims
    pods: list[Doc] = field(default_factory=list)

    def documents(self) -> list[Doc]:
        return [*self.nodes, *self.slices, *self.classes, *self.claims, *self.pods]

    @property
    def measured(self) -> int:
        return sum(1 for p in self.pods if p["metadata"].get("annotations", {}).get(MEASURED) == "true")


# ---------------------------------------------------------------------------------------------- building blocks


def node_name(i: int) -> str:
    return f"scheduler-perf-dra-{i}"


def _node(i: int) -> Doc:
    resources = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name(i), "labels": {"kubernetes.io/hostname": node_name(i)}},
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources), "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _slice(i: int, devices: int) -> Doc:
    name = node_name(i)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{d}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": d},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for d in range(devices)
            ],
        },
    }


def _class(name: str = CLASS, extended: str = "") -> Doc:
    spec: Doc = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def _request(name: str, selectors: list[str] | None = None) -> Doc:
    exactly: Doc = {"deviceClassName": CLASS}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def _template(namespace: str, spec: Doc | None = None) -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": namespace},
        "spec": {"spec": spec or {"devices": {"requests": [_request("req-0")]}}},
    }


def _claim(name: str, namespace: str, allocated_on: tuple[str, str] | None = None) -> Doc:
    claim: Doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [_request("req-0")]}},
    }
    if allocated_on is not None:
        node, device = allocated_on
        claim["status"] = {
            "allocation": {
                "devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": node, "device": device}]},
                "nodeSelector": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]},
            }
        }
    return claim


def _pod(
    index: int,
    namespace: str,
    *,
    measured: bool,
    template: bool = True,
    claim_name: str = "",
    extended: str = "",
    start_after: str = "",
    run_for: str = "",
) -> Doc:
    annotations: dict[str, str] = {}
    if measured:
        annotations[MEASURED] = "true"
    if start_after:
        annotations[START_AFTER] = start_after
    if run_for:
        annotations[RUN_FOR] = run_for
    container: Doc = {"name": "pause", "image": "registry.k8s.io/pause:3.10"}
    spec: Doc = {"containers": [container]}
    if extended:
        container["resources"] = {"requests": {extended: "1"}, "limits": {extended: "1"}}
    else:
        container["resources"] = {"claims": [{"name": "resource"}]}
        pod_claim = {"name": "resource"}
        pod_claim["resourceClaimTemplateName" if template else "resourceClaimName"] = (
            "test-claim-template" if template else claim_name
        )
        spec["resourceClaims"] = [pod_claim]
    metadata: Doc = {"name": f"test-dra-{index}", "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _cluster(name: str, nodes: int, devices: int) -> Workload:
    return Workload(
        name=name,
        nodes=[_node(i) for i in range(nodes)],
        slices=[_slice(i, devices) for i in range(nodes)],
        classes=[_class()],
    )


# ---------------------------------------------------------------------------------------------- workloads


def claim_template(name: str, nodes: int, devices: int, init: int, measure: int) -> Workload:
    """SchedulingWithResourceClaimTemplate: ``init`` pods, then ``measure`` measured ones, one claim each."""
    w = _cluster(name, nodes, devices)
    w.claims = [_template("init"), _template("test")]
    w.pods = [_pod(i, "init", measured=False) for i in range(init)]
    w.pods += [_pod(i, "test", measured=True) for i in range(measure)]
    return w


def steady_state(
    name: str, nodes: int, devices: int, preallocated: int, template_spec: Doc | None = None, pods: int = STEADY_PODS
) -> Workload:
    """SteadyStateClusterResourceClaimTemplate: preallocated claims, then batches of 10 pods created and deleted."""
    w = _cluster(name, nodes, devices)
    w.claims = [
        _claim(f"test-claim-{j}", "init", (node_name(j // devices), f"instance-{j % devices}"))
        for j in range(preallocated)
    ]
    w.claims.insert(0, _template("test", template_spec))
    w.pods = [
        _pod(i, "test", measured=True, start_after=f"{i // STEADY_BATCH}s", run_for="500ms") for i in range(pods)
    ]
    return w


def shared_claims(name: str, nodes: int, devices: int, init: int, measure: int) -> Workload:
    """SchedulingWithResourceClaim: claims ``test-claim-<i // 5>`` shared by five pods each."""
    w = _cluster(name, nodes, devices)
    w.claims = [_claim(f"test-claim-{j}", "init") for j in range(init // 5)]
    w.claims += [_claim(f"test-claim-{j}", "test") for j in range(measure // 5)]
    w.pods = [_pod(i, "init", measured=False, template=False, claim_name=f"test-claim-{i // 5}") for i in range(init)]
    w.pods += [_pod(i, "test", measured=True, template=False, claim_name=f"test-claim-{i // 5}")
               for i in range(measure)]
    return w


def extended_resource(name: str, nodes: int, devices: int, classes: int, init: int, measure: int) -> Workload:
    """SchedulingWithExtendedResource: pod i asks ``example.com/gpu-<i>: 1``, served by class ``test-class-<i>``."""
    w = _cluster(name, nodes, devices)
    w.classes = [_class(f"test-class-{i}", f"example.com/gpu-{i}") for i in range(classes)]
    w.pods = [_pod(i, "init", measured=False, extended=f"example.com/gpu-{i}") for i in range(init)]
    w.pods += [_pod(i, "test", measured=True, extended=f"example.com/gpu-{i}") for i in range(measure)]
    return w


MATCH_SPEC: Doc = {
    "devices": {
        "requests": [_request("req-0"), _request("req-1")],
        "constraints": [
            {"matchAttribute": f"{DRIVER}/model"},
            {"requests": ["req-0"], "matchAttribute": "dra.example.com/numa"},
        ],
    }
}
SELECTOR_SPEC: Doc = {"devices": {"requests": [_request("req-0", [SELECTOR])]}}

WORKLOADS: dict[str, Callable[[], Workload]] = {
    "SchedulingWithResourceClaimTemplate/5000pods_500nodes": lambda: claim_template(
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes", 500, 10, 2500, 2500
    ),
    "SteadyStateClusterResourceClaimTemplate/empty_500nodes": lambda: steady_state(
        "SteadyStateClusterResourceClaimTemplate/empty_500nodes", 500, 10, 0
    ),
    "SteadyStateClusterResourceClaimTemplate/half_500nodes": lambda: steady_state(
        "SteadyStateClusterResourceClaimTemplate/half_500nodes", 500, 10, 2500
    ),
    "SteadyStateClusterResourceClaimTemplate/full_500nodes": lambda: steady_state(
        "SteadyStateClusterResourceClaimTemplate/full_500nodes", 500, 10, 4990
    ),
    "SteadyStateClusterResourceClaimTemplate/selector_empty_500nodes": lambda: steady_state(
        "SteadyStateClusterResourceClaimTemplate/selector_empty_500nodes", 500, 10, 0, SELECTOR_SPEC
    ),
    "SteadyStateClusterResourceClaimTemplate/match_empty_500nodes": lambda: steady_state(
        "SteadyStateClusterResourceClaimTemplate/match_empty_500nodes", 500, 10, 0, MATCH_SPEC
    ),
    "SchedulingWithResourceClaim/5000pods_500nodes": lambda: shared_claims(
        "SchedulingWithResourceClaim/5000pods_500nodes", 500, 2, 2500, 2500
    ),
    "SchedulingWithExtendedResource/5000pods_500nodes": lambda: extended_resource(
        "SchedulingWithExtendedResource/5000pods_500nodes", 500, 10, 2500, 2500, 2500
    ),
    "Large/40000pods_5000nodes": lambda: claim_template("Large/40000pods_5000nodes", 5000, 8, 0, 40000),
}


def file_name(name: str) -> str:
    return name.replace("/", "__") + ".yaml"


def to_yaml(workload: Workload) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(workload.documents(), Dumper=dumper, sort_keys=False, default_flow_style=False)


def write_workload(name: str, directory: Path) -> Path:
    """Write workload ``name`` as one multi-document YAML file into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(name)
    path.write_text(to_yaml(WORKLOADS[name]()), encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    """``python benchmarks/workloads.py DIR [NAME...]``: write the named workloads (default: all) into DIR."""
    if not argv:
        print("usage: python benchmarks/workloads.py DIR [NAME...]", file=sys.stderr)
        print("workloads:\n  " + "\n  ".join(WORKLOADS), file=sys.stderr)
        return 2
    directory = Path(argv[0])
    for name in argv[1:] or list(WORKLOADS):
        if name not in WORKLOADS:
            print(f"unknown workload {name!r}", file=sys.stderr)
            return 2
        print(write_workload(name, directory))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
