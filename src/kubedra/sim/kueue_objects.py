"""Kueue's queueing objects as ``kubedra simulate`` reads them: ResourceFlavors, ClusterQueues and LocalQueues
(``kueue.x-k8s.io/v1beta2``, the version Kueue v0.17 stores, or ``v1beta1``, which it still serves).

Read strictly: an unknown field is a problem naming the file, the object and the field. Fields of features the
admission model (``sim.kueue``) does not have are read and named in a note instead of silently changing nothing:
preemption while borrowing (``borrowWithinCohort``), fair sharing, admission checks, flavor fungibility, topologies.
Cohorts (``spec.cohortName``, an implicit Cohort: no Cohort object is read) with borrowing and lending limits are
modelled, and ``spec.preemption.withinClusterQueue`` and ``reclaimWithinCohort`` (``sim.kueue_preemption``,
``sim.kueue_reclaim``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubedra.cluster.nodepool import RawLike, Strict, at, convert_strict, object_location
from kubedra.objects.errors import Problem
from kubedra.objects.model import Taint, Toleration
from kubedra.objects.quantity import Quantity, QuantityError
from kubedra.sim.kueue_preemption import LOWER, NEVER, POLICIES
from kubedra.sim.manifests import LabelSelector, _Doc

GROUP = "kueue.x-k8s.io"
VERSIONS = (f"{GROUP}/v1beta2", f"{GROUP}/v1beta1")
KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue")
STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
MAX_FLAVORS = 64  # the CRD's maxItems for a resource group's flavors (and 16 resource groups, 64 resources)


class FlavorSpec(Strict, kw_only=True):
    node_labels: dict[str, str] = {}
    node_taints: list[Taint] = []
    tolerations: list[Toleration] = []
    topology_name: str | None = None


class ResourceFlavorDoc(_Doc, kw_only=True):
    spec: FlavorSpec = msgspec.field(default_factory=FlavorSpec)


class ResourceQuotaDoc(Strict, kw_only=True):
    name: str
    nominal_quota: str | int
    borrowing_limit: str | int | None = None
    lending_limit: str | int | None = None


class FlavorQuotasDoc(Strict, kw_only=True):
    name: str
    resources: list[ResourceQuotaDoc] = []


class ResourceGroupDoc(Strict, kw_only=True):
    covered_resources: list[str] = []
    flavors: list[FlavorQuotasDoc] = []


class PreemptionDoc(Strict, kw_only=True):
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: Any = None


class ClusterQueueSpec(Strict, kw_only=True):
    resource_groups: list[ResourceGroupDoc] = []
    cohort_name: str | None = None  # v1beta2
    cohort: str | None = None  # v1beta1
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: Any = None
    preemption: PreemptionDoc | None = None
    admission_checks: Any = None
    admission_checks_strategy: Any = None
    stop_policy: str | None = None
    fair_sharing: Any = None
    admission_scope: Any = None


class ClusterQueueDoc(_Doc, kw_only=True):
    spec: ClusterQueueSpec = msgspec.field(default_factory=ClusterQueueSpec)


class LocalQueueSpec(Strict, kw_only=True):
    cluster_queue: str = ""
    stop_policy: str | None = None
    fair_sharing: Any = None


class LocalQueueDoc(_Doc, kw_only=True):
    spec: LocalQueueSpec = msgspec.field(default_factory=LocalQueueSpec)


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str]
    node_taints: tuple[Taint, ...]
    tolerations: tuple[Toleration, ...]


@dataclass(frozen=True)
class ResourceGroup:
    """Resources whose flavors are assigned together; ``quotas[flavor][resource]`` in Kueue's units (``units``)."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    quotas: dict[str, dict[str, int]]
    borrowing: dict[str, dict[str, int]] = field(default_factory=dict)  # only those set: flavor -> resource -> limit
    lending: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    groups: tuple[ResourceGroup, ...]
    strict_fifo: bool
    namespace_selector: LabelSelector | None  # None: no namespace (Kueue's nil selector is labels.Nothing)
    stopped: bool = False
    cohort: str | None = None  # spec.cohortName: the ClusterQueues naming it lend and borrow unused quota
    preemption: str = "Never"  # spec.preemption.withinClusterQueue
    reclaim: str = "Never"  # spec.preemption.reclaimWithinCohort (in a cohort)


@dataclass
class KueueSetup:
    flavors: dict[str, Flavor] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> ClusterQueue
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.flavors or self.cluster_queues or self.local_queues)


def is_kueue_object(data: dict[str, Any]) -> bool:
    return data.get("kind") in KINDS and data.get("apiVersion") in VERSIONS


def units(resource: str, quantity: Quantity) -> int:
    """A quantity as Kueue counts it (``resources.ResourceValue``): cpu in millicores, anything else in units, each
    rounded up."""
    scale = 10**6 if resource == "cpu" else 10**9
    return -(-quantity.nanos // scale)


def _quantity(value: str | int, where: str, resource: str, problems: list[Problem], location: Any) -> int | None:
    try:
        return units(resource, Quantity.parse(str(value)))
    except QuantityError as error:
        problems.append(Problem(at(location, where), f'Invalid value: "{value}": {error}'))
        return None


def _group(raw: ResourceGroupDoc, path: str, where: Any, problems: list[Problem]) -> ResourceGroup | None:
    quotas: dict[str, dict[str, int]] = {}
    borrowing: dict[str, dict[str, int]] = {}
    lending: dict[str, dict[str, int]] = {}
    ok = True
    if not raw.flavors or len(raw.flavors) > MAX_FLAVORS:
        problems.append(Problem(at(where, f"{path}.flavors"), f"Invalid value: must have 1 to {MAX_FLAVORS} items"))
        return None
    for f, flavor in enumerate(raw.flavors):
        names = [r.name for r in flavor.resources]
        if names != list(raw.covered_resources):
            problems.append(Problem(at(where, f"{path}.flavors[{f}].resources"), "Invalid value: must list the "
                                    "group's coveredResources, in the same order"))
            ok = False
            continue
        quotas[flavor.name] = {}
        for r, quota in enumerate(flavor.resources):
            at_ = f"{path}.flavors[{f}].resources[{r}]"
            value = _quantity(quota.nominal_quota, f"{at_}.nominalQuota", quota.name, problems, where)
            if value is None:
                ok = False
                continue
            quotas[flavor.name][quota.name] = value
            for limit, name, into in ((quota.borrowing_limit, "borrowingLimit", borrowing),
                                      (quota.lending_limit, "lendingLimit", lending)):
                if limit is None:
                    continue
                amount = _quantity(limit, f"{at_}.{name}", quota.name, problems, where)
                if amount is None:
                    ok = False
                elif name == "lendingLimit" and amount > value:
                    problems.append(Problem(at(where, f"{at_}.lendingLimit"), f'Invalid value: "{limit}": must be '
                                            "less than or equal to the nominalQuota"))
                    ok = False
                else:
                    into.setdefault(flavor.name, {})[quota.name] = amount
    if not ok:
        return None
    return ResourceGroup(tuple(raw.covered_resources), tuple(f.name for f in raw.flavors), quotas, borrowing,
                         lending)


def _unmodelled(name: str, spec: ClusterQueueSpec) -> list[str]:
    """The ClusterQueue's fields that need what the model does not have, by name."""
    out = []
    preemption = spec.preemption
    if preemption is not None and preemption.borrow_within_cohort:
        out.append("spec.preemption.borrowWithinCohort (preempting while borrowing: taken as Never)")
    if spec.fair_sharing is not None or spec.admission_scope is not None:
        out.append("spec.fairSharing/admissionScope (fair sharing)")
    if spec.admission_checks is not None or spec.admission_checks_strategy is not None:
        out.append("spec.admissionChecks (admission checks: quota reservation is admission here)")
    if spec.flavor_fungibility is not None:
        out.append("spec.flavorFungibility (flavors are tried in order and the first that fits is taken)")
    return [f"ClusterQueue {name}: {field_} is not modelled" for field_ in out]


def read_kueue(docs: Iterable[RawLike], problems: list[Problem]) -> KueueSetup:
    """The queueing objects of the input; problems (unknown fields, bad quantities, duplicates) into ``problems``."""
    setup = KueueSetup()
    for raw in docs:
        kind = str(raw.data["kind"])
        where = object_location(raw, kind)
        doc: ResourceFlavorDoc | ClusterQueueDoc | LocalQueueDoc | None
        if kind == "ResourceFlavor":
            doc = convert_strict(raw.data, ResourceFlavorDoc, where, problems)
        elif kind == "ClusterQueue":
            doc = convert_strict(raw.data, ClusterQueueDoc, where, problems)
        else:
            doc = convert_strict(raw.data, LocalQueueDoc, where, problems)
        if doc is None:
            continue
        name = doc.metadata.name
        if not name:
            problems.append(Problem(at(where, "metadata.name"), "Required value"))
            continue
        if isinstance(doc, ResourceFlavorDoc):
            if doc.spec.topology_name:
                setup.notes.append(f"ResourceFlavor {name}: spec.topologyName (topology-aware scheduling) is not "
                                   "modelled")
            setup.flavors[name] = Flavor(name, dict(doc.spec.node_labels), tuple(doc.spec.node_taints),
                                         tuple(doc.spec.tolerations))
        elif isinstance(doc, ClusterQueueDoc):
            _cluster_queue(doc, where, setup, problems)
        else:
            if not doc.spec.cluster_queue:
                problems.append(Problem(at(where, "spec.clusterQueue"), "Required value"))
                continue
            setup.local_queues[doc.metadata.namespace or "default", name] = doc.spec.cluster_queue
    return setup


def _cluster_queue(doc: ClusterQueueDoc, where: Any, setup: KueueSetup, problems: list[Problem]) -> None:
    spec, name = doc.spec, doc.metadata.name
    if spec.queueing_strategy not in STRATEGIES:
        problems.append(Problem(at(where, "spec.queueingStrategy"), f'Unsupported value: "{spec.queueing_strategy}":'
                                f' supported values: "{STRATEGIES[0]}", "{STRATEGIES[1]}"'))
        return
    preemption = spec.preemption or PreemptionDoc()
    for field_, value in (("withinClusterQueue", preemption.within_cluster_queue),
                          ("reclaimWithinCohort", preemption.reclaim_within_cohort)):
        allowed = POLICIES if field_ == "withinClusterQueue" else (NEVER, LOWER, "Any")
        if value not in allowed:
            problems.append(Problem(at(where, f"spec.preemption.{field_}"), f'Unsupported value: "{value}": '
                                    "supported values: " + ", ".join(f'"{v}"' for v in allowed)))
            return
    groups = []
    covered: set[str] = set()
    for i, raw_group in enumerate(spec.resource_groups):
        group = _group(raw_group, f"spec.resourceGroups[{i}]", where, problems)
        if group is None:
            return
        again = covered.intersection(group.covered)
        if again:
            problems.append(Problem(at(where, f"spec.resourceGroups[{i}].coveredResources"),
                                    f"Duplicate value: {sorted(again)[0]} is covered by an earlier resource group"))
            return
        covered.update(group.covered)
        groups.append(group)
    cohort = spec.cohort_name or spec.cohort or None
    if cohort is None and any(g.borrowing or g.lending for g in groups):
        limit = "borrowingLimit" if any(g.borrowing for g in groups) else "lendingLimit"
        problems.append(Problem(at(where, "spec.resourceGroups"), f"Invalid value: {limit} must be nil when cohort "
                                "is empty"))
        return
    setup.notes.extend(_unmodelled(name, spec))
    stopped = spec.stop_policy not in (None, "None")
    setup.cluster_queues[name] = ClusterQueue(name, tuple(groups), spec.queueing_strategy == "StrictFIFO",
                                              spec.namespace_selector, stopped, cohort,
                                              preemption.within_cluster_queue,
                                              preemption.reclaim_within_cohort if cohort else NEVER)
