"""A LeaderWorkerSet's, JobSet's or Job's pod preempted during a wave, as its controllers answer it
(``migrate.wave_victims``): kube-scheduler deletes its victim as the eviction API would (``DisruptionTarget`` set), so
the gang controllers answer it as they answer an eviction.

LeaderWorkerSet v0.9.0 (``pod_controller.go``): the worker StatefulSet is owned by the leader pod, so a leader deleted
takes the group's workers with it, whatever the policy; a worker deleted (``PodDeleted``) makes
``handleRestartPolicy`` delete the leader under ``RecreateGroupOnPodRestart`` (the default) and not under ``None``.
JobSet v0.12.0 (``executeFailurePolicy``): a pod failed (the scheduler's DisruptionTarget, no podFailurePolicy:
counted) past its Job's backoffLimit fails the Job; a failed Job fails the JobSet without a failurePolicy (every pod
deleted) and restarts it with one (every Job, and so every pod, made again at once).

Every cluster: three device-plugin nodes of 2 GPUs (n-0, n-1, n-2), switched one a wave in name order; a serving
Deployment (priority 1000, 2 GPUs) that prefers n-0 and may run only on n-0 or on ``on``; the workload's pods
(priority 0, 2 GPUs each) fill n-1 and n-2. Draining n-0, the serving pod's replacement finds no room and preempts
the workload's pod on ``on``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.migrate.plans import first_serving_wave, serving

from kubedra.cli import main

GROUP = "LeaderWorkerSet/default/lws group 0"
JOBSET = "JobSet/default/js"


def _spec(node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return spec


def _lws(policy: str | None) -> dict[str, Any]:
    """Leader pinned to n-1, its worker to n-2."""
    lwt: dict[str, Any] = {"size": 2, "leaderTemplate": {"spec": _spec("n-1")}, "workerTemplate": {"spec": _spec("n-2")}}
    if policy is not None:
        lwt["restartPolicy"] = policy
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "lws"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": lwt}}


def _jobset(max_restarts: int | None) -> dict[str, Any]:
    """Two Jobs of one pod each, backoffLimit 0: one pod failed fails its Job."""
    job = {"parallelism": 1, "completions": 1, "backoffLimit": 0,
           "template": {"spec": {**_spec(), "restartPolicy": "Never"}}}
    spec: dict[str, Any] = {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": job}}]}
    if max_restarts is not None:
        spec["failurePolicy"] = {"maxRestarts": max_restarts}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"}, "spec": spec}


def _first_wave(tmp_path: Path, capsys: pytest.CaptureFixture[str], on: str, workload: dict[str, Any]
                ) -> dict[str, Any]:
    return first_serving_wave(tmp_path, capsys, 2, [*serving(2, on), workload], on)


@pytest.mark.parametrize("policy", [None, "RecreateGroupOnPodRestart", "RecreateGroupAfterStart"])
def test_a_worker_preempted_recreates_its_group(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                policy: str | None) -> None:
    """The worker on n-2 preempted: the leader deleted (the group's other pod running: RecreateGroupAfterStart
    acts too) and made again on n-1 in the wave's next run; the worker's new pod, pinned to n-2 where the serving
    pod now runs, waits."""
    first = _first_wave(tmp_path, capsys, "n-2", _lws(policy))
    assert list(first["preempted"]) == ["default/lws-0-1"]
    assert first["workloads"] == {GROUP: {
        "evicted": 0, "preempted": 1, "deleted": 1, "action": "recreated",
        "why": f"a worker preempted: restartPolicy {policy or 'RecreateGroupOnPodRestart'} deletes the leader"}}
    assert first["recreated"] == ["default/lws-0"] and first["lost"] == []
    assert list(first["waiting"]) == ["default/lws-0-1"]
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive"]) == 0
    out = capsys.readouterr().out
    assert "default/lws-0-1                  no, preempted        waiting" in out
    assert "default/lws-0                    no, with its group   n-1" in out
    assert f"  LeaderWorkerSet default/lws group 0 recreated (1 pod preempted, 1 more deleted): a worker preempted: " \
        f"restartPolicy {policy or 'RecreateGroupOnPodRestart'} deletes the leader" in out


@pytest.mark.parametrize("policy", ["None", "Default"])
def test_a_worker_preempted_is_replaced_alone_under_none(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         policy: str) -> None:
    first = _first_wave(tmp_path, capsys, "n-2", _lws(policy))
    assert list(first["preempted"]) == ["default/lws-0-1"] and "workloads" not in first


@pytest.mark.parametrize("policy", [None, "None"])
def test_a_leader_preempted_takes_its_workers_whatever_the_policy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str | None) -> None:
    """The leader on n-1 preempted: its worker, on n-2, deleted with it and made again there; the leader's new pod,
    pinned to n-1 where the serving pod now runs, waits."""
    first = _first_wave(tmp_path, capsys, "n-1", _lws(policy))
    assert list(first["preempted"]) == ["default/lws-0"]
    assert first["workloads"][GROUP] == {
        "evicted": 0, "preempted": 1, "deleted": 1, "action": "recreated",
        "why": "its leader preempted: the workers' StatefulSet, owned by the leader pod, goes with it"}
    assert first["recreated"] == ["default/lws-0-1"] and list(first["waiting"]) == ["default/lws-0"]
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive"]) == 0
    out = capsys.readouterr().out
    assert "default/lws-0                    no, preempted        waiting" in out
    assert "default/lws-0-1                  no, with its group   n-2" in out


def test_a_jobset_pod_preempted_fails_its_job_and_the_jobset(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """No failurePolicy: the preempted pod fails its Job (1 failure, backoffLimit 0), so the JobSet fails (FailedJobs)
    and deletes its other Job's pod: both lost."""
    first = _first_wave(tmp_path, capsys, "n-2", _jobset(None))
    (victim,) = first["preempted"]
    job = "Job/default/" + victim.split("/", 1)[1].rsplit("-", 2)[0]
    assert first["jobs"] == {job: {"evicted": 0, "preempted": 1, "failures": 1, "backoffLimit": 0,
                                   "backoffSeconds": 0.0,
                                   "failed": "BackoffLimitExceeded: Job has reached the specified backoff limit"}}
    assert first["workloads"][JOBSET] == {"evicted": 0, "preempted": 1, "deleted": 1, "action": "failed",
                                          "why": "FailedJobs: jobset failed due to one or more job failures"}
    assert len(first["lost"]) == 2 and victim in first["lost"] and first["recreated"] == []
    assert first["waiting"] == {} and not any(k.startswith("default/js-") for k in first["landed"])


def test_a_jobset_pod_preempted_restarts_the_jobset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """maxRestarts 1: the JobSet restarts (counted 1 of 1): both pods made again at once (new Jobs: no back-off), on
    the switched n-0 and on n-1; the next wave's eviction fails the new Job and, the restart counted, the JobSet
    (ReachedMaxRestarts)."""
    first = _first_wave(tmp_path, capsys, "n-2", _jobset(1))
    (victim,) = first["preempted"]
    assert first["workloads"][JOBSET] == {"evicted": 0, "preempted": 1, "deleted": 1, "action": "restarted",
                                          "why": "RestartJobSet: restart 1 (counted 1 of maxRestarts 1)"}
    (other,) = first["recreated"]
    assert other != victim and first["lost"] == [] and first["waiting"] == {}
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    second = json.loads(capsys.readouterr().out)["waves"][1]
    assert second["workloads"][JOBSET]["why"].startswith("ReachedMaxRestarts:")
    assert sorted(second["lost"]) == sorted([victim, other])
