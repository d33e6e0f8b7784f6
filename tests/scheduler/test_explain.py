"""``explain``: every failure kind a pending pod can have, named per node and grouped across nodes."""

from __future__ import annotations

from typing import Any

import pytest
from tests.sim.fixtures.scenarios import nodepool, text_of

from kubedra.objects.load import load_text
from kubedra.scheduler import explain_workload as workload_module
from kubedra.scheduler.dra import DEFAULT_STEP_BUDGET
from kubedra.scheduler.explain import explain_claim, explain_pod
from kubedra.scheduler.explain_workload import explain_workload
from kubedra.scheduler.lookup import lookup
from kubedra.scheduler.scoring import Policy
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

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


def pod_of(name: str, claim_names: list[str], after: str = "0s") -> str:
    """A pod using several existing claims (each pod claim is named after its ResourceClaim)."""
    claims = ", ".join(f"{{name: {c}, resourceClaimName: {c}}}" for c in claim_names)
    uses = ", ".join(f"{{name: {c}}}" for c in claim_names)
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, annotations: {{kubedra.io/start-after: {after}}}}}
spec:
  resourceClaims: [{claims}]
  containers: [{{name: main, image: x, resources: {{requests: {{cpu: "1"}}, claims: [{uses}]}}}}]
"""


def taint_rule(name: str, selector: str, taint: str) -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {{name: {name}}}
spec:
  deviceSelector: {selector}
  taint: {taint}
"""


def run(text: str, step_budget: int = DEFAULT_STEP_BUDGET) -> tuple[Any, Any]:
    result = simulate(build_scenario(load_text(text)), Options(policy=Policy.FIRST_FIT, step_budget=step_budget))
    return result.state, result.allocator


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
    assert data["message"] == (
        "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
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
    pool = text_of(nodepool("h100", model="H100-80GB", mig=True, allocatable={"cpu": "16", "memory": "64Gi"}))
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
    assert sorted(reasons(data)) == [  # TaintToleration filters before NodeAffinity
        "node(s) didn't match Pod's node affinity/selector: nodeSelector zone=a (node: b)",
        "node(s) didn't match Pod's node affinity/selector: nodeSelector zone=a (node: unset)",
        "node(s) had untolerated taint(s): maintenance:NoSchedule",
    ]
    no_selector = CLASS + node("n1", cpu="1") + tainted + pod("waiting", cpu="2")
    assert sorted(reasons(explain(no_selector))) == [
        "Insufficient cpu (the pod requests 2; node allocatable 1)",
        "node(s) had untolerated taint(s): maintenance:NoSchedule",
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
        "claim ml/c, request gpu: 1 device matches class gpu, it is in use on each node, by ml/h0, ml/h1, ml/h2, "
        "ml/h3, ml/h4 and 7 more"
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


def all_claim(name: str, selectors: str = "[]") -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ml}}
spec:
  devices:
    requests: [{{name: gpu, exactly: {{deviceClassName: gpu, allocationMode: All, selectors: {selectors}}}}}]
"""


def test_allocation_mode_all_needs_every_matching_device_free() -> None:
    text = (CLASS + node("n1") + slice_("n1", gpus(4)) + claim("a", 1) + claim("b", 1) + all_claim("c")
            + pod("p-a", "a") + pod("p-b", "b") + pod("waiting", "c", after="1m"))
    data = explain(text)
    assert reasons(data) == [
        "claim ml/c, request gpu: 4 devices match class gpu; allocationMode All needs every one of them, but 2 are "
        "not free: 2 in use by ml/a, ml/b"
    ]
    assert data["groups"][0]["heldBy"] == ["ml/a", "ml/b"]


def test_allocation_mode_all_is_blocked_by_a_tainted_device() -> None:
    # Upstream puts every matching device into an All request and allocateDevice refuses the tainted one, so the
    # whole request fails even though the other devices are free.
    taint = "taints: [{key: bad, effect: NoSchedule}]"
    devices = f"[{{name: gpu-0}}, {{name: gpu-1}}, {{name: gpu-2, {taint}}}, {{name: gpu-3, {taint}}}]"
    text = CLASS + node("n1") + slice_("n1", devices) + all_claim("c") + pod("waiting", "c")
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 4 devices match class gpu; allocationMode All needs every one of them, but 2 are "
        "not free: taint bad:NoSchedule not tolerated (2 devices)"
    ]


def test_allocation_mode_all_with_one_device_not_free_reads_in_the_singular() -> None:
    text = (CLASS + node("n1") + slice_("n1", gpus(4)) + claim("a", 1) + all_claim("c")
            + pod("p-a", "a") + pod("waiting", "c", after="1m"))
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 4 devices match class gpu; allocationMode All needs every one of them, but 1 is "
        "not free: 1 in use by ml/a"
    ]


def test_allocation_mode_all_with_no_matching_device() -> None:
    h100 = "[{cel: {expression: 'device.attributes[\"gpu.example.com\"].model == \"h100\"'}}]"
    text = CLASS + node("n1") + node("n2") + slice_("n1", gpus(2)) + all_claim("c", h100) + pod("waiting", "c")
    by_node = {n: g["reason"] for g in explain(text)["groups"] for n in g["nodes"]}
    assert by_node == {
        "n1": "claim ml/c, request gpu: 2 devices match class gpu, but no device matches selector #0 of the request "
              '(device.attributes["gpu.example.com"].model == "h100"): 2 devices have model=a100',
        "n2": "claim ml/c, request gpu: no devices are published for the node",
    }


BIG = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-big}
spec:
  selectors:
  - {cel: {expression: 'device.driver == "gpu.example.com"'}}
  - {cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0'}}
"""

FIRST_AVAILABLE = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu-big, count: 1}
      - {name: two-small, deviceClassName: gpu, count: 2}
"""


def test_first_available_names_every_subrequest_tried() -> None:
    text = (CLASS + BIG + node("n1") + slice_("n1", gpus(2)) + claim("a", 1) + FIRST_AVAILABLE
            + pod("p-a", "a") + pod("waiting", "c", after="1m"))
    data = explain(text)
    (group,) = data["groups"]
    assert group["reasons"] == [
        "claim ml/c, request gpu/big: no device matches selector #1 of class gpu-big "
        '(device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0): 2 devices have memory=40Gi',
        "claim ml/c, request gpu/two-small: 2 devices match class gpu; only 1 of 2 requested devices are free: "
        "1 in use by ml/a",
    ]
    assert group["reason"] == "; ".join(group["reasons"])
    assert group["heldBy"] == ["ml/a"]


def test_first_available_falls_back_to_a_later_subrequest() -> None:
    text = (CLASS + BIG + node("n1") + slice_("n1", gpus(2, "80Gi")) + claim("a", 1) + FIRST_AVAILABLE
            + pod("p-a", "a") + pod("waiting", "c", after="1m"))
    data = explain(text)
    assert data["phase"] == "Running"
    assert data["claims"][0]["devices"] == ["gpu.example.com/n1/gpu-1"]


def test_first_available_subrequests_under_a_claim_constraint() -> None:
    claim_text = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec:
  devices:
    requests:
    - {name: a, exactly: {deviceClassName: gpu, count: 2}}
    - name: b
      firstAvailable:
      - {name: one, deviceClassName: gpu, count: 1}
      - {name: two, deviceClassName: gpu, count: 2}
    constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]
"""
    text = CLASS + node("n1") + slice_("n1", gpus(4, per_root=2)) + claim_text + pod("waiting", "c")
    # a needs 2 and b at least 1 (its cheapest subrequest) on one PCIe root that only has 2.
    assert reasons(explain(text)) == [
        "claim ml/c: matchAttribute resource.kubernetes.io/pcieRoot cannot be satisfied: 3 devices must share one "
        "value, the free matching devices have pci0 (2), pci1 (2)"
    ]


def test_device_taint_rule_taint_not_tolerated() -> None:
    rule = taint_rule("gpu-1-xid", "{driver: gpu.example.com, pool: n1, device: gpu-1}",
                      "{key: gpu.example.com/unhealthy, value: xid79, effect: NoSchedule}")
    text = CLASS + node("n1") + slice_("n1", gpus(2)) + rule + claim("c", 2) + pod("waiting", "c")
    assert reasons(explain(text)) == [
        "claim ml/c, request gpu: 2 devices match class gpu; only 1 of 2 requested devices are free: "
        "taint gpu.example.com/unhealthy=xid79:NoSchedule (from DeviceTaintRule gpu-1-xid) not tolerated (1 device)"
    ]


def test_device_taint_rule_by_pool_applies_to_that_pool_only() -> None:
    rule = taint_rule("drain-n1", "{driver: gpu.example.com, pool: n1}", "{key: maintenance, effect: NoExecute}")
    text = (CLASS + node("n1") + node("n2") + slice_("n1", gpus(2)) + slice_("n2", gpus(1)) + rule
            + claim("a") + claim("c") + pod("p-a", "a") + pod("waiting", "c", after="1m"))
    by_node = {n: g["reason"] for g in explain(text)["groups"] for n in g["nodes"]}
    assert by_node == {
        "n1": "claim ml/c, request gpu: 2 devices match class gpu; only 0 of 1 requested devices are free: "
              "taint maintenance:NoExecute (from DeviceTaintRule drain-n1) not tolerated (2 devices)",
        "n2": "claim ml/c, request gpu: 1 device matches class gpu, it is in use by ml/a",
    }


def test_device_taint_rule_tolerated_by_the_request() -> None:
    rule = taint_rule("drain", "{driver: gpu.example.com}", "{key: maintenance, effect: NoSchedule}")
    tolerant = claim("c").replace("selectors: []", "selectors: [], tolerations: [{key: maintenance, operator: Exists}]")
    data = explain(CLASS + node("n1") + slice_("n1", gpus(1)) + rule + tolerant + pod("waiting", "c"))
    assert data["phase"] == "Running"
    assert data["node"] == "n1"


def test_device_taint_rule_is_named_in_the_reason() -> None:
    rule = taint_rule("drain-n1", "{driver: gpu.example.com, pool: n1}", "{key: maintenance, effect: NoSchedule}")
    text = CLASS + node("n1") + slice_("n1", gpus(1)) + rule + claim("c") + pod("waiting", "c")
    (reason,) = reasons(explain(text))
    assert "DeviceTaintRule drain-n1" in reason


def test_two_claims_that_each_fit_alone_compete_for_the_same_devices() -> None:
    text = (CLASS + node("n1") + node("n2") + slice_("n1", gpus(2)) + slice_("n2", gpus(1))
            + claim("x", 2) + claim("y", 1) + pod_of("waiting", ["x", "y"]))
    data = explain(text)
    by_node = {n: (g["check"], g["reason"]) for g in data["groups"] for n in g["nodes"]}
    assert by_node == {
        "n1": ("devices", "each claim fits alone but not all together: ml/x, ml/y compete for the same devices"),
        "n2": ("devices", "claim ml/x, request gpu: 1 device matches class gpu, 2 requested"),
    }
    assert [c["state"] for c in data["claims"]] == ["pending", "pending"]


def test_claims_competing_for_devices_are_named_without_the_bystanders() -> None:
    nic = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec:
  selectors: [{cel: {expression: 'device.driver == "nic.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-nics}
spec:
  driver: nic.example.com
  nodeName: n1
  pool: {name: n1-nics, generation: 1, resourceSliceCount: 1}
  devices: [{name: nic-0}]
"""
    text = (CLASS + nic + node("n1") + slice_("n1", gpus(2)) + claim("x", 2) + claim("y", 1) + claim("z", cls="nic")
            + pod_of("waiting", ["x", "z", "y"]))
    assert reasons(explain(text)) == [
        "each claim fits alone but not all together: ml/x, ml/y compete for the same devices"
    ]


MATCH_ROOT = "constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]"


def test_search_budget_exhausted_is_a_timeout_not_a_verdict() -> None:
    # 8 devices on 8 PCIe roots: the search tries every pair before it gives up (9 steps); 5 are allowed.
    text = (CLASS + node("n1") + node("n2") + slice_("n1", gpus(8, per_root=1))
            + claim("c", 2, extra=MATCH_ROOT) + pod("waiting", "c"))
    state, allocator = run(text, step_budget=5)
    data = explain_pod(state, allocator, "ml/waiting").as_dict()
    assert data["message"] == ("0/2 nodes are available: 1 cannot allocate all claims, 1 timed out trying to "
                               "allocate devices. preemption: 0/2 nodes are available: 2 Preemption is not "
                               "helpful for scheduling.")
    assert [(g["check"], g["reason"], g["nodes"]) for g in data["groups"]] == [
        ("devices", "timed out trying to allocate devices (search step budget of 5 exhausted)", ["n1"]),
        ("devices", "claim ml/c, request gpu: no devices are published for the node", ["n2"]),
    ]


def test_search_budget_does_not_hide_a_node_that_fits() -> None:
    text = (CLASS + node("n1") + node("n2") + slice_("n1", gpus(8, per_root=1)) + slice_("n2", gpus(2, per_root=2))
            + claim("c", 2, extra=MATCH_ROOT) + pod("waiting", "c"))
    state, allocator = run(text, step_budget=5)
    data = explain_pod(state, allocator, "ml/waiting").as_dict()
    assert data["node"] == "n2"
    assert [(g["check"], g["reason"], g["nodes"]) for g in data["groups"]] == [
        ("devices", "timed out trying to allocate devices (search step budget of 5 exhausted)", ["n1"])
    ]


def test_search_budget_for_a_claim_without_pods_reads_like_the_pods() -> None:
    state, allocator = run(CLASS + node("n1") + slice_("n1", gpus(8, per_root=1)) + claim("c", 2, extra=MATCH_ROOT),
                           step_budget=5)
    data = explain_claim(state, allocator, "ml/c").as_dict()
    assert [(g["check"], g["reason"]) for g in data["groups"]] == [
        ("devices", "timed out trying to allocate devices (search step budget of 5 exhausted)")
    ]


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


# ---------------------------------------------------------------------------------------------- one answer everywhere


def template(name: str) -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: ml}}
spec:
  spec:
    devices:
      requests: [{{name: gpu, exactly: {{deviceClassName: gpu}}}}]
"""


def deployment(name: str, replicas: int, template_name: str, annotations: str = "{}", priority: int = 0) -> str:
    return f"""
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}, annotations: {annotations}}}
    spec:
      priority: {priority}
      resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template_name}}}]
      containers: [{{name: main, image: x, resources: {{claims: [{{name: gpu}}]}}}}]
"""


def test_a_deployment_pod_that_ended_by_deletion_is_deleted_with_when_and_why() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(2)) + template("one") + deployment(
        "web", 2, "one", "{kubedra.io/run-for: 1h}")
    result = simulate(build_scenario(load_text(text)), Options(policy=Policy.FIRST_FIT))
    report = {line.pod: line.phase for line in build_report(result).pods}
    for key in result.order:
        data = explain_pod(result.state, result.allocator, key).as_dict()
        assert data["phase"] == report[key] == "Deleted"
        assert data["node"] == "n1"
        assert (data["startedAt"], data["endedAt"]) == (0.0, 3600.0)
        assert data["endReason"] == "run-for elapsed: Deployment pods end by deletion"
        assert data["message"] == ("deleted at 1h after running on n1 from 0s to 1h: "
                                   "run-for elapsed: Deployment pods end by deletion")
        assert data["groups"] == []
        assert [c["state"] for c in data["claims"]] == ["deleted"]


def test_a_missing_template_is_named() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(2)) + """
---
apiVersion: v1
kind: Pod
metadata: {name: waiting, namespace: ml}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: no-such-template}]
  containers: [{name: main, image: x, resources: {claims: [{name: gpu}]}}]
"""
    data = explain(text)
    assert data["phase"] == "Pending"
    assert data["claims"][0]["state"] == "template not found"
    assert reasons(data) == [
        "pod claim 'gpu': ResourceClaimTemplate ml/no-such-template does not exist, so the resourceclaim controller "
        'cannot create the claim (PodResourceClaim gpu: resource claim template "no-such-template": '
        'resourceclaimtemplate.resource.k8s.io "no-such-template" not found)'
    ]


def test_the_run_records_the_controllers_event_for_a_missing_template() -> None:
    text = CLASS + node("n1") + deployment("web", 1, "absent")
    result = simulate(build_scenario(load_text(text)))
    assert [(e.type, e.message) for e in result.events if e.type == "FailedResourceClaimCreation"] == [
        ("FailedResourceClaimCreation", 'PodResourceClaim gpu: resource claim template "absent": '
         'resourceclaimtemplate.resource.k8s.io "absent" not found')
    ]


def test_a_template_without_namespace_serves_pods_in_default() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(1)) + template("one").replace(", namespace: ml", "") + """
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one}]
  containers: [{name: main, image: x, resources: {claims: [{name: gpu}]}}]
"""
    state, allocator = run(text)
    assert explain_pod(state, allocator, "default/trainer").phase == "Running"


def test_a_workloads_pods_are_grouped_by_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(2)) + template("one") + deployment("web", 5, "one")
    state, allocator = run(text)
    calls: list[str] = []
    real = workload_module.explain_pod

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(state.pods[args[2]].phase)
        return real(*args, **kwargs)

    monkeypatch.setattr(workload_module, "explain_pod", counting)
    data = explain_workload(state, allocator, "Deployment", "ml/web").as_dict()
    assert data["workload"] == "Deployment/ml/web"
    assert data["summary"] == "5 pods: 3 Pending, 2 Running"
    pending, running = data["groups"]
    assert (pending["phase"], pending["count"], pending["nodes"]) == ("Pending", 3, [])
    assert (running["phase"], running["count"], running["nodes"]) == ("Running", 2, ["n1"])
    assert set(pending["pods"]) | set(running["pods"]) == set(state.pods)
    example = pending["explanation"]
    assert example["pod"] == pending["pods"][0]
    assert example["summary"] == "0 of 1 nodes can run the pod now"
    assert "2 devices match class gpu, both in use by" in example["groups"][0]["reason"]
    # Pending pods of one template against one final state get one answer: it is computed once.
    assert calls.count("Pending") == 1


def test_pods_of_one_workload_that_ended_differently_are_separate_groups() -> None:
    text = CLASS + node("n1") + slice_("n1", gpus(1)) + template("one") + deployment(
        "web", 2, "one", "{kubedra.io/run-for: 1h}") + deployment("big", 1, "one", "{kubedra.io/start-after: 30m}", 10)
    state, allocator = run(text)  # web's first pod runs 0-1h; then big, of higher priority, takes the GPU
    web = explain_workload(state, allocator, "Deployment", "ml/web").as_dict()
    assert [(g["phase"], g["count"]) for g in web["groups"]] == [("Pending", 1), ("Deleted", 1)]
