"""LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``) as the LWS controllers and webhooks act, read from
kubernetes-sigs/lws at 060ab4da (v0.10.0-11-g060ab4d): ``api/leaderworkerset/v1/leaderworkerset_types.go``,
``pkg/controllers/leaderworkerset_controller.go`` (``constructLeaderStatefulSetApplyConfiguration``),
``pkg/controllers/pod_controller.go`` (``constructWorkerStatefulSetApplyConfiguration``,
``setNodeSelectorForWorkerPods``), ``pkg/webhooks/leaderworkerset_webhook.go`` (defaults, ``generalValidate``) and
``pkg/webhooks/pod_webhook.go`` (labels, ``SetExclusiveAffinities``). Where that commit differs from the release
users run, v0.9.0, in what is modelled here, kubedra follows v0.9.0: its webhook has no upper bound on ``replicas``
(the dev commit's ``replicas must be equal or less than 1000000``). The pods' labels, annotations, owners, affinities
and node selectors, and when the workers are made, are checked against the v0.9.0 controller (``tests/sigs``).

**Expansion.** ``spec.replicas`` groups (default 1) of ``leaderWorkerTemplate.size`` pods (default 1): the leader
StatefulSet ``<lws>`` makes leader ``<lws>-<group>`` from ``leaderTemplate`` (else ``workerTemplate``); for each
leader the pod controller makes a worker StatefulSet ``<lws>-<group>`` (ordinals from 1, ``size - 1`` replicas)
whose pods are ``<lws>-<group>-<worker>``. Every pod carries ``leaderworkerset.sigs.k8s.io/name``,
``group-index``, ``worker-index`` (0 for the leader), ``group-key`` (SHA-1 of ``<namespace>/<leader>``) and
``template-revision-hash``, and the annotations ``size`` (workers also ``leader-name``); pods get the StatefulSet
controller's labels too. Claims come from each template's ``resourceClaims`` as for any pod: one claim per pod per
template entry. The ``LWS_*`` environment variables and the headless Service are not carried (scheduling does not
read them).

**Startup.** ``LeaderCreated`` (default): workers are made with their leader. ``LeaderReady``: a group's worker
StatefulSet is made once its leader is ready, which kubedra takes as running (bound). Either way the pod controller
makes it only after the leader is scheduled where exclusive placement is asked for.

**Exclusive placement.** ``leaderworkerset.sigs.k8s.io/exclusive-topology: <topologyKey>`` on the LWS: the leader
gets required pod affinity to its own ``group-key`` and anti-affinity to any other ``group-key`` over
``<topologyKey>`` (the pod webhook's terms, same namespace), and the workers a ``nodeSelector`` on the leader's
node's value of ``<topologyKey>`` (the pod controller's), so each group has a topology domain to itself; a leader
that finds no free domain stays pending with the scheduler's InterPodAffinity reason, and its workers are never
made. Subgroup placement (``subGroupPolicy``, ``subgroup-exclusive-topology``) is read and checked, not modelled.

**Not modelled.** Rolling updates (``rolloutStrategy``), the restart policies (``RecreateGroupOnPodRestart``: kubedra's
pods never fail), ``networkConfig``, volume claim templates and status: read (and checked) and ignored.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cluster.gpuslices import stable_uid
from kubedra.cluster.nodepool import Strict
from kubedra.objects.formats import unsupported
from kubedra.objects.model import (
    Affinity,
    Int32,
    LabelSelector,
    LabelSelectorRequirement,
    OwnerReference,
    Pod,
    PodAffinityTerm,
    PodSpec,
)
from kubedra.objects.validate import validate_metadata, validate_pod_spec
from kubedra.sim.jobsets import dns1035, quote, with_required_terms
from kubedra.sim.manifests import PodTemplate, _Doc, template_hash

if TYPE_CHECKING:
    from kubedra.objects.errors import Location
    from kubedra.sim.run import Simulation
    from kubedra.sim.workloads import _Expander

API_VERSION = "leaderworkerset.x-k8s.io/v1"
PREFIX = "leaderworkerset.sigs.k8s.io/"
EXCLUSIVE_KEY = PREFIX + "exclusive-topology"
SUBGROUP_EXCLUSIVE_KEY = PREFIX + "subgroup-exclusive-topology"
NAME_KEY = PREFIX + "name"
GROUP_INDEX_KEY = PREFIX + "group-index"
WORKER_INDEX_KEY = PREFIX + "worker-index"
GROUP_KEY = PREFIX + "group-key"
REVISION_KEY = PREFIX + "template-revision-hash"
SIZE_KEY = PREFIX + "size"
LEADER_NAME_KEY = PREFIX + "leader-name"
STARTUP_POLICIES = ("LeaderCreated", "LeaderReady")
RESTART_POLICIES = ("Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None")
SUBGROUP_TYPES = ("LeaderWorker", "LeaderExcluded")
MAX_INT32 = 2**31 - 1


class SubGroupPolicy(Strict, kw_only=True):
    sub_group_policy_type: str = "LeaderWorker"
    sub_group_size: Int32 | None = None


class LeaderWorkerTemplate(Strict, kw_only=True):
    leader_template: PodTemplate | None = None
    worker_template: PodTemplate
    size: Int32 = 1  # the CRD's default
    restart_policy: str = ""
    sub_group_policy: SubGroupPolicy | None = None
    volume_claim_templates: Any = None
    persistent_volume_claim_retention_policy: Any = None


class LeaderWorkerSetSpec(Strict, kw_only=True):
    replicas: Int32 = 1  # the CRD's default
    leader_worker_template: LeaderWorkerTemplate
    rollout_strategy: Any = None
    startup_policy: str = "LeaderCreated"  # the CRD's default
    network_config: Any = None


class LeaderWorkerSetDoc(_Doc, kw_only=True):
    """``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet: expanded into leader and worker pods
    (:mod:`kubedra.sim.leaderworkersets`)."""

    spec: LeaderWorkerSetSpec


def group_key(namespace: str, leader: str) -> str:
    """``genGroupUniqueKey``: SHA-1 of ``<namespace>/<leader pod>``, hex."""
    return hashlib.sha1(f"{namespace}/{leader}".encode()).hexdigest()  # noqa: S324 - the webhook's label value


def webhook_problems(doc: LeaderWorkerSetDoc) -> list[tuple[str, str]]:
    """``generalValidate``, the CRD's enums and the templates' pod checks: (field, message)."""
    spec, lwt = doc.spec, doc.spec.leader_worker_template
    out: list[tuple[str, str]] = list(validate_metadata(doc.metadata))
    out += [("metadata.name", f"Invalid value: {quote(doc.metadata.name)}: {m}") for m in dns1035(doc.metadata.name)]
    if spec.replicas < 0:
        out.append(("spec.replicas", f"Invalid value: {spec.replicas}: replicas must be equal or greater than 0"))
    if lwt.size < 1:
        out.append(("spec.leaderWorkerTemplate.size",
                    f"Invalid value: {lwt.size}: size must be equal or greater than 1"))
    elif spec.replicas * lwt.size > MAX_INT32:
        out.append(("spec.replicas", f"Invalid value: {spec.replicas}: the product of replicas and worker replicas "
                                     f"must not exceed {MAX_INT32}"))
    if spec.startup_policy not in STARTUP_POLICIES:
        out.append(("spec.startupPolicy", unsupported(spec.startup_policy, STARTUP_POLICIES)))
    if lwt.restart_policy and lwt.restart_policy not in RESTART_POLICIES:
        out.append(("spec.leaderWorkerTemplate.restartPolicy", unsupported(lwt.restart_policy, RESTART_POLICIES)))
    return out + _subgroup_problems(doc) + _template_problems(lwt)


def _subgroup_problems(doc: LeaderWorkerSetDoc) -> list[tuple[str, str]]:
    """``subGroupPolicy`` and the subgroup exclusive-topology annotation."""
    out: list[tuple[str, str]] = []
    lwt = doc.spec.leader_worker_template
    sub = lwt.sub_group_policy
    if sub is not None:
        path = "spec.leaderWorkerTemplate.subGroupPolicy"
        if sub.sub_group_policy_type not in SUBGROUP_TYPES:
            out.append((f"{path}.subGroupPolicyType", unsupported(sub.sub_group_policy_type, SUBGROUP_TYPES)))
        if sub.sub_group_size is None or sub.sub_group_size < 1:
            out.append((f"{path}.subGroupSize", f"Invalid value: {sub.sub_group_size}: subGroupSize must be equal "
                                                "or greater than 1"))
    elif SUBGROUP_EXCLUSIVE_KEY in doc.metadata.annotations:
        out.append((f"metadata.annotations[{SUBGROUP_EXCLUSIVE_KEY}]",
                    f"Invalid value: {quote(doc.metadata.annotations[SUBGROUP_EXCLUSIVE_KEY])}: cannot have "
                    "subgroup-exclusive-topology without subGroupSize set"))
    return out


def _template_problems(lwt: LeaderWorkerTemplate) -> list[tuple[str, str]]:
    """The pod templates as a StatefulSet's are checked."""
    out: list[tuple[str, str]] = []
    templates = [("workerTemplate", lwt.worker_template)]
    if lwt.leader_template is not None:
        templates.insert(0, ("leaderTemplate", lwt.leader_template))
    for field_name, template in templates:
        path = f"spec.leaderWorkerTemplate.{field_name}.spec"
        if not template.spec.containers:
            out.append((f"{path}.containers", "Required value"))
        policy = template.spec.restart_policy
        if policy and policy != "Always":  # a StatefulSet's pods
            out.append((f"{path}.restartPolicy", f'Unsupported value: {quote(policy)}: supported values: "Always"'))
        out += validate_pod_spec(template.spec, path, template.metadata.labels)
    return out


def exclusive_affinity(affinity: Affinity | None, key: str, topology_key: str) -> Affinity:
    """``SetExclusiveAffinities``: required affinity to the pod's own ``group-key`` and anti-affinity to any other
    group's over ``topology_key`` (no namespaces: the pod's own), added to what the pod has."""
    together = PodAffinityTerm(
        label_selector=LabelSelector(match_expressions=[
            LabelSelectorRequirement(key=GROUP_KEY, operator="In", values=[key])]),
        topology_key=topology_key)
    apart = PodAffinityTerm(
        label_selector=LabelSelector(match_expressions=[
            LabelSelectorRequirement(key=GROUP_KEY, operator="Exists"),
            LabelSelectorRequirement(key=GROUP_KEY, operator="NotIn", values=[key]),
        ]),
        topology_key=topology_key)
    return with_required_terms(affinity, together, apart)


@dataclass(frozen=True, slots=True)
class LeaderGroup:
    """One group whose worker StatefulSet the pod controller makes during the run: once ``leader`` is running
    (``LeaderReady``) or scheduled (exclusive placement)."""

    leader: str  # the leader pod's name
    workers: tuple[Pod, ...]
    run_for: float | None


@dataclass(frozen=True, slots=True)
class LeaderWorkerSetRun:
    """A LeaderWorkerSet's groups whose workers wait on their leader; ``exclusive``: the topology key the workers
    are pinned to (the leader's node's value), None without exclusive placement."""

    name: str
    namespace: str
    startup_policy: str
    exclusive: str | None
    groups: tuple[LeaderGroup, ...]

    @property
    def owner(self) -> str:
        return f"LeaderWorkerSet/{self.namespace}/{self.name}"

    def pods(self) -> list[Pod]:
        return [pod for group in self.groups for pod in group.workers]


class LeaderWorkerController:
    """One LeaderWorkerSet's pod controller: after each instant, makes the workers of each group whose leader is
    ready (running) or, with exclusive placement, scheduled, pinned to the leader's topology domain."""

    def __init__(self, sim: Simulation, run: LeaderWorkerSetRun) -> None:
        self.sim = sim
        self.run = run
        self.waiting = list(run.groups)
        self.made = 0

    def step(self) -> bool:
        """Make the workers of every group whose leader is ready; whether any group still waits."""
        from kubedra.sim.run import Event, job_record

        sim, run = self.sim, self.run
        still = []
        for group in self.waiting:
            record = sim.state.pods.get(f"{run.namespace}/{group.leader}")
            if record is None or record.deleted or record.started_at is None or not record.pod.spec.node_name:
                still.append(group)
                continue
            workers = group.workers
            if run.exclusive is not None:
                node = sim.state.nodes.get(record.pod.spec.node_name)
                value = node.metadata.labels.get(run.exclusive) if node is not None else None
                if value is None:  # the pod controller's error: it makes no worker StatefulSet
                    sim.events.append(Event(sim.now, "Failed", f"StatefulSet {run.namespace}/{group.leader}",
                                            message=f"{run.owner}: node {record.pod.spec.node_name} does not have "
                                                    f"topology label: {run.exclusive}"))
                    continue
                workers = tuple(_pinned(pod, run.exclusive, value) for pod in workers)
            why = "leader pod is ready (startupPolicy LeaderReady)" if run.startup_policy == "LeaderReady" else \
                "leader pod is scheduled (exclusive placement)"
            sim.events.append(Event(sim.now, "Created", f"StatefulSet {run.namespace}/{group.leader}",
                                    message=f"{run.owner}: worker StatefulSet made once its {why}"))
            for pod in workers:
                owner = f"StatefulSet/{run.namespace}/{group.leader}"
                sim.add(job_record(pod, sim.now, group.run_for, owner, sim.gangs_on))
                self.made += 1
        self.waiting = still
        return bool(still)


def _pinned(pod: Pod, key: str, value: str) -> Pod:
    """``setNodeSelectorForWorkerPods``: the worker's nodeSelector gets the leader's topology value."""
    spec: PodSpec = msgspec.structs.replace(pod.spec, node_selector={**pod.spec.node_selector, key: value})
    return msgspec.structs.replace(pod, spec=spec)


# ---------------------------------------------------------------------------------------------- expansion


def expand_leaderworkerset(exp: _Expander, where: Location, doc: LeaderWorkerSetDoc, namespace: str) -> None:
    """A LeaderWorkerSet's leader and worker pods as its controllers make them
    (:mod:`kubedra.sim.leaderworkersets`): the leaders (and, with ``LeaderCreated`` and no exclusive placement,
    the workers) arrive with it; other groups' workers are made during the run once their leader is ready or
    scheduled."""
    from kubedra.sim.manifests import LabelSelector as Selector
    from kubedra.sim.workloads import PodArrival, selector_requirements

    name, spec = doc.metadata.name, doc.spec
    lwt = spec.leader_worker_template
    for path, message in webhook_problems(doc):
        exp.bad(where, path, message)
    leader_template = lwt.leader_template or lwt.worker_template
    leader_path = "spec.leaderWorkerTemplate.leaderTemplate." if lwt.leader_template is not None else \
        "spec.leaderWorkerTemplate.workerTemplate."
    leader_timing = exp.timing(where, doc.metadata, leader_template.metadata, leader_path)
    worker_timing = exp.timing(where, doc.metadata, lwt.worker_template.metadata,
                                "spec.leaderWorkerTemplate.workerTemplate.")
    if exp.problems:
        return
    exclusive = doc.metadata.annotations.get(EXCLUSIVE_KEY) or None
    waits = spec.startup_policy == "LeaderReady" or exclusive is not None
    revision = template_hash(lwt.worker_template)
    size = str(lwt.size)
    leader_ref = OwnerReference(api_version="apps/v1", kind="StatefulSet", name=name,
                                uid=stable_uid("StatefulSet", namespace, name), controller=True,
                                block_owner_deletion=True)
    exp.controllers[namespace, "StatefulSet", name] = selector_requirements(Selector(
        match_labels={NAME_KEY: name, WORKER_INDEX_KEY: "0"}))
    groups = []
    for index in range(spec.replicas):
        leader = f"{name}-{index}"
        key = group_key(namespace, leader)
        template = leader_template
        if exclusive is not None:
            affinity = exclusive_affinity(template.spec.affinity, key, exclusive)
            template = msgspec.structs.replace(template, spec=msgspec.structs.replace(template.spec,
                                                                                        affinity=affinity))
        marks = {NAME_KEY: name, GROUP_INDEX_KEY: str(index), GROUP_KEY: key, REVISION_KEY: revision}
        pod = _pod(exp, where, leader, namespace, template,
                   made_by=({**marks, WORKER_INDEX_KEY: "0"}, leader_ref, index, name))
        if pod is None:
            return
        pod.metadata.annotations[SIZE_KEY] = size
        if exclusive is not None:
            pod.metadata.annotations[EXCLUSIVE_KEY] = exclusive
        exp.add(leader_timing[0], PodArrival(pod, leader_timing[0], leader_timing[1],
                                              f"StatefulSet/{namespace}/{name}"))
        workers = _workers(exp, where, doc, namespace, marks)
        if workers is None:
            return
        if waits and workers:
            groups.append(LeaderGroup(leader, tuple(workers), worker_timing[1]))
        elif workers:
            for pod in workers:
                exp.add(worker_timing[0], PodArrival(pod, worker_timing[0], worker_timing[1],
                                                      f"StatefulSet/{namespace}/{leader}"))
    if groups:
        exp.leaderworkersets.append(LeaderWorkerSetRun(name, namespace, spec.startup_policy, exclusive,
                                                        tuple(groups)))


def _workers(exp: _Expander, where: Location, doc: LeaderWorkerSetDoc, namespace: str,
             marks: dict[str, str]) -> list[Pod] | None:
    """A group's worker StatefulSet ``<leader>`` (ordinals from 1) and its pods; None after a problem."""
    from kubedra.sim.manifests import LabelSelector as Selector
    from kubedra.sim.workloads import selector_requirements

    lwt = doc.spec.leader_worker_template
    leader = f"{doc.metadata.name}-{marks[GROUP_INDEX_KEY]}"
    worker_ref = OwnerReference(api_version="apps/v1", kind="StatefulSet", name=leader,
                                uid=stable_uid("StatefulSet", namespace, leader), controller=True,
                                block_owner_deletion=True)
    selector = {key: marks[key] for key in (NAME_KEY, GROUP_INDEX_KEY, GROUP_KEY)}
    exp.controllers[namespace, "StatefulSet", leader] = selector_requirements(Selector(
        match_labels=selector))
    exclusive = doc.metadata.annotations.get(EXCLUSIVE_KEY) or None
    workers = []
    for worker in range(1, lwt.size):
        pod = _pod(exp, where, f"{leader}-{worker}", namespace, lwt.worker_template,
                   made_by=({**marks, WORKER_INDEX_KEY: str(worker)}, worker_ref, worker, leader))
        if pod is None:
            return None
        pod.metadata.annotations.update({SIZE_KEY: str(lwt.size), LEADER_NAME_KEY: leader})
        if exclusive is not None:
            pod.metadata.annotations[EXCLUSIVE_KEY] = exclusive
        workers.append(pod)
    return workers


def _pod(exp: _Expander, where: Location, pod_name: str, namespace: str, template: PodTemplate, *,
         made_by: tuple[dict[str, str], OwnerReference, int, str]) -> Pod | None:
    """One StatefulSet pod of a LeaderWorkerSet (``made_by``: its labels, owner, ordinal and StatefulSet), its
    name taken; None (a problem) where it already exists."""
    labels, ref, ordinal, statefulset = made_by
    first = exp.taken.get((namespace, pod_name))
    if first is not None:
        exp.bad(where, "metadata.name", f"pod {namespace}/{pod_name} already exists, defined at {first}")
        return None
    exp.taken[namespace, pod_name] = str(where)
    labels = {**labels, "apps.kubernetes.io/pod-index": str(ordinal),
              "controller-revision-hash": f"{statefulset}-{template_hash(template)}",
              "statefulset.kubernetes.io/pod-name": pod_name}
    return exp.pod(pod_name, namespace, template, labels, ref)
