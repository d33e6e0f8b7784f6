"""``explain``: every failure kind a pending pod can have, named per node and grouped across nodes."""

from __future__ import annotations

from typing import Any

import pytest

from kubedra.objects.load import load_text
from kubedra.scheduler.dra import AllocatorBackend
from kubedra.scheduler.explain import explain_claim, explain_pod, lookup
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
"""


def node(name: str, cpu: str = "16", labels: str = "{}", taints: str = "[]") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {labels}}}
spec: {{taints: {taints}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}}}
"""


def slice_(node_name: str, devices: str, extra: str = "") -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node_name}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {node_name}
  pool: {{name: {node_name}, generation: 1, resourceSliceCount: 1}}
  {extra}
  devices: {devices}
"""


def gpus(count: int, memory: str = "40Gi", per_root: int = 0) -> str:
    items = []
    for i in range(count):
        root = f', "resource.kubernetes.io/pcieRoot": {{string: pci{i // per_root}}}' if per_root else ""
        items.append(f'{{name: gpu-{i}, attributes: {{model: {{string: a100}}{root}}}, '
                     f'capacity: {{memory: {{value: "{memory}"}}}}}}')
    return "[" + ", ".join(items) + "]"


def claim(name: str, count: int = 1, selectors: str = "[]", extra: str = "", cls: str = "gpu") -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ml}}
spec:
  devices:
    requests: [{{name: gpu, exactly: {{deviceClassName: {cls}, count: {count}, selectors: {selectors}}}}}]
    {extra}
"""


def pod(name: str, claim_name: str | None = None, after: str = "0s", spec: str = "", cpu: str = "1") -> str:
    claims = f"resourceClaims: [{{name: gpu, resourceClaimName: {claim_name}}}]" if claim_name else ""
    uses = "claims: [{name: gpu}]" if claim_name else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, annotations: {{kubedra.io/start-after: {after}}}}}
spec:
  {claims}
  {spec}
  containers: [{{name: main, image: x, resources: {{requests: {{cpu: "{cpu}"}}, {uses}}}}}]
"""


def run(text: str) -> tuple[Any, Any]:
    scenario = build_scenario(load_text(text))
    simulation = prepare(scenario, Options(policy=Policy.FIRST_FIT))
    result = simulation.run()
    backend = simulation.scheduler.backend
    assert isinstance(backend, AllocatorBackend)
    return result.state, backend.allocator


def explain(text: str, key: str = "ml/waiting") -> dict[str, Any]:
    state, allocator = run(text)
    return explain_pod(state, allocator, key).as_dict()


def reasons(data: dict[str, Any]) -> list[str]:
    return [g["reason"] for g in data["groups"]]


def test_selector_failure_shows_the_values_the_expression_reads() -> None:
    big = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-big}
spec:
  selectors:
  - {cel: {expression: 'device.driver == "gpu.example.com"'}}
  - {cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}}
"""
    text = CLASS + big + node("n1") + slice_("n1", gpus(8, "24Gi")) + claim("c", cls="gpu-big") + pod("waiting", "c")
    data = explain(text)
    assert data["phase"] == "Pending"
    assert data["message"] == "0/1 nodes are available: 1 cannot allocate all claims."
    assert reasons(data) == [
        "claim ml/c, request gpu: no device matches selector #1 of class gpu-big "
        '(device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0): 8 devices have memory=24Gi'
    ]
    assert data["groups"][0]["check"] == "devices"


def test_request_selector_failure_is_told_apart_from_the_class() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(2)) + claim(
        "c", selectors="[{cel: {expression: 'device.attributes[\"gpu.example.com\"].model == \"h100\"'}}]"
    ) + pod("waiting", "c")
    (reason,) = reasons(explain(text))
    assert reason.startswith("claim ml/c, request gpu: 2 devices match class gpu, but no device matches selector #0 "
                             "of the request")
    assert reason.endswith(": 2 devices have model=a100")


def test_devices_all_in_use_name_the_claims_holding_them() -> None:
    text = (CLASS + node("n1") + slice_("n1", gpus(2)) + claim("a", 1) + claim("b", 1) + claim("c", 1)
            + pod("p-a", "a") + pod("p-b", "b") + pod("waiting", "c", after="1m"))
    assert reasons(explain(text)) == ["claim ml/c, request gpu: 2 devices match class gpu, both in use by ml/a, ml/b"]


def test_only_some_of_the_requested_devices_are_free() -> None:
    text = (CLASS + node("n1") + slice_("n1", gpus(4)) + claim("a", 1) + claim("c", 4)
            + pod("p-a", "a") + pod("waiting", "c", after="1m"))
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 4 devices match class gpu; only 3 of 4 requested devices are free: "
        "1 in use by ml/a"
    ]


def test_match_attribute_that_no_combination_satisfies() -> None:
    match = "constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]"
    text = CLASS + node("n1") + slice_("n1", gpus(4, per_root=2)) + claim("c", 3, extra=match) + pod("waiting", "c")
    assert reasons(explain(text)) == [
        "claim ml/c: matchAttribute resource.kubernetes.io/pcieRoot cannot be satisfied: 3 devices must share one "
        "value, the free matching devices have pci0 (2), pci1 (2)"
    ]


def test_distinct_attribute_that_no_combination_satisfies() -> None:
    distinct = "constraints: [{distinctAttribute: resource.kubernetes.io/pcieRoot}]"
    text = CLASS + node("n1") + slice_("n1", gpus(4, per_root=2)) + claim("c", 3, extra=distinct) + pod("waiting", "c")
    (reason,) = reasons(explain(text))
    assert reason.startswith("claim ml/c: distinctAttribute resource.kubernetes.io/pcieRoot cannot be satisfied")


def test_device_taint_not_tolerated() -> None:
    devices = "[{name: gpu-0, taints: [{key: gpu.example.com/xid, value: '48', effect: NoSchedule}]}]"
    text = CLASS + node("n1") + slice_("n1", devices) + claim("c") + pod("waiting", "c")
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 1 device matches class gpu: taint gpu.example.com/xid=48:NoSchedule not tolerated"
    ]


def test_counter_set_exhausted_by_the_full_gpu() -> None:
    pool = """
---
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: h100}
spec:
  count: 1
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
  gpu: {model: H100-80GB, count: 1}
  mig: {enabled: true}
"""
    whole = claim("whole", cls="gpu.nvidia.com")
    mig = claim("slice", cls="mig.nvidia.com")
    text = pool + whole + mig + pod("p-whole", "whole") + pod("waiting", "slice", after="1m")
    (reason,) = reasons(explain(text))
    assert "devices match class mig.nvidia.com" in reason
    assert "counter set gpu-0-counter-set exhausted" in reason
    assert reason.endswith("held by ml/whole")


def test_consumable_capacity_shares_in_use() -> None:
    device = ("[{name: gpu-0, allowMultipleAllocations: true, capacity: {shares: {value: '2', "
              "requestPolicy: {default: '1', validRange: {min: '1'}}}}}]")
    text = (CLASS + node("n1") + slice_("n1", device) + claim("a") + claim("b") + claim("c")
            + pod("p-a", "a") + pod("p-b", "b") + pod("waiting", "c", after="1m"))
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 1 device matches class gpu: consumable capacity: shares 2 of 2 in use; "
        "in use by ml/a, ml/b"
    ]


def test_node_rules_are_explained_with_what_was_compared() -> None:
    tainted = node("n2", taints="[{key: maintenance, effect: NoSchedule}]")
    labelled = node("n3", labels="{zone: b}")
    text = (CLASS + node("n1", cpu="1") + tainted + labelled
            + pod("waiting", spec="nodeSelector: {zone: a}", cpu="2"))
    data = explain(text)
    assert sorted(reasons(data)) == [
        "node(s) didn't match Pod's node affinity/selector: nodeSelector zone=a (node: b)",
        "node(s) didn't match Pod's node affinity/selector: nodeSelector zone=a (node: unset)",
    ]
    no_selector = CLASS + node("n1", cpu="1") + tainted + pod("waiting", cpu="2")
    assert sorted(reasons(explain(no_selector))) == [
        "Insufficient cpu (the pod requests 2; node allocatable 1)",
        "node(s) had untolerated taint {maintenance}",
    ]


def test_node_not_selected_by_the_claims_existing_allocation() -> None:
    shared = claim("shared")
    text = (CLASS + node("n1", cpu="2") + node("n2") + slice_("n1", gpus(1)) + slice_("n2", gpus(1)) + shared
            + pod("first", "shared", cpu="2") + pod("waiting", "shared", after="1m", cpu="1"))
    data = explain(text)
    by_node = {n: g["reason"] for g in data["groups"] for n in g["nodes"]}
    assert by_node == {
        "n1": "Insufficient cpu (the pod requests 1; node allocatable 2)",
        "n2": "claim ml/shared: node not selected by the claim's existing allocation (allocated on node n1)",
    }
    assert data["claims"][0]["state"] == "allocated"


def test_extended_resource_served_by_dra_is_named_by_resource() -> None:
    mapped = CLASS.replace("spec:\n", "spec:\n  extendedResourceName: example.com/gpu\n")
    greedy = pod("waiting").replace('requests: {cpu: "1"}', 'requests: {cpu: "1"}, limits: {example.com/gpu: "3"}')
    data = explain(mapped + node("n1") + slice_("n1", gpus(2)) + greedy)
    assert reasons(data) == [
        "extended resource example.com/gpu: 2 devices match class gpu, 3 requested"
    ]


def test_prefilter_reason_applies_to_every_node() -> None:
    data = explain(CLASS + node("n1") + node("n2") + pod("waiting", "missing"))
    assert data["groups"] == [
        {"check": "pod", "reason": 'resourceclaim "missing" not found', "reasons": ['resourceclaim "missing" not found'],
         "count": 2, "nodes": ["n1", "n2"]}
    ]
    assert data["claims"] == [{"claim": "ml/missing", "state": "missing", "devices": [], "reservedFor": [],
                               "allocatedOn": ""}]


def test_identical_nodes_form_one_group_with_merged_holders() -> None:
    nodes = "".join(node(f"n{i}") + slice_(f"n{i}", gpus(1)) for i in range(12))
    holders = "".join(claim(f"h{i}") + pod(f"p{i}", f"h{i}") for i in range(12))
    data = explain(CLASS + nodes + holders + claim("c") + pod("waiting", "c", after="1m"))
    (group,) = data["groups"]
    assert group["count"] == 12
    assert group["nodes"] == [f"n{i}" for i in range(12)]
    assert group["reason"] == (
        "claim ml/c, request gpu: 1 device matches class gpu, it is in use by ml/h0, ml/h1, ml/h2, ml/h3, ml/h4 "
        "and 7 more"
    )
    assert group["heldBy"] == [f"ml/h{i}" for i in range(12)]
    assert data["summary"] == "0 of 12 nodes can run the pod now"


def test_running_pod_tells_where_and_which_nodes_could_also_run_it() -> None:
    text = CLASS + node("n1") + node("n2") + node("n3", taints="[{key: t, effect: NoSchedule}]")
    text += slice_("n1", gpus(1)) + slice_("n2", gpus(1)) + claim("c") + pod("p", "c")
    state, allocator = run(text)
    data = explain_pod(state, allocator, "ml/p", policy="first-fit").as_dict()
    assert data["phase"] == "Running"
    assert data["node"] == "n1"
    assert data["claims"][0]["devices"] == ["gpu.example.com/n1/gpu-0"]
    assert data["message"].startswith("scheduled at 0s on n1 by the first-fit policy")
    assert [(g["check"], g["nodes"]) for g in data["groups"]] == [("fits", ["n2"]), ("node", ["n3"])]


def test_claim_without_pods_is_explained_per_node() -> None:
    text = CLASS + node("n1") + node("n2") + slice_("n1", gpus(1)) + claim("c", 2)
    state, allocator = run(text)
    data = explain_claim(state, allocator, "ml/c").as_dict()
    assert data["state"] == "pending"
    assert data["message"].startswith("no pod uses this claim")
    assert [(g["reason"], g["nodes"]) for g in data["groups"]] == [
        ("claim ml/c, request gpu: 1 device matches class gpu, 2 requested", ["n1"]),
        ("claim ml/c, request gpu: no devices are published for the node", ["n2"]),
    ]


def test_claim_with_a_pending_pod_explains_the_pod() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(1)) + claim("c", 2) + pod("waiting", "c")
    state, allocator = run(text)
    data = explain_claim(state, allocator, "ml/c").as_dict()
    assert [p["pod"] for p in data["pods"]] == ["ml/waiting"]
    assert data["pods"][0]["groups"][0]["check"] == "devices"


@pytest.mark.parametrize(
    ("name", "namespace", "key", "matches"),
    [
        ("ml/trainer", None, "ml/trainer", []),
        ("trainer", "ml", "ml/trainer", []),
        ("trainer", None, None, ["ml/trainer", "dev/trainer"]),
        ("train", "ml", None, ["ml/trainer", "ml/trainer-x"]),
        ("trainr", "ml", None, ["ml/trainer"]),
    ],
)
def test_lookup(name: str, namespace: str | None, key: str | None, matches: list[str]) -> None:
    found = lookup(["ml/trainer", "dev/trainer", "ml/trainer-x"], name, namespace)
    assert found.key == key
    assert found.matches[: len(matches)] == matches
