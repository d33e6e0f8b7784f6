"""Kueue's preemption of JobSets and plain pods in ``kubedra simulate`` (``sim.kueue_victims``): expectations derived
from Kueue v0.17.0's source, each test naming what it follows (the jobframework reconciler's ``stopJob`` and its
quota release once ``!job.IsActive()``; ``jobset_controller.go`` ``Suspend``/``IsActive``; ``pod_controller.go``
``Stop``/``IsActive``; ``IssuePreemptions``: a victim evicted already is not preempted again). ``tests/kueue``
checks which workloads the real controller evicts and admits on the same shapes."""

from __future__ import annotations

from typing import Any

from tests.sim.test_kueue import QUOTA_8, cluster_queue, flavor, job, local_queue, nodes, run
from tests.sim.test_kueue_jobsets import jobset
from tests.sim.test_kueue_pods import POOL, pod
from tests.sim.test_kueue_preemption import priority_class

from kubedra.sim.kueue_preemption import LOWER
from kubedra.sim.run import SimulationResult


def queues() -> list[dict[str, Any]]:
    return [flavor("default", POOL), cluster_queue(QUOTA_8, preemption={"withinClusterQueue": LOWER}),
            local_queue(), nodes(1, POOL), priority_class("low", 10), priority_class("high", 100)]


def prioritized(doc: dict[str, Any], priority: str) -> dict[str, Any]:
    """The JobSet's or Pod's pods given the PriorityClass."""
    if doc["kind"] == "JobSet":
        for rjob in doc["spec"]["replicatedJobs"]:
            rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority
    else:
        doc["spec"]["priorityClassName"] = priority
    return doc


def events(result: SimulationResult, kind: str) -> list[tuple[float, str]]:
    """Kueue's events of ``kind`` (not kube-scheduler's ``Preempted`` on a pod)."""
    return [(e.time, e.object) for e in result.events if e.type == kind
            and (kind != "Preempted" or (e.message or "").startswith("Preempted to accommodate"))]


def test_a_jobset_is_preempted_suspended_requeued_and_resumed_anew() -> None:
    """``jobset`` integration: the JobSet suspended (its Jobs' pods deleted with the 30 s grace period), its quota
    released at once (``IsActive``: no Job with an active pod; terminating ones are not), its Workload requeued; the
    Job admitted at once, its pod bound once the victims' have left; when it ends the JobSet is admitted again and
    its Jobs make their pods anew, under new names."""
    result = run(*queues(), prioritized(jobset("low", ("w", 2, 1, 4), run_for="1h"), "low"),
                 job("high", 8, priority="high", start_after="1s", run_for="10m"))
    assert events(result, "Preempted") == [(1.0, "JobSet default/low")]
    assert events(result, "QuotaReleased")[0] == (1.0, "JobSet default/low")
    assert events(result, "Admitted") == [(0.0, "JobSet default/low"), (1.0, "Job default/high"),
                                          (601.0 + 30.0, "JobSet default/low")]
    deleted = [e for e in result.events if e.type == "Deleted" and e.object.startswith("Pod default/low")]
    assert [e.time for e in deleted] == [31.0, 31.0]
    made = {r.key: r.started_at for r in result.state.pods.values() if r.owner.startswith("Job/default/low")}
    assert sorted(t for t in made.values() if t is not None) == [0.0, 0.0, 631.0, 631.0]


def test_a_plain_pod_is_preempted_deleted_and_its_workload_gone() -> None:
    """``pod`` integration (``Stop``): the pod deleted; its quota held while it terminates (``IsActive``: a Running
    pod within its grace period) and released when it has left; the pod gone for good, its Workload with it (the
    garbage collector): never admitted again. The preemptor waits for the quota, then is admitted."""
    result = run(*queues(), prioritized(pod("low", 8), "low"),
                 prioritized(pod("high", 8, start_after="1s", run_for="10m"), "high"))
    assert events(result, "Preempted") == [(1.0, "Pod default/low")]
    assert events(result, "QuotaReleased")[0] == (31.0, "Pod default/low")
    assert events(result, "Admitted") == [(0.0, "Pod default/low"), (31.0, "Pod default/high")]
    assert result.state.pods["default/low"].finished_at == 31.0
    assert [e.object for e in result.events if e.type == "Requeued"] == []


def test_a_pod_group_is_deleted_whole_and_an_evicted_victim_is_not_preempted_again() -> None:
    """A group of two 4-GPU pods preempted by an 8-GPU pod: both deleted, the quota released when both have left
    (one with a 60 s grace period); meanwhile a second high-priority pod needing the same quota finds the group
    already evicted (``CandidatesOrdering``: evicted first; ``IssuePreemptions`` skips it) and waits."""
    group = [prioritized(pod(f"g-{i}", 4, group="g", total="2"), "low") for i in range(2)]
    group[1]["spec"]["terminationGracePeriodSeconds"] = 60
    result = run(*queues(), *group, prioritized(pod("high", 8, start_after="1s", run_for="10m"), "high"),
                 prioritized(pod("other", 8, start_after="2s", run_for="10m"), "high"))
    assert events(result, "Preempted") == [(1.0, "Workload default/g")]
    assert [e.time for e in result.events if e.type == "Deleted" and e.object.startswith("Pod default/g-")] == [
        31.0, 61.0]
    assert events(result, "QuotaReleased")[0] == (61.0, "Workload default/g")
    assert events(result, "Admitted") == [(0.0, "Workload default/g"), (61.0, "Pod default/high"),
                                          (661.0, "Pod default/other")]


def test_a_succeeded_pod_of_a_group_is_not_deleted() -> None:
    """``Stop`` skips a pod that has ended (``podSuspended``): only the group's running pod is deleted."""
    group = [prioritized(pod("g-0", 4, group="g", total="2", run_for="1s"), "low"),
             prioritized(pod("g-1", 4, group="g", total="2"), "low")]
    result = run(*queues(), *group, prioritized(pod("high", 8, start_after="5s", run_for="10m"), "high"))
    assert events(result, "Preempted") == [(5.0, "Workload default/g")]
    assert result.state.pods["default/g-0"].pod.status.phase == "Succeeded"
    assert [e.object for e in result.events if e.type == "Deleted"] == ["Pod default/g-1"]


def test_a_rayjob_is_preempted_its_cluster_and_submitter_deleted_and_resumed_with_a_new_cluster() -> None:
    """``rayjob`` integration: the RayJob suspended; ray-operator deletes its RayCluster and submitter Job (their
    pods with the 30 s grace period) and marks it Suspended, its quota released then (``IsActive``); re-admitted
    when the preemptor ends, it makes a new cluster (new pod names) and its deadline counts from then."""
    from tests.sim.test_kueue_rayjobs import QUOTA, rayjob

    docs = [*queues(), job("high", 8, priority="high", start_after="100s", run_for="10m")]
    docs[1] = cluster_queue(QUOTA, preemption={"withinClusterQueue": LOWER})
    ray = rayjob("r", activeDeadlineSeconds=3000)
    for template in (ray["spec"]["rayClusterSpec"]["headGroupSpec"]["template"],
                     ray["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]):
        template["spec"]["priorityClassName"] = "low"
    result = run(*docs, ray)
    assert events(result, "Preempted") == [(100.0, "RayJob default/r")]
    assert events(result, "QuotaReleased")[0] == (100.0, "RayJob default/r")
    assert events(result, "Admitted") == [(0.0, "RayJob default/r"), (100.0, "Job default/high"),
                                          (730.0, "RayJob default/r")]
    ray_pods = [r for r in result.state.pods.values() if r.pod.metadata.name.startswith("r-")]
    first = [r for r in ray_pods if r.arrive_at == 0.0]
    assert len(first) == 3 and all(r.deleted and r.finished_at == 130.0 for r in first)  # head, worker, submitter
    assert len({r.key for r in ray_pods if r.arrive_at == 730.0} - {r.key for r in first}) == 3
    (failed,) = [e for e in result.events if e.type == "Failed" and e.object == "RayJob default/r"]
    assert failed.time == 730.0 + 3000
