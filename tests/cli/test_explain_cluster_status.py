"""``kubedra explain pod`` beside the cluster's own answer: a pod from a live cluster or a snapshot carries its
``nodeName`` and ``PodScheduled`` condition, and explain says where kubedra's decision differs instead of hiding it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main
from kubedra.objects.model import Condition, Pod, PodSpec, PodStatus
from kubedra.scheduler.explain_results import PodExplanation, compare_with_cluster

NODE_AND_GPU = """
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-node
  pool: {name: gpu-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
"""

UNSCHEDULABLE_POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimName: one-gpu}]
status:
  phase: Pending
  conditions:
  - type: PodScheduled
    status: "False"
    reason: Unschedulable
    message: "0/1 nodes are available: 1 cannot allocate all claims."
"""


def _explain(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    path = tmp_path / "snapshot.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["explain", "pod", "ml/trainer", "-f", str(path), "-q", *args])
    return code, capsys.readouterr().out


def test_a_pod_the_cluster_marked_unschedulable_but_kubedra_places_is_called_a_disagreement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = _explain(capsys, tmp_path, NODE_AND_GPU + UNSCHEDULABLE_POD, "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["node"] == "gpu-node"
    assert data["cluster"]["agrees"] is False
    assert data["cluster"]["reason"] == "Unschedulable"
    assert "0/1 nodes are available: 1 cannot allocate all claims." in data["cluster"]["note"]
    assert "kubedra finds it fits on gpu-node" in data["cluster"]["note"]
    code, out = _explain(capsys, tmp_path, NODE_AND_GPU + UNSCHEDULABLE_POD)
    assert "Cluster Disagrees: the cluster's scheduler reports Unschedulable" in out


def test_the_cluster_and_kubedra_agreeing_on_a_pending_pod_is_said_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    taken = NODE_AND_GPU.replace("devices: [{name: gpu-0}]", "devices: []")
    code, out = _explain(capsys, tmp_path, taken + UNSCHEDULABLE_POD, "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["phase"] == "Pending"
    assert data["cluster"]["agrees"] is True
    assert data["cluster"]["note"].startswith("the cluster's scheduler agrees: Unschedulable")


def test_input_without_the_cluster_s_answer_gets_no_verdict_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = UNSCHEDULABLE_POD.split("status:", maxsplit=1)[0]
    code, out = _explain(capsys, tmp_path, NODE_AND_GPU + plain)
    assert code == 0
    assert "cluster" not in out.split("\n", 1)[1]


def _explanation(phase: str, node: str) -> PodExplanation:
    return PodExplanation("ml/p", phase, node, "", "", [], [])


@pytest.mark.parametrize(
    ("status", "phase", "node", "agrees"),
    [
        (PodStatus(phase="Running"), "Running", "a", True),  # bound where kubedra keeps it
        (PodStatus(phase="Succeeded"), "Succeeded", "", True),
        (PodStatus(), "Running", "a", None),  # the cluster has not tried yet
        (PodStatus(conditions=[Condition(type="PodScheduled", status="False", reason="Unschedulable")]),
         "Pending", "", True),
        (PodStatus(conditions=[Condition(type="PodScheduled", status="False", reason="Unschedulable")]),
         "Running", "a", False),
    ],
)
def test_verdicts(status: PodStatus, phase: str, node: str, agrees: bool | None) -> None:
    bound = "a" if status.phase == "Running" else ""
    observed = Pod(spec=PodSpec(node_name=bound), status=status)
    assert compare_with_cluster(observed, _explanation(phase, node)).agrees is agrees


def test_a_pod_bound_elsewhere_than_kubedra_has_it_is_a_disagreement() -> None:
    observed = Pod(spec=PodSpec(node_name="a"), status=PodStatus(phase="Running"))
    verdict = compare_with_cluster(observed, _explanation("Running", "b"))
    assert verdict.agrees is False
    assert verdict.note == "the cluster runs it on a, kubedra has it on b"
