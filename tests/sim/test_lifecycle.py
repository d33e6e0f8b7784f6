"""The ResourceClaim and pod lifecycle over simulated time, one rule per test, read from the final objects and the
event timeline as a user of ``kubedra simulate -o json`` reads them."""

from __future__ import annotations

import re

from fixtures.scenarios import (
    SUFFIX,
    claim_of,
    claim_template,
    controller,
    job,
    nodepool,
    pod,
    resource_claim,
    run,
)

from kubedra.scheduler.scoring import Policy

HOUR = 3600.0


# ------------------------------------------------------------------------------------------------ templates


def test_a_template_yields_one_claim_per_pod_named_owned_annotated_and_recorded() -> None:
    sim = run(
        nodepool("n", gpus=4),
        claim_template("one-gpu"),
        pod("trainer-a", template="one-gpu"),
        pod("trainer-b", template="one-gpu"),
    )
    names = set()
    for pod_name in ("trainer-a", "trainer-b"):
        obj = sim.pods[pod_name]
        statuses = obj["status"]["resourceClaimStatuses"]
        assert [s["name"] for s in statuses] == ["gpu"]
        claim_name = statuses[0]["resourceClaimName"]
        assert re.fullmatch(f"{pod_name}-gpu-{SUFFIX}", claim_name)
        claim = sim.claims[claim_name]
        assert claim["metadata"]["namespace"] == "default"
        assert claim["metadata"]["generateName"] == f"{pod_name}-gpu-"
        assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
        owners = claim["metadata"]["ownerReferences"]
        assert owners == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_name,
                "uid": obj["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com"
        # Created before the pod is scheduled, allocated as it is.
        assert [t for _, t in sim.timeline(f"ResourceClaim {claim_name}")] == ["Created", "Allocated"]
        names.add(claim_name)
    assert len(names) == 2
    assert set(sim.claims) == names


# ------------------------------------------------------------------------------------------------ claims must exist


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_that_reason() -> None:
    sim = run(nodepool("n", gpus=2), pod("orphan", claim="no-such-claim"))
    assert sim.phase("orphan") == "Pending"
    assert "nodeName" not in sim.pods["orphan"]["spec"]
    reason = sim.pending_reason("orphan")
    assert '"no-such-claim"' in reason
    assert "not found" in reason
    assert sim.timeline("Pod orphan") == [(0.0, "Pending")]
    assert sim.claims == {}


def test_a_pod_whose_template_does_not_exist_waits_for_its_claim_to_be_created() -> None:
    sim = run(nodepool("n", gpus=2), pod("orphan", template="no-such-template"))
    assert sim.phase("orphan") == "Pending"
    assert "to be created" in sim.pending_reason("orphan")
    assert sim.claims == {}
    assert "resourceClaimStatuses" not in sim.pods["orphan"].get("status", {})


def test_a_pod_is_scheduled_when_its_claims_exist() -> None:
    sim = run(
        nodepool("n", gpus=2),
        resource_claim("shared"),
        claim_template("one-gpu"),
        pod("both", claim="shared"),
        pod("templated", template="one-gpu"),
    )
    assert sim.phase("both") == "Running"
    assert sim.phase("templated") == "Running"
    assert sim.node_of("both") == "n-0"
    assert sim.summary["pods"] == {"total": 2, "running": 2, "succeeded": 0, "pending": 0, "deleted": 0}


# ------------------------------------------------------------------------------------------------ allocation, sharing


def test_a_shared_claim_is_allocated_with_its_first_pod_and_later_pods_follow_it_to_its_node() -> None:
    # Three empty nodes and least-allocated scoring: without the claim's nodeSelector the later pods would spread.
    sim = run(
        nodepool("n", count=3, gpus=2),
        resource_claim("shared"),
        pod("first", claim="shared"),
        pod("second", claim="shared", start_after="10m"),
        pod("third", claim="shared", start_after="20m"),
        policy=Policy.LEAST_ALLOCATED,
    )
    allocated = [e for e in sim.events if e["type"] == "Allocated"]
    assert len(allocated) == 1
    assert allocated[0]["object"] == "ResourceClaim default/shared"
    assert allocated[0]["seconds"] == 0.0
    node = sim.node_of("first")
    assert allocated[0]["node"] == node
    assert {sim.node_of(p) for p in ("first", "second", "third")} == {node}
    assert sim.times("Pod", "Scheduled") == {"first": 0.0, "second": 600.0, "third": 1200.0}
    claim = sim.claims["shared"]
    allocation = claim["status"]["allocation"]
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": [node]}
    ]
    assert [r["pool"] for r in allocation["devices"]["results"]] == [node]
    reserved = claim["status"]["reservedFor"]
    assert [(r["resource"], r["name"]) for r in reserved] == [
        ("pods", "first"),
        ("pods", "second"),
        ("pods", "third"),
    ]
    assert [r["uid"] for r in reserved] == [sim.pods[p]["metadata"]["uid"] for p in ("first", "second", "third")]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


def test_a_later_pod_of_a_shared_claim_pends_when_the_allocated_node_is_full() -> None:
    # The claim sits on n-0; n-0 has no cpu left for the second pod, n-1 is empty but not selected by the claim.
    sim = run(
        nodepool("n", count=2, gpus=1, allocatable={"cpu": "4", "memory": "64Gi"}),
        resource_claim("shared"),
        pod("first", claim="shared", requests={"cpu": "3"}),
        pod("second", claim="shared", requests={"cpu": "2"}, start_after="1m"),
        policy=Policy.FIRST_FIT,
    )
    assert sim.node_of("first") == "n-0"
    assert sim.phase("second") == "Pending"
    reason = sim.pending_reason("second")
    assert reason.startswith("0/2 nodes are available: ")
    assert "1 Insufficient cpu" in reason
    assert "1 resourceclaim not available on the node" in reason
    assert [r["name"] for r in sim.claims["shared"]["status"]["reservedFor"]] == ["first"]


def test_reserved_for_is_capped_at_256_pods_and_the_257th_pends_with_resourceclaim_in_use() -> None:
    sim = run(
        nodepool("n", gpus=1, allocatable={"cpu": "64", "memory": "512Gi", "pods": "300"}),
        resource_claim("shared"),
        controller("ReplicaSet", "fleet", 257, claim="shared"),
    )
    reserved = sim.claims["shared"]["status"]["reservedFor"]
    assert len(reserved) == 256
    assert len({r["uid"] for r in reserved}) == 256
    pending = [name for name, p in sim.pods.items() if p["status"]["phase"] == "Pending"]
    assert len(pending) == 1
    assert pending[0] not in {r["name"] for r in reserved}
    assert sim.pending_reason(pending[0]) == "resourceclaim in use"
    assert sim.summary["pods"]["running"] == 256


# ------------------------------------------------------------------------------------------------ finishing


def test_a_finished_pod_frees_its_generated_claim_and_the_pending_pod_gets_the_device_at_that_time() -> None:
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        pod("batch", template="one-gpu", run_for="1h"),
        pod("waiting", template="one-gpu", start_after="1m"),
    )
    first_claim = sim.pods["batch"]["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    second_claim = claim_of(sim, "waiting")
    # The finished pod stays, Succeeded, on its node; its generated claim is gone.
    assert sim.phase("batch") == "Succeeded"
    assert sim.node_of("batch") == "n-0"
    assert first_claim not in sim.claims
    assert sim.timeline(f"ResourceClaim {first_claim}") == [
        (0.0, "Created"),
        (0.0, "Allocated"),
        (HOUR, "Deallocated"),
        (HOUR, "Deleted"),
    ]
    # The waiting pod pended on the only GPU, then got it when the batch pod finished.
    assert sim.timeline("Pod waiting") == [(60.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.timeline("Pod batch") == [(0.0, "Scheduled"), (HOUR, "Finished")]
    assert sim.phase("waiting") == "Running"
    assert sim.allocated_devices(second_claim) == ["n-0/gpu-0"]
    assert [r["name"] for r in sim.claims[second_claim]["status"]["reservedFor"]] == ["waiting"]


def test_a_finished_pod_leaves_reserved_for_and_the_last_one_out_deallocates_a_user_claim() -> None:
    sim = run(
        nodepool("n", gpus=1),
        resource_claim("shared"),
        claim_template("one-gpu"),
        pod("short", claim="shared", run_for="1h"),
        pod("long", claim="shared", run_for="2h"),
        pod("next", template="one-gpu", start_after="1m"),
    )
    # After 1h only "long" holds the claim: the device stays allocated and "next" keeps waiting.
    assert sim.timeline("ResourceClaim shared") == [(0.0, "Allocated"), (2 * HOUR, "Deallocated")]
    assert sim.timeline("Pod next") == [(60.0, "Pending"), (2 * HOUR, "Scheduled")]
    claim = sim.claims["shared"]  # a user's claim is not deleted, only deallocated
    assert "allocation" not in claim.get("status", {})
    assert "reservedFor" not in claim.get("status", {})
    assert "resource.kubernetes.io/delete-protection" not in claim["metadata"].get("finalizers", [])
    assert sim.phase("short") == sim.phase("long") == "Succeeded"
    assert sim.node_of("short") == sim.node_of("long") == "n-0"
    assert sim.allocated_devices(claim_of(sim, "next")) == ["n-0/gpu-0"]


def test_a_shared_claim_keeps_its_allocation_while_one_pod_still_uses_it() -> None:
    sim = run(
        nodepool("n", gpus=1),
        resource_claim("shared"),
        pod("short", claim="shared", run_for="1h"),
        pod("long", claim="shared"),
    )
    claim = sim.claims["shared"]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["long"]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert [t for _, t in sim.timeline("ResourceClaim shared")] == ["Allocated"]


# ------------------------------------------------------------------------------------------------ Jobs


def _running_at_most(sim_events: list[dict[str, object]], names: set[str]) -> int:
    running = peak = 0
    for event in sim_events:
        name = str(event["object"]).split("/", 1)[-1]
        if name not in names:
            continue
        if event["type"] == "Scheduled":
            running += 1
        elif event["type"] == "Finished":
            running -= 1
        peak = max(peak, running)
    return peak


def test_a_job_runs_at_most_parallelism_pods_until_completions_succeed() -> None:
    sim = run(
        nodepool("n", count=2, gpus=8),
        claim_template("one-gpu"),
        job("train", parallelism=2, completions=5, run_for="1h", template="one-gpu"),
    )
    pods = {name: p for name, p in sim.pods.items() if name.startswith("train-")}
    assert len(pods) == 5
    assert all(p["status"]["phase"] == "Succeeded" for p in pods.values())
    assert all(p["spec"].get("nodeName") for p in pods.values())
    assert all(p["metadata"]["labels"]["job-name"] == "train" for p in pods.values())
    assert _running_at_most(sim.events, set(pods)) == 2
    starts = sorted(sim.times("Pod", "Scheduled").values())
    assert starts == [0.0, 0.0, HOUR, HOUR, 2 * HOUR]  # successors start when a pod finishes
    assert sorted(sim.times("Pod", "Finished").values()) == [HOUR, HOUR, 2 * HOUR, 2 * HOUR, 3 * HOUR]
    assert sim.claims == {}  # every generated claim went with its pod
    assert sim.summary["simulatedTime"] == "3h"


def test_a_job_successor_waits_for_a_device_freed_by_its_predecessor() -> None:
    # One GPU, parallelism 2: the second pod pends until the first finishes; completions 3 all run in turn.
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        job("serial", parallelism=2, completions=3, run_for="30m", template="one-gpu"),
    )
    assert sorted(sim.times("Pod", "Scheduled").values()) == [0.0, 1800.0, 3600.0]
    assert _running_at_most(sim.events, set(sim.pods)) == 1
    assert sorted(p["status"]["phase"] for p in sim.pods.values()) == ["Succeeded"] * 3


def test_a_work_queue_job_creates_parallelism_pods_and_no_successors() -> None:
    sim = run(
        nodepool("n", gpus=4),
        claim_template("one-gpu"),
        job("queue", parallelism=3, run_for="1h", template="one-gpu"),
    )
    assert len(sim.pods) == 3
    assert sorted(sim.times("Pod", "Scheduled").values()) == [0.0, 0.0, 0.0]
    assert all(p["status"]["phase"] == "Succeeded" for p in sim.pods.values())


# ------------------------------------------------------------------------------------------------ controllers


def test_deployment_statefulset_and_replicaset_replicas_all_arrive_and_start_after_delays_them() -> None:
    sim = run(
        nodepool("n", count=2, gpus=8),
        claim_template("one-gpu"),
        controller("Deployment", "web", 3, template="one-gpu"),
        controller("StatefulSet", "db", 2, template="one-gpu", start_after="10m"),
        controller("ReplicaSet", "cache", 2, template="one-gpu", start_after="1h30m"),
    )
    names = set(sim.pods)
    assert {"db-0", "db-1"} <= names
    web = {n for n in names if re.fullmatch(f"web-[0-9a-z]+-{SUFFIX}", n)}
    cache = {n for n in names if re.fullmatch(f"cache-{SUFFIX}", n)}
    assert len(web) == 3
    assert len(cache) == 2
    assert len(names) == 7
    scheduled = sim.times("Pod", "Scheduled")
    assert {scheduled[n] for n in web} == {0.0}
    assert scheduled["db-0"] == scheduled["db-1"] == 600.0
    assert {scheduled[n] for n in cache} == {5400.0}
    assert sim.summary["pods"] == {"total": 7, "running": 7, "succeeded": 0, "pending": 0, "deleted": 0}
    assert len(sim.claims) == 7
    owners = {n: sim.pods[n]["metadata"]["ownerReferences"][0]["kind"] for n in names}
    assert owners == {n: "StatefulSet" if n.startswith("db-") else "ReplicaSet" for n in names}


def test_a_pod_with_run_for_from_a_deployment_finishes_and_frees_its_gpu() -> None:
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        controller("Deployment", "burst", 1, template="one-gpu", run_for="45m"),
        pod("later", template="one-gpu", start_after="5m"),
    )
    assert sim.timeline("Pod later") == [(300.0, "Pending"), (2700.0, "Scheduled")]


# ------------------------------------------------------------------------------------------------ queue order

def test_a_pod_waiting_since_earlier_gets_the_freed_device_before_a_pod_arriving_at_that_instant() -> None:
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        pod("first", template="one-gpu", run_for="1h"),
        pod("waiting", template="one-gpu", start_after="1m"),
        pod("newcomer", template="one-gpu", start_after="1h"),
    )
    assert sim.timeline("Pod waiting") == [(60.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.phase("newcomer") == "Pending"


def test_a_job_successor_does_not_jump_ahead_of_a_pod_that_was_already_waiting() -> None:
    # In Kubernetes the Job controller creates the successor after the finish, so it queues behind "other".
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        job("serial", parallelism=1, completions=3, run_for="1h", template="one-gpu"),
        pod("other", template="one-gpu", start_after="1m"),
    )
    assert sim.timeline("Pod other") == [(60.0, "Pending"), (HOUR, "Scheduled")]


# ------------------------------------------------------------------------------------------------ end of run-for

def test_a_deployment_pod_ends_by_deletion_and_its_device_goes_to_the_next_pod() -> None:
    """Deployment pods restart forever; ``run-for`` on one means the workload goes away, so its pods are deleted."""
    sim = run(
        nodepool("n", gpus=1),
        claim_template("one-gpu"),
        controller("Deployment", "web", 1, run_for="1h", template="one-gpu"),
        pod("batch", template="one-gpu", start_after="1m", run_for="1h"),
    )
    deleted = [e for e in sim.events if e["type"] == "Deleted" and e["object"].startswith("Pod default/web-")]
    assert len(deleted) == 1 and deleted[0]["seconds"] == 3600.0
    assert not any(name.startswith("web-") for name in sim.pods)  # gone from the final objects
    assert sim.summary["pods"]["deleted"] == 1
    assert sim.timeline("Pod batch") == [(60.0, "Pending"), (3600.0, "Scheduled"), (7200.0, "Finished")]
    assert sim.phase("batch") == "Succeeded"
