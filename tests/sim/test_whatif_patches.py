"""Every what-would-fit suggestion that edits manifests carries JSON patches on the objects the user writes
(``sim.whatif_patches``); the property: for generated clusters and pods, applying a suggestion's patches to the
manifests and simulating them from scratch runs the pod, for every kind (a published resource, a relaxed selector,
a tolerated node or device taint, a fallback, a lower count, one more node)."""

from __future__ import annotations

from typing import Any

from fixtures.patches import applied
from fixtures.scenarios import claim_template, nodepool, pod, run
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.scheduler.scoring import Policy
from kubedra.sim.whatif import Inputs, what_would_fit

Doc = dict[str, Any]
MEMORY = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{}")) >= 0'
DEVICE_TAINT = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "xid"},
                "spec": {"deviceSelector": {"driver": "gpu.nvidia.com"},
                         "taint": {"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule"}}}
NODE_TAINT = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}


@st.composite
def scenarios(draw: st.DrawFn) -> list[Doc]:
    pools = []
    for name in draw(st.lists(st.sampled_from(["a100", "h100"]), min_size=1, max_size=2, unique=True)):
        no_cpu = draw(st.integers(0, 3)) == 0
        pools.append(nodepool(name, count=draw(st.integers(1, 2)), gpus=draw(st.integers(1, 4)),
                              model="A100-40GB" if name == "a100" else "H100-80GB",
                              allocatable={"memory": "512Gi"} if no_cpu else None,
                              taints=[NODE_TAINT] if draw(st.booleans()) else None))
    selector = MEMORY.format(draw(st.sampled_from(["40Gi", "70Gi", "80Gi"]))) if draw(st.booleans()) else None
    template = claim_template("gpus", count=draw(st.integers(1, 6)), selector=selector)
    rule = [DEVICE_TAINT] if draw(st.booleans()) else []
    holder = []  # a pod that came first and holds GPUs (never ending): more nodes, or a lower count, help
    if draw(st.booleans()):
        holder = [claim_template("held", count=draw(st.integers(1, 4))),
                  pod("holder", template="held", tolerations=[{"operator": "Exists"}])]
    waiting = pod("waiting", template="gpus", requests={"cpu": "4", "memory": "1Gi"}, start_after="1m")
    return [*pools, *rule, template, *holder, waiting]


@settings(max_examples=depth.examples(25, 250), deadline=None)
@given(docs=scenarios())
def test_every_patch_offered_runs_the_pod(docs: list[Doc]) -> None:
    result = run(*docs).result
    if result.state.pods["default/waiting"].phase != "Pending":
        return
    assert result.allocator is not None
    found = what_would_fit(Inputs(result.state, result.allocator.features, Policy.KUBE_SCHEDULER), "default/waiting")
    for suggestion in found:
        patches = suggestion.change.get("patches")
        assert patches is not None or suggestion.cost.kind in ("release", "preemption"), suggestion.change
        if not patches:
            continue
        patched = run(*applied(docs, suggestion.change)).result
        assert patched.state.pods["default/waiting"].phase == "Running", (suggestion.text, patches)
