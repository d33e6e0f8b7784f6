"""Consumable shares on the real trace's terms: a GPU whose shares one claim takes all of is held whole, shares are
counted as shares, the capacity in use is reported, and least/most-allocated count shares as use."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.scenarios import controller, nodepool, pod, run

from kubedra.scheduler.scoring import Policy

Doc = dict[str, Any]


def shares_template(name: str, shares: int, count: int = 1) -> Doc:
    exactly: Doc = {"deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"shares": str(shares)}}}
    if count != 1:
        exactly["count"] = count
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_most_allocated_packs_whole_gpus_on_shared_gpus(seed: int, fast_path: bool) -> None:
    """The issue's case: six replicas at once scattered on seeds 0 and 2 when shares were not use."""
    sim = run(
        nodepool("t4", count=4, gpus=2, model="T4", shares=1000),
        shares_template("whole", 1000),
        controller("Deployment", "train", 6, template="whole"),
        policy=Policy.MOST_ALLOCATED,
        seed=seed,
        fast_path=fast_path,
    )
    nodes = [p["spec"]["nodeName"] for p in sim.pods.values()]
    assert sorted(nodes.count(n) for n in set(nodes)) == [2, 2, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_least_allocated_spreads_over_half_used_shared_gpus(seed: int) -> None:
    pods = [pod(f"p{i}", template="half", start_after=f"{i}s") for i in range(4)]
    sim = run(
        nodepool("t4", count=4, gpus=1, model="T4", shares=1000),
        shares_template("half", 500),
        *pods,
        policy=Policy.LEAST_ALLOCATED,
        seed=seed,
    )
    assert len({sim.node_of(f"p{i}") for i in range(4)}) == 4


def test_a_gpu_held_whole_in_a_shared_pool_is_whole_and_shares_are_counted() -> None:
    sim = run(
        nodepool("t4", count=1, gpus=4, model="T4", shares=1000),
        shares_template("whole", 1000, count=2),
        shares_template("part", 250),
        pod("train", template="whole"),
        pod("infer-a", template="part", start_after="1s"),
        pod("infer-b", template="part", start_after="2s"),
    )
    gpus = sim.summary["gpus"]
    # train holds gpu-0 and gpu-1 whole (1000 of 1000 shares each); both 250-share claims fit on gpu-2
    assert (gpus["inUse"], gpus["whole"], gpus["shared"]) == (3, 2, 1)
    # shares consumed and published, beside the share allocations
    assert sim.summary["shares"] == {"allocations": 4, "inUse": 2500, "total": 4000}
    assert sim.summary["devices"] == [{"model": "Tesla T4", "total": 4, "allocated": 2, "sharedDevices": 1}]
    # the GPUs' capacity in use: 2 whole GPUs and 500 of gpu-2's 1000 shares = 2.5 of 4
    assert gpus["capacityInUse"] == pytest.approx(2.5)
    assert gpus["capacityInUsePercent"] == pytest.approx(62.5)
    (t4,) = gpus["models"]
    assert t4["capacityInUse"] == pytest.approx(2.5)


def test_the_table_marks_only_real_shares() -> None:
    from kubedra.cli.simulate_report import pod_table
    from kubedra.sim.report import build_report

    sim = run(
        nodepool("t4", count=1, gpus=2, model="T4", shares=1000),
        shares_template("whole", 1000),
        shares_template("part", 250),
        pod("train", template="whole"),
        pod("infer", template="part", start_after="1s"),
    )
    rows = {row[1]: row[4] for row in pod_table(build_report(sim.result)).rows}
    assert "(share)" not in rows["train"]
    assert rows["infer"].endswith("(share)")


def test_a_mig_gpus_capacity_in_use_is_its_memory_slices_held() -> None:
    from fixtures.scenarios import claim_template

    sim = run(
        nodepool("a100", gpus=2, model="A100-40GB", mig=True),
        claim_template(
            "half", device_class="mig.nvidia.com", selector="device.attributes['gpu.nvidia.com'].profile == '3g.20gb'"
        ),
        pod("half", template="half"),
    )
    gpus = sim.summary["gpus"]
    assert gpus["migPartitioned"] == 1
    assert gpus["capacityInUse"] == pytest.approx(0.5)  # 4 of the GPU's 8 memory slices
