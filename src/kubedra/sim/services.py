"""Services (``v1``), read for one thing only: PodTopologySpread's system-default constraints build their selector
from the selectors of the Services that select the pod (``helper.DefaultSelector``). Nothing else of a Service
(type, ports, endpoints) is simulated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from kubedra.cluster.nodepool import RawLike, convert_strict, object_location
from kubedra.objects.errors import Problem
from kubedra.objects.model import Loose, ObjectMeta
from kubedra.sim.workloads import DEFAULT_NAMESPACE

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
