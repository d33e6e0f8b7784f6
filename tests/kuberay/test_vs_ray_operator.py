"""kubedra's KubeRay expansion (``kubedra.sim.rayclusters`` / ``rayjobs``) against the real operator: ray-operator
v1.5.0's manager (``tests/kuberay/build.sh``) runs against the test control plane, with its CRDs from the same
module installed; the example RayCluster and RayJobs are applied to both (a RayJob's cluster made Ready by hand, so
that the operator makes its submitter Job, whose pod the Job controller makes), and the pods compared field by field:
pod count per group, names modulo the 5-character suffix, labels, owner references, containers' and init
containers' names, resources and claims, the pod's resource claims and what else the scheduler reads.

Skips with the reason when the operator is not built (``scripts/test`` builds it where ``go`` is); in CI
(``CI=true``) a missing operator fails instead."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port, running_control_plane
from tests.sigs.harness import get_or_none, install_crds, listed, make_ready, pod_fields, wait_ready

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

HERE = Path(__file__).resolve().parent
OPERATOR = HERE / "bin" / "ray-operator"
MODULE = "github.com/ray-project/kuberay/ray-operator"
CRDS = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")  # its manager watches all three
EXAMPLE = HERE.parents[1] / "examples" / "workloads" / "ray-cluster.yaml"
SUFFIX = 5  # the random suffix of a generated name
WAIT = 60.0

pytestmark = pytest.mark.controlplane

RAYJOB: dict[str, Any] = {
    "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "train"},
    "spec": {
        "entrypoint": "python train.py",
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": {
            "rayVersion": "2.49.0",
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {"version": "v2"},
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.49.0",
                 "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}]}}},
            "workerGroupSpecs": [{
                "groupName": "gpu", "replicas": 1, "numOfHosts": 2, "rayStartParams": {},
                "labels": {"team": "ml"},
                "template": {"metadata": {"labels": {"tier": "train"}}, "spec": {
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "ray-worker", "image": "rayproject/ray:2.49.0-gpu",
                                    "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "32",
                                                             "memory": "256Gi"}}}]}},
            }],
        },
    },
}


# SidecarMode: the submitter is a container of the head (no Job); group and template labels, some trying to override
# the operator's (labelPod keeps ray.io/cluster, node-type and group, lets the rest be overridden); a head with labels
# of its own; min above max (max wins).
SIDECAR: dict[str, Any] = {
    "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "side"},
    "spec": {
        "entrypoint": "python run.py",
        "submissionMode": "SidecarMode",
        "rayClusterSpec": {
            "headGroupSpec": {"rayStartParams": {}, "labels": {"role": "head"}, "template": {
                "metadata": {"labels": {"app": "side"}},
                "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.49.0",
                                         "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}}]}}},
            "workerGroupSpecs": [{
                "groupName": "small", "replicas": 3, "minReplicas": 3, "maxReplicas": 2, "rayStartParams": {},
                "labels": {"ray.io/group": "other", "team": "a"},
                "template": {"metadata": {"labels": {"team": "b", "tier": "x", "app.kubernetes.io/name": "mine",
                                                   "ray.io/identifier": "mine", "ray.io/cluster": "nope"}}, "spec": {
                    "priorityClassName": "", "nodeSelector": {"pool": "cpu"},
                    "initContainers": [{"name": "fetch", "image": "busybox",
                                        "resources": {"requests": {"cpu": "100m"}}}],
                    "containers": [{"name": "ray-worker", "image": "rayproject/ray:2.49.0",
                                    "resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}}}]}},
            }],
        },
    },
}


def crd_dir() -> Path:
    """The operator's CRDs, ``config/crd/bases`` of the module go.mod pins (in Go's module cache after the build)."""
    out = subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", MODULE], cwd=HERE, check=True,
                         capture_output=True, text=True).stdout.strip()
    return Path(out) / "config" / "crd" / "bases"


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own (etcd, kube-apiserver, and kube-controller-manager with only the Job
    controller, for the RayJob's submitter: nothing schedules), so that neither the ray.io CRDs nor the pods left Pending reach the session's control plane and its other tests.
    Started only where the operator is built: else the module skips (CI=true: fails)."""
    if not OPERATOR.is_file():
        reason = f"ray-operator is not built ({OPERATOR}): run tests/kuberay/build.sh (scripts/test does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH: the operator's CRDs are read from Go's module cache")
    only, controllers = ("etcd", "kube-apiserver", "kube-controller-manager"), ("job-controller",)
    with running_control_plane(tmp_path_factory.mktemp("kuberay-cp"), only=only, controllers=controllers) as plane:
        yield plane


@pytest.fixture(scope="module")
def operator(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """ray-operator v1.5.0 watching a fresh namespace (returned): leader election and webhooks off, metrics and
    probes on free ports, the control plane's admin kubeconfig."""
    install_crds(control_plane, [crd_dir() / file for file in CRDS])
    namespace = control_plane.create_namespace("ray")
    probe = free_port()
    log = tmp_path_factory.mktemp("ray-operator") / "ray-operator.log"
    args = [str(OPERATOR), f"--kubeconfig={control_plane.kubeconfig}", f"--metrics-addr=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{probe}", "--enable-leader-election=false",
            f"--watch-namespace={namespace}", "--log-stdout-encoder=console"]
    component = Component("ray-operator", args, log, f"http://127.0.0.1:{probe}/readyz")
    os.environ.pop("ENABLE_WEBHOOKS", None)  # its webhooks stay off (they need serving certificates)
    component.start()
    try:
        wait_ready(component, probe)
        yield namespace
    finally:
        component.stop()


def documents(namespace: str, *docs: dict[str, Any]) -> list[dict[str, Any]]:
    """The documents with the namespace set on the namespaced ones (NodePools are kubedra's and have none)."""
    out = [copy.deepcopy(doc) for doc in docs]
    for doc in out:
        if doc["apiVersion"] != "kubedra.io/v1alpha1":
            doc["metadata"]["namespace"] = namespace
    return out


def apply(plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        if doc["apiVersion"] == "kubedra.io/v1alpha1":
            continue
        if doc["apiVersion"] == "ray.io/v1":
            plural = {"RayCluster": "rayclusters", "RayJob": "rayjobs"}[doc["kind"]]
            plane.request("POST", f"/apis/ray.io/v1/namespaces/{doc['metadata']['namespace']}/{plural}", doc)
        else:
            plane.create(doc)


def real_pods(plane: ControlPlane, namespace: str, cluster: str, count: int) -> list[dict[str, Any]]:
    """The RayCluster's pods, once ``count`` exist (and a moment more: none beyond those)."""
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=ray.io/cluster%3D{cluster}"
    return listed(plane, path, count, "pods from ray-operator")


def kubedra_pods(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    return [msgspec.to_builtins(a.pod) for a in scenario.workloads.arrivals]


def kubedra_submitters(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RayJobs' submitter Jobs' pods, made once their clusters are ready."""
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    runs = [run.submitter for run in scenario.workloads.rayjobs if run.submitter is not None]
    return [msgspec.to_builtins(pod) for run in runs for pod in run.pods]




def shape(pod: dict[str, Any], cluster_names: dict[str, str]) -> dict[str, Any]:
    """What the comparison reads of a pod; ``cluster_names`` maps a generated cluster name to a stable one."""

    def stable(text: str) -> str:
        for name, alias in cluster_names.items():
            text = text.replace(name, alias)
        return text

    meta, spec = pod["metadata"], pod["spec"]
    owners = [(o["apiVersion"], o["kind"], stable(o["name"]), o.get("controller"), o.get("blockOwnerDeletion"))
              for o in meta.get("ownerReferences", [])]
    return {
        "prefix": stable(meta["name"][:-SUFFIX]),
        "labels": {k: stable(v) for k, v in meta.get("labels", {}).items()},
        **pod_fields(pod),
        "owners": owners,  # the RayCluster's generated name made stable
        "priorityClassName": spec.get("priorityClassName"),
    }


def by_prefix(shapes: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for s in sorted(shapes, key=lambda s: s["prefix"]):
        out.setdefault(s["prefix"], []).append(s)
    return out


def compare(real: list[dict[str, Any]], ours: list[dict[str, Any]], real_names: dict[str, str],
            our_names: dict[str, str]) -> None:
    real_groups = by_prefix([shape(p, real_names) for p in real])
    our_groups = by_prefix([shape(p, our_names) for p in ours])
    assert {k: len(v) for k, v in our_groups.items()} == {k: len(v) for k, v in real_groups.items()}
    for prefix, group in real_groups.items():
        assert all(s == group[0] for s in group), f"{prefix}: the operator's pods differ among themselves"
        assert our_groups[prefix][0] == group[0], prefix


def test_the_example_raycluster_expands_as_ray_operator_makes_it(control_plane: ControlPlane,
                                                                   operator: str) -> None:
    docs = documents(operator, *yaml.safe_load_all(EXAMPLE.read_text()))
    apply(control_plane, docs)
    real = real_pods(control_plane, operator, "ray-cluster", 5)  # the head and 4 workers (replicas 6 clamped to maxReplicas 4)
    compare(real, kubedra_pods(docs), {}, {})
    prefixes = sorted(p["metadata"]["name"][:-SUFFIX] for p in real)
    assert prefixes == ["ray-cluster-gpu-worker-"] * 4 + ["ray-cluster-head-"]


@pytest.mark.parametrize(("rayjob", "count"), [
    (RAYJOB, 3),  # the head and 1 replica of 2 hosts; no submitter Job until the cluster is ready
    (SIDECAR, 3),  # the head (with the submitter container) and 2 workers (min 3 above max 2: max)
], ids=["k8sjobmode-autoscaler-v2", "sidecarmode-labels"])
def test_a_rayjob_s_cluster_expands_as_ray_operator_makes_it(control_plane: ControlPlane, operator: str,
                                                             rayjob: dict[str, Any], count: int) -> None:
    namespace, job = operator, rayjob["metadata"]["name"]
    docs = documents(namespace, rayjob)
    apply(control_plane, docs)

    def cluster() -> dict[str, Any] | None:
        items: list[dict[str, Any]] = control_plane.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters")["items"]
        return next((c for c in items if c["metadata"]["name"].startswith(f"{job}-")), None)

    real_cluster = control_plane.wait_for(cluster, timeout=WAIT, interval=0.5, what="the RayJob's RayCluster")
    name = real_cluster["metadata"]["name"]
    assert len(name) == len(f"{job}-") + SUFFIX
    owner = real_cluster["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("RayJob", job, True)
    real = real_pods(control_plane, namespace, name, count)
    ours = kubedra_pods(docs)
    our_name = ours[0]["metadata"]["labels"]["ray.io/cluster"]
    assert len(our_name) == len(name)
    compare(real, ours, {name: "<cluster>"}, {our_name: "<cluster>"})


def test_a_rayjob_s_submitter_job_is_made_as_ray_operator_makes_it(control_plane: ControlPlane,
                                                                    operator: str) -> None:
    # K8sJobMode: once the cluster is Ready (every pod Running and Ready: CheckAllPodsRunning) createNewK8sJob makes
    # the Job "<rayjob>" from GetSubmitterTemplate; the Job controller makes its pod.
    namespace = operator
    rayjob = copy.deepcopy(RAYJOB)
    rayjob["metadata"]["name"] = "submit"
    docs = documents(namespace, rayjob)
    apply(control_plane, docs)

    def cluster() -> str | None:
        items: list[dict[str, Any]] = control_plane.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters")["items"]
        return next((c["metadata"]["name"] for c in items if c["metadata"]["name"].startswith("submit-")), None)

    name = control_plane.wait_for(cluster, timeout=WAIT, interval=0.5, what="the RayJob's RayCluster")
    for pod in real_pods(control_plane, namespace, name, 3):
        make_ready(control_plane, pod)
    job = control_plane.wait_for(lambda: get_or_none(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs/submit"),
                                 timeout=WAIT, interval=0.5, what="the submitter Job")
    assert job["metadata"]["labels"] == {"ray.io/originated-from-cr-name": "submit",
                                         "ray.io/originated-from-crd": "RayJob",
                                         "app.kubernetes.io/created-by": "kuberay-operator"}
    assert (job["spec"]["backoffLimit"], job["spec"].get("parallelism"), job["spec"].get("completions")) == (2, 1, 1)
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=job-name%3Dsubmit"
    real = control_plane.wait_for(lambda: control_plane.get(path)["items"], timeout=WAIT, interval=0.5,
                                  what="the submitter Job's pod")
    uid = job["metadata"]["uid"]
    ours = kubedra_submitters(docs)
    our_uid = ours[0]["metadata"]["ownerReferences"][0]["uid"]
    compare(real, ours, {uid: "<uid>"}, {our_uid: "<uid>"})


def _kubedra_deadline(docs: list[dict[str, Any]], ready: bool) -> tuple[str, bool, bool]:
    """kubedra's RayJob at its deadline: (the failure's reason, its cluster's pods deleted, a submitter Job made);
    ``ready``: a node pool where the cluster fits (else none: it never gets ready, as nothing schedules here)."""
    pool = {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "h100"}, "spec": {
        "count": 2, "allocatable": {"cpu": "64", "memory": "512Gi"},
        "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
    rayjob = copy.deepcopy(docs[0])
    rayjob["metadata"]["annotations"] = {"kubedra.io/run-for": "1h"}
    result = simulate(build_scenario(load_text(yaml.safe_dump_all([*([pool] if ready else []), rayjob]))),
                      Options(fragmentation_samples=0))
    name = f"RayJob {rayjob['metadata']['namespace']}/{rayjob['metadata']['name']}"
    (failed,) = [e for e in result.events if e.object == name and e.type == "Failed"]
    cluster = {key for key, r in result.state.pods.items() if "ray.io/cluster" in r.pod.metadata.labels}
    deleted = {e.object.split(" ", 1)[1] for e in result.events if e.type == "Deleted"}
    made = any(e.type == "Created" and e.object.startswith("Job ") for e in result.events)
    return failed.message.split(":", 1)[0], bool(cluster) and cluster <= deleted, made


@pytest.mark.parametrize("ready", [False, True], ids=["cluster-never-ready", "submitter-running"])
def test_a_rayjob_past_its_deadline_fails_as_ray_operator_fails_it(control_plane: ControlPlane, operator: str,
                                                                   ready: bool) -> None:
    # checkActiveDeadlineAndUpdateStatusIfNeeded, then handleShutdownAfterJobFinishes: the RayCluster deleted, the
    # submitter Job (where one was made) kept.
    namespace, name = operator, f"late-{int(ready)}"
    rayjob = copy.deepcopy(RAYJOB)
    rayjob["metadata"]["name"] = name
    rayjob["spec"]["activeDeadlineSeconds"] = 20 if ready else 5
    docs = documents(namespace, rayjob)
    apply(control_plane, docs)
    base = f"/apis/ray.io/v1/namespaces/{namespace}"

    def cluster() -> str | None:
        items: list[dict[str, Any]] = control_plane.get(f"{base}/rayclusters")["items"]
        return next((c["metadata"]["name"] for c in items if c["metadata"]["name"].startswith(f"{name}-")), None)

    cluster_name = control_plane.wait_for(cluster, timeout=WAIT, interval=0.5, what="the RayJob's RayCluster")
    if ready:
        for pod in real_pods(control_plane, namespace, cluster_name, 3):
            make_ready(control_plane, pod)
        control_plane.wait_for(lambda: get_or_none(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"),
                               timeout=WAIT, interval=0.5, what="the submitter Job")

    def failed() -> dict[str, Any] | None:
        status: dict[str, Any] = control_plane.get(f"{base}/rayjobs/{name}").get("status") or {}
        return status if status.get("jobDeploymentStatus") == "Failed" else None

    status = control_plane.wait_for(failed, timeout=WAIT, interval=0.5, what="the RayJob to fail")
    control_plane.wait_for(lambda: cluster() is None, timeout=WAIT, interval=0.5, what="the RayCluster's deletion")
    job = get_or_none(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
    assert (status["reason"], True, job is not None) == _kubedra_deadline(docs, ready)


def test_a_rayjob_s_deleted_pods_are_answered_as_migrate_plan_models(control_plane: ControlPlane,
                                                                     operator: str) -> None:
    # migrate.ray_restarts' premise, on the real operator: once the RayJob's cluster is provisioned (every pod Ready,
    # its submitter Job made), reconcilePods makes a deleted worker again, and makes no head for a deleted head
    # ("skipping head creation to let RayJob controller handle the failure").
    namespace, name = operator, "evict"
    rayjob = copy.deepcopy(RAYJOB)
    rayjob["metadata"]["name"] = name
    apply(control_plane, documents(namespace, rayjob))

    def cluster() -> dict[str, Any] | None:
        items: list[dict[str, Any]] = control_plane.get(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters")["items"]
        return next((c for c in items if c["metadata"]["name"].startswith(f"{name}-")), None)

    cluster_name = control_plane.wait_for(cluster, timeout=WAIT, interval=0.5, what="the RayCluster")["metadata"]["name"]
    pods = real_pods(control_plane, namespace, cluster_name, 3)
    for pod in pods:
        make_ready(control_plane, pod)
    control_plane.wait_for(lambda: get_or_none(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"),
                           timeout=WAIT, interval=0.5, what="the submitter Job")

    def provisioned() -> bool:
        found = cluster()
        return found is not None and any(c["type"] == "RayClusterProvisioned" and c["status"] == "True"
                                         for c in (found.get("status") or {}).get("conditions", []))

    control_plane.wait_for(provisioned, timeout=WAIT, interval=0.5, what="RayClusterProvisioned")
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=ray.io/cluster%3D{cluster_name}"

    def names(node_type: str) -> set[str]:
        return {p["metadata"]["name"] for p in control_plane.get(path)["items"]
                if p["metadata"]["labels"]["ray.io/node-type"] == node_type}

    worker = sorted(names("worker"))[0]
    control_plane.delete_pod(worker, namespace)
    control_plane.wait_for(lambda: len(names("worker")) == 2 and worker not in names("worker"), timeout=WAIT,
                           interval=0.5, what="the deleted worker made again")
    (head,) = names("head")
    control_plane.delete_pod(head, namespace)
    control_plane.wait_for(lambda: not names("head"), timeout=WAIT, interval=0.5, what="the head pod gone")
    time.sleep(10)  # reconcilePods requeues every few seconds: a head made again would be there by now
    assert names("head") == set() and len(names("worker")) == 2
