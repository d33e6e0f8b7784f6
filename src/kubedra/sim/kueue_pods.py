"""Plain Pods queued by Kueue, as Kueue v0.17.0's ``pod`` integration handles them
(``pkg/controller/jobs/pod/pod_webhook.go``, ``pod_controller.go``).

Pure: which pods Kueue manages, what its webhook refuses, their Workloads and the pods as admitted;
``sim.kueue_controller`` holds them and ungates them.

- Managed: a Pod labelled ``kueue.x-k8s.io/queue-name`` in a namespace the manager's ``managedJobsNamespaceSelector``
  selects (its default: every namespace but ``kube-system`` and ``kueue-system``), not yet bound. The webhook
  (``Default``) adds the scheduling gate ``kueue.x-k8s.io/admission``: the pod exists, pending, and kube-scheduler
  never sees it until the gate is removed.
- Refused by the webhook (``validatePodGroupMetadata``, ``validateManagedLabel``): a ``kueue.x-k8s.io/pod-group-name``
  label without the ``kueue.x-k8s.io/pod-group-total-count`` annotation or the other way round; a total count that is
  not an integer of at least 1; a ``kueue.x-k8s.io/managed`` label other than ``true`` on a pod naming no queue (the
  mutating webhook sets a queued pod's to ``true`` first). It checks any pod it sees, queued or not.
- Workload: a single pod's has one pod set ``main`` of 1 pod of its spec, made when the pod is. The pods of a group
  (one ``pod-group-name`` in a namespace) form one Workload, named after the group, made once ``total-count`` of them
  exist (``validatePodGroupMetadata``: "group has fewer runnable pods than expected" until then): one pod set per role
  (pods of the same admission-relevant spec, Kueue's role hash), ``count`` its pods. Kueue orders the pod sets by the
  SHA-256 role hash; kubedra by first appearance, so a group of several roles competing for flavors may be given
  them in another order. A group whose pods disagree on the queue or the total count is never admitted (Kueue's
  ``UnretryableError``): its pods stay gated. Extra pods beyond the count are deleted by Kueue; here they stay gated.
- Admitted (``Run``, ``prepare``): each pod's gate removed and its pod set's flavors' node labels and tolerations
  merged into its spec (``podset.Merge``).
- Finished: a single pod's Workload when the pod ends (succeeded or failed, or deleted); a group's when every one of
  its ``total-count`` pods succeeded. Its quota is free again then. A group's pod that succeeds frees its own share
  at once (``ReclaimablePods``, on by default: the Workload's usage counts its pod sets less their succeeded pods).
  A serving group (``kueue.x-k8s.io/pod-group-serving: "true"``) is never finished and reclaims nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import msgspec

from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import Pod, PodSchedulingGate
from kubedra.sim.kueue import PodSet, Workload
from kubedra.sim.kueue_objects import units

QUEUE = "kueue.x-k8s.io/queue-name"
GATE = "kueue.x-k8s.io/admission"  # podconstants.SchedulingGateName
GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
MANAGED = "kueue.x-k8s.io/managed"
SERVING = "kueue.x-k8s.io/pod-group-serving"
UNMANAGED_NAMESPACES = ("kube-system", "kueue-system")  # the default managedJobsNamespaceSelector's NotIn


def _namespace(pod: Pod) -> str:
    return pod.metadata.namespace or "default"


def managed(pod: Pod) -> bool:
    """Whether Kueue's pod webhook gates the pod: it names a LocalQueue, in a managed namespace, and is not bound."""
    return (QUEUE in pod.metadata.labels and _namespace(pod) not in UNMANAGED_NAMESPACES
            and not pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed"))


def gated(pod: Pod) -> Pod:
    """The pod as the webhook lets it in: the ``kueue.x-k8s.io/admission`` gate added (once)."""
    if any(g.name == GATE for g in pod.spec.scheduling_gates):
        return pod
    spec = msgspec.structs.replace(pod.spec, scheduling_gates=[*pod.spec.scheduling_gates, PodSchedulingGate(GATE)])
    return msgspec.structs.replace(pod, spec=spec)


def total_count(text: str) -> int | None:
    """The group total count annotation as Kueue reads it (``strconv.Atoi``, at least 1); None where it refuses it."""
    return None if _count_error(text) else int(text)


def _count_error(text: str) -> str:
    """Why Kueue's ``groupTotalCount`` refuses the annotation, in its words; empty where it takes it."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        return f'strconv.Atoi: parsing "{text}": invalid syntax'
    if int(text) < 1:
        return (f"incorrect annotation value '{GROUP_TOTAL}={text}': group total count should be greater than "
                "zero")
    return ""


def pod_problems(pods: Iterable[Pod], locate: Callable[[Pod], Location]) -> list[Problem]:
    """What Kueue's pod webhook refuses (``ValidateCreate``: any pod it sees, queued or not, in a managed namespace and
    not bound before the run), each at its file, pod and field, in the webhook's words."""
    problems: list[Problem] = []
    for pod in pods:
        if _namespace(pod) in UNMANAGED_NAMESPACES or pod.spec.node_name:
            continue
        found = locate(pod)
        where = Location(found.file, found.document, found.object or f"Pod/{pod.metadata.name}")
        labels, annotations = pod.metadata.labels, pod.metadata.annotations
        both = f"both the '{GROUP_TOTAL}' annotation and the '{GROUP_NAME}' label should be set"
        if labels.get(MANAGED, "true") != "true" and QUEUE not in labels:  # a queued pod's is set to true first
            problems.append(Problem(_at(where, f"metadata.labels[{MANAGED}]"),
                                    "Forbidden: managed label value can only be 'true'"))
        if not labels.get(GROUP_NAME):
            if GROUP_TOTAL in annotations:
                problems.append(Problem(_at(where, f"metadata.labels[{GROUP_NAME}]"), f"Required value: {both}"))
        elif GROUP_TOTAL not in annotations:
            problems.append(Problem(_at(where, f"metadata.annotations[{GROUP_TOTAL}]"), f"Required value: {both}"))
        elif error := _count_error(annotations[GROUP_TOTAL]):
            problems.append(Problem(_at(where, f"metadata.annotations[{GROUP_TOTAL}]"),
                                    f'Invalid value: "{annotations[GROUP_TOTAL]}": {error}'))
    return problems


def _at(where: Location, field: str) -> Location:
    return Location(where.file, where.document, where.object, field)


@dataclass(frozen=True)
class QueuedPods:
    """A Workload of Kueue's pod integration: its pods' keys (``namespace/name``), each pod's pod set by name."""

    workload: Workload
    keys: tuple[str, ...]
    roles: tuple[str, ...]
    group: bool = False
    serving: bool = False  # a group annotated kueue.x-k8s.io/pod-group-serving: never finished, nothing reclaimed


def _role(pod: Pod) -> bytes:
    """What makes pods one role (Kueue's role hash): the spec as far as admission reads it."""
    spec = pod.spec
    containers = [[(c.resources.requests, c.resources.limits, c.restart_policy) for c in group]
                  for group in (spec.init_containers, spec.containers)]
    return msgspec.json.encode([containers, spec.overhead, spec.node_selector, spec.affinity, spec.tolerations,
                                spec.priority_class_name, spec.priority])


def _pod_set(name: str, pod: Pod, count: int) -> PodSet:
    from kubedra.cluster.usage import pod_requests

    node_affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    return PodSet(name, count, {r: units(r, q) for r, q in pod_requests(pod).items()}, dict(pod.spec.node_selector),
                  required, tuple(pod.spec.tolerations))


def queued_pods(pods: list[tuple[Pod, float]], first_order: int) -> tuple[list[QueuedPods], list[str]]:
    """The Workloads of the managed pods (each with its creation time), numbered from ``first_order`` in the order
    they are made; and a note for each group that never gets one."""
    out: list[QueuedPods] = []
    notes: list[str] = []
    groups: dict[tuple[str, str], list[tuple[Pod, float]]] = {}
    singles: list[tuple[Pod, float]] = []
    for pod, at in pods:
        group = pod.metadata.labels.get(GROUP_NAME)
        if group:
            groups.setdefault((_namespace(pod), group), []).append((pod, at))
        else:
            singles.append((pod, at))
    made: list[tuple[float, int, QueuedPods]] = []
    for i, (pod, at) in enumerate(singles):
        key = f"{_namespace(pod)}/{pod.metadata.name}"
        workload = Workload(f"Pod {key}", _namespace(pod), pod.metadata.labels[QUEUE], pod.spec.priority or 0, at, 0,
                            (_pod_set("main", pod, 1),))
        made.append((at, i, QueuedPods(workload, (key,), ("main",))))
    for (namespace, name), members in groups.items():
        one = _group(namespace, name, members, notes)
        if one is not None:
            serving = members[0][0].metadata.annotations.get(SERVING) == "true"
            made.append((one.created_at, len(made), QueuedPods(one, *_members(members, one), True, serving)))
    made.sort(key=lambda m: (m[0], m[1]))
    for order, (_, _, queued) in enumerate(made, start=first_order):
        out.append(replace(queued, workload=replace(queued.workload, order=order)))
    return out, notes


def _group(namespace: str, name: str, members: list[tuple[Pod, float]], notes: list[str]) -> Workload | None:
    """A group's Workload, or None (a note why) where Kueue never makes or never admits one."""
    first = members[0][0]
    count = total_count(first.metadata.annotations.get(GROUP_TOTAL, "")) or 1
    what = f"Kueue pod group {namespace}/{name}"
    if {p.metadata.labels[QUEUE] for p, _ in members} != {first.metadata.labels[QUEUE]}:
        notes.append(f"{what}: its pods name different queues; Kueue never admits it and its pods stay gated")
        return None
    if {p.metadata.annotations.get(GROUP_TOTAL) for p, _ in members} != {first.metadata.annotations[GROUP_TOTAL]}:
        notes.append(f"{what}: its pods have different {GROUP_TOTAL} values; Kueue never admits it and its pods stay "
                     "gated")
        return None
    if len(members) < count:
        notes.append(f"{what} has fewer runnable pods than expected ({len(members)} of {count}): Kueue makes no "
                     "Workload for it and its pods stay gated")
        return None
    if len(members) > count:
        notes.append(f"{what} has {len(members)} pods of {count}: Kueue deletes the excess pods; here the last to "
                     "arrive stay gated")
    kept = sorted(members, key=lambda m: m[1])[:count]
    roles: dict[bytes, tuple[Pod, int]] = {}
    for pod, _ in kept:
        role = _role(pod)
        roles[role] = (roles[role][0], roles[role][1] + 1) if role in roles else (pod, 1)
    pod_sets = tuple(_pod_set(_role_name(i), pod, n) for i, (pod, n) in enumerate(roles.values()))
    classed = [p.spec.priority or 0 for p, _ in roles.values() if p.spec.priority_class_name]
    return Workload(f"Workload {namespace}/{name}", namespace, first.metadata.labels[QUEUE],
                    classed[0] if classed else 0, max(at for _, at in kept), 0, pod_sets)


def _role_name(index: int) -> str:
    return f"role-{index}"


def _members(members: list[tuple[Pod, float]], workload: Workload) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The group's kept pods' keys and pod set names (the same roles ``_group`` found, in order)."""
    kept = sorted(members, key=lambda m: m[1])[:sum(ps.count for ps in workload.pod_sets)]
    order: list[bytes] = []
    keys, names = [], []
    for pod, _ in kept:
        role = _role(pod)
        if role not in order:
            order.append(role)
        keys.append(f"{_namespace(pod)}/{pod.metadata.name}")
        names.append(_role_name(order.index(role)))
    return tuple(keys), tuple(names)
