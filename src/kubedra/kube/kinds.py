"""The kinds kubedra reads from a cluster: where each is served and whether it is namespaced.

``KINDS`` are the cluster's DRA-relevant state, read by every live command and the exporter. ``SPREAD_KINDS`` are
read only for their selectors, by the commands that schedule (``snapshot``, ``simulate --kubeconfig``, ``explain
--kubeconfig``): PodTopologySpread's system-default constraints build a pod's selector from the Services selecting it
and its controlling ReplicaSet, StatefulSet or ReplicationController (``helper.DefaultSelector``). A user not allowed
to list them still gets the rest. ``migrate plan --kubeconfig`` also reads the workloads' controllers, PriorityClasses,
PodDisruptionBudgets, the GPU Operator's ClusterPolicy and the one ConfigMap it names (the device plugin's config).
Secrets and everything else are never read.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubedra.objects.beta import SERVED

DRA_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class Kind:
    """One kind: ``versions`` in order of preference (the first one the server serves is read)."""

    kind: str
    group: str
    plural: str
    namespaced: bool
    versions: tuple[str, ...]

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


def _dra(kind: str, plural: str, namespaced: bool) -> Kind:
    return Kind(kind, DRA_GROUP, plural, namespaced, SERVED[kind])


NODE = Kind("Node", "", "nodes", namespaced=False, versions=("v1",))
POD = Kind("Pod", "", "pods", namespaced=True, versions=("v1",))
DEVICE_CLASS = _dra("DeviceClass", "deviceclasses", namespaced=False)
RESOURCE_SLICE = _dra("ResourceSlice", "resourceslices", namespaced=False)
RESOURCE_CLAIM = _dra("ResourceClaim", "resourceclaims", namespaced=True)
RESOURCE_CLAIM_TEMPLATE = _dra("ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True)
DEVICE_TAINT_RULE = _dra("DeviceTaintRule", "devicetaintrules", namespaced=False)
SERVICE = Kind("Service", "", "services", namespaced=True, versions=("v1",))
REPLICA_SET = Kind("ReplicaSet", "apps", "replicasets", namespaced=True, versions=("v1",))
STATEFUL_SET = Kind("StatefulSet", "apps", "statefulsets", namespaced=True, versions=("v1",))
REPLICATION_CONTROLLER = Kind("ReplicationController", "", "replicationcontrollers", namespaced=True, versions=("v1",))
# Read by ``migrate plan --kubeconfig`` only (the workloads' controllers, their priorities and budgets, the GPU
# Operator's ClusterPolicy and the device plugin's ConfigMap it names): deploy/migration-planner-rbac.yaml.
DEPLOYMENT = Kind("Deployment", "apps", "deployments", namespaced=True, versions=("v1",))
JOB = Kind("Job", "batch", "jobs", namespaced=True, versions=("v1",))
PRIORITY_CLASS = Kind("PriorityClass", "scheduling.k8s.io", "priorityclasses", namespaced=False, versions=("v1",))
PDB = Kind("PodDisruptionBudget", "policy", "poddisruptionbudgets", namespaced=True, versions=("v1",))
CONFIG_MAP = Kind("ConfigMap", "", "configmaps", namespaced=True, versions=("v1",))
CLUSTER_POLICY = Kind("ClusterPolicy", "nvidia.com", "clusterpolicies", namespaced=False, versions=("v1",))

# Inventory first, then what uses it: the order a snapshot is written in.
KINDS: tuple[Kind, ...] = (
    NODE,
    DEVICE_CLASS,
    RESOURCE_SLICE,
    DEVICE_TAINT_RULE,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_CLAIM,
    POD,
)

# Read for their selectors only, where the user may list them (a refusal is a note, not an error).
SPREAD_CONTROLLERS: tuple[Kind, ...] = (REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER)
SPREAD_KINDS: tuple[Kind, ...] = (SERVICE, *SPREAD_CONTROLLERS)
# What a snapshot writes and the scenario loads as documents: a controller is not among them (read from files, a
# ReplicaSet is expanded into new pods; the cluster's own pods are already there).
DOCUMENT_KINDS: tuple[Kind, ...] = (*KINDS, SERVICE)
