"""The FGD artifact's policies: the paper's fragmentation of a node, and where fgd, best-fit and random put pods."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.scenarios import nodepool, pod, run

from kubedra.scheduler.fgd import TaskShape, fragmentation, node_fragment, placed
from kubedra.scheduler.scoring import Policy

Doc = dict[str, Any]
SHARE = TaskShape(cpu_milli=1000, count=1, fraction=0.5, models=None)
WHOLE = TaskShape(cpu_milli=1000, count=2, fraction=1.0, models=None)
CPU_ONLY = TaskShape(cpu_milli=1000, count=0, fraction=0.0, models=None)
T4_ONLY = TaskShape(cpu_milli=1000, count=1, fraction=1.0, models=frozenset({"Tesla T4"}))


@pytest.mark.parametrize(
    ("lefts", "task", "expected"),
    [
        ((1.0, 0.3, 0.0), SHARE, 0.3),  # the 0.3 left is too little for a half GPU: fragment
        ((1.0, 0.6, 0.0), SHARE, 0.0),  # every idle part can take a half
        ((1.0, 0.6, 0.0), WHOLE, 1.6),  # two whole GPUs are not there: all idle capacity is fragment
        ((1.0, 1.0, 0.6), WHOLE, 0.6),  # it fits; the partly used GPU is the fragment
        ((1.0, 0.5), CPU_ONLY, 1.5),  # a task without GPUs uses none of it (the artifact counts it all)
        ((1.0,), T4_ONLY, 1.0),  # the node's model is not one the task accepts
    ],
)
def test_node_fragment(lefts: tuple[float, ...], task: TaskShape, expected: float) -> None:
    assert node_fragment(lefts, "NVIDIA A10", 64_000, task) == pytest.approx(expected)


def test_no_cpu_left_makes_all_idle_gpu_fragment() -> None:
    assert node_fragment((1.0, 1.0, 0.6), "A", 500, WHOLE) == pytest.approx(2.6)


def test_fragmentation_weights_shapes_and_placement_takes_the_first_devices_that_fit() -> None:
    tasks = [(SHARE, 0.5), (WHOLE, 0.5)]
    assert fragmentation((1.0, 1.0, 0.6), "A", 64_000, tasks) == pytest.approx(0.5 * 0.0 + 0.5 * 0.6)
    assert placed((0.3, 1.0, 0.6), SHARE) == pytest.approx((0.3, 0.5, 0.6))
    assert placed((1.0, 0.6, 1.0), WHOLE) == pytest.approx((0.0, 0.6, 0.0))
    assert placed((1.0, 0.6), WHOLE) is None


def _shares(name: str, amount: int) -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"shares": str(amount)}}}}]}}}}


@pytest.mark.parametrize("policy", [Policy.FGD, Policy.BEST_FIT])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_half_gpu_goes_where_half_a_gpu_is_left(policy: Policy, seed: int) -> None:
    """Two nodes of one GPU; the first half-GPU pod lands somewhere, the second joins it (filling that GPU) instead
    of breaking the other node's whole GPU, which the whole-GPU pod arriving last then gets."""
    sim = run(
        nodepool("t4", count=2, gpus=1, model="T4", shares=1000),
        _shares("half", 500),
        _shares("whole", 1000),
        pod("half-a", template="half", requests={"cpu": "1"}),
        pod("half-b", template="half", requests={"cpu": "1"}, start_after="1s"),
        pod("whole", template="whole", requests={"cpu": "1"}, start_after="2s"),
        policy=policy,
        seed=seed,
    )
    assert sim.node_of("half-a") == sim.node_of("half-b")
    assert sim.phase("whole") == "Running"
    assert sim.summary["gpus"]["capacityInUsePercent"] == 100.0


def test_random_draws_among_feasible_nodes_with_the_seed() -> None:
    def nodes(seed: int) -> list[str]:
        sim = run(
            nodepool("t4", count=8, gpus=1, model="T4"),
            *[pod(f"p{i}", requests={"cpu": "1"}, start_after=f"{i}s") for i in range(8)],
            policy=Policy.RANDOM,
            seed=seed,
        )
        return [sim.node_of(f"p{i}") for i in range(8)]

    assert nodes(1) == nodes(1)
    assert len({tuple(nodes(s)) for s in range(4)}) > 1
