"""Stranded capacity and fragmentation in the report: known answers, and a brute-force definition on random clusters."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.scenarios import claim_template, nodepool, pod, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depth import examples

Doc = dict[str, Any]
MODELS = ("T4", "A10")
PRODUCT = {"T4": "Tesla T4", "A10": "NVIDIA A10"}


def _frag(sim: Any) -> Doc:
    return dict(sim.summary["fragmentation"])


def test_seven_free_gpus_on_seven_nodes_are_stranded_for_two_gpu_pods() -> None:
    sim = run(
        nodepool("t4", count=7, gpus=2, model="T4"),
        claim_template("one", count=1),
        claim_template("two", count=2),
        *[pod(f"one-{i}", template="one", nodeName=f"t4-{i}") for i in range(7)],
        *[pod(f"two-{i}", template="two", start_after="1s") for i in range(3)],
    )
    frag = _frag(sim)
    assert (frag["pendingPods"], frag["gpus"], frag["free"], frag["usable"], frag["stranded"]) == (3, 14, 7, 0, 7)
    (row,) = frag["pools"]
    assert (row["pool"], row["model"], row["free"], row["stranded"]) == ("t4", "Tesla T4", 7, 7)


def test_free_gpus_a_pending_pod_could_have_are_not_stranded() -> None:
    # small-0 has 2 free GPUs but not the cpu the pending pod asks: its claims fit there, so they are usable, not stranded
    sim = run(
        nodepool("small", count=1, gpus=2, model="T4", allocatable={"cpu": "1", "memory": "64Gi"}),
        nodepool("big", count=2, gpus=2, model="T4", allocatable={"cpu": "64", "memory": "64Gi"}),
        claim_template("two", count=2),
        pod("busy-0", template="two", nodeName="big-0"),
        pod("busy-1", template="two", nodeName="big-1"),
        pod("wait", template="two", start_after="1s", requests={"cpu": "8"}),
    )
    frag = _frag(sim)
    assert (frag["pendingPods"], frag["free"], frag["usable"], frag["stranded"]) == (1, 2, 2, 0)


def test_nothing_is_stranded_when_nothing_waits_and_mig_and_shares_are_counted() -> None:
    sim = run(
        nodepool("a100", count=1, gpus=2, model="A100-40GB", mig=True),
        nodepool("shared", count=1, gpus=1, model="T4", shares=4),
        claim_template("half", device_class="mig.nvidia.com",
                       selector="device.attributes['gpu.nvidia.com'].profile == '3g.20gb'"),
        claim_template("share", selector="device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'"),
        pod("half", template="half"),
        pod("share", template="share"),
    )
    frag = _frag(sim)
    assert (frag["pendingPods"], frag["free"], frag["stranded"]) == (0, 1, 0)
    assert frag["migPartlyUsed"] == 1
    assert frag["sharesLeft"] == 3


def test_the_fgd_measure_on_a_node_with_a_half_used_gpu() -> None:
    # one node, 2 T4 with 1000 shares; tasks: a 500-share pod (running) and a whole-GPU pod (running on the other):
    # idle capacity 0.5 on gpu-0. For the share task (fraction 0.5) nothing is below 0.5: fragment 0; for the whole
    # task (fraction 1) the 0.5 left is a fragment. Each shape is half the pods: FGD = 0.5 x 0 + 0.5 x 0.5 = 0.25.
    def shares(name: str, amount: int) -> Doc:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"shares": str(amount)}}}}]}}}}

    sim = run(
        nodepool("t4", count=1, gpus=2, model="T4", shares=1000),
        shares("half", 500),
        shares("whole", 1000),
        pod("half", template="half"),
        pod("whole", template="whole", start_after="1s"),
    )
    frag = _frag(sim)
    assert frag["fgd"] == pytest.approx(0.25)
    assert frag["sharesLeft"] == 500


# ------------------------------------------------------------------------------------------------ brute force

node_st = st.tuples(st.sampled_from(MODELS), st.integers(1, 4), st.integers(0, 4), st.integers(1, 8))
pending_st = st.tuples(st.integers(1, 4), st.sampled_from((None, *MODELS)), st.integers(1, 8))


@settings(max_examples=examples(15, 100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_st, min_size=1, max_size=5), st.lists(pending_st, min_size=0, max_size=4))
def test_stranded_matches_the_brute_force_definition(nodes: list[tuple[str, int, int, int]],
                                                     waiting: list[tuple[int, str | None, int]]) -> None:
    """Nodes (model, GPUs, GPUs held by a pinned pod, cpu); pods that arrive later (GPUs, model or any, cpu).
    Brute force from the final objects: a free GPU is usable iff some pending pod asks at most as many GPUs as its
    node has free of a model it accepts; stranded = free - usable while something waits."""
    docs: list[Doc] = []
    for i, (model, gpus, held, cpu) in enumerate(nodes):
        docs.append(nodepool(f"n{i}", count=1, gpus=gpus, model=model,
                             allocatable={"cpu": str(cpu), "memory": "64Gi"}))
        if min(held, gpus):
            docs.append(claim_template(f"held-{i}", count=min(held, gpus)))
            docs.append(pod(f"held-{i}", template=f"held-{i}", nodeName=f"n{i}-0"))
    for j, (count, model, cpu) in enumerate(waiting):
        selector = f"device.attributes['gpu.nvidia.com'].productName == '{PRODUCT[model]}'" if model else None
        docs.append(claim_template(f"w-{j}", count=count, selector=selector))
        docs.append(pod(f"w-{j}", template=f"w-{j}", start_after="1s", requests={"cpu": str(cpu)}))
    sim = run(*docs)
    free: dict[str, int] = {}
    for i, (_, gpus, _, _) in enumerate(nodes):
        free[f"n{i}-0"] = gpus
    for claim in sim.claims.values():
        allocation = claim.get("status", {}).get("allocation")
        for r in allocation["devices"]["results"] if allocation else []:
            free[r["pool"]] -= 1
    model_of = {f"n{i}-0": model for i, (model, _, _, _) in enumerate(nodes)}
    pending = [(count, model) for j, (count, model, _) in enumerate(waiting) if sim.phase(f"w-{j}") == "Pending"]
    usable = sum(
        left for node, left in free.items()
        if any(count <= left and model in (None, model_of[node]) for count, model in pending)
    )
    total_free = sum(free.values())
    frag = _frag(sim)
    assert (frag["free"], frag["usable"]) == (total_free, usable)
    assert frag["stranded"] == (total_free - usable if pending else 0)
    assert frag["pendingPods"] == len(pending)
