"""``kubedra explain`` of a workload: its pods grouped by answer, each answer computed once per pod shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubedra.allocator import Allocator
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.scheduler.claims import key_of
from kubedra.scheduler.explain import explain_pod
from kubedra.scheduler.explain_results import PodExplanation

# The custom workloads' pods carry a label naming the object they belong to (in its namespace), as their controllers
# write it: kubectl lists them by it. A TrainJob's pods are its JobSet's, which has its name.
MEMBER_LABELS = {
    "JobSet": "jobset.sigs.k8s.io/jobset-name",
    "TrainJob": "jobset.sigs.k8s.io/jobset-name",
    "LeaderWorkerSet": "leaderworkerset.sigs.k8s.io/name",
    "RayCluster": "ray.io/cluster",
    "PyTorchJob": "training.kubeflow.org/job-name",
}
# What each custom workload calls its parts, and the pod label that names the part: the summary counts each part.
PART_LABELS = {
    "JobSet": ("replicated job", "jobset.sigs.k8s.io/replicatedjob-name"),
    "TrainJob": ("replicated job", "jobset.sigs.k8s.io/replicatedjob-name"),
    "LeaderWorkerSet": ("group", "leaderworkerset.sigs.k8s.io/group-index"),
    "RayCluster": ("group", "ray.io/group"),
    "PyTorchJob": ("replica type", "training.kubeflow.org/replica-type"),
    "RayJob": ("group", "ray.io/group"),
}
# A RayJob's pods are its RayCluster's and its submitter Job's: no label names the RayJob (the cluster carries
# ray.io/originated-from-cr-name, its pods do not), so the caller that ran it names them (``members``).
OTHER_PART = {"RayJob": "submitter Job"}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", *MEMBER_LABELS)


@dataclass
class PodGroup:
    """Pods of one workload with the same answer; ``explanation`` is the first pod's (the others differ in names)."""

    phase: str
    pods: list[str]
    nodes: list[str]
    explanation: PodExplanation

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "count": len(self.pods), "pods": self.pods, "nodes": self.nodes,
                "explanation": self.explanation.as_dict()}


@dataclass
class WorkloadExplanation:
    workload: str  # "Deployment/ns/name"
    summary: str
    groups: list[PodGroup]

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "summary": self.summary, "groups": [g.as_dict() for g in self.groups]}


def _workloads_of(record: PodRecord, kind: str) -> list[str]:
    """``ns/name`` of the workloads of ``kind`` the pod belongs to: its controller's owner references (a Deployment's
    pods are owned by its ReplicaSet) and the workload it was made from."""
    pod = record.pod
    if kind in MEMBER_LABELS:
        name = pod.metadata.labels.get(MEMBER_LABELS[kind])
        return [key_of(pod.metadata.namespace, name)] if name else []
    keys = [key_of(pod.metadata.namespace, o.name) for o in pod.metadata.owner_references if o.kind == kind]
    if record.owner.startswith(kind + "/"):
        keys.append(record.owner.removeprefix(kind + "/"))
    return keys


def workload_keys(state: ClusterState, kind: str) -> list[str]:
    """``ns/name`` of every workload of ``kind`` that has pods, in the order its first pod appears."""
    return list(dict.fromkeys(k for r in state.pods.values() for k in _workloads_of(r, kind)))


def _own_claims(record: PodRecord) -> dict[str, str]:
    """The pod's generated claim keys -> a name that is the same for every pod of the workload."""
    pod = record.pod
    names = {key_of(pod.metadata.namespace, s.resource_claim_name): f"<claim {s.name} of the pod>"
             for s in pod.status.resource_claim_statuses if s.resource_claim_name}
    if record.extended_claim_key:
        names[record.extended_claim_key] = "<extended-resource claim of the pod>"
    return names


def _answer(explanation: PodExplanation, record: PodRecord) -> str:
    """The explanation with the pod's own names replaced, so pods of one template that got the same answer match."""
    data = explanation.as_dict()
    for key in ("pod", "node", "startedAt", "endedAt"):
        data.pop(key)
    if explanation.phase != "Pending":
        data = {"phase": data["phase"], "endReason": data["endReason"]}
    text = msgspec.json.encode(data).decode()
    for key, label in _own_claims(record).items():
        text = text.replace(key, label)
    return text.replace(record.key, "<the pod>").replace(record.pod.metadata.name, "<the pod>")


def _signature(record: PodRecord) -> tuple[object, ...]:
    """What a pending pod's explanation depends on besides the cluster state: pods with equal signatures get the
    same answer, so it is computed once for them (a 1,000-replica Deployment is not checked 1,000 times)."""
    reason = record.pending_reason
    for key, label in _own_claims(record).items():
        reason = reason.replace(key.split("/", 1)[1], label)
    generated = tuple(sorted(s.name for s in record.pod.status.resource_claim_statuses))
    return msgspec.json.encode(record.pod.spec), record.pod.metadata.namespace, generated, reason, record.phase


def explain_workload(
    state: ClusterState, allocator: Allocator, kind: str, key: str, *, policy: str = "",
    members: Sequence[str] | None = None,
) -> WorkloadExplanation:
    """The pods of workload ``kind`` ``key`` (``ns/name``; ``members``: its pods' keys where no label finds them),
    grouped by answer: running and ended pods by phase (and why they ended), pending pods by their node-by-node
    explanation."""
    owner = f"{kind}/{key}"
    if members is None:
        keys = [k for k, r in state.pods.items() if key in _workloads_of(r, kind)]
    else:
        keys = [k for k in members if k in state.pods]
    computed: dict[tuple[object, ...], tuple[PodExplanation, str]] = {}
    groups: dict[str, PodGroup] = {}
    phases: dict[str, int] = {}
    for pod_key in keys:
        record = state.pods[pod_key]
        phases[record.phase] = phases.get(record.phase, 0) + 1
        signature = _signature(record)
        known = computed.get(signature)
        if known is None or record.phase != "Pending":
            explanation = explain_pod(state, allocator, pod_key, policy=policy, other_nodes=False)
            known = computed[signature] = explanation, _answer(explanation, record)
        explanation, answer = known
        group = groups.get(answer)
        if group is None:
            group = groups[answer] = PodGroup(record.phase, [], [], explanation)
        group.pods.append(pod_key)
        node = record.pod.spec.node_name
        if node and node not in group.nodes:
            group.nodes.append(node)
    order = {"Pending": 0, "Running": 1, "Succeeded": 2, "Deleted": 3}
    ordered = sorted(groups.values(), key=lambda g: (order.get(g.phase, 9), -len(g.pods)))
    counts = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items(), key=lambda p: order.get(p[0], 9)))
    summary = f"{len(keys)} pod{'s' if len(keys) != 1 else ''}: {counts}{_parts(state, kind, keys, order)}"
    return WorkloadExplanation(owner, summary, ordered)


def _parts(state: ClusterState, kind: str, keys: list[str], order: dict[str, int]) -> str:
    """``; replicated job node: 4 Running`` -- each part of a custom workload, in the words its API uses."""
    if kind not in PART_LABELS:
        return ""
    noun, label = PART_LABELS[kind]
    parts: dict[str, dict[str, int]] = {}
    for key in keys:
        record = state.pods[key]
        part = record.pod.metadata.labels.get(label)
        phases = parts.setdefault(f"{noun} {part}" if part else OTHER_PART.get(kind, f"{noun} ?"), {})
        phases[record.phase] = phases.get(record.phase, 0) + 1
    return "".join(
        f"; {part}: " + ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items(),
                                                                              key=lambda p: order.get(p[0], 9)))
        for part, phases in parts.items())
