"""``simulate``'s scheduling rules end to end: extended resources (KEP-5004) on DRA and device-plugin nodes, the node
rules, scoring policies and their determinism, consumable shares and MIG — each asserted on final objects and events."""

from __future__ import annotations

import json
import re

import pytest
from fixtures.scenarios import (
    claim_of,
    claim_template,
    controller,
    nodepool,
    pod,
    run,
    text_of,
)

from kubedra.objects.load import load_text
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario

HOUR = 3600.0
GPU2 = {"nvidia.com/gpu": "2"}

# DefaultPreemption's PostFilter, appended to a FitError where Filter failed on one node unresolvably.
NOT_HELPFUL = " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


# ------------------------------------------------------------------------------------------------ KEP-5004


def test_extended_resource_on_a_dra_node_gets_a_special_claim() -> None:
    sim = run(
        nodepool("dra", gpus=4),
        pod("legacy", requests={"cpu": "1", "memory": "1Gi"}, limits=GPU2),
    )
    assert sim.node_of("legacy") == "dra-0"
    status = sim.pods["legacy"]["status"]["extendedResourceClaimStatus"]
    name = status["resourceClaimName"]
    assert re.fullmatch(r"legacy-extended-resources-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
    # Request names index the container, then the resource among its sorted requests (cpu, memory, nvidia.com/gpu).
    assert status["requestMappings"] == [
        {"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": "container-0-request-2"}
    ]
    claim = sim.claims[name]
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert claim["metadata"]["ownerReferences"][0]["name"] == "legacy"
    assert claim["metadata"]["ownerReferences"][0]["controller"] is True
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-2",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2},
        }
    ]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["pool"]) for r in results] == [("container-0-request-2", "dra-0")] * 2
    assert len({r["device"] for r in results}) == 2
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["legacy"]
    assert "resourceClaimStatuses" not in sim.pods["legacy"]["status"]


def test_extended_resource_claims_are_deleted_with_their_finished_pod() -> None:
    sim = run(
        nodepool("dra", gpus=2),
        pod("first", limits=GPU2, run_for="1h"),
        pod("second", limits=GPU2),
    )
    first_claim = sim.pods["first"]["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    assert first_claim not in sim.claims
    assert [t for _, t in sim.timeline(f"ResourceClaim {first_claim}")] == ["Allocated", "Deallocated", "Deleted"]
    assert sim.timeline("Pod second") == [(0.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.phase("first") == "Succeeded"


def test_extended_resource_on_a_device_plugin_node_counts_against_allocatable() -> None:
    sim = run(
        nodepool("dp", gpus=4, device_plugin=True),
        pod("a", limits=GPU2),
        pod("b", limits=GPU2),
        pod("c", limits=GPU2, start_after="1m"),
    )
    assert sim.node_of("a") == sim.node_of("b") == "dp-0"
    assert sim.claims == {}
    assert "extendedResourceClaimStatus" not in sim.pods["a"]["status"]
    assert sim.phase("c") == "Pending"
    assert sim.pending_reason("c") == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_extended_resource_in_a_mixed_cluster_uses_each_node_its_own_way() -> None:
    sim = run(
        nodepool("dra", gpus=2),
        nodepool("dp", gpus=2, device_plugin=True),
        pod("a", limits=GPU2),
        pod("b", limits=GPU2),
        pod("c", limits=GPU2),
        policy=Policy.FIRST_FIT,
    )
    assert sim.node_of("a") == "dra-0"
    assert sim.node_of("b") == "dp-0"
    assert "extendedResourceClaimStatus" in sim.pods["a"]["status"]
    assert "extendedResourceClaimStatus" not in sim.pods["b"]["status"]
    assert len(sim.claims) == 1
    assert sim.pending_reason("c") == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 cannot allocate all claims. preemption: 0/2 nodes "
        "are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


# ------------------------------------------------------------------------------------------------ node rules


def test_cpu_and_memory_requests_block_until_a_pod_finishes() -> None:
    sim = run(
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "16Gi"}),
        pod("big-cpu", requests={"cpu": "3", "memory": "1Gi"}, run_for="1h"),
        pod("cpu", requests={"cpu": "2"}, start_after="1m"),
        pod("big-mem", requests={"memory": "10Gi"}, run_for="2h"),
        pod("mem", requests={"memory": "8Gi"}, start_after="1m"),
        pod("too-big", requests={"cpu": "5"}),
    )
    assert sim.timeline("Pod cpu") == [(60.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.timeline("Pod mem") == [(60.0, "Pending"), (2 * HOUR, "Scheduled")]
    events = {e["object"]: e for e in sim.events if e["type"] == "Pending"}
    assert events["Pod default/cpu"]["message"] == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    assert events["Pod default/mem"]["message"] == "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    # more cpu than the node has at all: NodeResourcesFit's Unresolvable, so preemption cannot help
    assert sim.pending_reason("too-big") == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


def test_with_no_nodes_at_all_a_pod_pends_in_kube_scheduler_s_words() -> None:
    """Failed before the fix: "0/0 nodes are available: ." (kube-scheduler's ErrNoNodesAvailable comes before
    PreFilter, and no PostFilter runs after it)."""
    sim = run(pod("lonely", requests={"cpu": "1"}), pod("urgent", requests={"cpu": "1"}, priorityClassName="high"),
              {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 1000})
    assert sim.pending_reason("lonely") == sim.pending_reason("urgent") == "no nodes available to schedule pods"


def test_node_selector_blocks_unmatched_nodes_and_unblocks_matching_ones() -> None:
    sim = run(
        nodepool("plain", count=2, gpus=1),
        nodepool("fast", count=1, gpus=1, labels={"gpu-tier": "fast"}),
        claim_template("one-gpu"),
        pod("picky", template="one-gpu", nodeSelector={"gpu-tier": "fast"}),
        pod("impossible", template="one-gpu", nodeSelector={"gpu-tier": "exotic"}),
        policy=Policy.FIRST_FIT,
    )
    assert sim.node_of("picky") == "fast-0"
    assert sim.pending_reason("impossible") == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_required_node_affinity_blocks_and_unblocks() -> None:
    def affinity(values: list[str]) -> dict[str, object]:
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": values}]}
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}

    sim = run(
        nodepool("a", gpus=1, labels={"zone": "a"}),
        nodepool("b", gpus=1, labels={"zone": "b"}),
        claim_template("one-gpu"),
        pod("in-b", template="one-gpu", affinity=affinity(["b"])),
        pod("in-c", template="one-gpu", affinity=affinity(["c"])),
        policy=Policy.FIRST_FIT,
    )
    assert sim.node_of("in-b") == "b-0"
    assert sim.pending_reason("in-c") == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_taints_block_pods_that_do_not_tolerate_them() -> None:
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    sim = run(
        nodepool("tainted", gpus=2, taints=[taint]),
        claim_template("one-gpu"),
        pod("intolerant", template="one-gpu"),
        pod(
            "tolerant",
            template="one-gpu",
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        ),
    )
    assert sim.node_of("tolerant") == "tainted-0"
    assert sim.pending_reason("intolerant") == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    # The claim of the pending pod exists but is not allocated.
    assert "allocation" not in sim.claims[claim_of(sim, "intolerant")].get("status", {})
    assert sim.summary["claims"] == {"allocated": 1, "pending": 1}


# ------------------------------------------------------------------------------------------------ policies


def _placements(policy: Policy, pods: int = 4) -> list[str]:
    sim = run(
        nodepool("n", count=3, gpus=2),
        claim_template("one-gpu"),
        *[pod(f"p{i}", template="one-gpu", requests={"cpu": "1", "memory": "1Gi"}) for i in range(pods)],
        policy=policy,
    )
    return [sim.node_of(f"p{i}") for i in range(pods)]


def test_first_fit_packs_in_inventory_order() -> None:
    assert _placements(Policy.FIRST_FIT, 5) == ["n-0", "n-0", "n-1", "n-1", "n-2"]


def test_least_allocated_spreads() -> None:
    placed = _placements(Policy.LEAST_ALLOCATED, 3)
    assert sorted(placed) == ["n-0", "n-1", "n-2"]
    assert sorted(_placements(Policy.LEAST_ALLOCATED, 6)) == ["n-0", "n-0", "n-1", "n-1", "n-2", "n-2"]


def test_most_allocated_packs() -> None:
    placed = _placements(Policy.MOST_ALLOCATED, 4)
    assert sorted(placed.count(node) for node in set(placed)) == [2, 2]
    assert placed[0] == placed[1]
    assert placed[2] == placed[3]


def _json(seed: int, policy: Policy = Policy.LEAST_ALLOCATED, fast_path: bool = True) -> str:
    sim = run(
        nodepool("n", count=4, gpus=2),
        claim_template("one-gpu"),
        controller("Deployment", "web", 5, template="one-gpu", requests={"cpu": "1"}),
        pod("trainer", limits=GPU2, run_for="1h"),
        policy=policy,
        seed=seed,
        fast_path=fast_path,
    )
    return json.dumps(sim.document, sort_keys=True)


@pytest.mark.parametrize("policy", list(Policy))
def test_same_seed_gives_identical_json(policy: Policy) -> None:
    assert _json(7, policy) == _json(7, policy)


def test_same_seed_gives_identical_json_with_consumable_shares() -> None:
    def once() -> str:
        sim = run(
            nodepool("shared", gpus=1, shares=4),
            claim_template("one-gpu"),
            controller("Deployment", "infer", 2, template="one-gpu"),
            seed=7,
        )
        return json.dumps(sim.document, sort_keys=True)

    assert once() == once()


def test_a_different_seed_changes_generated_names() -> None:
    assert _json(1) != _json(2)


@pytest.mark.parametrize("policy", list(Policy))
def test_the_device_index_makes_the_same_decisions_as_the_allocator_on_every_node(policy: Policy) -> None:
    assert _json(3, policy, fast_path=True) == _json(3, policy, fast_path=False)


# ------------------------------------------------------------------------------------------------ sharing


def test_consumable_shares_put_at_most_four_claims_on_a_gpu_and_the_fifth_on_another() -> None:
    sim = run(
        nodepool("shared", gpus=2, shares=4),
        claim_template("one-gpu"),
        controller("Deployment", "infer", 9, template="one-gpu"),
    )
    per_device: dict[str, int] = {}
    allocated = {name: c for name, c in sim.claims.items() if "allocation" in c.get("status", {})}
    for name, claim in allocated.items():
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 1, name
        result = results[0]
        assert result["shareID"]
        assert result["consumedCapacity"]["shares"] == "1"
        per_device[result["device"]] = per_device.get(result["device"], 0) + 1
    assert per_device == {"gpu-0": 4, "gpu-1": 4}
    assert len(allocated) == 8
    pending = [n for n, p in sim.pods.items() if p["status"]["phase"] == "Pending"]
    assert len(pending) == 1
    assert set(sim.claims) - set(allocated) == {claim_of(sim, pending[0])}
    assert sim.pending_reason(pending[0]) == "0/1 nodes are available: 1 cannot allocate all claims." + NOT_HELPFUL
    assert sim.summary["shares"] == {"allocations": 8, "inUse": 8, "total": 8}
    assert sim.summary["devices"] == [{"model": "NVIDIA A100-SXM4-40GB", "total": 2, "allocated": 0, "sharedDevices": 2}]


def test_a_finished_sharer_frees_its_share_for_a_waiting_pod() -> None:
    sim = run(
        nodepool("shared", gpus=1, shares=2),
        claim_template("one-gpu"),
        pod("a", template="one-gpu", run_for="1h"),
        pod("b", template="one-gpu"),
        pod("c", template="one-gpu", start_after="1m"),
    )
    assert sim.timeline("Pod c") == [(60.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.allocated_devices(claim_of(sim, "c")) == ["shared-0/gpu-0"]


# ------------------------------------------------------------------------------------------------ MIG

PROFILE = "device.attributes['gpu.nvidia.com'].profile == '{}'"


def test_a_mig_claim_is_allocated_on_a_mig_device_until_the_counters_run_out() -> None:
    sim = run(
        nodepool("mig", gpus=1, model="A100-40GB", mig=True),
        claim_template("half", device_class="mig.nvidia.com", selector=PROFILE.format("3g.20gb")),
        claim_template("small", device_class="mig.nvidia.com", selector=PROFILE.format("1g.5gb")),
        pod("half-a", template="half"),
        pod("half-b", template="half"),
        pod("half-c", template="half"),
        pod("small", template="small", start_after="1m"),
    )
    devices = [sim.allocated_devices(claim_of(sim, p)) for p in ("half-a", "half-b")]
    assert sorted(devices) == [["mig-0/gpu-0-mig-3g20gb-9-0"], ["mig-0/gpu-0-mig-3g20gb-9-4"]]
    # Both 3g.20gb placements use all eight memory slices: neither another 3g.20gb nor a 1g.5gb fits.
    assert sim.pending_reason("half-c") == "0/1 nodes are available: 1 cannot allocate all claims." + NOT_HELPFUL
    assert sim.pending_reason("small") == "0/1 nodes are available: 1 cannot allocate all claims." + NOT_HELPFUL


def test_a_whole_gpu_and_its_mig_devices_exclude_each_other() -> None:
    sim = run(
        nodepool("h100", gpus=1, model="H100-80GB", mig=True),
        claim_template("whole"),
        claim_template("slice", device_class="mig.nvidia.com", selector=PROFILE.format("1g.10gb")),
        pod("whole", template="whole", run_for="1h"),
        pod("slice", template="slice", start_after="1m"),
    )
    assert sim.allocated_devices(claim_of(sim, "slice")) == ["h100-0/gpu-0-mig-1g10gb-19-0"]
    assert sim.timeline("Pod slice") == [(60.0, "Pending"), (HOUR, "Scheduled")]
    assert sim.phase("whole") == "Succeeded"


def test_an_input_without_nodes_says_so() -> None:
    scenario = build_scenario(load_text(text_of(pod("lonely", requests={"cpu": "1"}))))
    assert scenario.notes == ["the input has no Node and no NodePool: every pod stays pending (kube-scheduler: no "
                              "nodes available to schedule pods)"]
