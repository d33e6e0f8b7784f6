"""A wave's evictions as the gang controllers answer them (``migrate.group_restarts``).

LeaderWorkerSet v0.9.0 (``pkg/controllers/pod_controller.go``): the worker StatefulSet is owned by the leader pod, so
a leader deleted takes the group's workers with it, whatever the policy; a worker deleted makes
``handleRestartPolicy`` delete the leader under ``RecreateGroupOnPodRestart`` (the webhook's default) and not under
``None`` (``Default`` is read as ``None``). JobSet v0.12.0 (``executeFailurePolicy``): a failed Job fails the JobSet
without a failurePolicy (every pod deleted), restarts it (every Job, and so every pod, made again) with one until
``maxRestarts`` restarts were counted, then fails it (``ReachedMaxRestarts``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _pool(count: int) -> dict[str, Any]:
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": count, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}


def _pod_spec(node: str, gpus: int, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {"kubernetes.io/hostname": node}, "containers": [
        {"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _lws(policy: str | None, size: int = 3) -> dict[str, Any]:
    """Leader on n-0, its workers on n-1."""
    lwt: dict[str, Any] = {"size": size, "leaderTemplate": {"spec": _pod_spec("n-0", 4)},
                           "workerTemplate": {"spec": _pod_spec("n-1", 4)}}
    if policy is not None:
        lwt["restartPolicy"] = policy
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "lws"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": lwt}}


def _jobset(failure: dict[str, Any] | None, replicas: int = 2) -> dict[str, Any]:
    """``replicas`` Jobs of one 8-GPU pod each (a node's GPUs), backoffLimit 0: one eviction fails a Job; pinned to
    n-0 unless a test lifts the selector."""
    spec: dict[str, Any] = {"replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": {
        "parallelism": 1, "completions": 1, "backoffLimit": 0,
        "template": {"spec": _pod_spec("n-0", 8)}}}}]}
    if failure is not None:
        spec["failurePolicy"] = failure
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"}, "spec": spec}


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: dict[str, Any], nodes: int = 2
          ) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([_pool(nodes), *docs]))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    return plan


GROUP = "LeaderWorkerSet/default/lws group 0"


@pytest.mark.parametrize("policy", [None, "RecreateGroupOnPodRestart", "None", "Default"])
def test_a_leader_evicted_takes_its_workers_whatever_the_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                policy: str | None) -> None:
    first = _plan(tmp_path, capsys, _lws(policy))["waves"][0]
    assert first["nodes"] == ["n-0"] and first["evicted"] == ["default/lws-0"]
    assert first["workloads"][GROUP]["action"] == "recreated" and first["workloads"][GROUP]["deleted"] == 2
    assert sorted(first["recreated"]) == ["default/lws-0-1", "default/lws-0-2"]


@pytest.mark.parametrize(("policy", "whole"), [(None, True), ("RecreateGroupOnPodRestart", True), ("None", False),
                                               ("Default", False)])
def test_a_worker_evicted_recreates_the_group_under_its_restart_policy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str | None, whole: bool) -> None:
    second = _plan(tmp_path, capsys, _lws(policy))["waves"][1]
    assert second["nodes"] == ["n-1"] and sorted(second["evicted"]) == ["default/lws-0-1", "default/lws-0-2"]
    if whole:
        assert second["workloads"][GROUP]["evicted"] == 2 and second["recreated"] == ["default/lws-0"]
    else:
        assert "workloads" not in second


def test_a_jobset_without_a_failure_policy_fails_with_its_first_failed_job(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _plan(tmp_path, capsys, _jobset(None, replicas=1))["waves"][0]
    (pod,) = first["evicted"]
    assert first["workloads"]["JobSet/default/js"]["action"] == "failed"
    assert first["workloads"]["JobSet/default/js"]["why"].startswith("FailedJobs:")
    assert first["lost"] == [pod]


def test_a_jobset_restarts_until_max_restarts_then_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """maxRestarts 1, two nodes and one pod: the first wave's eviction fails its Job and restarts the JobSet (its pod
    made again, landing on the other node); the second wave's eviction fails the new Job: one restart counted
    already, so the JobSet fails (ReachedMaxRestarts) and its pod is lost."""
    spec = _jobset({"maxRestarts": 1}, replicas=1)
    spec["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {}
    first, second = _plan(tmp_path, capsys, spec)["waves"]
    (pod,) = first["evicted"]
    assert first["workloads"]["JobSet/default/js"] == {"evicted": 1, "deleted": 0, "action": "restarted",
                                                       "why": "RestartJobSet: restart 1 (counted 1 of maxRestarts 1)"}
    assert first["lost"] == [] and pod in first["landed"]
    assert second["evicted"] == [pod] and second["lost"] == [pod]
    assert second["workloads"]["JobSet/default/js"]["why"].startswith("ReachedMaxRestarts:")


def test_a_restart_makes_every_pod_of_the_jobset_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two Jobs, one on each node: the first wave fails the Job on n-0 and the restart deletes the other Job's pod
    on n-1 too, with no back-off (new Jobs)."""
    spec = _jobset({"maxRestarts": 3, "rules": [{"name": "always", "action": "RestartJobSetAndIgnoreMaxRestarts"}]})
    spec["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {}
    first = _plan(tmp_path, capsys, spec)["waves"][0]
    (evicted,) = first["evicted"]
    (other,) = first["recreated"]
    assert evicted != other and first["lost"] == []
    assert first["workloads"]["JobSet/default/js"]["why"].startswith(
        "RestartJobSetAndIgnoreMaxRestarts: restart 1 (counted 0 of maxRestarts 3)")


def test_the_example_smart_order_recreates_the_group_once(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/migrate/gang-rollout, as its header says: two nodes a wave, name order recreates the LWS group
    in both waves; smart switches its two nodes together."""
    capsys.readouterr()
    assert main(["migrate", "plan", str(ROOT / "examples/migrate/gang-rollout"), "--max-unavailable", "2",
                 "-o", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [w["nodes"] for w in plan["waves"]] == [["hgx-0", "hgx-2"], ["hgx-1"]]
    assert plan["summary"]["workloadsRestarted"] == 2 and plan["compare"]["naive"]["workloadsRestarted"] == 3
