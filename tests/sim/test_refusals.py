"""Remembered refusals: a pod that fits nowhere, replayed for later pods of the same shape until the cluster changes,
gives exactly the run that attempting every pod gives — events, placements, reasons, shareIDs — and is really used."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.sim.fixtures.scenarios import claim_template, controller, job, nodepool, pod, run

from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy

Doc = dict[str, Any]


def _scenario(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = [
        nodepool("a100", count=rng.randint(2, 5), gpus=2, model="A100-80GB"),
        nodepool("l4", count=rng.randint(1, 3), gpus=4, model="L4", shares=4,
                 allocatable={"cpu": "16", "memory": "64Gi"}),
        claim_template("one-gpu"),
        claim_template("two-gpus", count=2),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "share", "namespace": "default"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"shares": "1"}}}}]}}}},
    ]
    for i in range(rng.randint(2, 5)):
        template = rng.choice(["one-gpu", "two-gpus", "share"])
        requests = rng.choice([{"cpu": "1", "memory": "4Gi"}, {"cpu": "12", "memory": "8Gi"}])
        start, run_for = f"{rng.randint(0, 30)}m", rng.choice([None, f"{rng.randint(5, 60)}m"])
        kind = rng.random()
        if kind < 0.4:
            docs.append(controller("Deployment", f"web{i}", rng.randint(3, 30), template=template,
                                   requests=requests, start_after=start, run_for=run_for))
        elif kind < 0.7:
            docs.append(job(f"job{i}", parallelism=rng.randint(1, 8), completions=rng.randint(4, 20),
                            template=template, requests=requests, run_for=run_for or "10m"))
        else:
            docs += [pod(f"p{i}-{j}", template=template, requests=requests, start_after=start, run_for=run_for)
                     for j in range(rng.randint(1, 8))]
    return docs


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the attempts really made (not replayed)."""
    calls = [0]
    original = Scheduler._attempt

    def counted(self: Scheduler, attempt: Any) -> Any:
        calls[0] += 1
        return original(self, attempt)

    monkeypatch.setattr(Scheduler, "_attempt", counted)
    return calls


@pytest.mark.parametrize("policy", [Policy.KUBE_SCHEDULER, Policy.LEAST_ALLOCATED, Policy.FIRST_FIT])
def test_remembered_refusals_change_nothing(policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    made = {True: 0, False: 0}
    for seed in range(12):
        docs = _scenario(random.Random(seed))
        with monkeypatch.context() as patch:
            patch.setattr(Scheduler, "_refusal_key", lambda self, attempt: None)
            before = calls[0]
            every = run(*docs, policy=policy, seed=seed)
            made[False] += calls[0] - before
        before = calls[0]
        remembered = run(*docs, policy=policy, seed=seed)
        made[True] += calls[0] - before
        assert remembered.document == every.document
    assert made[True] < made[False]  # refusals were replayed


def test_a_full_cluster_refuses_later_replicas_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty replicas on four GPUs: the first refusal walks every node, the other thirty-five replay it."""
    calls = _counting(monkeypatch)
    result = run(nodepool("a100", count=2, gpus=2), claim_template("one-gpu"),
                 controller("Deployment", "web", 40, template="one-gpu"))
    assert sum(1 for p in result.pods.values() if p["status"]["phase"] == "Running") == 4
    assert calls[0] == 5
    assert all(line["reason"].startswith("0/2 nodes are available") for line in result.report_pods
               if line["phase"] == "Pending")
