"""A cluster-sized run: NodePool nodes x 8 GPUs, as many pods, each with a one-GPU claim from a template.

Not a benchmark (nothing is timed): it checks that at scale every pod is placed, no device is handed out twice and
every claim is reserved for exactly its own pod — the invariants the device index must keep while it is fast. Every
run checks 50 nodes and 400 pods (~3 s); the deep run (scripts/test --deep) the full 500 nodes and 4,000 pods (~60 s).
"""

from __future__ import annotations

from collections import Counter

import pytest
from fixtures.scenarios import claim_template, controller, nodepool, run

GPUS = 8


@pytest.mark.parametrize(
    ("nodes", "count"),
    [
        pytest.param(50, 400, id="400-pods-on-50-nodes"),
        pytest.param(500, 4000, id="4000-pods-on-500-nodes", marks=[pytest.mark.slow, pytest.mark.deep]),
    ],
)
def test_every_pod_placed_on_its_own_gpu_with_8_gpus_per_node(nodes: int, count: int) -> None:
    sim = run(
        nodepool("gpu", count=nodes, gpus=GPUS, model="H100-80GB"),
        claim_template("one-gpu"),
        controller("Deployment", "train", count // 2, template="one-gpu"),
        controller("Deployment", "serve", count // 2, template="one-gpu"),
    )
    pods = sim.pods
    claims = sim.claims
    assert len(pods) == count
    assert sim.summary["pods"] == {"total": count, "running": count, "succeeded": 0, "pending": 0, "deleted": 0}
    assert len(claims) == count

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
    assert len(used) == count
    assert max(used.values()) == 1  # no device used twice
    # count of count GPUs: every node is full, 8 pods each.
    per_node = Counter(p["spec"]["nodeName"] for p in pods.values())
    assert len(per_node) == nodes
    assert set(per_node.values()) == {GPUS}
    assert sim.summary["devices"] == [
        {"model": "NVIDIA H100 80GB HBM3", "total": nodes * GPUS, "allocated": count, "sharedDevices": 0}
    ]
