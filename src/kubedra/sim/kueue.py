"""Kueue's admission, the part a simulation needs: ClusterQueues admit workloads within their quota.

Pure: no simulation here (``sim.kueue_controller`` holds Jobs, JobSets and RayJobs and starts them). Rules as Kueue
v0.17 has them (``pkg/cache/queue``, ``pkg/cache/scheduler``, ``pkg/scheduler``, ``pkg/scheduler/flavorassigner``):

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
from kubedra.sim.kueue_preemption import NEVER, preemption_message
from kubedra.sim.kueue_reclaim import Candidate, path, targets
from kubedra.sim.manifests import selector_matches

NAMESPACE_LABEL = "kubernetes.io/metadata.name"
PODS = "pods"
NOT_SELECTED = "Workload namespace doesn't match ClusterQueue selector"
FR = tuple[str, str]  # (flavor, resource)


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
        # admitted workloads by ClusterQueue: key -> (admission, when admitted), the candidates for preemption
        self.running: dict[str, dict[str, tuple[Admission, float]]] = {name: {} for name in setup.cluster_queues}
        self.preempted: list[tuple[Admission, str]] = []  # (victim, Kueue's message) of the last ``admit``
        self.evicted: set[str] = set()  # preempted workloads whose quota is not released yet (their pods leaving)

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
        """The workload finished or was evicted and is no longer active: its quota is free again."""
        used = self.used[admission.cluster_queue]
        for key, amount in admission.usage.items():
            used[key] -= amount
        self.running[admission.cluster_queue].pop(admission.workload.key, None)
        self.evicted.discard(admission.workload.key)

    def reclaim(self, admission: Admission, pod_set: int) -> None:
        """One pod of the admitted workload's ``pod_set``-th pod set succeeded and is reclaimable (Kueue's
        ``ReclaimablePods``, a pod group's): its share of the quota is free again, the rest held until it finishes."""
        ps, used = admission.workload.pod_sets[pod_set], self.used[admission.cluster_queue]
        requests = {**ps.requests, **({PODS: 1} if PODS in admission.flavors[pod_set] else {})}
        for resource, amount in requests.items():
            flavor = admission.flavors[pod_set].get(resource)
            if flavor is not None:
                used[flavor, resource] -= amount
                admission.usage[flavor, resource] -= amount

    def requeue(self, workload: Workload) -> None:
        """An evicted workload, its quota released, pending again under its creation time (Kueue's queue order
        timestamp for a workload preempted within its ClusterQueue)."""
        name = self.cluster_queue_of(workload)
        assert name is not None
        self.pending[name].append(workload)

    def admit(self, now: float = 0.0) -> list[Admission]:
        """Every admission the queues make now, in Kueue's scheduling cycles (``scheduler.schedule``): each cycle
        takes every ClusterQueue's head (ClusterQueues by name), nominates those that fit or could by preemption,
        and admits them in order (no borrowing first, then priority, then creation), each only if it still fits
        after those before it. A head that needs preemption is not admitted: its victims are in ``preempted`` and
        its ClusterQueue admits nothing more now (Kueue requeues the preemptor at its head, ``PendingPreemption``)."""
        out: list[Admission] = []
        self.preempted = []
        chosen: dict[str, list[Candidate]] = {}
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
                admission = self._nominate(cq, head, aside, blocked, chosen)
                if admission is None:
                    progressed = True
                    continue
                entries.append(admission)
            entries.sort(key=lambda a: (a.borrows, -a.workload.priority, a.workload.created_at, a.workload.order))
            cycle: dict[str, Candidate] = {}  # this cycle's preemption targets (``preemptedWorkloads``)
            reserved: list[tuple[str, dict[FR, int]]] = []  # the preemptors' usage, for the rest of the cycle
            for admission in entries:
                if self._take(admission, chosen.pop(admission.workload.key, []), blocked, now, cycle=cycle,
                              reserved=reserved):
                    out.append(admission)
                    progressed = True
            for name, usage in reserved:
                for fr, amount in usage.items():
                    self.used[name][fr] -= amount
        return out

    def _nominate(self, cq: ClusterQueue, head: Workload, aside: set[str], blocked: set[str],
                  chosen: dict[str, list[Candidate]]) -> Admission | None:
        """A head's assignment, with its victims in ``targets`` where it needs preemption; None where it cannot be
        admitted now (the ClusterQueue blocked, or the head moved aside)."""
        admission, reason, needs = (None, NOT_SELECTED, set()) if not _namespace_selected(cq, head.namespace) \
            else self._assign(cq, head)
        if admission is not None and needs:
            chosen[head.key] = self._targets(cq, head, admission.usage, needs)
            if not chosen[head.key]:
                admission = None
        if admission is None:
            if cq.strict_fifo and reason != NOT_SELECTED:
                blocked.add(cq.name)
            else:
                aside.add(head.key)
        if admission is None or needs:
            self.reasons[head.key] = reason
        return admission

    def _take(self, admission: Admission, chosen: list[Candidate], blocked: set[str], now: float, *,
              cycle: dict[str, Candidate], reserved: list[tuple[str, dict[FR, int]]]) -> bool:
        """Admits the entry if it still fits, this cycle's preemption targets taken away; an entry that needs
        preemption evicts its victims instead (``scheduler.go``: unless one is another entry's target already; it
        holds its usage for the rest of the cycle and waits for their quota) and blocks its ClusterQueue."""
        key, name = admission.workload.key, admission.cluster_queue
        if any(c.running.key in cycle for c in chosen):
            self.reasons[key] = "Workload has overlapping preemption targets with another workload"
            return False
        gone = [*cycle.values(), *chosen]
        for c in gone:
            for fr, amount in c.running.usage.items():
                self.used[c.queue][fr] -= amount
        fits = all(q <= self.available(name, fr) for fr, q in admission.usage.items())
        for c in gone:
            for fr, amount in c.running.usage.items():
                self.used[c.queue][fr] += amount
        if chosen and fits:  # a victim evicted already is not preempted again (``IssuePreemptions``)
            for c in chosen:
                cycle[c.running.key] = c
                if c.running.key not in self.evicted:
                    self.evicted.add(c.running.key)
                    self.preempted.append((self.running[c.queue][c.running.key][0], preemption_message(
                        key, c.reason, path(self, name), path(self, c.queue))))
            for fr, amount in admission.usage.items():
                self.used[name][fr] = self.used[name].get(fr, 0) + amount
            reserved.append((name, admission.usage))
            self.reasons[key] += f". Pending the preemption of {len(chosen)} workload(s)"
            blocked.add(name)
            return False
        if not fits:
            self.reasons[key] = "Workload no longer fits after processing another workload"
            return False
        used = self.used[name]
        for fr, amount in admission.usage.items():
            used[fr] = used.get(fr, 0) + amount
        self.pending[name].remove(admission.workload)
        self.running[name][key] = admission, now
        self.reasons.pop(key, None)
        return True

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

    def _assign(self, cq: ClusterQueue, workload: Workload) -> tuple[Admission | None, str, set[FR]]:
        """Flavors for every pod set (``flavorassigner``), or None and the reason none fit; with the resources that
        need preemption (and why they do not fit as they are), none where it fits."""
        taken: dict[tuple[str, str], int] = {}  # what the workload's earlier pod sets took
        flavors, selectors, tolerations = [], [], []
        needs: set[FR] = set()  # the flavors' resources that need preemption
        reason = ""
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
                    return None, f"resource {resource} unavailable in ClusterQueue", set()
                wanted = {r: a for r, a in requests.items() if r in group.covered}
                flavor, why, need = self._flavor(cq, group, pod_set, wanted, taken=taken, workload=workload)
                if flavor is None:
                    return None, why, set()
                reason = reason or why
                needs |= need
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
                         borrows), reason, needs

    def _flavor(self, cq: ClusterQueue, group: ResourceGroup, pod_set: PodSet, wanted: dict[str, int], *,
                taken: dict[tuple[str, str], int], workload: Workload) -> tuple[str | None, str, set[FR]]:
        """The group's first flavor the pod set accepts and its requests fit in; else, where the ClusterQueue
        preempts, the first whose every resource fits or could once victims are preempted (``fitsResourceQuota``:
        within the nominal quota, and ``SimulatePreemption`` finds victims), with those resources; else None. Every
        reason a flavor did not fit, either way."""
        reasons = []
        keys = {k for f in group.flavors for k in self.setup.flavors[f].node_labels}
        best: tuple[str, set[FR]] | None = None
        for name in group.flavors:
            flavor = self.setup.flavors[name]
            refused = _refuses(flavor, pod_set, keys)
            if refused:
                reasons.append(refused)
                continue
            short = [r for r, a in wanted.items() if taken.get((name, r), 0) + a > self.available(cq.name, (name, r))]
            if not short:
                return name, "", set()
            reasons.extend(f"insufficient unused quota for {r} in flavor {name}, "
                           f"{taken.get((name, r), 0) + wanted[r] - self.available(cq.name, (name, r))} more needed"
                           for r in short)
            if best is None and (cq.preemption != NEVER or cq.reclaim != NEVER) and all(
                    self._targets(cq, workload, {(name, r): taken.get((name, r), 0) + wanted[r]}, {(name, r)})
                    for r in short):
                best = name, {(name, r) for r in short}
        reason = "couldn't assign flavors to pod set " + f"{pod_set.name}: " + ", ".join(reasons)
        return (best[0], reason, best[1]) if best else (None, reason, set())

    def _targets(self, cq: ClusterQueue, workload: Workload, usage: dict[FR, int],
                 needs: set[FR]) -> list[Candidate]:
        """The victims that let ``usage`` fit (``sim.kueue_reclaim``); none beyond the nominal quota (a flavor needs
        preemption only within it, ``fitsResourceQuota``)."""
        if any(amount > _quota(cq, fr)[0] for fr, amount in usage.items()):
            return []
        return targets(self, cq, workload, usage, needs)


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

