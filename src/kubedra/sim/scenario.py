"""From loaded manifests to a runnable scenario: inventory (Nodes, slices, NodePools), classes, claims, workloads.

The defaults a cluster with NVIDIA's DRA driver has are filled in: the chart's DeviceClasses (user classes of the
same name replace them). Documents of kinds a simulation cannot use are reported as warnings, not dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeVar

import msgspec

from kubedra.cluster.deviceclasses import default_device_classes, merge_device_classes
from kubedra.cluster.nodepool import RawLike, expand_nodepools, is_nodepool
from kubedra.cluster.state import Requirement
from kubedra.objects.builder import Loaded
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.model import (
    DeviceClass,
    DeviceTaintRule,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubedra.sim.budgets import PodDisruptionBudget, is_budget, read_budgets
from kubedra.sim.gates import gate_problems
from kubedra.sim.groups import Groups, is_scheduling_object, join_pods, read_groups
from kubedra.sim.kueue_objects import KueueSetup, is_kueue_object, read_kueue
from kubedra.sim.kueue_pods import managed, pod_problems, queued_pods
from kubedra.sim.published import unpublished_requests, workload_pods
from kubedra.sim.services import is_service, read_services
from kubedra.sim.unmodelled import kueue_claims, kueue_queued, unmodelled_fields
from kubedra.sim.workloads import Workloads, expand_workloads, is_workload


@dataclass
class Scenario:
    nodes: list[Node]
    slices: list[ResourceSlice]
    classes: list[DeviceClass]
    taint_rules: list[DeviceTaintRule]
    claims: list[ResourceClaim]
    templates: list[ResourceClaimTemplate]
    workloads: Workloads
    notes: list[str] = field(default_factory=list)
    groups: Groups = field(default_factory=Groups)  # PriorityClasses, Workloads, PodGroups
    budgets: list[PodDisruptionBudget] = field(default_factory=list)  # read by preemption
    # (namespace, selector pairs) of the Services with a selector: read by the system-default spreading only
    services: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    # A live cluster's ReplicaSets, StatefulSets and ReplicationControllers, (namespace, kind, name) -> their selector's
    # requirements; None where they were not read (files: their workloads register their own controllers)
    cluster_controllers: dict[tuple[str, str, str], tuple[Requirement, ...]] | None = None
    kueue: KueueSetup = field(default_factory=KueueSetup)  # ResourceFlavors, ClusterQueues, LocalQueues


Namespaced = TypeVar("Namespaced", ResourceClaim, ResourceClaimTemplate)


def _with_namespace(objects: list[Namespaced]) -> list[Namespaced]:
    """Objects without a namespace land in ``default``, as ``kubectl apply`` puts them (pods' claims resolve there)."""
    return [
        o if o.metadata.namespace else msgspec.structs.replace(
            o, metadata=msgspec.structs.replace(o.metadata, namespace="default")
        )
        for o in objects
    ]


def _describe(data: dict[str, object]) -> str:
    if "kind" in data:
        return f"{data.get('apiVersion', '')} {data['kind']}".strip()
    return "a document that is not a Kubernetes object"


def in_input_order(loaded: Loaded, problems: list[Problem]) -> list[Problem]:
    """Problems sorted as the input was read (files, then documents), whichever stage found them; a document's
    own problems keep their order."""
    rank: dict[str, int] = {}
    for where in [r.location for r in loaded.raw] + [loaded.location_of(o) for o in loaded.objects]:
        rank.setdefault(where.file, len(rank))
    return sorted(problems, key=lambda p: (rank.get(p.location.file, len(rank)), p.location.document or 0))


def _name(data: dict[str, object]) -> str:
    """``metadata.name`` of a raw document, or "" (the document may be any shape: its expansion reports that)."""
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def duplicate_nodes(loaded: Loaded, nodes: list[Node]) -> list[Problem]:
    """A problem per node whose name an earlier Node or NodePool node already has, at the Node or the NodePool
    (``<pool>-<index>``) that made it, naming where the first one is."""
    made_by = {_name(r.data): r.location for r in loaded.raw if is_nodepool(r.data)}
    loaded_nodes = {id(o) for o in loaded.objects}
    problems: list[Problem] = []
    seen: dict[str, Location] = {}
    for node in nodes:
        name = node.metadata.name
        if id(node) in loaded_nodes:
            where = loaded.location_of(node)
        else:  # a NodePool's node, <pool>-<index>
            where = made_by.get(name.rpartition("-")[0], Location(object=f"Node/{name}"))
        first = seen.get(name)
        if first is None:
            seen[name] = where
            continue
        problems.append(
            Problem(
                replace(where, field="metadata.name"),
                f'Duplicate value: "{name}": Node {name} is also defined at {first}',
            )
        )
    return problems


def build_scenario(
    loaded: Loaded, *, seed: int = 0, generic_workload: bool = False, workload_claims: bool = False
) -> Scenario:
    """Raises InvalidInputError listing every problem (duplicate nodes, bad NodePools or workloads).
    ``generic_workload``, ``workload_claims``: the GenericWorkload and DRAWorkloadResourceClaims gates, only for the
    notes saying what is ignored without them."""
    pool_docs: list[RawLike] = [r for r in loaded.raw if is_nodepool(r.data)]
    workload_docs = [r for r in loaded.raw if is_workload(r.data)]
    notes = [
        f"{r.location}: {_describe(r.data)} is not simulated; ignored"
        for r in loaded.raw
        if not is_nodepool(r.data) and not is_workload(r.data) and not is_scheduling_object(r.data)
        and not is_budget(r.data) and not is_service(r.data) and not is_kueue_object(r.data)
    ]
    problems: list[Problem] = []
    try:
        pool_nodes, pool_slices = expand_nodepools(pool_docs, notes)
    except InvalidInputError as error:  # report the workloads' problems too, in one go
        problems.extend(error.problems)
        pool_nodes, pool_slices = [], []
    nodes = [*loaded.of_kind(Node), *pool_nodes]
    problems.extend(duplicate_nodes(loaded, nodes))
    try:
        workloads = expand_workloads(
            workload_docs, loaded.of_kind(Pod), seed=seed, locate=loaded.location_of, nodes=nodes
        )
    except InvalidInputError as error:
        problems.extend(error.problems)
    else:
        notes.extend(workloads.notes)
    groups = read_groups([r for r in loaded.raw if is_scheduling_object(r.data)], notes, problems)
    budgets = read_budgets([r for r in loaded.raw if is_budget(r.data)], problems)
    services = read_services([r for r in loaded.raw if is_service(r.data)], problems)
    kueue = read_kueue([r for r in loaded.raw if is_kueue_object(r.data)], problems)
    if kueue:
        problems.extend(pod_problems(loaded.of_kind(Pod), loaded.location_of))
    if problems:
        raise InvalidInputError(in_input_order(loaded, problems))
    workloads = join_pods(workloads, groups, notes)
    gated = gate_problems(workload_pods(workloads))
    if gated:
        raise InvalidInputError(gated)
    classes = merge_device_classes(default_device_classes(), loaded.of_kind(DeviceClass))
    notes.extend(unpublished_requests(nodes, classes, workload_pods(workloads)))
    notes.extend(unmodelled_fields(workload_pods(workloads)))
    bare = [{"kind": "Pod", "metadata": {"name": p.metadata.name, "namespace": p.metadata.namespace,
                                         "labels": p.metadata.labels}} for p in loaded.of_kind(Pod)]
    notes.extend(kueue_queued([*(r.data for r in workload_docs), *bare], queues=bool(kueue)))
    notes.extend(kueue.notes)
    if kueue:
        notes.extend(kueue_claims(workloads.jobs, workloads.jobsets))
        notes.extend(queued_pods([(a.pod, a.arrive_at) for a in workloads.arrivals
                                  if a.owner.startswith("Pod/") and managed(a.pod)], 0)[1])
    if not nodes and (workloads.arrivals or workloads.jobs or workloads.cronjobs):
        notes.append("the input has no Node and no NodePool: every pod stays pending (kube-scheduler: no nodes "
                     "available to schedule pods)")
    if groups.pod_groups and not generic_workload:
        notes.append("PodGroups are scheduled as gangs only with --feature-gates GenericWorkload=true (off by default"
                     " in Kubernetes 1.37): their pods are scheduled one by one")
    elif not workload_claims:
        notes.extend(
            f"PodGroup {key}: spec.resourceClaims ignored: the DRAWorkloadResourceClaims feature gate is off (off by"
            " default in Kubernetes 1.37; the API server drops the field); turn it on with --feature-gates"
            " DRAWorkloadResourceClaims=true"
            for key, pod_group in groups.pod_groups.items() if pod_group.spec.resource_claims
        )
    notes.extend(
        f"PodGroup {key}: spec.schedulingConstraints.topology ignored: the TopologyAwareWorkloadScheduling feature "
        "gate (alpha since Kubernetes 1.36, off by default) is off and the API server drops the field; kubedra does "
        "not model the gate's placements yet"
        for key, pod_group in groups.pod_groups.items()
        if pod_group.spec.scheduling_constraints is not None and pod_group.spec.scheduling_constraints.topology
    )
    return Scenario(
        nodes=nodes,
        slices=[*loaded.of_kind(ResourceSlice), *pool_slices],
        classes=classes,
        taint_rules=loaded.of_kind(DeviceTaintRule),
        claims=_with_namespace(loaded.of_kind(ResourceClaim)),
        templates=_with_namespace(loaded.of_kind(ResourceClaimTemplate)),
        workloads=workloads,
        notes=notes,
        groups=groups,
        budgets=budgets,
        services=services,
        kueue=kueue,
    )
