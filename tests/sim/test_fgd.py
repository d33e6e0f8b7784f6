"""The FGD artifact's policies: the paper's fragmentation of a node, and where fgd, best-fit and random put pods."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fixtures.scenarios import claim_of, nodepool, pod, run
from hypothesis import given
from hypothesis import strategies as st

from kubedra.scheduler.fgd import TaskShape, fgd_score, fragmentation, node_fragment, placed
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


@pytest.mark.parametrize(("before", "after", "expected"), [
    (1.0, 1.0, 50),  # no change: sigmoid(0) = 0.5
    (1.0, 0.0, 73),  # one GPU less fragment: 100 / (1 + e^-1) = 73.1
    (0.0, 1.0, 26),  # one GPU more: 26.9, truncated
    (0.0, 0.01, 49),  # any growth below 50
])
def test_fgd_score_is_the_artifacts_sigmoid_truncated(before: float, after: float, expected: int) -> None:
    assert fgd_score(before, after) == expected


def _gpu_choice_run(policy: Policy, *, fast_path: bool = True) -> Any:
    """One node of two shared GPUs: a whole-GPU pod holds gpu-0 for 5 s while a half takes gpu-1; once gpu-0 is
    free again a second half arrives, then a whole-GPU pod."""
    return run(
        nodepool("t4", count=1, gpus=2, model="T4", shares=1000),
        _shares("half", 500),
        _shares("whole", 1000),
        pod("early", template="whole", requests={"cpu": "1"}, run_for="5s"),
        pod("half-a", template="half", requests={"cpu": "1"}, start_after="1s"),
        pod("half-b", template="half", requests={"cpu": "1"}, start_after="6s"),
        pod("late", template="whole", requests={"cpu": "1"}, start_after="7s"),
        policy=policy,
        fast_path=fast_path,
    )


@pytest.mark.parametrize("fast_path", [True, False])
def test_fgd_puts_a_share_on_the_gpu_within_the_node_that_grows_fragmentation_least(fast_path: bool) -> None:
    """The second half goes to gpu-1 beside the first (leaving gpu-0 whole for the last pod), not to the first GPU
    that fits (both the node sets' path and the node-by-node walk)."""
    sim = _gpu_choice_run(Policy.FGD, fast_path=fast_path)
    assert sim.allocated_devices(claim_of(sim, "half-b")) == sim.allocated_devices(claim_of(sim, "half-a"))
    assert sim.phase("late") == "Running"


@pytest.mark.parametrize("fast_path", [True, False])
def test_kube_scheduler_keeps_the_allocators_device_order(fast_path: bool) -> None:
    """kube-scheduler's DRA plugin has no device preference: the allocator takes the first GPU that fits (gpu-0),
    the two halves end on two GPUs and the last whole-GPU pod finds none."""
    sim = _gpu_choice_run(Policy.KUBE_SCHEDULER, fast_path=fast_path)
    assert sim.allocated_devices(claim_of(sim, "half-b")) != sim.allocated_devices(claim_of(sim, "half-a"))
    assert sim.phase("late") == "Pending"


def _brute_best(lefts: tuple[float, ...], cpu: int, task: TaskShape, tasks: list[tuple[TaskShape, float]]) -> int:
    """The highest score of any GPU with room for the share, by trying each (the artifact's per-GPU search)."""
    before = sum(w * node_fragment(lefts, "A", cpu, t) for t, w in tasks)
    best = -1
    for i in range(len(lefts)):
        if lefts[i] + 1e-9 >= task.fraction:
            after = list(lefts)
            after[i] -= task.fraction
            frag = sum(w * node_fragment(after, "A", cpu - task.cpu_milli, t) for t, w in tasks)
            best = max(best, math.floor(100 / (1 + math.exp(frag - before))))
    return best


@given(
    st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=8),
    st.sampled_from([0.1, 0.25, 0.5, 0.75]),
)
def test_the_chosen_gpu_scores_best_of_all_gpus_with_room(lefts: list[float], fraction: float) -> None:
    from kubedra.scheduler.fgd import TraceScorer

    task = TaskShape(cpu_milli=1000, count=1, fraction=fraction, models=None)
    tasks = [(task, 0.5), (WHOLE, 0.3), (TaskShape(1000, 1, 0.25, None), 0.2)]
    scorer = TraceScorer.__new__(TraceScorer)
    scorer._model, scorer._memo, scorer._tasks = {}, {}, tasks
    score, chosen = scorer._fgd("n", tuple(lefts), 64_000, task)
    if not any(left >= fraction for left in lefts):
        assert chosen is None
        return
    assert chosen is not None and lefts[chosen] >= fraction
    assert score == _brute_best(tuple(lefts), 64_000, task, tasks)
    earlier = [i for i in range(chosen) if lefts[i] >= fraction]
    for i in earlier:  # a tie goes to the first GPU in the node's order
        after = list(lefts)
        after[i] -= fraction
        assert fgd_score(scorer._fragmentation(tuple(lefts), "", 64_000),
                         scorer._fragmentation(tuple(after), "", 63_000)) < score


def test_trace_policies_score_every_feasible_node() -> None:
    """150 nodes: kube-scheduler scores a sample of 100 (numFeasibleNodesToFind); the artifact's policies score all
    (percentageOfNodesToScore: 100), so best-fit finds the one small node though it is last."""
    sim = run(
        nodepool("a-big", count=149, gpus=1, model="T4", shares=1000),
        nodepool("z-small", count=1, gpus=1, model="T4", shares=1000, allocatable={"cpu": "2", "memory": "512Gi"}),
        _shares("whole", 1000),
        pod("p", template="whole", requests={"cpu": "2"}),
        policy=Policy.BEST_FIT,
    )
    assert sim.node_of("p").startswith("z-small")


@pytest.mark.parametrize("policy", [Policy.FGD, Policy.BEST_FIT])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_tie_goes_to_the_smallest_node_name_as_in_the_artifacts_scheduler(policy: Policy, seed: int) -> None:
    """The artifact's kube-scheduler fork picks the lexicographically smallest of the top-scored nodes: twelve
    identical one-GPU nodes take three pods on the first three names in string order (t4-0, t4-1, t4-10), whatever
    the seed."""
    sim = run(
        nodepool("t4", count=12, gpus=1, model="T4", shares=1000),
        _shares("whole", 1000),
        *[pod(f"p{i}", template="whole", requests={"cpu": "1"}, start_after=f"{i}s") for i in range(3)],
        policy=policy,
        seed=seed,
    )
    assert [sim.node_of(f"p{i}") for i in range(3)] == sorted(f"t4-{i}" for i in range(12))[:3]
