"""``kubedra migrate plan --kubeconfig``: the cluster a rollout switches, read live (read only: nothing is written).

Read: the Nodes, the pods (the running ones keep their nodes: the plan's start is observed, not simulated), their
controllers (Deployments, StatefulSets, ReplicaSets, Jobs: a pod's workload is its controller's, a ReplicaSet's pods
its Deployment's), PriorityClasses, PodDisruptionBudgets, ResourceSlices and DeviceClasses, and the GPU Operator's
ClusterPolicy (``nvidia.com/v1``; where the CRD is not served, a note says so and the plan goes on) with the device
plugin's ConfigMap it names in ``spec.devicePlugin.config.name`` (its time-slicing replicas, selected per node by
``nvidia.com/device-plugin.config``). Plain Nodes advertising ``nvidia.com/gpu`` are the nodes to switch, their GPUs
read from GPU Feature Discovery's labels (:func:`kubedra.migrate.gpunodes.labelled_gpu_node`).

Terminated pods (Succeeded, Failed) are left out, and so are DaemonSet pods: ``kubectl drain --ignore-daemonsets``
leaves them, and their DaemonSet runs one on each node either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
from lightkube import Client

from kubedra.kube.api import READ_ERRORS, KubeError, describe_error, list_kind, list_selected, served_version
from kubedra.kube.kinds import (
    CLUSTER_POLICY,
    CONFIG_MAP,
    DEPLOYMENT,
    JOB,
    PDB,
    PRIORITY_CLASS,
    REPLICA_SET,
    STATEFUL_SET,
    Kind,
)
from kubedra.kube.read import SOURCE, read_cluster
from kubedra.migrate.rollout import Cluster, pod_key
from kubedra.migrate.rollout import read_cluster as rollout_cluster
from kubedra.objects.builder import Loaded
from kubedra.objects.load import load_paths
from kubedra.sim.scenario import Scenario, build_scenario
from kubedra.sim.workloads import PodArrival

OPERATOR_NAMESPACE = "gpu-operator"  # where the GPU Operator's Helm chart installs (its ConfigMaps live there)
TERMINATED = ("Succeeded", "Failed")
HTTP_NOT_FOUND = 404


@dataclass
class LiveCluster:
    loaded: Loaded
    scenario: Scenario
    cluster: Cluster


def _list(client: Client, kind: Kind) -> list[dict[str, Any]]:
    try:
        version = served_version(client, kind)
        return [] if version is None else list_kind(client, kind, version).items
    except READ_ERRORS as exc:
        raise KubeError(describe_error(exc, f"listing {kind.plural}")) from exc


def _controller(document: dict[str, Any]) -> dict[str, Any] | None:
    refs = (document.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "status", None), "code", None)
    return code if isinstance(code, int) else None


def device_plugin_config(client: Client, notes: list[str]) -> list[dict[str, Any]]:
    """The ConfigMap the ClusterPolicy's device plugin reads (empty where there is none), with notes saying why."""
    try:
        try:
            version = served_version(client, CLUSTER_POLICY)
        except READ_ERRORS as exc:  # a group the server does not know at all: a plain 404
            if _status(exc) != HTTP_NOT_FOUND:
                raise
            version = None
        if version is None:
            notes.append("the cluster serves no ClusterPolicy (nvidia.com/v1): the GPU Operator is not installed "
                         "(or not through a ClusterPolicy); time-slicing replicas read from the nodes' "
                         "nvidia.com/gpu.replicas labels")
            return []
        policies = list_kind(client, CLUSTER_POLICY, version).items
    except READ_ERRORS as exc:
        raise KubeError(describe_error(exc, "listing clusterpolicies")) from exc
    names = sorted({str(name) for p in policies
                    if isinstance(name := (((p.get("spec") or {}).get("devicePlugin") or {}).get("config") or {})
                                  .get("name"), str) and name})
    if not names:
        if policies:
            notes.append(f"ClusterPolicy {policies[0]['metadata']['name']}: spec.devicePlugin.config names no "
                         "ConfigMap: the device plugin shares no GPU")
        return []
    found = []
    for name in names:
        try:
            maps = list_selected(client, CONFIG_MAP, "v1", {"metadata.name": name})
        except READ_ERRORS as exc:
            raise KubeError(describe_error(exc, f"reading the device plugin's ConfigMap {name}")) from exc
        if not maps:
            notes.append(f"ClusterPolicy: the device plugin's ConfigMap {name} does not exist; time-slicing "
                         "replicas read from the nodes' nvidia.com/gpu.replicas labels")
            continue
        # The operator's namespace first, where several namespaces hold one of that name.
        maps.sort(key=lambda m: (m["metadata"].get("namespace") != OPERATOR_NAMESPACE, m["metadata"].get("namespace")))
        found.append(maps[0])
    return found


def _observed(cluster: Cluster, owners: dict[str, str]) -> tuple[list[PodArrival], dict[str, str]]:
    """The pods with their controllers as owners, unbound (an evicted pod's replacement is scheduled again), and
    where each bound one runs: the plan's start."""
    pods, observed = [], {}
    for arrival in cluster.pods:
        key = pod_key(arrival.pod)
        pod = arrival.pod
        if pod.spec.node_name:
            observed[key] = pod.spec.node_name
            pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=""))
        pods.append(replace(arrival, pod=pod, owner=owners.get(key, arrival.owner)))
    return pods, observed


def read_live(client: Client, paths: Sequence[str] = (), limits: Any = None) -> LiveCluster:
    """The cluster to switch, read live, with ``paths`` added (manifests not yet deployed). Raises KubeError when the
    cluster cannot be read, InvalidInputError where it cannot be planned (a GPU node without GFD's labels)."""
    from kubedra.sim.services import cluster_controllers

    documents = read_cluster(client)
    notes = documents.notes()
    config = device_plugin_config(client, notes)
    replica_sets = {_key(d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
                    for d in _list(client, REPLICA_SET)}
    deployments = {_key(d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in _list(client, DEPLOYMENT)}
    named = {"StatefulSet": {_key(d["metadata"].get("namespace", ""), d["metadata"]["name"])
                             for d in _list(client, STATEFUL_SET)},
             "Job": {_key(d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in _list(client, JOB)}}
    owners: dict[str, str] = {}  # pod key -> the plan's owner, "Kind/namespace/name"
    kept: list[dict[str, Any]] = []
    daemons = 0
    for document in documents.documents():
        if document.get("kind") != "Pod":
            kept.append(document)
            continue
        if (document.get("status") or {}).get("phase") in TERMINATED:
            continue
        namespace, name = document["metadata"].get("namespace") or "default", document["metadata"]["name"]
        ref = _controller(document)
        if ref is not None and ref.get("kind") == "DaemonSet":
            daemons += 1
            continue
        kept.append(document)
        if ref is None:
            continue
        kind, owner = str(ref.get("kind")), str(ref.get("name"))
        if kind == "ReplicaSet":
            parent = _controller(replica_sets.get(_key(namespace, owner)) or {})
            if parent is not None and parent.get("kind") == "Deployment" and \
                    _key(namespace, str(parent.get("name"))) in deployments:
                kind, owner = "Deployment", str(parent.get("name"))
        elif kind in named and _key(namespace, owner) not in named[kind]:
            notes.append(f"Pod {namespace}/{name}: its {kind} {owner} was not found; planned as recreated anyway")
        owners[_key(namespace, name)] = f"{kind}/{namespace}/{owner}"
    if daemons:
        notes.append(f"{daemons} DaemonSet pods left out: kubectl drain --ignore-daemonsets leaves them")
    extra = [*_list(client, PRIORITY_CLASS), *_list(client, PDB), *config]
    loaded = load_paths(paths, documents=[(SOURCE, d) for d in [*kept, *extra]], lenient_documents=True,
                        limits=limits)
    scenario = build_scenario(loaded)
    live_controllers = documents.controllers()
    if live_controllers is not None:  # PodTopologySpread's default selectors, as simulate --kubeconfig reads them
        scenario.cluster_controllers, spread_notes = cluster_controllers(live_controllers)
        notes.extend(spread_notes)
    cluster = rollout_cluster(loaded, scenario)
    pods, observed = _observed(cluster, owners)
    cluster.pods = pods
    cluster.observed = observed
    cluster.notes[:0] = [*notes, "the plan starts from where the cluster's pods run now (read live), not from a "
                         "simulated start"]
    return LiveCluster(loaded, scenario, cluster)
