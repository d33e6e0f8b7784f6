"""PriorityClasses, Workloads and PodGroups from the input, and the pods they govern.

What admission and the controllers do before the scheduler sees a pod: ``spec.priority`` from the pod's
``priorityClassName`` (or the ``globalDefault`` class), a PodGroup's ``spec.priority`` from its own class (else 0);
one PodGroup per template of a Workload that no written PodGroup instantiates (``<workload>-<template>``, as a Job's
controller would make it), the Job named by the Workload's ``controllerRef`` joining it; 1.35's ``spec.workloadRef``
read as the ``schedulingGroup`` of the group made from that template, with a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from kubedra.cluster.gpuslices import stable_uid
from kubedra.cluster.nodepool import RawLike, at, convert_strict, object_location
from kubedra.objects.errors import Problem
from kubedra.objects.model import ObjectMeta, Pod, PodSchedulingGroup
from kubedra.objects.scheduling import (
    GROUP,
    SYSTEM_PRIORITY_CLASSES,
    V1ALPHA2,
    V1BETA1,
    DisruptionMode,
    Empty,
    PodGroup,
    PodGroupSpec,
    PriorityClass,
    Workload,
    WorkloadReference,
    from_v1alpha2,
)
from kubedra.sim.workloads import DEFAULT_NAMESPACE, JobRun, PodArrival, Workloads

KINDS = {"PriorityClass": (f"{GROUP}/v1",), "Workload": (V1BETA1, V1ALPHA2), "PodGroup": (V1BETA1, V1ALPHA2)}


def is_scheduling_object(data: dict[str, Any]) -> bool:
    """A document this module reads (PriorityClass, Workload, PodGroup of ``scheduling.k8s.io``)."""
    return data.get("kind") in KINDS and str(data.get("apiVersion", "")).startswith(f"{GROUP}/")


@dataclass
class Groups:
    """The scheduling objects of a scenario, after admission's defaults."""

    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)  # "ns/name"
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)  # "ns/name"

    def priority_of(self, class_name: str) -> int | None:
        if class_name in SYSTEM_PRIORITY_CLASSES:
            return SYSTEM_PRIORITY_CLASSES[class_name]
        found = self.priority_classes.get(class_name)
        return found.value if found is not None else None

    def default_priority(self) -> int | None:
        defaults = [c.value for c in self.priority_classes.values() if c.global_default]
        return defaults[0] if defaults else None


def read_groups(docs: Iterable[RawLike], notes: list[str], problems: list[Problem]) -> Groups:
    """Decode the documents ``is_scheduling_object`` accepts; a bad one is a problem naming its field."""
    groups = Groups()
    for raw in docs:
        data = raw.data
        kind = str(data.get("kind"))
        where = object_location(raw, kind)
        version = str(data.get("apiVersion"))
        if version not in KINDS[kind]:
            served = ", ".join(KINDS[kind])
            problems.append(Problem(at(where, "apiVersion"),
                                    f'Unsupported value: "{version}": {kind} is served as {served}'))
            continue
        if version == V1ALPHA2:
            data, changes = from_v1alpha2(kind, data)
            notes.append(f"{raw.location}: {V1ALPHA2} {kind} (Kubernetes 1.36) read as {V1BETA1}"
                         f" ({', '.join(changes)} rewritten)")
        if kind == "PriorityClass":
            priority_class = convert_strict(data, PriorityClass, where, problems)
            if priority_class is not None:
                groups.priority_classes[priority_class.metadata.name] = priority_class
        elif kind == "Workload":
            workload = convert_strict(data, Workload, where, problems)
            if workload is not None:
                groups.workloads[_key(workload.metadata)] = workload
        else:
            pod_group = convert_strict(data, PodGroup, where, problems)
            if pod_group is not None:
                groups.pod_groups[_key(pod_group.metadata)] = pod_group
    for key, pod_group in list(groups.pod_groups.items()):
        groups.pod_groups[key] = _admitted(pod_group, groups, notes)
    _instantiate_templates(groups)
    return groups


def _key(meta: ObjectMeta) -> str:
    return f"{meta.namespace or DEFAULT_NAMESPACE}/{meta.name}"


def _admitted(pod_group: PodGroup, groups: Groups, notes: list[str]) -> PodGroup:
    """Admission's defaults: the namespace, ``spec.priority`` from the PodGroup's class, ``disruptionMode``."""
    spec = pod_group.spec
    priority = spec.priority
    if priority is None:
        priority = groups.priority_of(spec.priority_class_name) if spec.priority_class_name else 0
        if priority is None:
            notes.append(f"PodGroup {_key(pod_group.metadata)}: no PriorityClass {spec.priority_class_name!r};"
                         " priority 0 assumed")
            priority = 0
    disruption = spec.disruption_mode or DisruptionMode(single=Empty())
    meta = pod_group.metadata
    if not meta.namespace:
        meta = replace_meta(meta, namespace=DEFAULT_NAMESPACE)
    if not meta.uid:
        meta = replace_meta(meta, uid=stable_uid("PodGroup", meta.namespace, meta.name))
    return msgspec.structs.replace(
        pod_group, metadata=meta, spec=msgspec.structs.replace(spec, priority=priority, disruption_mode=disruption)
    )


def replace_meta(meta: ObjectMeta, **changes: Any) -> ObjectMeta:
    return msgspec.structs.replace(meta, **changes)


def template_group_name(workload: str, template: str) -> str:
    return f"{workload}-{template}"


def _instantiate_templates(groups: Groups) -> None:
    """One PodGroup per Workload template that no written PodGroup refers to (``spec.workloadRef``)."""
    referenced = {
        (pg.metadata.namespace, pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name)
        for pg in groups.pod_groups.values()
        if pg.spec.workload_ref is not None
    }
    for workload in groups.workloads.values():
        namespace = workload.metadata.namespace or DEFAULT_NAMESPACE
        for template in workload.spec.pod_group_templates:
            if (namespace, workload.metadata.name, template.name) in referenced:
                continue
            name = template_group_name(workload.metadata.name, template.name)
            made = PodGroup(
                metadata=ObjectMeta(name=name, namespace=namespace),
                spec=PodGroupSpec(
                    workload_ref=WorkloadReference(workload_name=workload.metadata.name, template_name=template.name),
                    scheduling_policy=template.scheduling_policy,
                    scheduling_constraints=template.scheduling_constraints,
                    resource_claims=template.resource_claims,
                    disruption_mode=template.disruption_mode,
                    priority_class_name=template.priority_class_name,
                    priority=template.priority,
                    preemption_policy=template.preemption_policy,
                ),
            )
            groups.pod_groups.setdefault(f"{namespace}/{name}", _admitted(made, groups, []))


def join_pods(workloads: Workloads, groups: Groups, notes: list[str]) -> Workloads:
    """The pods as admission and the Workload's controller leave them: priority resolved, group joined."""
    controlled = _controlled_groups(groups)
    default = groups.default_priority()
    warned: set[str] = set()
    missing: set[tuple[str, str]] = set()

    def admit(pod: Pod, owner: str) -> Pod:
        spec = pod.spec
        changes: dict[str, Any] = {}
        if spec.priority is None:
            value = groups.priority_of(spec.priority_class_name) if spec.priority_class_name else default
            if value is not None:
                changes["priority"] = value
            elif spec.priority_class_name and (owner, spec.priority_class_name) not in missing:
                missing.add((owner, spec.priority_class_name))
                notes.append(f"{owner}: no PriorityClass {spec.priority_class_name!r} (the API server refuses such "
                             "a pod); priority 0 assumed")
        found = groups.priority_classes.get(spec.priority_class_name)
        if spec.preemption_policy is None and found is not None and found.preemption_policy:
            changes["preemption_policy"] = found.preemption_policy
        namespace = pod.metadata.namespace or DEFAULT_NAMESPACE
        if spec.scheduling_group is None and spec.workload_ref is not None:
            ref = spec.workload_ref
            name = _group_for_template(groups, namespace, ref.name, ref.pod_group)
            changes["scheduling_group"] = PodSchedulingGroup(pod_group_name=name)
            if owner not in warned:
                warned.add(owner)
                notes.append(f"{owner}: spec.workloadRef (Kubernetes 1.35) read as spec.schedulingGroup.podGroupName"
                             f" {name!r}")
        elif spec.scheduling_group is None:
            made = controlled.get(owner)
            if made is not None:
                changes["scheduling_group"] = PodSchedulingGroup(pod_group_name=made)
        if not changes:
            return pod
        return msgspec.structs.replace(pod, spec=msgspec.structs.replace(spec, **changes))

    def arrival(a: PodArrival) -> PodArrival:  # frozen: one whose pod admission leaves alone is kept as it is
        pod = admit(a.pod, a.owner)
        return a if pod is a.pod else replace(a, pod=pod)

    arrivals = [arrival(a) for a in workloads.arrivals]
    jobs = [_job(j, admit) for j in workloads.jobs]
    cronjobs = [replace(c, make_job=_admitted_jobs(c.make_job, admit)) for c in workloads.cronjobs]
    jobsets = [replace(r, first=tuple(_job(j, admit) for j in r.first),
                       stages=tuple(tuple(_job(j, admit) for j in stage) for stage in r.stages))
               for r in workloads.jobsets]
    leaderworkersets = [replace(r, groups=tuple(
        replace(g, workers=tuple(admit(p, f"StatefulSet/{r.namespace}/{g.leader}") for p in g.workers))
        for g in r.groups)) for r in workloads.leaderworkersets]
    rayjobs = [replace(r, submitter=_job(r.submitter, admit)) if r.submitter is not None else r
               for r in workloads.rayjobs]
    return Workloads(arrivals=arrivals, jobs=jobs, cronjobs=cronjobs, jobsets=jobsets,
                     leaderworkersets=leaderworkersets, rayjobs=rayjobs, pytorchjobs=workloads.pytorchjobs,
                     controllers=workloads.controllers, notes=workloads.notes)


def _admitted_jobs(make_job: Callable[[int], JobRun], admit: Callable[[Pod, str], Pod]) -> Callable[[int], JobRun]:
    """A CronJob's Job maker whose Jobs' pods are admitted as the others' are (the same Job each time)."""
    made: dict[int, JobRun] = {}

    def make(scheduled: int) -> JobRun:
        if scheduled not in made:
            made[scheduled] = _job(make_job(scheduled), admit)
        return made[scheduled]

    return make


def _job(job: JobRun, admit: Callable[[Pod, str], Pod]) -> JobRun:
    return replace(job, pods=tuple(admit(p, job.owner) for p in job.pods))


def _group_for_template(groups: Groups, namespace: str, workload: str, template: str) -> str:
    for pod_group in groups.pod_groups.values():
        ref = pod_group.spec.workload_ref
        if pod_group.metadata.namespace == namespace and ref is not None and (
            ref.workload_name, ref.template_name) == (workload, template):
            return pod_group.metadata.name
    return template_group_name(workload, template)


def _controlled_groups(groups: Groups) -> dict[str, str]:
    """Owner ("Job/ns/name") -> the PodGroup made for it from its Workload's first template."""
    out: dict[str, str] = {}
    for workload in groups.workloads.values():
        ref = workload.spec.controller_ref
        if ref is None or not workload.spec.pod_group_templates:
            continue
        namespace = workload.metadata.namespace or DEFAULT_NAMESPACE
        template = workload.spec.pod_group_templates[0].name
        out[f"{ref.kind}/{namespace}/{ref.name}"] = _group_for_template(groups, namespace, workload.metadata.name,
                                                                        template)
    return out


def group_key(pod: Pod) -> str:
    """"ns/name" of the pod's PodGroup, or ""."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return ""
    return f"{pod.metadata.namespace or DEFAULT_NAMESPACE}/{group.pod_group_name}"

