"""A preemption victim's controller replaces it as kube-controller-manager v1.37.2's do (``sim.replacements``): a
ReplicaSet at once with a new name, a StatefulSet with the same name once the victim is gone, a Job after its
back-off and within its backoffLimit; a bare pod is not replaced."""

from __future__ import annotations

from typing import Any

import msgspec
from fixtures.scenarios import Run, claim_template, controller, job, nodepool, pod, run, text_of

from kubedra.objects.load import load_text
from kubedra.sim.manifests import JobSpec
from kubedra.sim.replacements import job_backoff, job_rules
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import simulate

Doc = dict[str, Any]
NODE = {"cpu": "4", "memory": "64Gi"}
NO_ROOM = ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
           "1 No preemption victims found for incoming pod.")


def priority_class(name: str, value: int) -> Doc:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def urgent(start_after: str = "1m") -> Doc:
    return pod("urgent", requests={"cpu": "1"}, priorityClassName="high", start_after=start_after)


def cluster(*workloads: Doc) -> Run:
    return run(nodepool("n", gpus=None, allocatable=NODE), priority_class("low", 10), priority_class("high", 1000),
               *workloads)


def lines(sim: Run) -> dict[str, tuple[str, str]]:
    return {line.pod.split("/", 1)[1]: (line.phase, line.reason) for line in build_report(sim.result).pods}


def preempted(sim: Run) -> list[str]:
    return [e["object"].split("/", 1)[1] for e in sim.events if e["type"] == "Preempted"]


def test_a_deployment_s_victim_is_replaced_at_once_and_the_new_pod_waits_with_kube_scheduler_s_message() -> None:
    """Issue 37 item 7, as the real control plane does it: before the fix the victim was simply gone (3 pods left)."""
    sim = cluster(controller("Deployment", "batch", 4, requests={"cpu": "1"}, priorityClassName="low"), urgent())
    [victim] = preempted(sim)
    created = [e for e in sim.events if e["type"] == "Created" and e["object"].startswith("Pod ")]
    assert len(created) == 1 and created[0]["seconds"] == 60.0  # when the victim starts terminating
    new = created[0]["object"].split("/", 1)[1]
    assert new != victim and new.rsplit("-", 1)[0] == victim.rsplit("-", 1)[0]  # generateName <replicaset>-
    assert victim in created[0]["message"] and created[0]["message"].startswith("ReplicaSet default/batch-")
    report = lines(sim)
    assert report[victim][0] == "Deleted"
    assert report[new] == ("Pending", NO_ROOM)
    assert sim.phase("urgent") == "Running"
    alive = [name for name, (phase, _) in report.items() if name.startswith("batch-") and phase != "Deleted"]
    assert len(alive) == 4  # the Deployment keeps its replicas
    assert sim.summary["pods"] == {"total": 6, "running": 4, "succeeded": 0, "pending": 1, "deleted": 1}


def test_a_replacement_gets_new_claims_from_its_templates() -> None:
    sim = run(nodepool("n", gpus=2, allocatable=NODE), claim_template("one-gpu"), priority_class("low", 10),
              priority_class("high", 1000),
              controller("ReplicaSet", "batch", 2, template="one-gpu", requests={"cpu": "2"}, priorityClassName="low"),
              urgent())
    [victim] = preempted(sim)
    [new] = [n for n in sim.pods if n.startswith("batch-") and n != victim and sim.phase(n) == "Pending"]
    statuses = sim.pods[new]["status"]["resourceClaimStatuses"]
    assert [s["resourceClaimName"].startswith(f"{new}-gpu-") for s in statuses] == [True]
    assert sim.pods[new]["metadata"]["ownerReferences"][0]["name"] == "batch"


def test_a_statefulset_s_victim_comes_back_with_its_name_once_it_is_gone() -> None:
    sim = cluster(controller("StatefulSet", "db", 4, requests={"cpu": "1"}, priorityClassName="low"), urgent())
    [victim] = preempted(sim)
    assert victim.startswith("db-")
    timeline = sim.timeline(f"Pod {victim}")
    assert timeline[-2:] == [(90.0, "Created"), (90.0, "Pending")]  # after the 30 s grace period, the same name
    assert (90.0, "Deleted") in timeline
    assert lines(sim)[victim] == ("Pending", NO_ROOM)
    assert sorted(sim.pods) == ["db-0", "db-1", "db-2", "db-3", "urgent"]


def test_a_bare_pod_is_not_replaced() -> None:
    sim = cluster(*(pod(f"b{i}", requests={"cpu": "1"}, priorityClassName="low") for i in range(4)), urgent())
    assert len(preempted(sim)) == 1
    assert not any(e["type"] == "Created" and e["object"].startswith("Pod ") for e in sim.events)
    assert sim.summary["pods"]["total"] == 5


def test_a_job_counts_its_victim_as_failed_and_replaces_it_after_the_back_off() -> None:
    """The default Job (no podFailurePolicy): the terminating victim is failed at once, its replacement is made 10 s
    later (``DefaultJobPodFailureBackOff``) while the victim still terminates."""
    sim = cluster(job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low"),
                  urgent())
    [victim] = preempted(sim)
    [created] = [e for e in sim.events if e["type"] == "Created" and e["object"].startswith("Pod ")]
    assert created["seconds"] == 70.0 and created["message"].startswith("Job default/train created pod train-")
    new = created["object"].split("/", 1)[1]
    assert victim in created["message"] and lines(sim)[victim][0] == "Deleted"
    assert lines(sim)[new] == ("Pending", NO_ROOM)


def test_past_its_backoff_limit_a_job_fails_and_makes_no_more_pods() -> None:
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["backoffLimit"] = 0
    sim = cluster(docs, urgent())
    assert len(preempted(sim)) == 1
    assert not any(e["type"] == "Created" and e["object"].startswith("Pod ") for e in sim.events)
    [failed] = [e for e in sim.events if e["object"] == "Job default/train"]
    assert failed["type"] == "Failed" and failed["message"].startswith("BackoffLimitExceeded")


def test_a_job_whose_failure_policy_ignores_disruptions_replaces_the_victim_once_it_is_gone() -> None:
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["backoffLimit"] = 0
    docs["spec"]["podFailurePolicy"] = {"rules": [{"action": "Ignore",
                                                   "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    sim = cluster(docs, urgent())
    [created] = [e for e in sim.events if e["type"] == "Created" and e["object"].startswith("Pod ")]
    # podReplacementPolicy Failed: once the victim is gone (90 s), after the back-off, which counts ignored failures
    # too (job_controller.go: newBackoffRecord takes every failed pod, the failed count only the non-ignored ones)
    assert created["seconds"] == 100.0
    assert not any(e["object"] == "Job default/train" for e in sim.events)


def test_an_indexed_job_s_replacement_keeps_the_victim_s_index() -> None:
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["completionMode"] = "Indexed"
    sim = cluster(docs, urgent())
    [victim] = preempted(sim)
    [created] = [e for e in sim.events if e["type"] == "Created" and e["object"].startswith("Pod ")]
    new = created["object"].split("/", 1)[1]
    index = victim.split("-")[1]
    assert new.startswith(f"train-{index}-") and new != victim
    assert sim.pods[new]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == index


def test_a_victim_with_a_run_time_does_not_finish_after_it_is_gone() -> None:
    """Failed before: the victim's ``run-for`` ended after its deletion and freed its cpu a second time, so a later
    pod was bound beside the preemptor on a full node."""
    sim = cluster(pod("b", requests={"cpu": "4"}, priorityClassName="low", run_for="10m"),
                  pod("urgent", requests={"cpu": "4"}, priorityClassName="high", start_after="1m"),
                  pod("late", requests={"cpu": "4"}, priorityClassName="low", start_after="11m"))
    assert not any(e["type"] == "Finished" for e in sim.events)
    assert sim.phase("late") == "Pending"


def test_a_statefulset_s_recreated_pod_runs_its_own_time() -> None:
    """The victim's end of ``run-for`` is not the recreated pod's (they share a name)."""
    sim = cluster(controller("StatefulSet", "db", 4, requests={"cpu": "1"}, priorityClassName="low", run_for="10m"),
                  urgent())
    [victim] = preempted(sim)
    timeline = sim.timeline(f"Pod {victim}")
    assert timeline[-3:] == [(90.0, "Pending"), (600.0, "Scheduled"), (1200.0, "Deleted")]


def test_a_job_that_fails_deletes_its_active_pods_and_never_makes_the_ones_in_back_off() -> None:
    """``deleteActivePods`` once the Job fails: the running pods after their grace period, the pending replacement
    at once; a replacement still in its back-off is never made."""
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["backoffLimit"] = 1
    second = pod("urgent2", requests={"cpu": "1"}, priorityClassName="high", start_after="2m")
    sim = cluster(docs, urgent(), second)
    first, last = preempted(sim)
    [made] = [e["object"].split("/", 1)[1] for e in sim.events if e["type"] == "Created" and "Pod " in e["object"]]
    [failed] = [e for e in sim.events if e["object"] == "Job default/train"]
    assert (failed["seconds"], failed["type"]) == (120.0, "Failed")
    report = lines(sim)
    train = {name: line for name, line in report.items() if name.startswith("train-")}
    assert len(train) == 5 and all(phase == "Deleted" for phase, _ in train.values())
    assert train[made][1] == "Job default/train failed: BackoffLimitExceeded"
    assert sim.timeline(f"Pod {made}")[-1] == (120.0, "Deleted")  # pending: deleted at once
    others = set(train) - {first, last, made}
    assert {sim.timeline(f"Pod {name}")[-1] for name in others} == {(150.0, "Deleted")}
    assert report["urgent"][0] == report["urgent2"][0] == "Running"
    assert sim.summary["pods"]["total"] == 7


def test_a_job_that_fails_during_a_back_off_never_makes_the_pod() -> None:
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["backoffLimit"] = 1
    second = pod("urgent2", requests={"cpu": "1"}, priorityClassName="high", start_after="65s")
    sim = cluster(docs, urgent(), second)
    assert len(preempted(sim)) == 2
    assert not any(e["type"] == "Created" and "Pod " in e["object"] for e in sim.events)
    assert sim.summary["pods"]["total"] == 6  # the four the Job made and the two urgent pods


def test_a_fail_job_rule_on_disruptions_fails_the_job_once_the_victim_is_gone() -> None:
    docs = job("train", parallelism=4, completions=4, requests={"cpu": "1"}, priorityClassName="low")
    docs["spec"]["podFailurePolicy"] = {"rules": [{"action": "FailJob",
                                                   "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    sim = cluster(docs, urgent())
    [failed] = [e for e in sim.events if e["object"] == "Job default/train"]
    assert (failed["seconds"], failed["message"]) == (
        90.0, "PodFailurePolicy: Pod matched a FailJob rule of the podFailurePolicy")
    assert not any(e["type"] == "Created" and "Pod " in e["object"] for e in sim.events)
    assert {phase for name, (phase, _) in lines(sim).items() if name.startswith("train-")} == {"Deleted"}


def test_progress_counts_the_replacements_in_its_total() -> None:
    docs = [nodepool("n", gpus=None, allocatable=NODE), priority_class("low", 10), priority_class("high", 1000),
            controller("Deployment", "batch", 4, requests={"cpu": "1"}, priorityClassName="low"), urgent()]
    calls: list[tuple[int, int]] = []
    simulate(build_scenario(load_text(text_of(*docs))), progress=lambda done, total: calls.append((done, total)))
    assert all(done <= total for done, total in calls)
    assert calls[0] == (0, 5) and calls[-1] == (5, 6)  # 4 + urgent, then the replacement (never bound)


def test_a_daemonset_s_victim_is_replaced_on_its_node_once_it_is_gone() -> None:
    """The node's terminating daemon pod still counts as its pod: the new one (another name, pinned to the same node)
    comes when the victim is gone."""
    daemon = controller("DaemonSet", "agent", 1, requests={"cpu": "1"}, priorityClassName="low")
    del daemon["spec"]["replicas"]
    filler = controller("Deployment", "filler", 3, requests={"cpu": "1"}, priorityClassName="mid")
    sim = run(nodepool("n", gpus=None, allocatable=NODE), priority_class("low", 10), priority_class("mid", 100),
              priority_class("high", 1000), daemon, filler, urgent())
    [victim] = preempted(sim)
    assert victim.startswith("agent-")
    [created] = [e for e in sim.events if e["type"] == "Created" and e["object"].startswith("Pod ")]
    new = created["object"].split("/", 1)[1]
    assert created["seconds"] == 90.0 and new.startswith("agent-") and new != victim
    assert created["message"].startswith("DaemonSet default/agent created pod")
    terms = sim.pods[new]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n-0"]  # pinned to the victim's node
    phase, reason = lines(sim)[new]
    assert phase == "Pending" and reason.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_backoff_limit_defaults_as_the_api_server_defaults_it() -> None:
    """``SetDefaults_Job``: 6, or MaxInt32 where backoffLimitPerIndex is set (the per-index limits then decide)."""
    template = {"spec": {"containers": [{"name": "c"}]}}
    assert job_rules(msgspec.convert({"template": template}, JobSpec)).backoff_limit == 6
    per_index = msgspec.convert({"template": template, "completionMode": "Indexed", "backoffLimitPerIndex": 1},
                                JobSpec)
    assert job_rules(per_index).backoff_limit == 2**31 - 1
    assert job_rules(msgspec.convert({"template": template, "backoffLimit": 2}, JobSpec)).backoff_limit == 2


def test_the_back_off_doubles_per_failure_up_to_ten_minutes() -> None:
    assert [job_backoff(n) for n in (0, 1, 2, 3, 6, 7, 40)] == [0.0, 10.0, 20.0, 40.0, 320.0, 600.0, 600.0]
