"""``kubedra migrate`` keeps a pod's GPU count for every container layout: init containers, sidecars (init containers
with ``restartPolicy: Always``) and app containers, each asking ``nvidia.com/gpu`` or not.

The original pod is scheduled on a DRA-only node (``nvidia.com/gpu`` served by a DeviceClass with
``extendedResourceName``, KEP-5004) and the migrated one (claims mode) on the same node; both must get the same
number of devices, and that number is the count kube-scheduler's rule gives (as for cpu:
``max(max over init containers of request + sidecars started before, sum of app containers and sidecars)``).
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.depth import examples
from tests.kube.builders import node_slice
from tests.kube.vs_kube_scheduler import run_kubedra

from kubedra.migrate.documents import Source, plain
from kubedra.migrate.engine import migrate
from kubedra.migrate.model import Options

GPUS_ON_NODE = 16
Layout = tuple[list[tuple[int, bool]], list[int]]  # init containers (GPUs, sidecar?), app containers (GPUs)


def _cluster() -> list[dict[str, Any]]:
    gpu_slice = node_slice("n1", "gpu.nvidia.com", GPUS_ON_NODE)
    for device in gpu_slice["spec"]["devices"]:
        device["attributes"] = {"type": {"string": "gpu"}}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                       "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
                  "extendedResourceName": "nvidia.com/gpu"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
         "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}},
        gpu_slice,
    ]


def _container(name: str, gpus: int, sidecar: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}}}
    if gpus:
        body["resources"]["limits"] = {"nvidia.com/gpu": gpus}
    if sidecar:
        body["restartPolicy"] = "Always"
    return body


def _pod(layout: Layout) -> dict[str, Any]:
    inits, apps = layout
    spec: dict[str, Any] = {"containers": [_container(f"app-{i}", g) for i, g in enumerate(apps)]}
    if inits:
        spec["initContainers"] = [_container(f"init-{i}", g, s) for i, (g, s) in enumerate(inits)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def _expected(layout: Layout) -> int:
    """The cpu-style effective request, worked from the layout alone."""
    inits, apps = layout
    long_lived, sidecars_so_far, peak = sum(apps), 0, 0
    for gpus, sidecar in inits:
        if sidecar:
            sidecars_so_far += gpus
            long_lived += gpus
        else:
            peak = max(peak, gpus + sidecars_so_far)
    return max(long_lived, peak)


def _devices(docs: list[dict[str, Any]]) -> int:
    outcome, _ = run_kubedra([*_cluster(), *docs])
    placed = outcome["p"]
    assert placed.node == "n1", placed
    return sum(len(results) for results in placed.devices.values())


def _migrated(pod: dict[str, Any]) -> list[dict[str, Any]]:
    result = migrate([Source("pod.yaml", yaml.safe_dump(pod))], Options())
    return [plain(d) for f in result.files for d in f.documents]


layouts = st.tuples(
    st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=3),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
).filter(lambda layout: _expected(layout) > 0)


@settings(max_examples=examples(25, 300), deadline=None)
@given(layouts)
def test_the_migrated_pod_gets_exactly_the_devices_the_original_got(layout: Layout) -> None:
    pod = _pod(layout)
    original = _devices([pod])
    assert original == _expected(layout)
    assert _devices(_migrated(pod)) == original


def test_an_init_container_and_the_app_each_asking_one_gpu_share_one_claim() -> None:
    """The issue's case: one claim template, used by both containers."""
    docs = _migrated(_pod(([(1, False)], [1])))
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert len(templates) == 1
    pod = next(d for d in docs if d["kind"] == "Pod")
    assert pod["spec"]["initContainers"][0]["resources"]["claims"] == [{"name": "app-0-gpu", "request": "gpu"}]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "app-0-gpu"}]
    assert _devices(docs) == 1
