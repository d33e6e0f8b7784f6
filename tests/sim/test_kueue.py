"""Kueue's admission in ``kubedra simulate`` (``sim.kueue``), without a control plane: cases derived from Kueue
v0.17's source (``pkg/cache/queue/cluster_queue.go``: order and requeueing by queueing strategy;
``pkg/scheduler/flavorassigner``: flavors in order, taints and node labels; ``pkg/podset``: what admission adds to
the pods). ``tests/kueue`` runs the real controller manager on the same shapes at t=0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.report import build_report
from kubedra.sim.run import SimulationResult
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "kueue.yaml"
QUEUE = "kueue.x-k8s.io/queue-name"
V1B2 = "kueue.x-k8s.io/v1beta2"


def flavor(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": labels or {}, **spec}}


def cluster_queue(quotas: dict[str, str], flavors: tuple[str, ...] = ("default",), **spec: Any) -> dict[str, Any]:
    """One resource group covering ``quotas``' resources, each flavor with the same quotas."""
    group = {"coveredResources": list(quotas), "flavors": [
        {"name": f, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]} for f in flavors]}
    return {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [group], **spec}}


def local_queue(namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": "cq"}}


def job(name: str, gpus: int, *, parallelism: int = 1, run_for: str = "1h", start_after: str = "0s",
        priority: str | None = None, queue: str | None = "lq", **pod: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "resources": {
        "limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "1"}}}], **pod}
    if priority:
        spec["priorityClassName"] = priority
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "labels": {QUEUE: queue} if queue else {},
        "annotations": {"kubedra.io/run-for": run_for, "kubedra.io/start-after": start_after}},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": spec}}}


def nodes(count: int = 2, labels: dict[str, str] | None = None, name: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name}, "spec": {
        "count": count, "labels": labels or {}, "allocatable": {"cpu": "64", "memory": "512Gi"},
        "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}


def run(*docs: dict[str, Any]) -> SimulationResult:
    return simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options(fragmentation_samples=0))


def admitted(result: SimulationResult, at: float | None = None) -> dict[str, str]:
    """Job name -> the admission message, for admissions at ``at`` (any time where None)."""
    return {e.object.rsplit("/", 1)[1]: e.message for e in result.events
            if e.type == "Admitted" and (at is None or e.time == at)}


def started(result: SimulationResult) -> dict[str, float]:
    """Job name -> when its first pod was scheduled."""
    out: dict[str, float] = {}
    for e in result.events:
        if e.type == "Scheduled":
            owner = result.state.pods[e.object.split(" ", 1)[1]].owner
            out.setdefault(owner.rsplit("/", 1)[1], e.time)
    return out


QUOTA_8 = {"cpu": "64", "nvidia.com/gpu": "8"}


def test_a_quota_for_two_of_three_jobs_admits_two_and_the_third_when_the_first_finishes() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(),
                 job("a", 4, run_for="1h"), job("b", 4, run_for="2h"), job("c", 4))
    assert set(admitted(result, 0.0)) == {"a", "b"}
    assert started(result) == {"a": 0.0, "b": 0.0, "c": 3600.0}
    (why,) = [e.message for e in result.events if e.type == "Inadmissible"]
    assert "insufficient unused quota for nvidia.com/gpu in flavor default, 4 more needed" in why


def test_a_job_counts_parallelism_pods_against_quota() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(),
                 job("wide", 3, parallelism=3), job("small", 1))
    assert set(admitted(result, 0.0)) == {"small"}  # 9 GPUs never fit; BestEffortFIFO goes on


def test_flavors_are_tried_in_order_and_the_chosen_ones_node_labels_join_the_pods_node_selector() -> None:
    result = run(flavor("on-demand", {"capacity": "on-demand"}), flavor("spot", {"capacity": "spot"}),
                 cluster_queue({"nvidia.com/gpu": "4", "cpu": "64"}, ("on-demand", "spot")), local_queue(),
                 nodes(1, {"capacity": "on-demand"}, "od"), nodes(1, {"capacity": "spot"}, "sp"),
                 job("a", 4), job("b", 4), job("c", 4))
    messages = admitted(result, 0.0)
    assert "nvidia.com/gpu: on-demand" in messages["a"] and "nvidia.com/gpu: spot" in messages["b"]
    assert "c" not in messages
    placed = {r.owner.rsplit("/", 1)[1]: (r.pod.spec.node_selector, r.pod.spec.node_name)
              for r in result.state.pods.values()}
    assert placed["a"] == ({"capacity": "on-demand"}, "od-0")
    assert placed["b"] == ({"capacity": "spot"}, "sp-0")


def test_a_flavor_whose_labels_the_pods_node_selector_refuses_is_skipped() -> None:
    result = run(flavor("on-demand", {"capacity": "on-demand"}), flavor("spot", {"capacity": "spot"}),
                 cluster_queue(QUOTA_8, ("on-demand", "spot")), local_queue(),
                 nodes(1, {"capacity": "spot"}), job("a", 4, nodeSelector={"capacity": "spot"}))
    assert "nvidia.com/gpu: spot" in admitted(result, 0.0)["a"]


def test_an_untolerated_flavor_taint_skips_the_flavor_and_a_flavor_toleration_joins_the_pods() -> None:
    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    result = run(flavor("tainted", {"pool": "a"}, nodeTaints=[taint]),
                 flavor("tolerated", {"pool": "b"}, tolerations=[{"key": "x", "operator": "Exists"}]),
                 cluster_queue(QUOTA_8, ("tainted", "tolerated")), local_queue(),
                 nodes(1, {"pool": "b"}), job("a", 4))
    assert "nvidia.com/gpu: tolerated" in admitted(result, 0.0)["a"]
    (pod,) = result.state.pods.values()
    assert [t.key for t in pod.pod.spec.tolerations] == ["x"]


@pytest.mark.parametrize(("strategy", "expected"), [("BestEffortFIFO", {"head", "small"}), ("StrictFIFO", {"head"})])
def test_strict_fifo_blocks_on_a_head_that_does_not_fit_best_effort_goes_on(
    strategy: str, expected: set[str]
) -> None:
    """``head`` runs; ``big`` (created next) does not fit what is left; ``small`` (created last) would."""
    result = run(flavor("default"), cluster_queue(QUOTA_8, queueingStrategy=strategy), local_queue(), nodes(),
                 job("head", 4), job("big", 8, start_after="1s"), job("small", 2, start_after="2s"))
    assert set(admitted(result).keys()) >= expected
    assert {k for k, v in started(result).items() if v < 3600} == expected


def test_priority_goes_before_creation_time() -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    result = run(high, flavor("default"), cluster_queue({"cpu": "64", "nvidia.com/gpu": "4"}), local_queue(), nodes(),
                 job("running", 4, run_for="10m"), job("early", 4, start_after="1s"),
                 job("urgent", 4, start_after="2s", priority="high"))
    assert started(result) == {"running": 0.0, "urgent": 600.0, "early": 4200.0}


def test_a_namespace_the_selector_does_not_select_or_a_missing_local_queue_holds_the_job() -> None:
    cq = cluster_queue(QUOTA_8)
    del cq["spec"]["namespaceSelector"]  # nil: no namespace
    result = run(flavor("default"), cq, local_queue(), nodes(), job("a", 1), job("b", 1, queue="nope"))
    assert admitted(result) == {} and started(result) == {}
    reasons = {e.object: e.message for e in result.events if e.type == "Inadmissible"}
    assert reasons == {"Job default/a": "Workload namespace doesn't match ClusterQueue selector",
                       "Job default/b": "LocalQueue nope doesn't exist"}


def test_a_resource_no_group_covers_never_fits() -> None:
    result = run(flavor("default"), cluster_queue({"cpu": "64"}), local_queue(), nodes(), job("a", 1))
    assert admitted(result) == {}
    assert [e.message for e in result.events if e.type == "Inadmissible"] == [
        "resource nvidia.com/gpu unavailable in ClusterQueue"]


def test_a_job_without_the_label_is_not_held() -> None:
    result = run(flavor("default"), cluster_queue({"cpu": "64", "nvidia.com/gpu": "1"}), local_queue(), nodes(),
                 job("free", 4, queue=None))
    assert started(result) == {"free": 0.0} and admitted(result) == {}


def test_without_kueue_objects_a_queued_job_runs_on_arrival_with_a_note() -> None:
    scenario = build_scenario(load_text(yaml.safe_dump_all([nodes(), job("a", 1)])))
    (note,) = [n for n in scenario.notes if "Kueue" in n]
    assert "as if Kueue were not installed" in note


def test_what_is_not_modelled_is_noted_once_each() -> None:
    cq = cluster_queue(QUOTA_8, flavorFungibility={"whenCanBorrow": "TryNextFlavor"},
                       preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                   "borrowWithinCohort": {"policy": "LowerPriority"}})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {QUEUE: "lq"}},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {
                      "metadata": {"labels": {"app": "d"}}, "spec": job("x", 1)["spec"]["template"]["spec"]}}}
    deployment["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    scenario = build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cq, local_queue(), nodes(),
                                                            deployment])))
    kueue_notes = [n for n in scenario.notes if "Kueue" in n or "ClusterQueue" in n]
    assert any("spec.flavorFungibility" in n for n in kueue_notes)
    assert any("spec.preemption.borrowWithinCohort" in n for n in kueue_notes)  # the others are modelled
    assert not any("withinClusterQueue" in n or "reclaimWithinCohort" in n for n in kueue_notes)
    assert any("Deployment default/d" in n and "batch/v1 Jobs, JobSets, RayJobs and plain Pods only" in n
               for n in kueue_notes)
    assert len(kueue_notes) == len(set(kueue_notes)) == 3


@pytest.mark.parametrize(("change", "field"), [
    (lambda cq: cq["spec"].update(queueingStrategy="Fifo"), "spec.queueingStrategy"),
    (lambda cq: cq["spec"].update(bogus=1), "spec.bogus"),
    (lambda cq: cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(nominalQuota="lots"),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
])
def test_an_invalid_cluster_queue_is_refused_naming_its_field(change: Any, field: str) -> None:
    cq = cluster_queue(QUOTA_8)
    change(cq)
    with pytest.raises(InvalidInputError) as refused:
        build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cq, local_queue()])))
    (problem,) = refused.value.problems
    assert problem.location.object == "ClusterQueue/cq" and problem.location.field == field


def test_the_cli_exits_2_naming_the_file_object_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([flavor("default", nodeLabelz={"a": "b"})]))
    assert main(["simulate", "-q", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "ResourceFlavor/default" in err and "nodeLabelz" in err


def test_the_example_does_what_its_header_says() -> None:
    result = simulate(build_scenario(load_text(EXAMPLE.read_text())), Options(fragmentation_samples=0))
    assert set(admitted(result, 0.0)) == {"train-a", "train-b", "train-c"}
    assert started(result)["train-d"] == 3600.0
    assert "nvidia.com/gpu: spot" in admitted(result)["train-c"]
    nodes_of = {r.owner.rsplit("/", 1)[1]: r.pod.spec.node_name for r in result.state.pods.values()}
    assert nodes_of["train-c"] == "h100-spot-0"


def test_the_summary_says_how_long_workloads_waited_for_admission(capsys: pytest.CaptureFixture[str]) -> None:
    # Quota for one 8-GPU Job: b waits the hour a runs; c asks for more than the quota ever holds and never runs.
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(),
                 job("a", 8), job("b", 8), job("c", 16))
    wait = build_report(result).summary["kueueAdmission"]
    assert (wait["queued"], wait["admitted"], wait["neverAdmitted"]) == (3, 2, ["Job default/c"])
    assert (wait["max"], wait["longest"]) == ("1h", "Job default/b")
    assert main(["simulate", "-f", str(EXAMPLE)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Kueue admission wait")]
    assert lines and "(Job default/train-d)" in lines[0]


def test_the_summary_names_no_longest_waiter_where_nothing_waited() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(), job("a", 8))
    wait = build_report(result).summary["kueueAdmission"]
    assert (wait["admitted"], wait["max"], wait["longest"]) == (1, "0s", "")
