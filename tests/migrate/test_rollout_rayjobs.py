"""A running RayJob's pods evicted by a wave, or preempted during its runs, as KubeRay ray-operator v1.5.0 answers
it (``migrate.ray_restarts``, ``migrate.wave_victims``, ``migrate.ray_waves``).

``raycluster_controller.go`` ``reconcilePods``: a worker group short of ``GetWorkerGroupDesiredReplicas`` has the
missing workers made again (``diff > 0``); with 0 head pods in a cluster a RayJob made and ``RayClusterProvisioned``
it logs "skipping head creation to let RayJob controller handle the failure" and returns before the workers.
``rayjob_controller.go``: ``createNewK8sJob`` gives the submitter Job ``backoffLimit`` 2;
``checkSubmitterAndUpdateStatusIfNeeded`` fails the RayJob when its submitter Job fails (``SubmissionFailed``) and,
in SidecarMode, when its head pod is gone (``AppFailed``, "Ray head pod not found."); then
``checkBackoffLimitAndUpdateStatusIfNeeded`` retries it (``Retrying``: ``deleteClusterResources`` and
``deleteSubmitterJob``, made again from ``New``) while ``status.failed`` is at most ``spec.backoffLimit``; a Failed
RayJob with ``shutdownAfterJobFinishes`` has its cluster deleted (``handleShutdownAfterJobFinishes``).
``common/job.go`` ``BuildJobSubmitCommand``: a submitter pod made again runs ``ray job status`` and follows the logs
of the Ray job already submitted. ``JobDeploymentStatusInitializing`` makes the submitter Job (``createK8sJobIfNeed``)
only once ``RayCluster.Status.State`` is ``Ready`` (``calculateStatus``: the head and every desired worker,
``CheckAllPodsRunning``). A pod preempted is deleted as an evicted one is: the same rules answer it.

Every cluster: three device-plugin nodes of 8 GPUs switched one a wave in name order; one RayJob whose head (1 GPU),
two workers (4 GPUs each) and submitter pod are pinned to nodes the test picks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.migrate.plans import first_serving_wave, serving

from kubedra.cli import main
from kubedra.migrate.group_restarts import Restarts
from kubedra.migrate.job_failures import JobCount, JobsInWave, JobWave
from kubedra.migrate.ray_restarts import RayJobPods, ray_restarts
from kubedra.migrate.wave_victims import Victims
from kubedra.objects.model import ObjectMeta, Pod, PodSpec
from kubedra.sim.replacements import JobRules
from kubedra.sim.workloads import PodArrival, Workloads

RAYJOB = "RayJob/default/rj"


def _pinned(node: str, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ray", "image": "ray"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {"nodeSelector": {"kubernetes.io/hostname": node}, "containers": [container]}


def _rayjob(head: str, workers: str, submitter: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "entrypoint": "python train.py",
        "submitterPodTemplate": {"spec": {**_pinned(submitter), "restartPolicy": "Never"}},
        "rayClusterSpec": {
            "headGroupSpec": {"template": {"spec": _pinned(head, 1)}},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": {"spec": _pinned(workers, 4)}}]},
        **spec}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"}, "spec": body}


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], rayjob: dict[str, Any] | list[dict[str, Any]]
          ) -> dict[str, Any]:
    pool = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": 3, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([pool, *(rayjob if isinstance(rayjob, list)
                                                                        else [rayjob])]))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    return plan


def _pods(wave: dict[str, Any], part: str) -> list[str]:
    """The keys of the wave's evicted or lost pods whose name has ``part`` (``-head-``, ``-worker-``)."""
    return sorted({k for k in [*wave["evicted"], *wave["lost"], *wave.get("recreated", [])] if part in k})


def test_a_worker_evicted_is_made_again_and_the_rayjob_keeps_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """reconcilePods: the group is 2 short, diff > 0 makes both workers again; the RayJob is not touched."""
    plan = _plan(tmp_path, capsys, _rayjob(head="n-1", workers="n-0", submitter="n-2"))
    first = plan["waves"][0]
    workers = _pods(first, "-worker-")
    assert len(workers) == 2 and sorted(first["evicted"]) == workers and first["lost"] == []
    assert first["landed"] == dict.fromkeys(workers, "n-0")
    assert first["workloads"][RAYJOB]["action"] == "running" and first["workloads"][RAYJOB]["evicted"] == 2
    assert "reconcilePods makes the missing workers again" in first["workloads"][RAYJOB]["why"]
    assert plan["notes"] == [] or all("RayJob" not in n for n in plan["notes"])


def test_a_head_evicted_is_not_made_again_and_the_rayjob_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """reconcilePods makes no head for the RayJob's provisioned cluster; the submitter's Job fails, and with the
    default backoffLimit 0 checkBackoffLimitAndUpdateStatusIfNeeded leaves the RayJob Failed: head and submitter lost,
    the workers left running; the next wave evicts them and reconcilePods, returning before the workers, makes none."""
    first, second, third = _plan(tmp_path, capsys, _rayjob(head="n-0", workers="n-1", submitter="n-2"))["waves"]
    (head,) = _pods(first, "-head-")
    assert first["evicted"] == [head] and first["landed"] == {}
    (submitter,) = [k for k in first["lost"] if k != head]
    assert sorted(first["lost"]) == sorted([head, submitter])
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["evicted"], line["deleted"]) == ("failed", 1, 1)
    assert line["why"].startswith("SubmissionFailed:") and "failure 1 of backoffLimit 0: Failed" in line["why"]
    assert "its workers keep running, headless" in line["why"]
    workers = _pods(second, "-worker-")
    assert len(workers) == 2 and sorted(second["lost"]) == workers and second["landed"] == {}
    assert second["workloads"][RAYJOB]["action"] == "lost"
    assert third["evicted"] == [] and "workloads" not in third


def test_a_head_evicted_within_backoff_limit_retries_the_rayjob(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """backoffLimit 1: the first failure is Retrying, which deletes the RayCluster and the submitter Job and makes
    them again: every pod made again, none lost; the head lands back on n-0 once it is switched."""
    plan = _plan(tmp_path, capsys, _rayjob(head="n-0", workers="n-1", submitter="n-2", backoffLimit=1))
    first = plan["waves"][0]
    (head,) = first["evicted"]
    assert "-head-" in head and first["lost"] == [] and first["landed"] == {head: "n-0"}
    assert len(first["recreated"]) == 3 and head not in first["recreated"]
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["evicted"], line["deleted"]) == ("restarted", 1, 3)
    assert "failure 1 of backoffLimit 1: Retrying deletes its RayCluster and submitter Job" in line["why"]
    assert plan["summary"]["workloadsRestarted"] == 1 and plan["summary"]["lost"] == 0


def test_a_retried_rayjobs_new_submitter_waits_for_its_cluster_while_the_node_drains(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """backoffLimit 1, the head on n-0: Retrying makes the cluster and submitter Job again, and the RayJob's
    Initializing step makes the submitter Job only once RayCluster.Status.State is Ready (calculateStatus: head and
    every worker running). While n-0 drains, cordoned, the new head waits for it: no submitter, so a budget of one
    on the submitter pod is broken during the drain; once n-0 is uncordoned the head lands and the submitter is
    made."""
    rayjob = _rayjob(head="n-0", workers="n-1", submitter="n-2", backoffLimit=1)
    rayjob["spec"]["submitterPodTemplate"]["metadata"] = {"labels": {"app": "submitter"}}
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "submitter"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "submitter"}}}}
    first = _plan(tmp_path, capsys, [rayjob, budget])["waves"][0]
    (head,) = first["evicted"]
    assert first["landed"] == {head: "n-0"} and first["waiting"] == {} and first["lost"] == []
    assert first["workloads"][RAYJOB]["action"] == "restarted"
    assert first["budgets"] == [{"budget": "default/submitter", "desired": 1, "healthy": 1, "duringDrain": 0,
                                 "after": 1, "losesQuorum": True}]


def test_a_failed_rayjob_with_shutdown_loses_its_whole_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """shutdownAfterJobFinishes: handleShutdownAfterJobFinishes deletes the Failed RayJob's cluster, workers too."""
    first = _plan(tmp_path, capsys, _rayjob(head="n-0", workers="n-1", submitter="n-2",
                                            shutdownAfterJobFinishes=True))["waves"][0]
    assert len(first["lost"]) == 4 and len(_pods(first, "-worker-")) == 2
    assert first["workloads"][RAYJOB]["deleted"] == 3
    assert first["workloads"][RAYJOB]["why"].endswith("Failed; shutdownAfterJobFinishes deletes its RayCluster")


@pytest.mark.parametrize(("mode", "action", "why"), [
    ("SidecarMode", "failed", "AppFailed: Ray head pod not found."),
    ("HTTPMode", "stalled", "its head evicted: reconcilePods does not make it again; in HTTPMode GetJobInfo fails")])
def test_a_rayjob_without_a_submitter_job_when_its_head_is_evicted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, action: str, why: str) -> None:
    """No submitter Job in either mode. SidecarMode: checkSubmitterAndUpdateStatusIfNeeded finds no head pod and
    fails the RayJob (AppFailed). HTTPMode: the Running RayJob's GetJobInfo fails and Reconcile requeues: it stays
    Running without its Ray job. Either way the head is lost and the workers keep running."""
    rayjob = _rayjob(head="n-0", workers="n-1", submitter="n-2", submissionMode=mode)
    rayjob["spec"].pop("submitterPodTemplate", None)
    first = _plan(tmp_path, capsys, rayjob)["waves"][0]
    (head,) = first["evicted"]
    assert "-head-" in head and first["lost"] == [head] and first["recreated"] == []
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["deleted"]) == (action, 0) and line["why"].startswith(why)


def test_the_submitter_evicted_is_made_again_after_its_back_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The submitter Job (backoffLimit 2, createNewK8sJob) counts the evicted pod and makes it again after 10 s;
    BuildJobSubmitCommand's ray job status finds the Ray job: the RayJob keeps running."""
    first = _plan(tmp_path, capsys, _rayjob(head="n-1", workers="n-2", submitter="n-0"))["waves"][0]
    (submitter,) = first["evicted"]
    assert first["landed"] == {submitter: "n-0"} and first["lost"] == []
    assert first["jobs"]["Job/default/rj"] == {"evicted": 1, "failures": 1, "backoffLimit": 2,
                                               "backoffSeconds": 10.0}
    assert first["workloads"][RAYJOB]["action"] == "running"
    assert "BuildJobSubmitCommand" in first["workloads"][RAYJOB]["why"]


def _arrival(name: str, owner: str) -> PodArrival:
    return PodArrival(Pod(metadata=ObjectMeta(name=name, namespace="default"), spec=PodSpec(containers=[])), 0.0,
                      None, owner)


@pytest.mark.parametrize(("limit", "before", "action"), [(0, 0, "failed"), (2, 1, "restarted"), (2, 2, "failed")])
def test_a_failed_submitter_job_fails_the_rayjob(limit: int, before: int, action: str) -> None:
    """The submitter Job past its backoffLimit: checkSubmitterAndUpdateStatusIfNeeded fails the RayJob
    (SubmissionFailed); checkBackoffLimitAndUpdateStatusIfNeeded retries it while its failures, this one counted,
    are at most spec.backoffLimit. Failed, its submitter is lost with its Job and the cluster, headed, keeps
    running; retried, every pod is made again and the new submitter Job counts from zero."""
    owner = "RayCluster/default/rj-abcde"
    by_key = {"default/h": _arrival("h", owner), "default/w": _arrival("w", owner),
              "default/s": _arrival("s", "Job/default/rj")}
    job = RayJobPods(RAYJOB, "K8sJobMode", "default/h", ("default/w",), "Job/default/rj", limit, False)
    failed = JobWave(1, 3, 2, 0.0, "BackoffLimitExceeded: Job has reached the specified backoff limit")
    jobs = JobsInWave({"Job/default/rj": JobRules(backoff_limit=2)}, {"Job/default/rj": JobCount(3, 3)},
                      {"Job/default/rj": failed}, ["default/s"], {})
    out = Restarts()
    ray_restarts({RAYJOB: job}, by_key, ["default/s"], jobs, before={RAYJOB: JobCount(before, before)}, out=out)
    line = out.workloads[RAYJOB]
    assert line.action == action and line.why.startswith("SubmissionFailed: Job submission has failed")
    assert out.counts[RAYJOB] == JobCount(before + 1, before + 1)
    if action == "restarted":
        assert out.fresh == {"default/h", "default/w", "default/s"} and out.recreated == ["default/h", "default/w"]
        assert out.counts["Job/default/rj"] == JobCount() and out.lost == []
    else:
        assert line.why.endswith("Failed; its RayCluster keeps running") and out.lost == [] and out.fresh == set()


def _preempting(tmp_path: Path, capsys: pytest.CaptureFixture[str], gpus: int, rayjob: dict[str, Any]
                ) -> dict[str, Any]:
    """The plan's first wave (n-0): the serving pod evicted lands on n-1, preempting there."""
    return first_serving_wave(tmp_path, capsys, 8, [*serving(gpus, "n-1"), rayjob], "n-1")



def test_a_head_preempted_is_not_made_again_and_the_rayjob_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The serving pod (8 GPUs) preempts the head on n-1: reconcilePods makes no head for the provisioned cluster,
    the submitter's Job fails (K8sJobMode) and, backoffLimit 0, checkBackoffLimitAndUpdateStatusIfNeeded leaves the
    RayJob Failed: head and submitter lost, the workers on n-2 keep running, headless."""
    first = _preempting(tmp_path, capsys, 8, _rayjob(head="n-1", workers="n-2", submitter="n-2"))
    (head,) = first["preempted"]
    assert "-head-" in head and first["waiting"] == {} and first["recreated"] == []
    (submitter,) = [k for k in first["lost"] if k != head]
    assert sorted(first["lost"]) == sorted([head, submitter]) and submitter.startswith("default/rj-")
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["evicted"], line["preempted"], line["deleted"]) == ("failed", 0, 1, 1)
    assert "(its head preempted: reconcilePods does not make it again)" in line["why"]
    assert line["why"].endswith("failure 1 of backoffLimit 0: Failed; its workers keep running, headless")


def test_a_head_preempted_within_backoff_limit_retries_and_the_submitter_waits_for_the_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """backoffLimit 1: Retrying deletes the cluster and the submitter Job; in the next run the workers are made again
    on n-2 and the head, pinned to n-1 where the serving pod now runs, waits. The RayJob's Initializing step makes
    the submitter Job only once RayCluster.Status.State is Ready (calculateStatus: head and every worker running):
    the new submitter is not made."""
    first = _preempting(tmp_path, capsys, 8, _rayjob(head="n-1", workers="n-2", submitter="n-2", backoffLimit=1))
    (head,) = first["preempted"]
    workers = _pods(first, "-worker-")
    (submitter,) = [k for k in first["recreated"] if k not in workers]
    assert len(workers) == 2 and first["lost"] == [] and head not in first["recreated"]
    assert first["waiting"][submitter] == ("not made yet: RayJob default/rj makes its submitter Job once its "
                                           "RayCluster is Ready (head and workers running)")
    assert first["waiting"][head].startswith("0/3 nodes are available: 1 Insufficient nvidia.com/gpu")
    assert not set(workers) & set(first["waiting"])
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["preempted"], line["deleted"]) == ("restarted", 1, 3)
    assert "failure 1 of backoffLimit 1: Retrying deletes its RayCluster and submitter Job" in line["why"]


def test_a_worker_preempted_is_made_again_and_the_rayjob_keeps_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The serving pod (4 GPUs) preempts one worker on n-1: reconcilePods makes it again (diff > 0); pinned to n-1,
    now full, it waits. The head and the submitter keep running: no failure counted."""
    first = _preempting(tmp_path, capsys, 4, _rayjob(head="n-2", workers="n-1", submitter="n-2"))
    (worker,) = first["preempted"]
    assert "-worker-" in worker and first["lost"] == [] and list(first["waiting"]) == [worker]
    line = first["workloads"][RAYJOB]
    assert (line["action"], line["preempted"], line["deleted"]) == ("running", 1, 0)
    assert line["why"] == ("1 worker preempted: reconcilePods makes the missing workers again; the Ray job keeps "
                           "running")


@pytest.mark.parametrize(("limit", "before", "action"), [(0, 0, "running"), (1, 2, "restarted"), (0, 2, "failed")])
def test_a_submitter_preempted_counts_against_its_job(limit: int, before: int, action: str) -> None:
    """The submitter's pod preempted is a failure to its Job (createNewK8sJob: backoffLimit 2). Within the limit the
    Job makes it again after its back-off and the RayJob runs on; past it the Job fails, and
    checkSubmitterAndUpdateStatusIfNeeded fails the RayJob (SubmissionFailed): Retrying within spec.backoffLimit
    deletes and makes again every pod (the submitter too, with a Job counted from zero), else Failed, the submitter
    lost with its Job and the cluster left running."""
    owner = "RayCluster/default/rj-abcde"
    by_key = {"default/h": _arrival("h", owner), "default/w": _arrival("w", owner),
              "default/s": _arrival("s", "Job/default/rj")}
    job = RayJobPods(RAYJOB, "K8sJobMode", "default/h", ("default/w",), "Job/default/rj", limit, False)
    jobs = JobsInWave({"Job/default/rj": JobRules(backoff_limit=2)}, {"Job/default/rj": JobCount(before, before)},
                      {}, [], {})
    victims = Victims(Workloads(arrivals=[]), by_key, {}, jobs, restarts=Restarts(), evicted=[],
                      rayjobs={RAYJOB: job})
    fresh, lost = victims.answer(["default/s"], {"default/h", "default/w"})
    line = victims.workloads[RAYJOB]
    assert (line.action, line.evicted, line.preempted) == (action, 0, 1)
    if action == "running":
        assert (fresh, lost, victims.delays) == (set(), set(), {"default/s": 10.0})
        assert "its submitter preempted: its Job makes the pod again after a 10 s back-off (failures 1 of " \
            "backoffLimit 2)" in line.why
        return
    assert line.why.startswith("SubmissionFailed: Job submission has failed (BackoffLimitExceeded")
    assert victims.counts[RAYJOB] == JobCount(1, 1)
    if action == "restarted":
        assert (fresh, lost, line.deleted) == ({"default/h", "default/w", "default/s"}, set(), 2)
        assert victims.retried == {RAYJOB} and victims.recreated == ["default/h", "default/w"]
        assert victims.counts["Job/default/rj"] == JobCount()
    else:
        assert (fresh, lost, line.deleted, victims.retried) == (set(), {"default/s"}, 0, set())
        assert line.why.endswith("Failed; its RayCluster keeps running")


@pytest.mark.parametrize(("hit", "action", "lost"), [(["default/h"], "lost", ["default/h"]),
                                                     (["default/w"], "running", [])])
def test_a_rayjob_failed_already_is_not_counted_nor_retried_again(hit: list[str], action: str,
                                                                  lost: list[str]) -> None:
    """A RayJob Failed in an earlier wave (its submitter Job failed: status.failed 1 past backoffLimit 0) is terminal
    (IsJobDeploymentTerminal: checkBackoffLimitAndUpdateStatusIfNeeded never sees it again); its RayCluster, headed,
    runs on. reconcilePods makes an evicted worker again; its head evicted, it makes no head for the provisioned
    cluster: the head is lost."""
    owner = "RayCluster/default/rj-abcde"
    by_key = {"default/h": _arrival("h", owner), "default/w": _arrival("w", owner)}
    job = RayJobPods(RAYJOB, "K8sJobMode", "default/h", ("default/w",), "Job/default/rj", 0, False)
    out = Restarts()
    ray_restarts({RAYJOB: job}, by_key, hit, JobsInWave({}, {}, {}, [], {}), before={RAYJOB: JobCount(1, 1)},
                 out=out)
    line = out.workloads[RAYJOB]
    assert (line.action, line.evicted, line.deleted) == (action, 1, 0) and line.why.startswith("Failed already; ")
    assert (out.lost, out.counts, out.fresh, out.retried) == (lost, {}, set(), set())
