"""Kueue's admission of KubeRay RayJobs in ``kubedra simulate`` (``sim.kueue_rayjobs``), as Kueue v0.17's ``rayjob``
integration makes their Workload (``pkg/controller/jobs/rayjob``: ``PodSets`` = ``raycluster.BuildPodSets`` — the
head, one pod set per worker group of ``replicas x numOfHosts`` — plus ``addSubmitterPodSet`` in K8sJobMode;
``RunWithPodSetsInfo`` merges each pod set's flavor into its template; ``Finished`` on Complete or Failed).
``tests/kueue`` runs the real controller on the same shapes at t=0."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.sim.test_kueue import QUEUE, V1B2, admitted, flavor, local_queue, nodes, run

from kubedra.objects.load import load_text
from kubedra.sim.kueue_rayjobs import rayjob_pod_sets
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

QUOTA = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}


def cluster_queue(flavors: dict[str, str]) -> dict[str, Any]:
    """One group covering cpu, memory and GPUs (the default submitter requests memory); ``flavors``: name -> GPUs."""
    group = {"coveredResources": list(QUOTA), "flavors": [
        {"name": f, "resources": [{"name": r, "nominalQuota": gpus if r == "nvidia.com/gpu" else q}
                                  for r, q in QUOTA.items()]} for f, gpus in flavors.items()]}
    return {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [group]}}


def rayjob(name: str, gpus: int = 8, *, replicas: int = 1, hosts: int = 1, run_for: str = "1h",
           start_after: str = "0s", queue: str | None = "lq", **spec: Any) -> dict[str, Any]:
    worker = {"groupName": "gpu", "replicas": replicas, "numOfHosts": hosts, "rayStartParams": {}, "template": {
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.49.0-gpu", "resources": {
            "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.49.0", "resources": {"requests": {"cpu": "2"}}}]}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {
        "name": name, "labels": {QUEUE: queue} if queue else {},
        "annotations": {"kubedra.io/run-for": run_for, "kubedra.io/start-after": start_after}},
        "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
                 "rayClusterSpec": {"headGroupSpec": head, "workerGroupSpecs": [worker]}, **spec}}


def pods_of(result: Any, rayjob_name: str) -> dict[str, tuple[float, dict[str, str]]]:
    """Pod name -> (when it arrived, its node selector), for the RayJob's cluster and submitter pods."""
    return {r.pod.metadata.name: (r.arrive_at, dict(r.pod.spec.node_selector)) for r in result.state.pods.values()
            if r.pod.metadata.name.startswith(f"{rayjob_name}-")}


def role(name: str) -> str:
    return "head" if "-head-" in name else "worker" if "-worker-" in name else "submitter"


def test_pod_sets_as_build_pod_sets_and_add_submitter_pod_set_count_them() -> None:
    """``BuildPodSets``: the head (1), the worker group (replicas 2 x numOfHosts 2 = 4, of 8 GPUs each);
    ``addSubmitterPodSet``: the default submitter (500m CPU, 200Mi); SidecarMode has no submitter pod set."""
    docs = [rayjob("a", replicas=2, hosts=2), rayjob("b", submissionMode="SidecarMode")]
    runs = build_scenario(load_text(yaml.safe_dump_all(docs))).workloads.rayjobs
    sets = {run.name: rayjob_pod_sets(run) for run in runs}
    assert [(ps.name, ps.count) for ps in sets["a"]] == [("head", 1), ("gpu", 4), ("submitter", 1)]
    assert sets["a"][1].requests["nvidia.com/gpu"] == 8 and sets["a"][0].requests == {"cpu": 2000}
    assert sets["a"][2].requests == {"cpu": 500, "memory": 200 * 2**20}
    assert [ps.name for ps in sets["b"]] == ["head", "gpu"]


def test_quota_for_one_rayjob_holds_the_other_until_the_first_finishes() -> None:
    """8 GPUs: ``a`` (8) admitted at once and its cluster made; ``b`` (8) has no pod until ``a``'s submitter Job
    ends (``Finished``: Complete), its quota released then."""
    result = run(flavor("default"), cluster_queue({"default": "8"}), local_queue(), nodes(),
                 rayjob("a"), rayjob("b", start_after="1s"))
    assert admitted(result, 0.0) == {"a": "ClusterQueue cq (cpu: default, memory: default, nvidia.com/gpu: default)"}
    (released,) = [e for e in result.events if e.type == "QuotaReleased" and e.object == "RayJob default/a"]
    assert released.time == 3600.0  # its cluster ready at once, its Ray job 1 h
    b_admitted = [e.time for e in result.events if e.type == "Admitted" and e.object == "RayJob default/b"]
    assert b_admitted == [released.time]
    assert {t for t, _ in pods_of(result, "b").values() if t} and \
        min(t for t, _ in pods_of(result, "b").values()) >= released.time
    assert {role(n) for n in pods_of(result, "b")} == {"head", "worker", "submitter"}


SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{"name": "submit", "image": "rayproject/ray:2.49.0",
                                                                 "resources": {"requests": {"cpu": "500m"}}}]}}


@pytest.mark.parametrize(("spec", "submitter"), [({}, {}), ({"submitterPodTemplate": SUBMITTER}, {"pool": "a"})])
def test_head_and_workers_take_different_flavors_each_given_its_own(spec: dict[str, Any],
                                                                    submitter: dict[str, str]) -> None:
    """``RunWithPodSetsInfo``: the head (CPU) takes flavor ``a`` (4 GPUs); the workers' 8 GPUs fit only ``b``; the
    submitter's pod set takes ``a``. Each cluster pod carries its own pod set's node labels; the submitter only where
    the RayJob has a ``submitterPodTemplate`` (``getSubmitterTemplate`` makes the default anew: the merge is lost)."""
    result = run(flavor("a", {"pool": "a"}), flavor("b", {"pool": "b"}), cluster_queue({"a": "4", "b": "8"}),
                 local_queue(), nodes(1, {"pool": "a"}, "na"), nodes(1, {"pool": "b"}, "nb"), rayjob("r", **spec))
    assert admitted(result)["r"].startswith("ClusterQueue cq (cpu: a, cpu: b, ")
    placed = {role(n): selector for n, (_, selector) in pods_of(result, "r").items()}
    assert placed == {"head": {"pool": "a"}, "worker": {"pool": "b"}, "submitter": submitter}
    assert all(r.pod.spec.node_name for r in result.state.pods.values())


def test_the_deadline_counts_from_the_admission_and_failing_frees_the_quota() -> None:
    """``initRayJobStatusIfNeed`` sets StartTime as the resumed RayJob leaves New: ``b`` (deadline 600 s), admitted
    when ``a`` finishes, fails 600 s after that (its Ray job runs 1 h), and its quota is released then."""
    result = run(flavor("default"), cluster_queue({"default": "8"}), local_queue(), nodes(),
                 rayjob("a", run_for="10m"), rayjob("b", start_after="1s", activeDeadlineSeconds=600))
    (at,) = [e.time for e in result.events if e.type == "Admitted" and e.object == "RayJob default/b"]
    (failed,) = [e for e in result.events if e.type == "Failed" and e.object == "RayJob default/b"]
    assert failed.time == at + 600 and failed.message.startswith("DeadlineExceeded")
    assert [e.time for e in result.events if e.type == "QuotaReleased" and e.object == "RayJob default/b"] == [
        failed.time]


def test_without_kueue_queues_a_labelled_rayjob_runs_at_once_unless_written_suspended() -> None:
    docs = [nodes(), rayjob("a"), rayjob("b", suspend=True)]
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    assert any("RayJob default/a" in n and "as if Kueue were not installed" in n for n in scenario.notes)
    result = simulate(scenario, Options(fragmentation_samples=0))
    assert {role(n) for n in pods_of(result, "a")} == {"head", "worker", "submitter"}
    assert not pods_of(result, "b")


def test_with_kueue_queues_a_rayjob_is_not_among_those_run_as_if_admitted() -> None:
    docs = [flavor("default"), cluster_queue({"default": "8"}), local_queue(), nodes(), rayjob("a", suspend=True)]
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    assert not [n for n in scenario.notes if "as if admitted" in n]
    result = simulate(scenario, Options(fragmentation_samples=0))
    assert "a" in admitted(result, 0.0)  # written suspended, as Kueue's webhook would make it: resumed on admission
    assert {role(n) for n in pods_of(result, "a")} == {"head", "worker", "submitter"}
