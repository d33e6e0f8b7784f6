"""Stranded capacity and fragmentation in the report: known answers, and a brute-force definition on random clusters."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from fixtures.scenarios import claim_template, nodepool, pod, run, text_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depth import examples
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

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


def test_pending_pods_alike_but_for_their_claim_templates_are_asked_apart() -> None:
    """Two pods with the same cpu ask, one for 2 GPUs, one for 1, both pending (the node has too little cpu): the
    1-GPU pod's claims fit on the free GPU, so it is usable - their generated claims differ only by template."""
    sim = run(
        nodepool("n", count=1, gpus=1, model="T4", allocatable={"cpu": "1", "memory": "64Gi"}),
        claim_template("two", count=2),
        claim_template("one", count=1),
        pod("w-two", template="two", start_after="1s", requests={"cpu": "2"}),
        pod("w-one", template="one", start_after="1s", requests={"cpu": "2"}),
    )
    frag = _frag(sim)
    assert (frag["pendingPods"], frag["free"], frag["usable"], frag["stranded"]) == (2, 1, 1, 0)


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


# ------------------------------------------------------------------------------------------------ over time

arrival_st = st.tuples(st.integers(1, 3), st.integers(0, 40), st.integers(5, 30))


@settings(max_examples=examples(10, 60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(arrival_st, min_size=1, max_size=8))
def test_the_series_matches_the_brute_force_definition_at_every_point(
    gpus: list[int], arrivals: list[tuple[int, int, int]]
) -> None:
    """Nodes of whole T4s; pods (GPUs, arrival, run time) that come and go. At each point of the series, brute force
    from the run's own timeline: free GPUs per node from the Allocated/Deallocated events up to that instant, pods
    waiting = arrived and not yet scheduled; usable = free GPUs on nodes where some waiting pod's count fits."""
    docs: list[Doc] = [nodepool(f"n{i}", count=1, gpus=g, model="T4") for i, g in enumerate(gpus)]
    for j, (count, start, length) in enumerate(arrivals):
        docs.append(claim_template(f"c{j}", count=count))
        docs.append(pod(f"p{j}", template=f"c{j}", start_after=f"{start}s", run_for=f"{length}s"))
    sim = run(*docs)
    events = sim.result.events
    scheduled = sim.times("Pod", "Scheduled")
    series = _frag(sim)["series"]
    assert series, "a run has at least its final point"
    assert [p["seconds"] for p in series] == sorted({p["seconds"] for p in series})
    assert series[-1]["seconds"] == sim.result.end_time
    for point in series:
        t = point["seconds"]
        free = {f"n{i}-0": g for i, g in enumerate(gpus)}
        for e in events:
            if e.time <= t and e.type in ("Allocated", "Deallocated"):
                for device in e.devices:
                    free[device.split("/")[1]] += -1 if e.type == "Allocated" else 1
        waiting = [count for j, (count, start, _) in enumerate(arrivals)
                   if start <= t and scheduled.get(f"p{j}", float("inf")) > t]
        usable = sum(left for left in free.values() if left and any(c <= left for c in waiting))
        total_free = sum(free.values())
        assert (point["free"], point["usable"], point["pendingPods"]) == (total_free, usable, len(waiting)), t
        assert point["stranded"] == (total_free - usable if waiting else 0)


def test_sampling_the_series_changes_no_decision() -> None:
    docs = [nodepool("t4", count=3, gpus=2, model="T4", shares=1000), claim_template("two", count=2),
            claim_template("one", count=1)]
    docs += [pod(f"p{i}", template="two" if i % 3 else "one", start_after=f"{i}s", run_for=f"{7 + i % 5}s")
             for i in range(24)]
    outcomes = []
    for samples in (0, 1000):
        result = simulate(build_scenario(load_text(text_of(*docs)), seed=3), Options(seed=3,
                                                                                       fragmentation_samples=samples))
        outcomes.append([(e.time, e.type, e.object, e.node, e.devices) for e in result.events])
        assert bool(result.fragmentation_series) == bool(samples)
    assert outcomes[0] == outcomes[1]


def test_the_report_reads_its_figures_from_the_runs_last_sample() -> None:
    """The sampler's point at the end of the run is the state the report describes: the report takes its figures
    (``fragmentation_end``), the same as worked out afresh from the final state."""
    from kubedra.sim.report import _fragmentation, build_report

    docs = [nodepool("t4", count=3, gpus=2, model="T4", shares=1000), claim_template("two", count=2),
            claim_template("one", count=1)]
    docs += [pod(f"p{i}", template="two" if i % 3 else "one", start_after=f"{i}s", run_for=f"{30 + i}s")
             for i in range(12)]
    result = simulate(build_scenario(load_text(text_of(*docs)), seed=3), Options(seed=3))
    assert result.fragmentation_end is not None
    reported = dict(build_report(result).summary["fragmentation"])
    del reported["series"]
    afresh = _fragmentation(dataclasses.replace(result, fragmentation_end=None))
    assert reported == afresh and afresh


def _trace_cut() -> str:
    from pathlib import Path

    import yaml

    from kubedra.traces import openb

    cut = Path(__file__).resolve().parents[2] / "examples" / "traces" / "openb"
    nodes = openb.read_nodes((cut / openb.NODE_FILE).read_text())
    tasks = openb.read_tasks((cut / openb.pod_file("default")).read_text(), "pods.csv")
    return yaml.safe_dump_all(openb.documents(nodes, tasks, replay="trace"))


@pytest.mark.parametrize("seed", [*range(12), "trace"])
def test_kept_answers_are_the_allocators_at_every_sample(seed: int | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler's fit check keeps answers per pod shape and node state, and takes the device index's counts:
    at every point of runs with shared and whole GPUs (random clusters; the Alibaba trace's cut, whose nodes are
    alike and change one pod at a time), the usable nodes are those a fresh check with the allocator alone finds,
    node by node and pod by pod."""
    from tests.sim.test_fast_path import random_shared_cluster

    from kubedra.scheduler.claims_fit import ClaimsFit
    from kubedra.sim import fragmentation

    checked: list[int] = []
    usable_nodes = fragmentation._usable_nodes

    def both(state: Any, fit: Any, pending: list[Any], candidates: Any, memo: Any) -> set[str]:
        names = list(candidates)
        kept = usable_nodes(state, fit, pending, names, memo)
        fresh = ClaimsFit(state, fit._explainer.allocator)
        attempts = [a for r in pending if (a := fresh.attempt(r)) is not None]
        alone = {n for n in names if any(fresh.fits(a, state.nodes[n]) for a in attempts)}
        assert kept == alone
        checked.append(len(names))
        return kept

    monkeypatch.setattr(fragmentation, "_usable_nodes", both)
    text = _trace_cut() if seed == "trace" else random_shared_cluster(int(seed))
    simulate(build_scenario(load_text(text)), Options(seed=0, fragmentation_samples=40))
    assert checked


def test_nodes_alike_in_devices_but_not_in_use_are_asked_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four nodes whose slices are alike (no per-GPU attribute tells them apart), their GPUs held by pinned pods
    that end one after another: for a pod wanting three GPUs (and more cpu than any node has, so it keeps waiting)
    only nodes with three free are usable, and a node is asked again once its use changed."""
    import yaml
    from tests.sim.test_fast_path import DRIVER, _class

    docs: list[Doc] = [_class("gpu", f'device.driver == "{DRIVER}"')]
    for i in range(4):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                     "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "10"}}})
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"n{i}"},
                     "spec": {"driver": DRIVER, "nodeName": f"n{i}",
                              "pool": {"name": f"n{i}", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": f"gpu-{d}", "allowMultipleAllocations": True,
                                           "capacity": {"milli": {"value": "1000"}}} for d in range(4)]}})
    for count in (1, 2, 3):
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": f"whole-{count}", "namespace": "default"},
                     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu", "count": count, "capacity": {"requests": {"milli": "1000"}}}}]}}}})

    def pinned(name: str, template: str, node: str | None, start: int, run: int | None, cpu: str = "1") -> Doc:
        annotations = {"kubedra.io/start-after": f"{start}s"}
        if run is not None:
            annotations["kubedra.io/run-for"] = f"{run}s"
        spec: Doc = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                     "resourceClaims": [{"name": "g", "resourceClaimTemplateName": template}]}
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
                "spec": spec}

    docs += [pinned(f"hold-{i}", f"whole-{i}", f"n{i}", 0, 10 * i) for i in (1, 2, 3)]
    docs += [pinned(f"fill-{i}", f"whole-{4 - i}", f"n{i}", 0, 5 + 10 * i) for i in (1, 2, 3)]
    docs.append(pinned("fill-0", "whole-3", "n0", 0, 35))
    docs.append(pinned("wants-three", "whole-3", None, 1, None, cpu="16"))  # waits for cpu no node has
    from kubedra.scheduler.claims_fit import ClaimsFit
    from kubedra.sim import fragmentation

    usable_nodes = fragmentation._usable_nodes
    seen: list[set[str]] = []

    def both(state: Any, fit: Any, pending: list[Any], candidates: Any, memo: Any) -> set[str]:
        names = list(candidates)
        kept = usable_nodes(state, fit, pending, names, memo)
        fresh = ClaimsFit(state, fit._explainer.allocator)
        attempts = [a for r in pending if (a := fresh.attempt(r)) is not None]
        assert kept == {n for n in names if any(fresh.fits(a, state.nodes[n]) for a in attempts)}
        seen.append(kept)
        return kept

    monkeypatch.setattr(fragmentation, "_usable_nodes", both)
    simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options(fragmentation_samples=50))
    assert seen[0] == set() and seen[-1] == {"n0", "n1", "n2", "n3"}
    assert len({frozenset(s) for s in seen}) >= 4, seen
