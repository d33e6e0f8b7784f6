"""Services (``v1``), read for one thing only: PodTopologySpread's system-default constraints build their selector
from the selectors of the Services that select the pod (``helper.DefaultSelector``). Nothing else of a Service
(type, ports, endpoints) is simulated.

A live cluster's ReplicaSets, StatefulSets and ReplicationControllers are read for the same selector
(:func:`cluster_controllers`); from files the workloads' expansion registers them (``Workloads.controllers``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from kubedra.cluster.nodepool import RawLike, convert_strict, object_location
from kubedra.cluster.state import Requirement
from kubedra.objects.errors import Problem
from kubedra.objects.model import Loose, ObjectMeta
from kubedra.sim.manifests import LabelSelector
from kubedra.sim.workloads import DEFAULT_NAMESPACE, selector_requirements

API_VERSION = "v1"


class ServiceSpec(Loose):
    selector: dict[str, str] | None = None  # None: the Service selects nothing ("nil selectors match nothing")


class Service(Loose):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


def is_service(data: dict[str, Any]) -> bool:
    return data.get("kind") == "Service" and data.get("apiVersion") == API_VERSION


ServiceSelectors = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


def read_services(docs: Iterable[RawLike], problems: list[Problem]) -> ServiceSelectors:
    """(namespace, selector pairs sorted) of every Service with a selector, in input order."""
    out = []
    for raw in docs:
        service = convert_strict(raw.data, Service, object_location(raw, "Service"), problems)
        if service is None or service.spec.selector is None:
            continue
        out.append((service.metadata.namespace or DEFAULT_NAMESPACE, tuple(sorted(service.spec.selector.items()))))
    return tuple(out)


class _SetSpec(Loose):
    selector: LabelSelector | None = None


class _SetController(Loose):
    """A ReplicaSet or StatefulSet (``apps/v1``): its ``spec.selector``, a LabelSelector."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _SetSpec = msgspec.field(default_factory=_SetSpec)


class _RCSpec(Loose):
    selector: dict[str, str] | None = None


class _ReplicationController(Loose):
    """A ReplicationController (``v1``): its ``spec.selector``, a map of labels."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _RCSpec = msgspec.field(default_factory=_RCSpec)


ControllerSelectors = dict[tuple[str, str, str], tuple[Requirement, ...]]


def cluster_controllers(documents: Iterable[dict[str, Any]]) -> tuple[ControllerSelectors, list[str]]:
    """The ReplicaSets, StatefulSets and ReplicationControllers of a live cluster, (namespace, kind, name) -> their
    selector's requirements, as ``Workloads.controllers`` holds those of files; and a note for each that cannot be
    read (it is then taken not to exist, as an informer without it would). ``helper.DefaultSelector`` adds a
    ReplicaSet's or StatefulSet's selector requirements and merges a ReplicationController's labels: the same
    requirements (``key In (value)``)."""
    found: ControllerSelectors = {}
    notes = []
    requirements: tuple[Requirement, ...]
    for document in documents:
        kind = str(document.get("kind", ""))
        try:
            if kind == "ReplicationController":
                rc = msgspec.convert(document, _ReplicationController)
                pairs = (rc.spec.selector or {}).items()
                meta, requirements = rc.metadata, tuple(sorted((k, "In", (v,)) for k, v in pairs))
            else:
                workload = msgspec.convert(document, _SetController)
                meta, requirements = workload.metadata, selector_requirements(workload.spec.selector)
        except msgspec.ValidationError as exc:
            name = (document.get("metadata") or {}).get("name", "")
            notes.append(f"{kind} {name}: cannot be read ({exc}); PodTopologySpread takes it not to exist")
            continue
        found[meta.namespace or DEFAULT_NAMESPACE, kind, meta.name] = requirements
    return found, notes
