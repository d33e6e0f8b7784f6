"""The report's data, held to runs whose answer is known: three one-hour pods taking turns on one GPU, 13 pods on
2 GPUs, shares of one GPU, claims allocated in the input."""

from __future__ import annotations

from tests.metrics.test_model import EXHAUSTED, PACED

from kubedra.objects.load import load_paths, load_text
from kubedra.report.page import busiest_nodes, lanes
from kubedra.report.series import Hold, gpu_use, holds, pending_by_reason, pool_of, reason_group, waits
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

SHARED = """apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: l4}
spec:
  count: 1
  allocatable: {cpu: "64", memory: 256Gi}
  gpu: {model: L4, count: 1}
  sharing: {shares: 4}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: share}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          capacity: {requests: {shares: "1"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: share}]
      containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
"""


def _paced():  # type: ignore[no-untyped-def]
    return simulate(build_scenario(load_text(PACED, source="paced.yaml")), Options())


def test_three_pods_take_turns_on_one_gpu() -> None:
    result = _paced()
    found = holds(result)
    assert [(h.node, h.device, h.start, h.end, h.shared) for h in found] == [
        ("p-0", "gpu-0", 0.0, 3600.0, False), ("p-0", "gpu-0", 3600.0, 7200.0, False),
        ("p-0", "gpu-0", 7200.0, 10800.0, False)]
    assert len({h.claim for h in found}) == 3
    assert pending_by_reason(result) == {"cannot allocate all claims": [(0.0, 2.0), (3600.0, 1.0), (7200.0, 0.0)]}
    models, pools, totals = gpu_use(result)
    assert models == {"NVIDIA A100-SXM4-80GB": [(0.0, 1.0), (10800.0, 0.0)]}  # released and retaken at 1h and 2h
    assert pools == {"p": [(0.0, 1.0), (10800.0, 0.0)]}
    assert totals["NVIDIA A100-SXM4-80GB"] == 1
    assert sorted(w for _, w, _ in waits(result)) == [0.0, 3600.0, 7200.0]


def test_pods_that_never_fit_wait_to_the_end_under_one_reason() -> None:
    result = simulate(build_scenario(load_paths([str(EXHAUSTED)])), Options())
    assert pending_by_reason(result) == {"cannot allocate all claims": [(0.0, 11.0)]}
    found = waits(result)
    assert sum(still for _, _, still in found) == 11
    assert {h.device for h in holds(result)} == {"gpu-0", "gpu-1"}
    assert busiest_nodes(holds(result)) == ["small-0"]


def test_shares_of_one_gpu_are_marked_shared_and_get_a_row_each() -> None:
    result = simulate(build_scenario(load_text(SHARED, source="shared.yaml")), Options())
    found = holds(result)
    assert len(found) == 3
    assert all(h.shared and h.device == "gpu-0" for h in found)
    assert lanes(found) == ["gpu-0 share 1", "gpu-0 share 2", "gpu-0 share 3"]
    models, _, _ = gpu_use(result)
    assert models == {"NVIDIA L4": [(0.0, 1.0)]}  # one physical GPU however many shares


def test_lanes_are_reused_once_free() -> None:
    bars = [Hold("n", "gpu-0", "a", 0, 10, True), Hold("n", "gpu-0", "b", 5, 20, True),
            Hold("n", "gpu-0", "c", 11, 30, True), Hold("n", "gpu-1", "d", 0, 5, False)]
    assert lanes(bars) == ["gpu-0 share 1", "gpu-0 share 2", "gpu-0 share 1", "gpu-1"]


def test_reasons_lose_their_counts() -> None:
    assert reason_group("0/5000 nodes are available: 4990 cannot allocate all claims, 10 Insufficient cpu.") == (
        "cannot allocate all claims, Insufficient cpu")
    assert reason_group("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
                        "available: 2 Preemption is not helpful for scheduling.") == "Insufficient nvidia.com/gpu"
    assert reason_group("error: ResourceClaimTemplate ml/x does not exist") == (
        "error: ResourceClaimTemplate ml/x does not exist")


def test_a_pool_is_its_label_or_the_nodepool_name() -> None:
    assert pool_of("gpu-a-12", {}) == "gpu-a"
    assert pool_of("n1", {"cloud.google.com/gke-nodepool": "big"}) == "big"
