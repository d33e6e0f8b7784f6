"""resourceApiVersion v1beta2 and v1beta1 on API servers that serve only that beta of resource.k8s.io (as 1.33 and
1.32 did): the real kube-apiserver accepts the chart's DeviceClasses in it, and the node-restricting policy,
matching that version, still refuses a driver pod's write to another node's ResourceSlice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.helm.apiserver import NAMESPACE, POLICY, RELEASE, call, helm_in, token_for
from tests.helm.chart import CHART

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]


@pytest.fixture(scope="module", params=["v1beta2", "v1beta1"])
def beta_install(request: pytest.FixtureRequest, helm: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ControlPlane]]:
    beta = str(request.param)
    runtime = f"resource.k8s.io/v1=false,resource.k8s.io/{beta}=true"
    with running_control_plane(tmp_path_factory.mktemp(f"helm-{beta}"), only=("etcd", "kube-apiserver"),
                               apiserver_args=["--runtime-config", runtime, "--allow-privileged=true"]) as plane:
        sets = ["--set", f"resourceApiVersion={beta}", "--set", "mig.enabled=true"]
        result = helm_in(plane, helm, "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace", *sets)
        assert result.returncode == 0, result.stdout + result.stderr
        yield beta, plane


def _slice(beta: str, node: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "gpu-0", "basic": {}} if beta == "v1beta1" else {"name": "gpu-0"}
    return {"apiVersion": f"resource.k8s.io/{beta}", "kind": "ResourceSlice", "metadata": {"name": f"{node}-s"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": [device]}}


def test_classes_are_served_in_the_beta(beta_install: tuple[str, ControlPlane]) -> None:
    beta, plane = beta_install
    classes = plane.get(f"/apis/resource.k8s.io/{beta}/deviceclasses")["items"]
    assert sorted(c["metadata"]["name"] for c in classes) == ["gpu.nvidia.com", "mig.nvidia.com"]


def test_the_policy_guards_slices_in_the_beta(beta_install: tuple[str, ControlPlane]) -> None:
    beta, plane = beta_install
    for node in ("node-a", "node-b"):
        plane.create_node(node)
    pod = plane.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "driver-a", "namespace": NAMESPACE},
                        "spec": {"nodeName": "node-a", "serviceAccountName": "kubedra-driver",
                                 "containers": [{"name": "driver", "image": "kubedra:0.1.0"}]}})
    token = token_for(plane, "kubedra-driver", pod)
    slices = f"/apis/resource.k8s.io/{beta}/resourceslices"

    def refused() -> Any:
        status, answer = call(plane, token, "POST", f"{slices}?dryRun=All", _slice(beta, "node-b"))
        return answer if status == 403 else None

    answer = plane.wait_for(refused, timeout=30, what="the ValidatingAdmissionPolicy to be enforced")
    assert answer["message"] == (f'resourceslices.resource.k8s.io "node-b-s" is forbidden: ValidatingAdmissionPolicy '
                                 f"'{POLICY}' with binding '{POLICY}' denied request: the kubedra driver on node "
                                 "node-a may not create ResourceSlices of node node-b")
    status, created = call(plane, token, "POST", slices, _slice(beta, "node-a"))
    assert status == 201, created
