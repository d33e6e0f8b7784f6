"""``kubedra explain pod`` for a gang's member (why the gang waits: which members fit where, which does not) and for
preemption (which pods it evicts, or that DRA devices are not freed by preemption in 1.37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

NODE = """
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: n}
spec: {count: 1, allocatable: {cpu: "8", memory: 64Gi}, gpu: {model: A100-40GB, count: 3}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
GANG = NODE + """
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train}
spec: {schedulingPolicy: {gang: {minCount: 4}}}
""" + "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: w{i}}}
spec:
  schedulingGroup: {{podGroupName: train}}
  containers: [{{name: c, image: x, resources: {{claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
""" for i in range(4))
PREEMPTION = NODE + """
---
apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "6"}, claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
---
apiVersion: v1
kind: Pod
metadata: {name: gpus-wanted, annotations: {kubedra.io/start-after: 1m}}
spec:
  priorityClassName: high
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: four}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: four}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 4}}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: cpu-wanted, annotations: {kubedra.io/start-after: 2m}}
spec:
  priorityClassName: high
  containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]
"""


def _json(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *argv: str) -> dict[str, object]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert main(["explain", *argv, "-f", str(path), "-o", "json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_a_waiting_gang_member_says_which_members_fit_where_and_which_holds_the_group_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = _json(capsys, tmp_path, GANG, "pod", "w0", "--feature-gates", "GenericWorkload=true")
    gang = data["gang"]
    assert isinstance(gang, dict)
    assert (gang["podGroup"], gang["minCount"], gang["memberCount"], gang["bound"]) == ("default/train", 4, 4, 0)
    assert gang["members"] == [
        {"pod": "default/w0", "outcome": "fits on n-0, held back with the group"},
        {"pod": "default/w1", "outcome": "fits on n-0, held back with the group"},
        {"pod": "default/w2", "outcome": "fits on n-0, held back with the group"},
        {"pod": "default/w3", "outcome": "0/1 nodes are available: 1 cannot allocate all claims."},
    ]
    assert gang["condition"]["reason"] == "Unschedulable"  # type: ignore[index]


def test_the_table_names_the_group_and_its_quorum(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(GANG)
    assert main(["explain", "pod", "w3", "-f", str(path), "--feature-gates", "GenericWorkload=true"]) == 0
    out = capsys.readouterr().out
    assert "PodGroup:     default/train (gang, minCount 4): 4 members, 0 bound" in out
    assert "  default/w3: 0/1 nodes are available: 1 cannot allocate all claims." in out


def test_preemption_names_its_victims_and_says_devices_are_not_freed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cpu = _json(capsys, tmp_path, PREEMPTION, "pod", "cpu-wanted")
    assert cpu["preemption"] == {
        "possible": True, "node": "n-0", "victims": [{"pod": "default/batch", "priority": 0, "node": "n-0"}],
        "message": "preempted 1 pod(s) on n-0; the pod was nominated there and bound once they were gone",
    }
    gpus = _json(capsys, tmp_path, PREEMPTION, "pod", "gpus-wanted")
    preemption = gpus["preemption"]
    assert isinstance(preemption, dict) and preemption["possible"] is False
    assert "DRA devices are not freed by preemption in 1.37" in str(preemption["message"])


def test_a_gang_that_cannot_start_does_not_say_its_member_can_run_now(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Failed before the fix: "1 of 1 nodes can run the pod now" for a member of a gang of 4 on 3 GPUs."""
    data = _json(capsys, tmp_path, GANG, "pod", "w0", "--feature-gates", "GenericWorkload=true")
    summary = str(data["summary"])
    assert summary.startswith("1 of 1 nodes could run this pod alone; its group cannot start: ")
    assert "can run the pod now" not in summary


def test_a_finished_gang_member_is_not_said_to_wait_for_members(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Failed before the fix: once every member had finished, "0 of minCount 3 members exist: they wait in
    PreEnqueue" was said of a gang that had run."""
    done = GANG.replace("minCount: 4", "minCount: 3").replace("metadata: {name: w", "metadata: {annotations: "
                                                                "{kubedra.io/run-for: 1m}, name: w")
    done = done[:done.index("---\napiVersion: v1\nkind: Pod\nmetadata: {annotations: {kubedra.io/run-for: 1m}, name: w3}")]
    data = _json(capsys, tmp_path, done, "pod", "w0", "--feature-gates", "GenericWorkload=true")
    assert data["phase"] == "Succeeded"
    gang = data["gang"]
    assert isinstance(gang, dict)
    assert gang["waiting"] == ""


def test_a_waiting_gang_is_told_how_many_more_nodes_let_every_member_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Four one-GPU members on a node of 3 GPUs: one more node of pool n, proven by running the whole scenario again
    (tests/sim/test_whatif_gangs.py applies such patches to the manifests and runs them)."""
    data = _json(capsys, tmp_path, GANG, "pod", "w0", "--feature-gates", "GenericWorkload=true")
    suggestions = data["whatWouldFit"]
    assert isinstance(suggestions, list)
    (more,) = suggestions
    assert more["kind"] == "nodes" and more["fitsOn"] == ["n-0", "n-1"]
    assert more["change"]["patch"] == [{"op": "replace", "path": "/spec/count", "value": 2}]
    path = tmp_path / "in.yaml"
    assert main(["explain", "pod", "w0", "-f", str(path), "--feature-gates", "GenericWorkload=true"]) == 0
    assert ("the gang default/train runs if 1 more node of pool n were added (like n-0; proven by simulating the whole "
            "run again) [cost: add 1 node]") in capsys.readouterr().out
