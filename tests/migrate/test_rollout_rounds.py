"""A chain of preemptions within one wave (``migrate.drain``): each victim's controller makes it again in the wave's
next run, where it preempts a pod of a still lower priority, and so on until a victim's replacement finds room or
waits for the scheduler's reason. A preemption's victim always has a lower priority than its preemptor, so the chain
is no longer than the cluster's distinct priorities: the wave runs until it settles, not a fixed count of runs.

Six device-plugin nodes of 8 GPUs (n-0 .. n-5); every pod takes a node's 8 GPUs and may run on its own node or the
next one, preferring its own: the serving Deployment (priority 1000, n-0 or n-1), a JobSet with a failure policy
(900, n-1 or n-2), a Job (800, n-2 or n-3), two more such JobSets (700, n-3 or n-4; 600, n-4 or n-5) and a low
Deployment (500, n-5 only). Draining n-0, the serving pod's replacement preempts the high JobSet's pod on n-1 (the
drain run); the JobSet restarted preempts the Job's pod on n-2 (the run after the uncordon); the Job's new pod, after
its back-off, preempts the mid JobSet's on n-3 (run 2); that JobSet restarted preempts the low one's on n-4 (run 3);
the low JobSet restarted preempts the filler's pod on n-5 (run 4), whose replacement finds no node and waits. (A
Deployment's, StatefulSet's or LeaderWorkerSet leader's victim is replaced within its run, so it adds no run.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main
from kubedra.migrate import drain

HOSTNAME = "kubernetes.io/hostname"


def _priority(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def _spec(priority: str, own: str, nxt: str | None = None, restart: str | None = None) -> dict[str, Any]:
    """8 GPUs on ``own`` (preferred) or ``nxt``."""
    spec: dict[str, Any] = {"priorityClassName": priority, "containers": [
        {"name": "c", "image": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}
    nodes = [own] if nxt is None else [own, nxt]
    spec["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": nodes}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [own]}]}}]}}
    if restart is not None:
        spec["restartPolicy"] = restart
    return spec


def _deployment(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def _job_spec(spec: dict[str, Any], backoff: int) -> dict[str, Any]:
    return {"parallelism": 1, "completions": 1, "backoffLimit": backoff, "template": {"spec": spec}}


def _jobset(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One Job of one pod, backoffLimit 0: its pod preempted fails the Job, and the failure policy restarts the
    JobSet (every pod made again at once)."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": {
        "failurePolicy": {"maxRestarts": 3},
        "replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": _job_spec(spec, 0)}}]}}


def _cluster() -> list[dict[str, Any]]:
    pool = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
            "spec": {"count": 6, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
           "spec": _job_spec(_spec("p800", "n-2", "n-3", "Never"), 6)}
    return [pool, *(_priority(f"p{v}", v) for v in (1000, 900, 800, 700, 600, 500)),
            _deployment("serve", _spec("p1000", "n-0", "n-1")),
            _jobset("high", _spec("p900", "n-1", "n-2", "Never")),
            job,
            _jobset("mid", _spec("p700", "n-3", "n-4", "Never")),
            _jobset("low", _spec("p600", "n-4", "n-5", "Never")),
            _deployment("filler", _spec("p500", "n-5"))]


def _first_wave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(_cluster()))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    first: dict[str, Any] = json.loads(capsys.readouterr().out)["waves"][0]
    assert first["nodes"] == ["n-0"]
    return first


def _short(key: str) -> str:
    """``default/high-w-0-0-abcde`` -> ``high``; ``default/serve-<hash>-<id>`` -> ``serve``."""
    return key.split("/", 1)[1].split("-", 1)[0]


def test_a_chain_of_preemptions_runs_until_the_wave_settles(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Four runs after the uncordon (more than the three runs the wave once stopped at, leaving the low JobSet's
    pod waiting "made again after the wave" and its preemption of the filler put in wave 2): every pod of the chain
    placed one node on, the filler's replacement waiting for the scheduler's reason."""
    first = _first_wave(tmp_path, capsys)
    assert {_short(k): why.split(" on ")[1] for k, why in first["preempted"].items()} == {
        "high": "n-1", "job": "n-2", "mid": "n-3", "low": "n-4", "filler": "n-5"}
    assert {_short(k): _short(why.split(" ")[1]) for k, why in first["preempted"].items()} == {
        "high": "serve", "job": "high", "mid": "job", "low": "mid", "filler": "low"}
    assert [_short(k) for k in first["waiting"]] == ["filler"]
    (why,) = first["waiting"].values()
    assert why.startswith("0/6 nodes are available: 1 Insufficient nvidia.com/gpu") and "after the wave" not in why
    assert first["lost"] == [] and first["landed"] == dict.fromkeys(first["evicted"], "n-1")
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive"]) == 0
    out = capsys.readouterr().out
    wave, rest = out.split("WAVE 2: n-1")
    rows = {_short(line.split()[0]): line.split()[-1] for line in wave.splitlines() if line.startswith("default/")}
    assert rows == {"serve": "n-1", "high": "n-2", "job": "n-3", "mid": "n-4", "low": "n-5", "filler": "waiting"}
    assert "made again after the wave" not in out and "preempted default/" not in rest


def test_the_bound_is_the_guard_when_hit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound for this cluster: the run after the uncordon and one per distinct priority (six classes). Were it
    three runs (the old fixed count), the low JobSet's pod, deleted in the last run, waits "made again after the
    wave", and nothing preempts the filler in the wave."""
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(_cluster()))
    calls: list[int] = []
    bound = drain.runs

    def three(pods: Any) -> int:
        calls.append(bound(pods))
        return 3

    monkeypatch.setattr(drain, "runs", three)
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    first = json.loads(capsys.readouterr().out)["waves"][0]
    assert calls and set(calls) == {7}
    assert sorted(_short(k) for k in first["preempted"]) == ["high", "job", "low", "mid"]
    assert {_short(k): why for k, why in first["waiting"].items()} == {"low": drain.LATE}
