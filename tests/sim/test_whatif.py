"""What would make a pending pod fit (``sim.whatif``): every suggestion is applied to the input and the whole scenario
simulated again, where the pod must then run; a pod nothing helps gets no suggestion."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.patches import applied
from fixtures.scenarios import claim_template, controller, nodepool, pod, run

from kubedra.cel import CompileCache
from kubedra.scheduler.scoring import Policy
from kubedra.sim.whatif import Inputs, Limits, Suggestion, what_would_fit
from kubedra.sim.whatif_selectors import comparisons

Doc = dict[str, Any]
MEMORY_80 = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'


def _suggest(*docs: Doc, pod_key: str = "default/waiting", limits: Limits | None = None) -> list[Suggestion]:
    result = run(*docs).result
    assert result.state.pods[pod_key].phase == "Pending"
    allocator = result.allocator
    assert allocator is not None
    blocked = [n for n in result.state.nodes if result.state.bound.get(n)]
    return what_would_fit(Inputs(result.state, allocator.features, Policy.KUBE_SCHEDULER, blocked), pod_key,
                          limits or Limits())


def _phase(*docs: Doc, pod_key: str = "default/waiting") -> str:
    return run(*docs).result.state.pods[pod_key].phase


def _of(suggestions: list[Suggestion], kind: str) -> Suggestion:
    found = [s for s in suggestions if s.cost.kind == kind]
    assert found, [s.text for s in suggestions]
    return found[0]


def test_a_relaxed_memory_threshold_is_proven_by_running_the_pod_with_it() -> None:
    docs = [nodepool("a100", count=2, gpus=2, model="A100-40GB"),
            claim_template("big", selector=MEMORY_80), pod("waiting", template="big")]
    suggestions = _suggest(*docs)
    relaxed = _of(suggestions, "selector")
    assert relaxed.change["from"] == "80Gi" and relaxed.change["to"] == "40Gi"
    assert relaxed.change["template"] == "default/big"
    assert relaxed.text == ("fits on 2 nodes (a100-0, a100-1) if template default/big, request gpu asked "
                            "memory >= 40Gi instead of 80Gi")
    assert relaxed.cost.amount == 50.0
    assert not [s for s in suggestions if s.cost.kind == "nodes"]  # a node like the others has 40Gi GPUs too
    (patch,) = relaxed.change["patches"]
    assert patch["object"] == {"kind": "ResourceClaimTemplate", "name": "default/big"}
    assert patch["patch"][0]["value"]["exactly"]["selectors"][0]["cel"]["expression"] == relaxed.change["relaxed"]
    assert _phase(*applied(docs, relaxed.change)) == "Running"


def test_releasing_the_holder_and_adding_a_node_are_each_proven() -> None:
    holder = controller("Deployment", "holder", 1, template="one-gpu")
    docs = [nodepool("small", count=1, gpus=1), claim_template("one-gpu"), holder,
            pod("waiting", template="one-gpu", start_after="1m")]
    suggestions = _suggest(*docs)
    assert [s.cost.kind for s in suggestions] == ["release", "nodes"]  # ranked: ending a pod before buying a node
    release, more = suggestions
    assert release.nodes == ["small-0"] and release.change["endPods"][0].startswith("default/holder-")
    assert release.change["releases"][0]["devices"] == ["gpu-0"]
    assert more.change == {"pool": "small", "label": "kubedra.io/nodepool", "nodes": 1, "like": "small-0",
                           "patches": [{"object": {"kind": "NodePool", "name": "small"},
                                        "patch": [{"op": "replace", "path": "/spec/count", "value": 2}]}]}
    assert more.nodes == ["small-1"]
    ended = [*docs[:2], controller("Deployment", "holder", 1, template="one-gpu", run_for="30s"), docs[3]]
    assert _phase(*ended) == "Running"
    assert _phase(*applied(docs, more.change)) == "Running"


def test_a_resource_the_pool_does_not_publish_is_proven_by_publishing_it() -> None:
    """A NodePool written without cpu: every pod "Insufficient cpu" (issue 40's example); adding nodes like these
    cannot help, publishing cpu does, and the simulation with the change applied runs the pod."""
    docs = [nodepool("a100", count=2, gpus=2, allocatable={"memory": "64Gi"}),
            pod("waiting", requests={"cpu": "4", "memory": "1Gi"})]
    suggestions = _suggest(*docs)
    assert [s.cost.kind for s in suggestions] == ["resources"]
    (publish,) = suggestions
    assert publish.change == {"pool": "a100", "label": "kubedra.io/nodepool", "allocatable": {"cpu": "4"},
                              "patches": [{"object": {"kind": "NodePool", "name": "a100"},
                                           "patch": [{"op": "add", "path": "/spec/allocatable/cpu", "value": "4"}]}]}
    assert publish.text == "fits if the nodes of pool a100 published cpu (at least 4): for a NodePool, spec.allocatable"
    assert publish.nodes == ["a100-0", "a100-1"]
    assert _phase(*applied(docs, publish.change)) == "Running"


def test_two_omissions_are_answered_together() -> None:
    """A first NodePool without cpu, and a selector asking 80Gi of H100s that publish 81559Mi: neither change alone
    runs the pod, both together do (the NodePool published, the threshold relaxed), proven and patched as one."""
    docs = [nodepool("h100", count=1, gpus=2, model="H100-80GB", allocatable={"memory": "64Gi"}),
            claim_template("big", selector=MEMORY_80), pod("waiting", template="big", requests={"cpu": "4"})]
    (both,) = _suggest(*docs)
    assert both.cost.kind == "selector" and both.text.startswith("with pool h100 publishing cpu (at least 4)")
    assert [c.get("pool") or c.get("template") for c in both.change["and"]] == ["h100", "default/big"]
    assert [p["object"]["kind"] for p in both.change["patches"]] == ["NodePool", "ResourceClaimTemplate"]
    assert _phase(*applied(docs, both.change)) == "Running"
    for one in both.change["patches"]:  # each alone leaves it waiting
        assert _phase(*applied(docs, {"patches": [one]})) == "Pending"


def test_a_node_taint_tolerated_is_proven() -> None:
    taint = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    docs = [nodepool("bad", count=1, gpus=1, taints=[taint]), claim_template("one-gpu"),
            pod("waiting", template="one-gpu")]
    toleration = _of(_suggest(*docs), "toleration")
    wanted = {"key": "gpu.nvidia.com/xid", "operator": "Equal", "value": "79", "effect": "NoSchedule"}
    assert toleration.change == {
        "target": "pod", "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
        "patches": [{"object": {"kind": "Pod", "name": "default/waiting"},
                     "patch": [{"op": "add", "path": "/spec/tolerations", "value": [wanted]}]}]}
    assert toleration.text == "fits on 1 node (bad-0) if the pod tolerated the node taint gpu.nvidia.com/xid=79:NoSchedule"
    assert _phase(*applied(docs, toleration.change)) == "Running"


def test_a_deployments_pods_get_the_toleration_in_its_template() -> None:
    """The patch names the object the user writes: the Deployment, at /spec/template/spec, its own tolerations
    kept."""
    taint = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    own = {"key": "team", "operator": "Exists", "effect": "NoSchedule"}
    docs = [nodepool("bad", count=1, gpus=1, taints=[taint]), claim_template("one-gpu"),
            controller("Deployment", "web", 1, template="one-gpu", tolerations=[own])]
    result = run(*docs).result
    (key,) = result.state.pods
    toleration = _of(_suggest(*docs, pod_key=key), "toleration")
    (patch,) = toleration.change["patches"]
    assert patch["object"] == {"kind": "Deployment", "name": "default/web"}
    assert patch["patch"] == [{"op": "add", "path": "/spec/template/spec/tolerations", "value": [
        own, {"key": "gpu.nvidia.com/xid", "operator": "Equal", "value": "79", "effect": "NoSchedule"}]}]
    patched = run(*applied(docs, toleration.change)).result
    assert [r.phase for r in patched.state.pods.values()] == ["Running"]


def test_a_device_taint_tolerated_is_proven() -> None:
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "xid"},
            "spec": {"deviceSelector": {"driver": "gpu.nvidia.com"},
                     "taint": {"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule"}}}
    docs = [nodepool("a100", count=1, gpus=1), rule, claim_template("one-gpu"), pod("waiting", template="one-gpu")]
    toleration = _of(_suggest(*docs), "toleration")
    assert toleration.change["target"] == "claims" and toleration.change["claims"] == ["default/one-gpu"]
    assert toleration.cost.amount == 2  # a device taint costs one more than a node taint of the same effect
    assert [p["object"] for p in toleration.change["patches"]] == [
        {"kind": "ResourceClaimTemplate", "name": "default/one-gpu"}]
    assert _phase(*applied(docs, toleration.change)) == "Running"


def test_nothing_helps_a_pod_asking_devices_no_node_has() -> None:
    """Four H100s on A100 nodes: no count, threshold, taint, release or node like these helps (a count above what a
    node has is answered by ``fallback`` and ``count``: tests/sim/test_whatif_requests.py)."""
    docs = [nodepool("small", count=2, gpus=2),
            claim_template("four", count=4, selector='device.attributes["gpu.nvidia.com"].productName == "H100-80GB"'),
            pod("waiting", template="four")]
    assert _suggest(*docs) == []


def test_limits_bound_what_is_tried() -> None:
    docs = [nodepool("a100", count=1, gpus=1), claim_template("big", selector=MEMORY_80),
            pod("waiting", template="big")]
    assert _of(_suggest(*docs), "selector")
    assert not [s for s in _suggest(*docs, limits=Limits(comparisons=0)) if s.cost.kind == "selector"]


def test_not_pending_or_unknown_pods_get_nothing() -> None:
    result = run(nodepool("a100"), claim_template("one-gpu"), pod("running", template="one-gpu")).result
    assert result.allocator is not None
    inputs = Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER)
    assert what_would_fit(inputs, "default/running") == []
    assert what_would_fit(inputs, "default/no-such-pod") == []


@pytest.mark.parametrize(("expression", "found"), [
    (MEMORY_80, [("capacity", "memory", ">=", "80Gi")]),
    ('quantity("80Gi").compareTo(device.capacity["gpu.nvidia.com"].memory) <= 0', []),  # the device is the argument
    ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))', [("capacity", "memory", ">", "40Gi")]),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability >= 8",  # found; only int values are offered
     [("attributes", "cudaComputeCapability", ">=", "8")]),
    ("8 <= device.attributes['gpu.nvidia.com'].index", [("attributes", "index", ">=", "8")]),
    ("device.attributes['gpu.nvidia.com'].index < 2 && device.driver == 'x'", [("attributes", "index", "<", "2")]),
    ("[1].all(device, device >= 2)", []),  # ``device`` shadowed by a comprehension
    ("device.attributes['gpu.nvidia.com'].index >= device.attributes['gpu.nvidia.com'].minor", []),
    ("device.driver == 'a >= 5'", []),
])
def test_comparisons_are_found_in_the_syntax_tree(expression: str, found: list[tuple[str, str, str, str]]) -> None:
    environment = CompileCache().environment
    got = comparisons(environment.checked(expression), expression)
    assert [(c.map, c.name, c.op, expression[c.start:c.end].strip("\"'")) for c in got] == found
