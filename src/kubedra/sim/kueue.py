"""Kueue's admission, the part a simulation needs: ClusterQueues admit workloads within their nominal quota.

Pure: no simulation here (``sim.kueue_controller`` holds Jobs and starts them). Rules as Kueue v0.17 has them
(``pkg/cache/queue``, ``pkg/scheduler``, ``pkg/scheduler/flavorassigner``), for ClusterQueues without a cohort:

- Order: a ClusterQueue's pending workloads by priority (higher first), then creation time; Kueue breaks a tie by
  the workloads' UIDs, kubedra by the input order.
- Quota: a workload's pod sets, each ``count`` pods of the same requests (``count x`` one pod's), are given flavors
  one pod set after the other: for each resource group covering a requested resource, the group's flavors in order,
  the first whose every covered, requested resource fits what the ClusterQueue has left of its nominal quota (less
  what the workload's earlier pod sets took) and whose node labels and taints the pod set's template accepts. A
  requested resource no group covers never fits; ``pods`` is counted where a group covers it.
- Admission at an instant: each ClusterQueue's workloads in order, each admitted if it fits; a StrictFIFO queue stops
  at the first that does not, a BestEffortFIFO one goes on to the next (Kueue moves a head that does not fit aside
  until quota is freed, and frees it then). A namespace the queue's ``namespaceSelector`` does not select blocks
  neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubedra.objects.model import NodeSelector, NodeSelectorTerm, Toleration
from kubedra.objects.selection import term_matches, toleration_tolerates
from kubedra.sim.kueue_objects import ClusterQueue, Flavor, KueueSetup, ResourceGroup
from kubedra.sim.manifests import selector_matches

NAMESPACE_LABEL = "kubernetes.io/metadata.name"
PODS = "pods"


@dataclass(frozen=True)
class PodSet:
    """``count`` pods of one template: ``requests`` is one pod's, in Kueue's units (``kueue_objects.units``)."""

    name: str
    count: int
    requests: dict[str, int]
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: NodeSelector | None = None  # requiredDuringSchedulingIgnoredDuringExecution
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class Workload:
    key: str  # "Job ns/name"
    namespace: str
    queue: str  # the LocalQueue, in ``namespace``
    priority: int
    created_at: float
    order: int  # the input order: Kueue's UID tie-break
    pod_sets: tuple[PodSet, ...]


@dataclass(frozen=True)
class Admission:
    """Quota reserved for a workload: per pod set, each resource's flavor, and what the flavors add to its pods."""

    workload: Workload
    cluster_queue: str
    flavors: tuple[dict[str, str], ...]
    usage: dict[tuple[str, str], int]  # (flavor, resource) -> amount
    node_selectors: tuple[dict[str, str], ...]
    tolerations: tuple[tuple[Toleration, ...], ...]


class Kueue:
    """The ClusterQueues' pending workloads and used quota; ``admit`` once after the events of an instant."""

    def __init__(self, setup: KueueSetup) -> None:
        self.setup = setup
        self.used: dict[str, dict[tuple[str, str], int]] = {name: {} for name in setup.cluster_queues}
        self.pending: dict[str, list[Workload]] = {name: [] for name in setup.cluster_queues}
        self.reasons: dict[str, str] = {}  # a pending workload's key -> why it is not admitted (Kueue's message)

    def cluster_queue_of(self, workload: Workload) -> str | None:
        return self.setup.local_queues.get((workload.namespace, workload.queue))

    def submit(self, workload: Workload) -> None:
        """A workload created now: pending in its ClusterQueue, or held for good where its queues do not exist."""
        name = self.cluster_queue_of(workload)
        if name is None:
            self.reasons[workload.key] = f"LocalQueue {workload.queue} doesn't exist"
        elif name not in self.setup.cluster_queues:
            self.reasons[workload.key] = f"ClusterQueue {name} doesn't exist"
        else:
            self.pending[name].append(workload)
            self.reasons[workload.key] = "waiting for its ClusterQueue's next admission cycle"

    def release(self, admission: Admission) -> None:
        """The workload finished: its quota is free again."""
        used = self.used[admission.cluster_queue]
        for key, amount in admission.usage.items():
            used[key] -= amount

    def admit(self) -> list[Admission]:
        """Every admission the queues make now, ClusterQueues by name."""
        out: list[Admission] = []
        for name in sorted(self.pending):
            queue = self.pending[name]
            if not queue:
                continue
            cq = self.setup.cluster_queues[name]
            queue.sort(key=lambda w: (-w.priority, w.created_at, w.order))
            inactive = self._inactive(cq)
            still = []
            blocked = False
            for workload in queue:
                if blocked or inactive:
                    self.reasons[workload.key] = inactive or self.reasons[workload.key]
                    still.append(workload)
                    continue
                if not _namespace_selected(cq, workload.namespace):
                    self.reasons[workload.key] = "Workload namespace doesn't match ClusterQueue selector"
                    still.append(workload)
                    continue
                admission, reason = self._assign(cq, workload)
                if admission is None:
                    self.reasons[workload.key] = reason
                    still.append(workload)
                    blocked = cq.strict_fifo
                    continue
                used = self.used[name]
                for key, amount in admission.usage.items():
                    used[key] = used.get(key, 0) + amount
                self.reasons.pop(workload.key, None)
                out.append(admission)
            self.pending[name] = still
        return out

    def _inactive(self, cq: ClusterQueue) -> str:
        if cq.stopped:
            return f"ClusterQueue {cq.name} is stopped (spec.stopPolicy)"
        missing = sorted({f for g in cq.groups for f in g.flavors if f not in self.setup.flavors})
        if missing:
            return f"ClusterQueue {cq.name} is inactive: flavor {missing[0]} not found"
        return ""

    def _assign(self, cq: ClusterQueue, workload: Workload) -> tuple[Admission | None, str]:
        """Flavors for every pod set (``flavorassigner``), or None and the reason none fit."""
        taken: dict[tuple[str, str], int] = {}  # what the workload's earlier pod sets took
        flavors, selectors, tolerations = [], [], []
        counts_pods = any(PODS in g.covered for g in cq.groups)
        for pod_set in workload.pod_sets:
            requests = {r: v * pod_set.count for r, v in pod_set.requests.items()}
            if counts_pods:
                requests[PODS] = pod_set.count
            chosen: dict[str, str] = {}
            for resource, amount in requests.items():
                if resource in chosen:
                    continue
                group = next((g for g in cq.groups if resource in g.covered), None)
                if group is None:
                    if amount == 0:
                        continue
                    return None, f"resource {resource} unavailable in ClusterQueue"
                wanted = {r: a for r, a in requests.items() if r in group.covered}
                flavor, reason = self._flavor(cq, group, pod_set, wanted, taken)
                if flavor is None:
                    return None, reason
                for r, a in wanted.items():
                    chosen[r] = flavor
                    taken[flavor, r] = taken.get((flavor, r), 0) + a
            flavors.append(chosen)
            labels: dict[str, str] = {}
            added: list[Toleration] = []
            for name in dict.fromkeys(chosen.values()):
                labels.update(self.setup.flavors[name].node_labels)
                added.extend(self.setup.flavors[name].tolerations)
            selectors.append(labels)
            tolerations.append(tuple(added))
        return Admission(workload, cq.name, tuple(flavors), taken, tuple(selectors), tuple(tolerations)), ""

    def _flavor(self, cq: ClusterQueue, group: ResourceGroup, pod_set: PodSet, wanted: dict[str, int],
                taken: dict[tuple[str, str], int]) -> tuple[str | None, str]:
        """The group's first flavor the pod set accepts and its requests fit in; else None and every reason."""
        reasons = []
        keys = {k for f in group.flavors for k in self.setup.flavors[f].node_labels}
        used = self.used[cq.name]
        for name in group.flavors:
            flavor = self.setup.flavors[name]
            refused = _refuses(flavor, pod_set, keys)
            if refused:
                reasons.append(refused)
                continue
            short = [f"insufficient unused quota for {r} in flavor {name}, "
                     f"{taken.get((name, r), 0) + a + used.get((name, r), 0) - group.quotas[name][r]} more needed"
                     for r, a in wanted.items()
                     if taken.get((name, r), 0) + a > group.quotas[name][r] - used.get((name, r), 0)]
            if not short:
                return name, ""
            reasons.extend(short)
        return None, "couldn't assign flavors to pod set " + f"{pod_set.name}: " + ", ".join(reasons)


def _namespace_selected(cq: ClusterQueue, namespace: str) -> bool:
    """A nil selector selects nothing, an empty one everything; only the namespace's name label is known."""
    if cq.namespace_selector is None:
        return False
    return selector_matches(cq.namespace_selector, {NAMESPACE_LABEL: namespace})


def _refuses(flavor: Flavor, pod_set: PodSet, keys: set[str]) -> str:
    """Why the pod set cannot take the flavor (``checkFlavorForPodSets``): a NoSchedule or NoExecute taint of the
    flavor it does not tolerate (the flavor's tolerations count), or its node selector and required node affinity,
    cut down to the group's label keys, not matching the flavor's node labels."""
    tolerations = (*pod_set.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(toleration_tolerates(key=t.key, operator=t.operator, value=t.value, effect=t.effect,
                                        taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect)
                   for t in tolerations):
            return f"untolerated taint {taint.key}={taint.value}:{taint.effect} in flavor {flavor.name}"
    labels = flavor.node_labels
    for key, value in pod_set.node_selector.items():
        if key in keys and labels.get(key) != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    terms = _cut(pod_set.affinity, keys)
    if terms and not any(term_matches(term, "", labels) for term in terms):
        return f"flavor {flavor.name} doesn't match node affinity"
    return ""


def _cut(affinity: NodeSelector | None, keys: set[str]) -> list[NodeSelectorTerm]:
    """``flavorSelector``: each term's expressions on the group's keys; a term left empty matches every flavor."""
    if affinity is None:
        return []
    out = []
    for term in affinity.node_selector_terms:
        kept = [e for e in term.match_expressions if e.key in keys]
        if not kept:
            return []
        out.append(NodeSelectorTerm(match_expressions=kept))
    return out

