"""The rollout's first wave carried out on the real control plane (kube-apiserver, kube-scheduler and
kube-controller-manager v1.37.2), and compared with ``simulate_wave``'s outcome for the same wave.

The example cluster (``examples/migrate/rollout``) is created as kubedra expands it: its NodePools' nodes advertising
``nvidia.com/gpu`` as the device plugin would (time-sliced A100s: 8 per node), the workloads, the PriorityClass and
the PDB, and the DRA driver's DeviceClass with ``extendedResourceName: nvidia.com/gpu`` (unused until a node
publishes slices). The test stands in for the kubelets: a bound pod is marked Running and Ready (the StatefulSet's
OrderedReady and the PDB read that), an evicted one is gone at once. Once the real scheduler placed everything, the
plan's wave is simulated from where the pods really are (the plan reads a live cluster so) and carried out as the
runbook says: cordon, evict every pod of the node through the Eviction API (honouring the PDB: a 429 the plan must
have foreseen), switch the node to DRA (no ``nvidia.com/gpu`` in its status; its ResourceSlices published as the
test's own driver, ``gpu.nvidia.com``), uncordon; then the controllers' replacements are scheduled, and per workload
the nodes its pods run on (and how many wait) must be the plan's.

The evictions go one at a time, each replacement decided before the next, in the order kube-scheduler's queue takes
the plan's recreated pods (priority first), as ``simulate_wave`` schedules them. PriorityClasses keep the default
``preemptionPolicy`` (PreemptLowerPriority): the plan models preemption during a wave, and a second cluster (two
nodes, a high-priority Deployment drained onto a node a lower-priority one fills) has the real scheduler preempt
where the plan says it does.
"""

from __future__ import annotations

import contextlib
import time
import urllib.error
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.vs_controllers import CONTROLLERS

from kubedra.allocator import Features
from kubedra.cluster.deviceclasses import GPU_CLASS, default_device_classes
from kubedra.migrate import waves
from kubedra.migrate.drain import simulate_wave
from kubedra.migrate.mig import GPU
from kubedra.migrate.rollout import Cluster, WaveOutcome, read_cluster
from kubedra.objects.load import load_paths
from kubedra.sim.scenario import build_scenario

pytestmark = pytest.mark.controlplane

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "migrate" / "rollout"
FEATURES = Features.for_release("1.37")
TIMEOUT = 90.0
SETTLE = 3.0  # nothing changed for this long, every pod bound or Unschedulable: settled
PATHS = {"Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
         "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
         "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
         "Pod": "/api/v1/namespaces/{ns}/pods",
         "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses"}
Where = Counter[tuple[str, str]]  # (workload, node or "<waiting>") -> pods


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("rollout"), controllers=(*CONTROLLERS, "disruption")) as started:
        yield started


def _api(obj: Any, api_version: str, kind: str) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(obj)
    body["metadata"].pop("ownerReferences", None)  # kubedra's made-up Node uids: no garbage collector runs
    return {"apiVersion": api_version, "kind": kind, **body}


def _create_cluster(plane: ControlPlane, cluster: Cluster, namespace: str, workloads: str) -> None:
    (gpu_class,) = [c for c in default_device_classes() if c.metadata.name == GPU_CLASS]
    with _exists_already():  # made by an earlier test on the same control plane
        plane.create(_api(gpu_class, "resource.k8s.io/v1", "DeviceClass"))
    for gpu in cluster.gpu_nodes.values():
        allocatable = dict(gpu.plugin.status.allocatable)
        plane.create_node(gpu.name, cpu=allocatable.pop("cpu"), memory=allocatable.pop("memory"),
                          pods=allocatable.pop("pods"), extra_allocatable=allocatable,
                          labels=gpu.plugin.metadata.labels)
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": namespace}})
    for doc in yaml.safe_load_all(workloads):
        if doc["kind"] == "Node":
            continue
        if doc["kind"] != "PriorityClass":
            doc["metadata"]["namespace"] = namespace
        with _exists_already() if doc["kind"] == "PriorityClass" else contextlib.nullcontext():
            plane.request("POST", PATHS[doc["kind"]].format(ns=namespace), doc)


@contextlib.contextmanager
def _exists_already() -> Iterator[None]:
    """A cluster-scoped object (DeviceClass, PriorityClass) another test of the module created: 409 is fine."""
    try:
        yield
    except urllib.error.HTTPError as error:
        if error.code != 409:
            raise


def _pods(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = plane.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return pods


def _kubelets(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    """What the nodes' kubelets would do: a bound pod starts (Running, Ready); the live pods are returned."""
    live = []
    for pod in _pods(plane, namespace):
        if pod["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(urllib.error.HTTPError):
                plane.delete_pod(pod["metadata"]["name"], namespace)
            continue
        live.append(pod)
        if pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") != "Running":
            plane.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/status",
                          {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                          content_type="application/strategic-merge-patch+json")
    return live


def _decided(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName")) or any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in pod.get("status", {}).get("conditions", []))


def _settled(plane: ControlPlane, namespace: str, count: int) -> list[dict[str, Any]]:
    """The live pods once ``count`` of them are decided and nothing changed for ``SETTLE`` seconds."""
    deadline, last, since = time.monotonic() + TIMEOUT, None, time.monotonic()
    while True:
        pods = _kubelets(plane, namespace)
        snapshot = sorted((p["metadata"]["name"], p["spec"].get("nodeName", ""), p.get("status", {}).get("phase", ""))
                          for p in pods)
        if snapshot != last:
            last, since = snapshot, time.monotonic()
        elif len(pods) == count and all(_decided(p) for p in pods) and time.monotonic() - since >= SETTLE:
            return pods
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} pods not settled in {namespace}: {snapshot}")
        time.sleep(0.2)


def _workload(pod: dict[str, Any]) -> str:
    """The pod's workload as the plan names it (``Kind/name``): a ReplicaSet's pods are its Deployment's."""
    refs = pod["metadata"].get("ownerReferences", [])
    if not refs:
        return f"Pod/{pod['metadata']['name']}"
    ref = refs[0]
    if ref["kind"] == "ReplicaSet":
        return f"Deployment/{ref['name'].rsplit('-', 1)[0]}"
    return f"{ref['kind']}/{ref['name']}"


def _plan_workload(owner: str) -> str:
    kind, _, name = owner.split("/", 2)
    return f"{kind}/{name}"


def _real_where(pods: list[dict[str, Any]]) -> Where:
    return Counter((_workload(p), p["spec"].get("nodeName") or "<waiting>") for p in pods)


def _plan_where(cluster: Cluster, outcome: WaveOutcome) -> Where:
    owners = {f"{a.pod.metadata.namespace or 'default'}/{a.pod.metadata.name}": _plan_workload(a.owner)
              for a in cluster.pods}
    where: Where = Counter((owners[k], node) for k, node in outcome.placement.items())
    where.update((owners[k], "<waiting>") for k in outcome.waiting)
    return where


def _placement(cluster: Cluster, pods: list[dict[str, Any]]) -> dict[str, str]:
    """The plan's pods where the real ones run: each workload's plan pods given its real pods' nodes."""
    nodes: dict[str, list[str]] = {}
    for pod in sorted(pods, key=lambda p: p["spec"].get("nodeName", "")):
        if pod["spec"].get("nodeName"):
            nodes.setdefault(_workload(pod), []).append(pod["spec"]["nodeName"])
    out = {}
    for arrival in cluster.pods:
        left = nodes.get(_plan_workload(arrival.owner), [])
        if left:
            out[f"{arrival.pod.metadata.namespace or 'default'}/{arrival.pod.metadata.name}"] = left.pop(0)
    return out


def _evict(plane: ControlPlane, namespace: str, name: str) -> bool:
    """``kubectl drain``'s eviction, retried on 429 (the PDB) while the kubelets start replacements; False where the
    budget still blocks after ``TIMEOUT`` seconds."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"gracePeriodSeconds": 0}}
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            plane.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)
            return True
        except urllib.error.HTTPError as error:
            if error.code != 429 or time.monotonic() > deadline:
                if error.code == 429:
                    return False
                raise
        _kubelets(plane, namespace)
        time.sleep(1.0)


def _node_patch(plane: ControlPlane, node: str, body: dict[str, Any], status: bool = False) -> None:
    plane.request("PATCH", f"/api/v1/nodes/{node}" + ("/status" if status else ""), body,
                  content_type="application/merge-patch+json")


def test_the_first_wave_agrees_with_the_real_scheduler_and_controllers(plane: ControlPlane) -> None:
    loaded = load_paths([str(EXAMPLE)], recursive=True)
    cluster = read_cluster(loaded, build_scenario(loaded))
    plan = waves.naive(cluster, FEATURES, 1)
    wave = plan.waves[0].switching
    assert wave == ("a100-0",)  # the runbook's first wave in name order: a time-sliced A100 full of pods
    (node,) = wave
    namespace = "rollout"
    _create_cluster(plane, cluster, namespace, (EXAMPLE / "workloads.yaml").read_text())
    before = _settled(plane, namespace, len(cluster.pods))
    assert all(p["spec"].get("nodeName") for p in before), "the plan says every pod runs before the rollout"
    outcome = simulate_wave(cluster, FEATURES, set(), wave, _placement(cluster, before))

    _node_patch(plane, node, {"spec": {"unschedulable": True}})  # kubectl cordon
    draining = sorted((p for p in before if p["spec"]["nodeName"] == node),
                      key=lambda p: (-(p["spec"].get("priority") or 0), p["metadata"]["creationTimestamp"]))
    assert len(draining) == len(outcome.evicted)
    live = len(before)
    for pod in draining:
        name = pod["metadata"]["name"]
        if not _evict(plane, namespace, name):
            assert [b["budget"] for b in outcome.budgets] == ["default/inference"], f"{name}: the PDB blocks the drain"
            return  # the drain stops here, as the plan said it would
        if not pod["metadata"].get("ownerReferences"):
            live -= 1  # a bare pod: nothing recreates it
        _settled(plane, namespace, live)
    assert outcome.budgets == [], "the plan said the PDB would block the drain, and it did not"

    # The switch: the device plugin no longer advertises nvidia.com/gpu, the DRA driver publishes the GPUs.
    _node_patch(plane, node, {"status": {"allocatable": {GPU: None}, "capacity": {GPU: None}}}, status=True)
    for piece in cluster.gpu_nodes[node].slices:
        plane.create(_api(piece, "resource.k8s.io/v1", "ResourceSlice"))
    _node_patch(plane, node, {"spec": {"unschedulable": None}})  # kubectl uncordon
    after = _settled(plane, namespace, live)

    assert _real_where(after) == _plan_where(cluster, outcome)
    assert len(outcome.lost) == len(before) - live
    switched = [p for p in after if p["spec"].get("nodeName") == node]
    assert all("extendedResourceClaimStatus" in p.get("status", {}) for p in switched)  # served by DRA (KEP-5004)


def test_a_recreated_pod_preempts_where_the_plan_says(plane: ControlPlane, tmp_path: Path) -> None:
    """Two device-plugin nodes: ``serve`` (priority 1000, preferring ``a``) on ``a``, ``batch`` (priority 0, a PDB
    asking 1) filling ``b``. Draining ``a``, the real scheduler has serve's replacement preempt the batch pod on
    ``b`` (the PDB is only a preference); the batch replacement waits, then lands on the switched ``a`` through DRA.
    The plan says the same: batch preempted, by serve, on ``b``."""
    from tests.migrate.test_rollout import BATCH_DEPLOYMENT, _two_nodes

    text = _two_nodes(BATCH_DEPLOYMENT)
    (tmp_path / "cluster.yaml").write_text(text)
    loaded = load_paths([str(tmp_path)], recursive=True)
    cluster = read_cluster(loaded, build_scenario(loaded))
    namespace = "preempt"
    for node in plane.get("/api/v1/nodes")["items"]:  # an earlier test's nodes: out of this cluster's way
        _node_patch(plane, node["metadata"]["name"], {"spec": {"unschedulable": True}})
    _create_cluster(plane, cluster, namespace, text)
    before = _settled(plane, namespace, len(cluster.pods))
    assert _real_where(before) == Counter({("Deployment/serve", "a"): 1, ("Deployment/batch", "b"): 1})
    outcome = simulate_wave(cluster, FEATURES, set(), ("a",), _placement(cluster, before))
    assert [k.split("/")[1].rsplit("-", 2)[0] for k in outcome.preempted] == ["batch"]
    assert [b["budget"] for b in outcome.budgets] == ["default/batch"]

    _node_patch(plane, "a", {"spec": {"unschedulable": True}})
    (serve,) = [p for p in before if p["spec"]["nodeName"] == "a"]
    assert _evict(plane, namespace, serve["metadata"]["name"])
    during = _settled(plane, namespace, len(before))
    batch_before = {p["metadata"]["name"] for p in before if _workload(p) == "Deployment/batch"}
    assert batch_before.isdisjoint(p["metadata"]["name"] for p in during), "the batch pod was preempted"
    _node_patch(plane, "a", {"status": {"allocatable": {GPU: None}, "capacity": {GPU: None}}}, status=True)
    for piece in cluster.gpu_nodes["a"].slices:
        plane.create(_api(piece, "resource.k8s.io/v1", "ResourceSlice"))
    _node_patch(plane, "a", {"spec": {"unschedulable": None}})
    after = _settled(plane, namespace, len(before))
    assert _real_where(after) == _plan_where(cluster, outcome) == Counter(
        {("Deployment/serve", "b"): 1, ("Deployment/batch", "a"): 1})
