"""Kueue's preemption within a ClusterQueue in ``kubedra simulate`` (``sim.kueue_preemption``): expectations derived
from Kueue v0.17.0's source, each test naming the function it follows (``pkg/scheduler/preemption``:
``SatisfiesPreemptionPolicy``, ``CandidatesOrdering``, ``classicalPreemptions`` and ``fillBackWorkloads``;
``pkg/scheduler/scheduler.go``: the preemptor is not admitted in the cycle that preempts; the jobframework reconciler:
the victim's Job suspended and its quota released once the Job has no active pod). ``tests/kueue`` runs the real
controller on the first two shapes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.sim.test_kueue import cluster_queue, flavor, job, local_queue, nodes

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.kueue_preemption import LOWER, LOWER_OR_NEWER, NEVER, Running, satisfies, victims
from kubedra.sim.run import SimulationResult
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

QUOTA_8 = {"cpu": "64", "nvidia.com/gpu": "8"}
GPU = ("default", "nvidia.com/gpu")


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def run(policy: str | None, *jobs: dict[str, Any]) -> SimulationResult:
    spec = {"preemption": {"withinClusterQueue": policy}} if policy else {}
    docs = [flavor("default"), cluster_queue(QUOTA_8, **spec), local_queue(), nodes(1),
            priority_class("low", 10), priority_class("high", 100), *jobs]
    return simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options(fragmentation_samples=0))


def events(result: SimulationResult, kind: str) -> list[tuple[float, str]]:
    return [(e.time, e.object.split("/", 1)[1]) for e in result.events if e.type == kind
            and e.object.startswith("Job ")]


def started(result: SimulationResult) -> dict[str, list[float]]:
    """Job name -> the start times of its pods."""
    out: dict[str, list[float]] = {}
    for record in result.state.pods.values():
        if record.started_at is not None:
            out.setdefault(record.owner.rsplit("/", 1)[1], []).append(record.started_at)
    return out


def test_a_higher_priority_job_preempts_a_lower_one_which_is_requeued_and_readmitted() -> None:
    """``SatisfiesPreemptionPolicy`` (LowerPriority: 100 > 10); ``scheduler.go`` evicts the victim in one cycle
    and admits the preemptor once its quota is released (the victim's Job has no active pod: at once, its pods
    terminating for their 30 s grace period); the victim, requeued, is admitted when the preemptor ends."""
    result = run(LOWER, job("low", 8, priority="low", run_for="1h"),
                 job("high", 8, priority="high", start_after="1s", run_for="10m"))
    assert events(result, "Preempted") == [(1.0, "low")]
    assert events(result, "Admitted") == [(0.0, "low"), (1.0, "high"), (601.0 + 30.0, "low")]
    (message,) = [e.message for e in result.events if e.type == "Preempted" and e.object.startswith("Job ")]
    assert message.startswith("Preempted to accommodate a workload (Job default/high) due to prioritization in the "
                              "ClusterQueue")
    times = started(result)
    assert times["high"] == [31.0]  # bound once the victim's pod has left its GPUs
    assert times["low"] == [0.0, 631.0]


def test_lower_priority_never_takes_an_equal_priority_job() -> None:
    """``SatisfiesPreemptionPolicy``: LowerPriority needs a strictly lower priority; with none, the head waits."""
    result = run(LOWER, job("first", 8, priority="high", run_for="10m"),
                 job("second", 8, priority="high", start_after="1s", run_for="10m"))
    assert events(result, "Preempted") == []
    assert events(result, "Admitted") == [(0.0, "first"), (600.0, "second")]


def test_without_a_preemption_policy_nothing_is_preempted() -> None:
    result = run(None, job("low", 8, priority="low", run_for="10m"),
                 job("high", 8, priority="high", start_after="1s", run_for="10m"))
    assert events(result, "Preempted") == [] and events(result, "Admitted")[1] == (600.0, "high")


@pytest.mark.parametrize(("policy", "preempted"), [(LOWER_OR_NEWER, [(100.0, "c")]), (LOWER, [])])
def test_lower_or_newer_equal_priority_takes_an_equal_priority_job_created_after_the_preemptor(
        policy: str, preempted: list[tuple[float, str]]) -> None:
    """``b`` (8 GPUs) waits behind ``a``; ``c`` (created after ``b``, same priority) takes the 2 GPUs left. When
    ``a`` ends, ``b`` needs ``c``'s: LowerOrNewerEqualPriority preempts it (equal priority, newer), LowerPriority
    does not."""
    result = run(policy, job("a", 6, run_for="100s"), job("b", 8, start_after="1s", run_for="10m"),
                 job("c", 2, start_after="2s", run_for="1h"))
    assert events(result, "Preempted") == preempted


def test_the_fewest_victims_are_taken_lowest_priority_first_then_added_back() -> None:
    """``classicalPreemptions``: candidates removed lowest priority first (``v1``, then ``v2``) until the 4 GPUs
    fit; ``fillBackWorkloads`` then adds ``v1`` back (4 free without it): only ``v2`` is preempted."""
    docs = [priority_class(f"p{n}", n) for n in (1, 2, 3)]
    result = run(LOWER, *docs, job("v1", 2, priority="p1"), job("v2", 4, priority="p2", start_after="1s"),
                 job("v3", 2, priority="p3", start_after="2s"), job("big", 4, priority="high", start_after="3s"))
    assert events(result, "Preempted") == [(3.0, "v2")]


def _running(key: str, priority: int, gpus: int, admitted_at: float, evicted: bool = False) -> Running:
    return Running(key, priority, admitted_at, int(admitted_at), {GPU: gpus}, admitted_at, evicted)


def test_candidates_ordering_and_fill_back() -> None:
    """``CandidatesOrdering``: evicted first, then lower priority, then the most recently admitted; the victims are
    the prefix that fits with those not needed added back (``fillBackWorkloads``)."""
    running = [_running("old", 1, 2, 0.0), _running("new", 1, 2, 5.0), _running("mid", 2, 4, 3.0)]

    def fits(need: int) -> Any:
        return lambda freed: freed.get(GPU, 0) >= need

    assert [v.key for v in victims(LOWER, 10, 9.0, running, needs={GPU}, fits=fits(2))] == ["new"]
    assert [v.key for v in victims(LOWER, 10, 9.0, running, needs={GPU}, fits=fits(4))] == ["new", "old"]
    assert [v.key for v in victims(LOWER, 10, 9.0, running, needs={GPU}, fits=fits(6))] == ["new", "mid"]
    assert victims(LOWER, 10, 9.0, running, needs={GPU}, fits=fits(9)) == []
    assert victims(LOWER, 2, 9.0, running, needs={("other", "nvidia.com/gpu")}, fits=fits(1)) == []
    evicted = [*running, _running("gone", 5, 2, 1.0, evicted=True)]
    assert [v.key for v in victims(LOWER, 10, 9.0, evicted, needs={GPU}, fits=fits(2))] == ["gone"]


def test_satisfies_preemption_policy() -> None:
    candidate = _running("c", 5, 1, 10.0)
    assert satisfies(LOWER, 6, 20.0, candidate) and not satisfies(LOWER, 5, 0.0, candidate)
    assert satisfies(LOWER_OR_NEWER, 5, 0.0, candidate) and not satisfies(LOWER_OR_NEWER, 5, 20.0, candidate)
    assert not satisfies(NEVER, 9, 0.0, candidate)


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"spec\.preemption\.withinClusterQueue"):
        run("Sometimes", job("a", 1))


def test_borrow_within_cohort_is_noted_not_modelled() -> None:
    cq = cluster_queue(QUOTA_8, cohortName="org", preemption={"withinClusterQueue": LOWER,
                                                              "borrowWithinCohort": {"policy": "LowerPriority"}})
    scenario = build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cq, local_queue(), nodes(1),
                                                            job("a", 1)])))
    assert any("spec.preemption.borrowWithinCohort" in n for n in scenario.notes)
    assert not any("withinClusterQueue" in n or "reclaimWithinCohort" in n for n in scenario.notes)
