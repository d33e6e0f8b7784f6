"""CronJobs through a rollout (``migrate.cronjob_probe``): each one's next Job tried before the first wave and after
each, on the cluster as the wave left it; the probe moves nothing. Before, a CronJob was only noted ("not planned
yet")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main

GPU = {"limits": {"nvidia.com/gpu": 4}}


def _pool() -> dict[str, Any]:
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": 2, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}


def _web(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "c", "resources": GPU}]}}}}


def _cron(*, suspend: bool = False, priority: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "c", "resources": GPU}]}
    if priority:
        pod["priorityClassName"] = priority
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 2 * * *", "suspend": suspend, "jobTemplate": {"spec": {
            "parallelism": 2, "completions": 2, "template": {"spec": pod}}}}}


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: dict[str, Any], table: bool = False
          ) -> dict[str, Any] | str:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([_pool(), *docs]))
    capsys.readouterr()
    args = ["migrate", "plan", str(tmp_path), "--order", "naive"]
    assert main(args if table else [*args, "-o", "json"]) == 0
    out = capsys.readouterr().out
    return out if table else dict(json.loads(out))


def test_the_next_job_is_tried_before_the_first_wave_and_after_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two 4-GPU web pods on two 8-GPU nodes leave room for the CronJob's two 4-GPU pods at every step."""
    plan = _plan(tmp_path, capsys, _web(2), _cron())
    assert isinstance(plan, dict)
    assert not any("CronJobs" in note for note in plan["notes"])
    start = plan["cronjobsAtStart"]["default/nightly"]
    assert start["fits"] is True and start["pods"] == 2 and len(start["placed"]) == 2
    for wave in plan["waves"]:
        assert wave["cronjobs"]["default/nightly"]["fits"] is True
    text = _plan(tmp_path, capsys, _web(2), _cron(), table=True)
    assert isinstance(text, str)
    assert "BEFORE THE FIRST WAVE\n  CronJob default/nightly: its next Job fits (2 pods on " in text
    page = tmp_path / "rollout.html"
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "--html", str(page)]) == 0
    html = page.read_text()
    assert html.count("CronJob default/nightly: its next Job fits") == 1 + len(plan["waves"])
    assert '<section data-start="cronjobs"><h2>Before the first wave</h2>' in html


def test_a_next_job_without_room_waits_with_the_scheduler_s_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three web pods take 12 of the 16 GPUs: one of the Job's two pods lands, the other would wait."""
    plan = _plan(tmp_path, capsys, _web(3), _cron())
    assert isinstance(plan, dict)
    start = plan["cronjobsAtStart"]["default/nightly"]
    assert start["fits"] is False and len(start["placed"]) == 1
    [why] = start["waiting"].values()
    assert "Insufficient nvidia.com/gpu" in why
    text = _plan(tmp_path, capsys, _web(3), _cron(), table=True)
    assert isinstance(text, str)
    assert "CronJob default/nightly: its next Job would wait (1 of 2 pods pending: 0/2 nodes are available" in text


def test_a_higher_priority_next_job_preempts_and_the_plan_is_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a higher priority the Job's pod preempts a web pod to land, said in the probe; the waves are those of the
    same cluster without the CronJob: the probe carries nothing into them."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    plan = _plan(tmp_path, capsys, high, _web(3), _cron(priority="high"))
    without = _plan(tmp_path, capsys, high, _web(3))
    assert isinstance(plan, dict) and isinstance(without, dict)
    start = plan["cronjobsAtStart"]["default/nightly"]
    assert start["fits"] is True and start["preempts"] == 1
    strip = [{k: v for k, v in w.items() if k != "cronjobs"} for w in plan["waves"]]
    assert strip == without["waves"] and plan["summary"] == without["summary"]


def test_a_suspended_cronjob_makes_no_job_and_is_not_tried(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(tmp_path, capsys, _web(2), _cron(suspend=True))
    assert isinstance(plan, dict)
    assert "cronjobsAtStart" not in plan and all("cronjobs" not in w for w in plan["waves"])
