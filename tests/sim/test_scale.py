"""A cluster-sized run: 500 NodePool nodes x 8 GPUs and 4,000 pods, each with a one-GPU claim from a template.

Not a benchmark (nothing is timed): it checks that at scale every pod is placed, no device is handed out twice and
every claim is reserved for exactly its own pod — the invariants the device index must keep while it is fast.
"""

from __future__ import annotations

from collections import Counter

import pytest
from fixtures.scenarios import claim_template, controller, nodepool, run

NODES = 500
GPUS = 8
PODS = 4000


@pytest.mark.slow
def test_4000_pods_on_500_nodes_with_8_gpus_each() -> None:
    sim = run(
        nodepool("gpu", count=NODES, gpus=GPUS, model="H100-80GB"),
        claim_template("one-gpu"),
        controller("Deployment", "train", PODS // 2, template="one-gpu"),
        controller("Deployment", "serve", PODS // 2, template="one-gpu"),
    )
    pods = sim.pods
    claims = sim.claims
    assert len(pods) == PODS
    assert sim.summary["pods"] == {"total": PODS, "running": PODS, "succeeded": 0, "pending": 0, "deleted": 0}
    assert len(claims) == PODS

    used: Counter[str] = Counter()
    for name, pod in pods.items():
        node = pod["spec"]["nodeName"]
        (status,) = pod["status"]["resourceClaimStatuses"]
        claim = claims[status["resourceClaimName"]]
        assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
        assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == node  # the device is on the pod's node
        assert "shareID" not in result
        used[f"{result['pool']}/{result['device']}"] += 1
    assert len(used) == PODS
    assert max(used.values()) == 1  # no device used twice
    # 4,000 of 4,000 GPUs: every node is full, 8 pods each.
    per_node = Counter(p["spec"]["nodeName"] for p in pods.values())
    assert len(per_node) == NODES
    assert set(per_node.values()) == {GPUS}
    assert sim.summary["devices"] == [
        {"model": "NVIDIA H100 80GB HBM3", "total": NODES * GPUS, "allocated": PODS, "sharedDevices": 0}
    ]
