"""A wave's evictions as the Job controller counts them (``migrate.job_failures``): each evicted pod a failure, its
replacement after the back-off (10 s doubled per failure since the last success, at most 10 min:
``job_controller.go``'s ``getRemainingTimeForFailuresCount``), the Job failed past its backoffLimit with every pod
it has, a podFailurePolicy rule on DisruptionTarget deciding what an eviction costs; counts carried wave to wave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main

JOB = "Job/default/train"


def backoff(failures: int) -> float:
    """The controller's rule, written out: 10 s, doubled for each failure after the first, capped at 600 s."""
    seconds = 10.0
    for _ in range(failures - 1):
        seconds = min(seconds * 2, 600.0)
    return seconds


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *, nodes: int = 1, parallelism: int = 8,
          **spec: Any) -> dict[str, Any]:
    pool = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "h100"},
            "spec": {"count": nodes, "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
           "spec": {"parallelism": parallelism, "completions": parallelism, **spec, "template": {"spec": {
               "restartPolicy": "Never", "containers": [{"name": "c", "image": "trainer",
                                                         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([pool, job]))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    return plan


def test_evicting_more_pods_than_the_backoff_limit_fails_the_job(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (wave,) = _plan(tmp_path, capsys)["waves"]
    assert wave["jobs"][JOB] == {"evicted": 8, "failures": 8, "backoffLimit": 6, "backoffSeconds": 0.0,
                                 "failed": "BackoffLimitExceeded: Job has reached the specified backoff limit"}
    assert sorted(wave["lost"]) == sorted(wave["evicted"]) and len(wave["evicted"]) == 8 and not wave["landed"]


def test_within_the_limit_the_new_pods_come_after_the_back_off(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (wave,) = _plan(tmp_path, capsys, backoffLimit=8)["waves"]
    assert wave["jobs"][JOB] == {"evicted": 8, "failures": 8, "backoffLimit": 8, "backoffSeconds": backoff(8)}
    assert not wave["lost"] and sorted(wave["landed"]) == sorted(wave["evicted"])  # back on the switched node


def test_an_ignore_rule_keeps_evictions_out_of_the_count_not_out_of_the_back_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    (wave,) = _plan(tmp_path, capsys, backoffLimit=0, podFailurePolicy=policy)["waves"]
    assert wave["jobs"][JOB] == {"evicted": 8, "failures": 0, "backoffLimit": 0, "backoffSeconds": backoff(8)}
    assert not wave["lost"]


def test_a_fail_job_rule_fails_it_at_the_first_eviction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    (wave,) = _plan(tmp_path, capsys, parallelism=2, podFailurePolicy=policy)["waves"]
    assert wave["jobs"][JOB]["failed"].startswith("PodFailurePolicy:")


def test_failures_add_up_wave_after_wave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two nodes: each wave evicts the Job's pods on the node it switches; the second wave's count and back-off start
    from the first's (no pod of the Job succeeds during the rollout)."""
    plan = _plan(tmp_path, capsys, nodes=2, parallelism=6, backoffLimit=20)
    counted = 0
    for wave in plan["waves"]:
        job = wave["jobs"].get(JOB)
        ours = [k for k in wave["evicted"] if k.startswith("default/train-")]
        if not ours:
            assert job is None
            continue
        counted += len(ours)
        assert job == {"evicted": len(ours), "failures": counted, "backoffLimit": 20, "backoffSeconds": backoff(counted)}
    assert counted > len(plan["waves"][0]["evicted"])  # the second wave evicted the Job's pods again


def test_the_table_says_what_the_job_pays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _plan(tmp_path, capsys)
    assert main(["migrate", "plan", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "lost (its Job failed)" in out
    assert "Job default/train fails: BackoffLimitExceeded" in out and "(8 pods evicted; failures 8, backoffLimit 6)" in out


def test_the_example_job_cannot_be_drained_without_failing(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/migrate/job-rollout.yaml, as its header says: eight pods on the drained node, backoffLimit 6."""
    example = Path(__file__).resolve().parents[2] / "examples" / "migrate" / "job-rollout.yaml"
    capsys.readouterr()
    assert main(["migrate", "plan", str(example), "-o", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (failed,) = [(w["nodes"], w["jobs"]["Job/ml/pretrain"]) for w in plan["waves"] if "jobs" in w]
    assert failed[0] == ["dgx-0"] and failed[1]["evicted"] == 8 and failed[1]["failed"].startswith(
        "BackoffLimitExceeded")
    assert plan["summary"]["lost"] == 8


BATCH_JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 1
  completions: 1
  template:
    metadata: {labels: {app: batch}}
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: work, resources: {limits: {nvidia.com/gpu: 2}}}"""


def test_a_preempted_job_pod_is_made_again_after_the_back_off(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Wave 1 drains ``a``: the serving pod's replacement preempts the Job's pod on ``b`` (priority 1000 over 0). The
    scheduler marks the victim DisruptionTarget and deletes it: a failed pod to its Job, as an evicted one is, so the
    Job controller makes its replacement only after the back-off of one failure (10 s), not at once; the failure
    counts toward backoffLimit (6)."""
    from tests.migrate.test_rollout import _two_nodes

    from kubedra.allocator import Features
    from kubedra.migrate import drain, rollout, waves
    from kubedra.migrate.rollout import read_cluster
    from kubedra.objects.load import load_paths
    from kubedra.sim.scenario import build_scenario

    arrivals: list[tuple[str, float]] = []
    real = rollout.simulated

    def spy(scenario: Any, features: Any, known: dict[str, str]) -> rollout.Ran:
        arrivals.extend((a.pod.metadata.name, a.arrive_at) for a in scenario.workloads.arrivals)
        return real(scenario, features, known)

    (tmp_path / "cluster.yaml").write_text(_two_nodes(BATCH_JOB))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    first = json.loads(capsys.readouterr().out)["waves"][0]
    [victim] = first["preempted"]
    assert victim.startswith("default/batch-") and first["lost"] == []
    assert first["jobs"]["Job/default/batch"] == {"evicted": 0, "preempted": 1, "failures": 1, "backoffLimit": 6,
                                                  "backoffSeconds": backoff(1)}
    assert victim not in first["waiting"]  # made again, after the back-off, on the switched a
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive"]) == 0
    assert "Job default/batch: 1 pod preempted, failures 1 of backoffLimit 6; its new pods come after a 10 s back-off" in capsys.readouterr().out
    # the runs of wave 1 alone: the victim's replacement arrives the back-off after the recreated pods
    loaded = load_paths([str(tmp_path)])
    cluster = read_cluster(loaded, build_scenario(loaded))
    features = Features.for_release("1.37")
    placement, _, held = waves._initial(cluster, features)
    monkeypatch.setattr(drain, "simulated", spy)
    drain.simulate_wave(cluster, features, set(), ("a",), placement, held=held)
    name = victim.split("/", 1)[1]
    assert [at for pod, at in arrivals if pod == name] == [0.0, rollout.RECREATED_AT + backoff(1)]


def test_a_preemption_past_the_backoff_limit_fails_the_job_in_the_wave(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """As above with backoffLimit 0: the preempted pod is the Job's first failure, past its limit: the Job fails
    (BackoffLimitExceeded) in that wave, makes no new pod, and the victim is lost with it."""
    from tests.migrate.test_rollout import _two_nodes

    (tmp_path / "cluster.yaml").write_text(_two_nodes(BATCH_JOB.replace("completions: 1", "completions: 1\n  backoffLimit: 0")))
    capsys.readouterr()
    assert main(["migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json"]) == 0
    first = json.loads(capsys.readouterr().out)["waves"][0]
    [victim] = first["preempted"]
    assert first["jobs"]["Job/default/batch"] == {
        "evicted": 0, "preempted": 1, "failures": 1, "backoffLimit": 0, "backoffSeconds": 0.0,
        "failed": "BackoffLimitExceeded: Job has reached the specified backoff limit"}
    assert first["lost"] == [victim] and victim not in first["waiting"]
