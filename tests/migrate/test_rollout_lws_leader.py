"""LeaderWorkerSet groups whose workers wait on their leader, through a rollout (``migrate.lws_waves``).

LWS v0.9.0's pod controller makes a group's worker StatefulSet once the leader is ready (``startupPolicy:
LeaderReady``) or scheduled (exclusive placement, the workers pinned by ``setNodeSelectorForWorkerPods`` to the
leader's value of the topology key): the workers run from the plan's start, and in a wave that recreates the group
they are made again only after their leader, where exclusive placement says. Before, such sets were only noted
("not planned yet") and their workers left out of every wave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main

EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def _pool(count: int) -> dict[str, Any]:
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": count, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}


def _lws(*, replicas: int, size: int, gpus: int, startup: str | None = None, exclusive: bool = False
         ) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "leaderWorkerTemplate": {"size": size, "workerTemplate": {"spec": {
        "containers": [{"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}
    if startup:
        spec["startupPolicy"] = startup
    meta: dict[str, Any] = {"name": "lws"}
    if exclusive:
        meta["annotations"] = {EXCLUSIVE: "kubernetes.io/hostname"}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(list(docs)))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    return plan


def test_leader_ready_workers_are_in_every_wave_and_made_again_with_their_group(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two groups of a leader and two 4-GPU workers on three 8-GPU nodes: the first wave's node holds pods of both
    groups, so both are recreated, workers included, and every pod runs again after it (none waiting)."""
    plan = _plan(tmp_path, capsys, _pool(3), _lws(replicas=2, size=3, gpus=4, startup="LeaderReady"))
    assert not any("wait on their leader" in note for note in plan["notes"])
    first = plan["waves"][0]
    workers = {"default/lws-0-1", "default/lws-0-2", "default/lws-1-1", "default/lws-1-2"}
    on_n0 = set(first["evicted"])
    assert on_n0 and on_n0 & workers  # a worker was running on n-0 at the start: workers are placed from the start
    recreated = set(first["recreated"])
    assert {"LeaderWorkerSet/default/lws group 0", "LeaderWorkerSet/default/lws group 1"} == set(first["workloads"])
    assert on_n0 | recreated == {"default/lws-0", "default/lws-1"} | workers
    assert first["waiting"] == {}  # the recreated workers were made after their leaders and run again
    assert set(first["landed"]) == on_n0


def test_exclusive_placement_keeps_each_recreated_group_on_its_leader_s_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exclusive by hostname, two groups of two 4-GPU pods on four nodes: every wave lands each recreated group's
    worker on its leader's node (made after the leader is scheduled, pinned to its hostname)."""
    plan = _plan(tmp_path, capsys, _pool(4), _lws(replicas=2, size=2, gpus=4, exclusive=True))
    moved = 0
    for wave in plan["waves"]:
        landed = wave["landed"]
        for group in ("0", "1"):
            leader, worker = f"default/lws-{group}", f"default/lws-{group}-1"
            if leader in landed:
                assert landed[worker] == landed[leader], wave
                moved += 1
    assert moved >= 2  # the waves of the groups' nodes recreate them


def test_a_worker_waits_for_a_leader_that_cannot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two nodes taken by a higher-priority Deployment of two 8-GPU pods: the leader waits for room, and its worker
    is not made at all (the pod controller has no leader to follow), said in those words."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {"priorityClassName": "high", "containers": [
                {"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}}
    plan = _plan(tmp_path, capsys, _pool(2), high, web, _lws(replicas=1, size=2, gpus=4, startup="LeaderReady"))
    for wave in plan["waves"]:
        assert "Insufficient nvidia.com/gpu" in wave["waiting"]["default/lws-0"] or \
            "cannot allocate all claims" in wave["waiting"]["default/lws-0"]
        assert wave["waiting"]["default/lws-0-1"] == (
            "not made yet: LeaderWorkerSet default/lws makes a group's workers once its leader is ready "
            "(startupPolicy LeaderReady)")
