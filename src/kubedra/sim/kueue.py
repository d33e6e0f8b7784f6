"""Kueue's admission, the part a simulation needs: ClusterQueues admit workloads within their quota.

Pure: no simulation here (``sim.kueue_controller`` holds Jobs and JobSets and starts them). Rules as Kueue v0.17 has
them (``pkg/cache/queue``, ``pkg/cache/scheduler``, ``pkg/scheduler``, ``pkg/scheduler/flavorassigner``):

- Order: a ClusterQueue's pending workloads by priority (higher first), then creation time; Kueue breaks a tie by
  the workloads' UIDs, kubedra by the input order.
- Quota: a workload's pod sets, each ``count`` pods of the same requests (``count x`` one pod's), are given flavors
  one pod set after the other: for each resource group covering a requested resource, the group's flavors in order,
  the first whose every covered, requested resource fits what the ClusterQueue has available (less what the
  workload's earlier pod sets took) and whose node labels and taints the pod set's template accepts. A requested
  resource no group covers never fits; ``pods`` is counted where a group covers it.
- Available: without a cohort, nominal quota less usage. ClusterQueues naming one ``cohortName`` (an implicit Cohort)
  lend it their nominal quota less what ``nominal - lendingLimit`` keeps for themselves (all of it without a
  lendingLimit), and may borrow from it the unused rest, at most ``borrowingLimit`` beyond their own
  (``available`` in ``resource_node.go``). Flavors are taken where they fit borrowing too (flavorFungibility's
  default ``whenCanBorrow: MayStopSearch``).
- Admission at an instant, in scheduling cycles until one admits nothing more: each cycle takes every ClusterQueue's
  head; one that does not fit blocks its queue (StrictFIFO) or is moved aside (BestEffortFIFO: Kueue requeues it
  when quota is freed); the others are admitted in order, those that do not borrow first, then by priority and
  creation, each only if it still fits after the ones before. A namespace the queue's ``namespaceSelector`` does
  not select blocks neither.
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
    borrows: int = 0  # 1 where it takes more than the ClusterQueue's nominal quota of some resource (borrows)


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
        """Every admission the queues make now, in Kueue's scheduling cycles (``scheduler.schedule``): each cycle
        takes every ClusterQueue's head (ClusterQueues by name), nominates those that fit, and admits them in order
        (no borrowing first, then priority, then creation), each only if it still fits after those before it."""
        out: list[Admission] = []
        aside: set[str] = set()  # heads that did not fit this instant (BestEffortFIFO moves them aside)
        blocked: set[str] = set()  # ClusterQueues whose head blocks the rest (StrictFIFO) or that are inactive
        for queue in self.pending.values():
            queue.sort(key=lambda w: (-w.priority, w.created_at, w.order))
        progressed = True
        while progressed:
            progressed = False
            entries = []
            for name in sorted(self.pending):
                head = next((w for w in self.pending[name] if w.key not in aside), None)
                if head is None or name in blocked:
                    continue
                cq = self.setup.cluster_queues[name]
                inactive = self._inactive(cq)
                if inactive:
                    for workload in self.pending[name]:
                        self.reasons[workload.key] = inactive
                    blocked.add(name)
                    continue
                admission, reason = (None, "Workload namespace doesn't match ClusterQueue selector") if not (
                    _namespace_selected(cq, head.namespace)) else self._assign(cq, head)
                if admission is None:
                    self.reasons[head.key] = reason
                    progressed = True
                    if cq.strict_fifo and reason != "Workload namespace doesn't match ClusterQueue selector":
                        blocked.add(name)
                    else:
                        aside.add(head.key)
                    continue
                entries.append(admission)
            entries.sort(key=lambda a: (a.borrows, -a.workload.priority, a.workload.created_at, a.workload.order))
            for admission in entries:
                key = admission.workload.key
                if not all(q <= self.available(admission.cluster_queue, fr) for fr, q in admission.usage.items()):
                    self.reasons[key] = "Workload no longer fits after processing another workload"
                    continue
                used = self.used[admission.cluster_queue]
                for fr, amount in admission.usage.items():
                    used[fr] = used.get(fr, 0) + amount
                self.pending[admission.cluster_queue].remove(admission.workload)
                self.reasons.pop(key, None)
                out.append(admission)
                progressed = True
        return out

    def available(self, name: str, fr: tuple[str, str]) -> int:
        """What the ClusterQueue can still take of a flavor's resource (``available`` in ``resource_node.go``): its
        nominal quota less its usage; in a cohort, what it keeps from lending (``nominal - lendingLimit``) and is
        unused, plus the cohort's unused pool (every member's lent quota less what members use beyond what they
        keep), the latter bounded by its borrowingLimit beyond what it lent."""
        cq = self.setup.cluster_queues[name]
        nominal, borrowing, _ = _quota(cq, fr)
        used = self.used[name].get(fr, 0)
        if cq.cohort is None:
            return max(0, nominal - used)
        pool = pool_used = 0
        for member in self.setup.cluster_queues.values():
            if member.cohort == cq.cohort:
                n, _, keep = _quota(member, fr)
                pool += n - keep
                pool_used += max(0, self.used[member.name].get(fr, 0) - keep)
        _, _, keep = _quota(cq, fr)
        parent = pool - pool_used
        if borrowing is not None:
            parent = min(nominal - keep - max(0, used - keep) + borrowing, parent)
        return max(0, max(0, keep - used) + parent)

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
        used = self.used[cq.name]
        borrows = int(cq.cohort is not None and any(used.get(fr, 0) + amount > _quota(cq, fr)[0]
                                                    for fr, amount in taken.items()))
        return Admission(workload, cq.name, tuple(flavors), taken, tuple(selectors), tuple(tolerations),
                         borrows), ""

    def _flavor(self, cq: ClusterQueue, group: ResourceGroup, pod_set: PodSet, wanted: dict[str, int],
                taken: dict[tuple[str, str], int]) -> tuple[str | None, str]:
        """The group's first flavor the pod set accepts and its requests fit in; else None and every reason."""
        reasons = []
        keys = {k for f in group.flavors for k in self.setup.flavors[f].node_labels}
        for name in group.flavors:
            flavor = self.setup.flavors[name]
            refused = _refuses(flavor, pod_set, keys)
            if refused:
                reasons.append(refused)
                continue
            short = [f"insufficient unused quota for {r} in flavor {name}, "
                     f"{taken.get((name, r), 0) + a - self.available(cq.name, (name, r))} more needed"
                     for r, a in wanted.items()
                     if taken.get((name, r), 0) + a > self.available(cq.name, (name, r))]
            if not short:
                return name, ""
            reasons.extend(short)
        return None, "couldn't assign flavors to pod set " + f"{pod_set.name}: " + ", ".join(reasons)


def _quota(cq: ClusterQueue, fr: tuple[str, str]) -> tuple[int, int | None, int]:
    """A ClusterQueue's nominal quota of a flavor's resource, its borrowing limit (None: none), and what it keeps
    from the cohort (``localQuota``: nominal less the lending limit; nothing without one)."""
    flavor, resource = fr
    for group in cq.groups:
        if flavor in group.quotas and resource in group.quotas[flavor]:
            nominal = group.quotas[flavor][resource]
            lending = group.lending.get(flavor, {}).get(resource)
            return nominal, group.borrowing.get(flavor, {}).get(resource), 0 if lending is None else nominal - lending
    return 0, None, 0


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

