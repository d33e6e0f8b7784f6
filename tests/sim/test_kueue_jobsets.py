"""Kueue's admission of JobSets in ``kubedra simulate`` (``sim.kueue_controller``), as Kueue v0.17's ``jobset``
integration makes their Workload (``pkg/controller/jobs/jobset``: one pod set per replicated job, ``replicas x
min(parallelism, completions)`` pods; ``RunWithPodSetsInfo`` merges each pod set's flavor into its template;
``Finished`` on the JobSet's Completed or Failed condition). ``tests/kueue`` runs the real controller on the same
shapes at t=0."""

from __future__ import annotations

from typing import Any

import yaml
from tests.sim.test_kueue import QUEUE, QUOTA_8, admitted, cluster_queue, flavor, job, local_queue, nodes, run

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario


def jobset(name: str, *replicated: tuple[str, int, int, int], run_for: str = "1h", start_after: str = "0s",
           queue: str | None = "lq", suspend: bool = False, **spec: Any) -> dict[str, Any]:
    """``replicated``: (name, replicas, parallelism, GPUs per pod) for each replicated job."""
    rjobs = [{"name": rname, "replicas": replicas, "template": {"spec": job("x", gpus, parallelism=parallelism)["spec"]}}
             for rname, replicas, parallelism, gpus in replicated]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {
        "name": name, "labels": {QUEUE: queue} if queue else {},
        "annotations": {"kubedra.io/run-for": run_for, "kubedra.io/start-after": start_after}},
        "spec": {"replicatedJobs": rjobs, **({"suspend": True} if suspend else {}), **spec}}


def jobset_starts(result: Any) -> dict[str, float]:
    """JobSet name -> when its first pod was scheduled."""
    out: dict[str, float] = {}
    for e in result.events:
        if e.type == "Scheduled":
            labels = result.state.pods[e.object.split(" ", 1)[1]].pod.metadata.labels
            out.setdefault(labels.get("jobset.sigs.k8s.io/jobset-name", "?"), e.time)
    return out


def test_a_jobset_is_one_workload_counting_replicas_times_parallelism() -> None:
    """``big``: 2 replicas x 2 pods x 2 GPUs = 8 of 8; ``late`` (1 GPU) waits until ``big`` completes."""
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(),
                 jobset("big", ("w", 2, 2, 2)), jobset("late", ("w", 1, 1, 1), start_after="1s"))
    assert admitted(result, 0.0) == {"big": "ClusterQueue cq (cpu: default, nvidia.com/gpu: default)"}
    assert jobset_starts(result) == {"big": 0.0, "late": 3600.0}
    released = [e for e in result.events if e.type == "QuotaReleased"]
    assert [(e.object, e.time) for e in released][:1] == [("JobSet default/big", 3600.0)]
    (why,) = [e.message for e in result.events if e.type == "Inadmissible"]
    assert "insufficient unused quota for nvidia.com/gpu in flavor default, 1 more needed" in why


def test_each_replicated_job_gets_its_own_pod_sets_flavor() -> None:
    """The leader's pod set takes the first flavor; the workers' no longer fit there and take the second."""
    result = run(flavor("a", {"pool": "a"}), flavor("b", {"pool": "b"}),
                 cluster_queue({"cpu": "64", "nvidia.com/gpu": "4"}, ("a", "b")), local_queue(),
                 nodes(1, {"pool": "a"}, "na"), nodes(1, {"pool": "b"}, "nb"),
                 jobset("js", ("leader", 1, 1, 1), ("workers", 1, 2, 2)))
    assert "nvidia.com/gpu: a" in admitted(result)["js"] and "nvidia.com/gpu: b" in admitted(result)["js"]
    placed = {r.pod.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]: (r.pod.spec.node_selector["pool"],
                                                                             r.pod.spec.node_name)
              for r in result.state.pods.values()}
    assert placed == {"leader": ("a", "na-0"), "workers": ("b", "nb-0")}


def test_a_jobset_written_suspended_is_admitted_and_resumed() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(), jobset("js", ("w", 1, 1, 1),
                                                                                          suspend=True))
    assert jobset_starts(result) == {"js": 0.0}


def test_without_kueue_objects_a_queued_jobset_runs_unless_suspended() -> None:
    result = run(nodes(), jobset("on", ("w", 1, 1, 1)), jobset("off", ("w", 1, 1, 1), suspend=True))
    assert jobset_starts(result) == {"on": 0.0}


def test_a_jobset_that_never_fits_holds_its_jobs() -> None:
    result = run(flavor("default"), cluster_queue(QUOTA_8), local_queue(), nodes(), jobset("js", ("w", 3, 1, 4)),
                 job("j", 4, start_after="1s"))
    assert set(admitted(result)) == {"j"} and jobset_starts(result) == {"?": 1.0}
    assert not any(p.pod.metadata.labels.get("jobset.sigs.k8s.io/jobset-name") for p in result.state.pods.values())


def test_a_queued_jobset_is_no_longer_noted_as_unmodelled() -> None:
    scenario = build_scenario(load_text(yaml.safe_dump_all([flavor("default"), cluster_queue(QUOTA_8),
                                                            local_queue(), nodes(), jobset("js", ("w", 1, 1, 1))])))
    assert not any("JobSet default/js" in n for n in scenario.notes)
