"""``kubedra migrate`` output on the real kube-apiserver (server-side dry run of every object) and kube-scheduler
(a converted workload's pod is bound with the GPU count it asked for before) of the test control plane."""

from __future__ import annotations

import contextlib
import tempfile
import urllib.error
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from tests.controlplane.fixture import ControlPlane
from tests.depth import examples
from tests.kube import builders as b
from tests.migrate.test_migrate_property import OPTIONS, inputs

from kubedra.cli import main

pytestmark = pytest.mark.controlplane

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "migrate"
PLURALS = {"Deployment": "deployments", "StatefulSet": "statefulsets", "Job": "jobs", "CronJob": "cronjobs",
           "DaemonSet": "daemonsets", "ReplicaSet": "replicasets",
           "ConfigMap": "configmaps", "Pod": "pods", "DeviceClass": "deviceclasses",
           "ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates",
           "PriorityClass": "priorityclasses", "PodDisruptionBudget": "poddisruptionbudgets"}
CLUSTER_SCOPED = {"DeviceClass", "PriorityClass"}


def migrated(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["migrate", *argv]) == 0
    out, _ = capsys.readouterr()
    return [d for d in yaml.safe_load_all(out) if d is not None]


def collection(document: dict[str, Any], namespace: str) -> str:
    api_version, kind = document["apiVersion"], document["kind"]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if kind in CLUSTER_SCOPED:
        return f"{prefix}/{PLURALS[kind]}"
    return f"{prefix}/namespaces/{namespace}/{PLURALS[kind]}"


def in_namespace(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    if document["kind"] not in CLUSTER_SCOPED:
        document = {**document, "metadata": {**document["metadata"], "namespace": namespace}}
    return document


@pytest.mark.parametrize("mode", ["claims", "extended-resource"])
def test_every_output_object_passes_a_server_side_dry_run(
    capsys: pytest.CaptureFixture[str], control_plane: ControlPlane, namespace: str, mode: str
) -> None:
    extra = ["--min-memory", "40Gi", "--same-pcie-root"] if mode == "claims" else []
    docs = migrated(capsys, "-f", str(EXAMPLES), "--mode", mode, "--gpu-memory", "80Gi", *extra)
    assert {d["kind"] for d in docs} >= {"Deployment", "Job", "StatefulSet", "CronJob", "DeviceClass"}
    for original in docs:
        if str(original.get("apiVersion", "")).startswith("nvidia.com/"):
            continue  # the GPU Operator's ClusterPolicy and GPUCluster: CRDs the test API server does not serve
        if str(original.get("apiVersion", "")).startswith("kubedra.io/"):
            continue  # the rollout example's NodePools: kubedra's own inventory kind, never sent to a cluster
        if str(original.get("apiVersion", "")).startswith(("jobset.x-k8s.io/", "leaderworkerset.x-k8s.io/")):
            continue  # the gang rollout example's JobSet and LeaderWorkerSet: CRDs the test API server does not serve
        document = in_namespace(original, namespace)
        try:
            control_plane.request("POST", collection(document, namespace) + "?dryRun=All", document)
        except urllib.error.HTTPError as error:
            pytest.fail(f"{document['kind']}/{document['metadata']['name']}: {error.read().decode()}")


def _gpu_slice(node: str, gpus: int) -> dict[str, Any]:
    """NVIDIA-shaped whole GPUs (the attributes the converted selectors read), one PCIe root."""
    body = b.node_slice(node, "gpu.nvidia.com", gpus, memory="80Gi")
    for device in body["spec"]["devices"]:
        device["attributes"] = {
            "type": {"string": "gpu"},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        }
    return body


def _ensure_gpu_class(control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA's gpu.nvidia.com class as extended-resource mode writes it (cluster-wide: created once)."""
    (device_class, _) = migrated(capsys, "-f", str(EXAMPLES / "inference-deployment.yaml"), "--mode",
                                 "extended-resource")
    with contextlib.suppress(urllib.error.HTTPError):  # 409: an earlier test created it
        control_plane.create(device_class)


def _pod_from(workload: dict[str, Any], name: str, namespace: str, node: str) -> dict[str, Any]:
    template = workload["spec"]["template"]
    spec = {**template["spec"], "nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0}
    spec.pop("restartPolicy", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _bound(control_plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"

    def bound() -> dict[str, Any] | None:
        pod = control_plane.get(path)
        return pod if b.is_bound(pod) else None

    result: dict[str, Any] = control_plane.wait_for(bound, timeout=60, what=f"pod {name} to be bound")
    return result


def _claim_results(control_plane: ControlPlane, namespace: str, claim: str) -> list[dict[str, Any]]:
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{claim}"
    found = control_plane.wait_for(lambda: control_plane.get(path).get("status", {}).get("allocation"),
                                   what=f"claim {claim} allocated")
    results: list[dict[str, Any]] = found["devices"]["results"]
    return results


def test_the_converted_training_job_gets_its_8_gpus_from_the_real_scheduler(
    capsys: pytest.CaptureFixture[str], control_plane: ControlPlane, namespace: str
) -> None:
    _ensure_gpu_class(control_plane, capsys)
    node = f"{namespace}-gpu"
    control_plane.create_node(node, cpu="64", memory="1024Gi")
    control_plane.create(_gpu_slice(node, 8))
    template, job = migrated(capsys, "-f", str(EXAMPLES / "training-job.yaml"), "--min-memory", "40Gi", "--model",
                             "A100*", "--min-compute-capability", "8.0", "--same-pcie-root")
    control_plane.create(in_namespace(template, namespace))
    control_plane.create(_pod_from(job, "trainer", namespace, node))
    pod = _bound(control_plane, namespace, "trainer")
    assert pod["spec"]["nodeName"] == node
    statuses = control_plane.wait_for(
        lambda: control_plane.get(f"/api/v1/namespaces/{namespace}/pods/trainer").get("status", {}).get(
            "resourceClaimStatuses"), what="the generated claim's name")
    results = _claim_results(control_plane, namespace, statuses[0]["resourceClaimName"])
    assert len(results) == 8
    assert {r["driver"] for r in results} == {"gpu.nvidia.com"}


def test_extended_resource_mode_serves_nvidia_gpu_through_dra_on_the_real_scheduler(
    capsys: pytest.CaptureFixture[str], control_plane: ControlPlane, namespace: str
) -> None:
    _ensure_gpu_class(control_plane, capsys)
    node = f"{namespace}-dra"
    control_plane.create_node(node, cpu="64", memory="1024Gi")  # no nvidia.com/gpu in allocatable: no device plugin
    control_plane.create(_gpu_slice(node, 2))
    docs = migrated(capsys, "-f", str(EXAMPLES / "inference-deployment.yaml"), "--mode", "extended-resource")
    deployment = docs[-1]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    control_plane.create(_pod_from(deployment, "server", namespace, node))
    _bound(control_plane, namespace, "server")
    status = control_plane.wait_for(
        lambda: control_plane.get(f"/api/v1/namespaces/{namespace}/pods/server").get("status", {}).get(
            "extendedResourceClaimStatus"), what="the extended-resource claim")
    assert status["requestMappings"][0]["resourceName"] == "nvidia.com/gpu"
    assert len(_claim_results(control_plane, namespace, status["resourceClaimName"])) == 1


# Init containers (GPUs, sidecar?), app containers (GPUs), and the devices kube-scheduler gives the pod.
LAYOUTS = {
    "init-and-app": ([(1, False)], [1], 1),
    "init-larger": ([(3, False)], [1], 3),
    "sidecar-then-init": ([(1, True), (1, False)], [1], 2),
    "init-then-sidecar": ([(2, False), (1, True)], [1], 2),
    "two-inits": ([(2, False), (3, False)], [1, 1], 3),
    "sidecar-only": ([(2, True)], [0], 2),
}


def _layout_pod(name: str, namespace: str, node: str, inits: list[tuple[int, bool]], apps: list[int]) -> dict[str, Any]:
    def container(label: str, gpus: int, sidecar: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"name": label, "image": "registry.k8s.io/pause:3.10", "resources": {}}
        if gpus:
            body["resources"]["limits"] = {"nvidia.com/gpu": str(gpus)}
        if sidecar:
            body["restartPolicy"] = "Always"
        return body
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                     "initContainers": [container(f"init-{i}", g, s) for i, (g, s) in enumerate(inits)],
                     "containers": [container(f"app-{i}", g) for i, g in enumerate(apps)]}}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_init_containers_and_sidecars_keep_their_gpu_count_on_the_real_scheduler(
    capsys: pytest.CaptureFixture[str], control_plane: ControlPlane, namespace: str, tmp_path: Path, layout: str
) -> None:
    """The original pod through KEP-5004 and the migrated one through claims get the same number of devices from the
    real kube-scheduler (kubedra's side of the same rule: ``test_migrate_gpu_count``)."""
    inits, apps, expected = LAYOUTS[layout]
    _ensure_gpu_class(control_plane, capsys)
    node = f"{namespace}-gpus"
    control_plane.create_node(node, cpu="64", memory="1024Gi")
    control_plane.create(_gpu_slice(node, 8))
    original = _layout_pod("original", namespace, node, inits, apps)
    control_plane.create(original)
    _bound(control_plane, namespace, "original")
    status = control_plane.wait_for(
        lambda: control_plane.get(f"/api/v1/namespaces/{namespace}/pods/original").get("status", {}).get(
            "extendedResourceClaimStatus"), what="the extended-resource claim")
    assert len(_claim_results(control_plane, namespace, status["resourceClaimName"])) == expected
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_layout_pod("migrated", namespace, node, inits, apps)))
    docs = migrated(capsys, "-f", str(tmp_path / "pod.yaml"))
    for document in docs:
        control_plane.create(document)
    _bound(control_plane, namespace, "migrated")
    statuses = control_plane.wait_for(
        lambda: control_plane.get(f"/api/v1/namespaces/{namespace}/pods/migrated").get("status", {}).get(
            "resourceClaimStatuses"), what="the generated claims' names")
    got = sum(len(_claim_results(control_plane, namespace, s["resourceClaimName"])) for s in statuses)
    assert got == expected


@settings(max_examples=examples(10, 100, "KUBEDRA_MIGRATE_EXAMPLES"), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(objects=inputs(), options=OPTIONS)
def test_generated_workloads_migrate_to_what_the_real_api_server_accepts(
    control_plane: ControlPlane, namespace: str, objects: list[dict[str, Any]], options: list[str]
) -> None:
    """test_migrate_property's workloads, migrated, each object dry-run created with strict field validation (a
    class an earlier test created answers 409 AlreadyExists, which the server says only after validating it)."""
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "in.yaml"
        source.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        out = Path(directory) / "out"
        assert main(["migrate", "-f", str(source), "-q", "--output-dir", str(out), *options]) == 0
        migrated_documents = list(yaml.safe_load_all((out / "in.yaml").read_text()))
    for original in migrated_documents:
        document = in_namespace(original, namespace)
        try:
            control_plane.request("POST", collection(document, namespace) + "?dryRun=All&fieldValidation=Strict",
                                  document)
        except urllib.error.HTTPError as error:
            if error.code == 409 and document["kind"] in CLUSTER_SCOPED:
                continue
            pytest.fail(f"{document['kind']}/{document['metadata']['name']}: {error.read().decode()}")
