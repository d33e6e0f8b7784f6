"""Extended resources served by DRA (KEP-5004): ``nvidia.com/gpu: 2`` without a device plugin.

Per node, as kube-scheduler decides it: a node that advertises the resource in ``status.allocatable`` serves it the old
way (NodeResourcesFit counts it); otherwise a DeviceClass whose ``extendedResourceName`` (or implicit name
``deviceclass.resource.kubernetes.io/<class>``) matches serves it through one special ResourceClaim per pod, allocated
after the pod's own claims. Request names are ``container-<i>-request-<j>``: ``i`` indexes init containers then
containers, ``j`` the resource among the container's sorted request names.

Long-lived containers (app containers and sidecars, i.e. init containers with ``restartPolicy: Always``) each get a
request of their own. A plain init container runs before the long-lived containers after it start, so it first reuses
their requests (in container order) and asks only for what is still missing; of those extras only the largest becomes
a request, shared by every plain init container. This is ``createRequestsAndMappings`` of kube-scheduler v1.37.2
(``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go``): the pod needs the devices of
``max(its long-lived containers' sum, each init container's peak)``, as for cpu.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubedra.objects.model import (
    ContainerExtendedResourceRequest,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    Node,
    ObjectMeta,
    Pod,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.claims import pod_owner_reference
from kubedra.scheduler.nodefit import IMPLICIT_DEVICE_CLASS_PREFIX, is_extended_resource

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
MAX_GENERATED_NAME_BASE = 58


def claim_name_base(pod_name: str) -> str:
    """The ``generateName`` of a pod's special claim, truncated as the API server's name generator does."""
    return f"{pod_name}-extended-resources-"[:MAX_GENERATED_NAME_BASE]


class ExtendedResourceMap:
    """Extended resource name → DeviceClass name.

    When two classes claim the same name the newer class wins (``metadata.creationTimestamp``; without timestamps,
    the later document), and a tie goes to the lexicographically lower class name — upstream's rule.
    """

    def __init__(self, classes: Sequence[DeviceClass]) -> None:
        chosen: dict[str, tuple[str, int, DeviceClass]] = {}
        for order, device_class in enumerate(classes):
            name = device_class.spec.extended_resource_name
            if not name:
                continue
            stamp = device_class.metadata.creation_timestamp or ""
            current = chosen.get(name)
            if current is None or self._newer(stamp, order, device_class, current):
                chosen[name] = (stamp, order, device_class)
        self._explicit = {name: entry[2].metadata.name for name, entry in chosen.items()}
        self._classes = {c.metadata.name for c in classes}

    @staticmethod
    def _newer(stamp: str, order: int, candidate: DeviceClass, current: tuple[str, int, DeviceClass]) -> bool:
        cur_stamp, cur_order, cur_class = current
        if stamp and cur_stamp and stamp != cur_stamp:
            return stamp > cur_stamp
        if not stamp and not cur_stamp and order != cur_order:
            return order > cur_order
        return candidate.metadata.name < cur_class.metadata.name

    def class_for(self, resource: str) -> str | None:
        if resource in self._explicit:
            return self._explicit[resource]
        if resource.startswith(IMPLICIT_DEVICE_CLASS_PREFIX):
            name = resource[len(IMPLICIT_DEVICE_CLASS_PREFIX):]
            return name if name in self._classes else None
        return None

    def __bool__(self) -> bool:
        return bool(self._explicit) or bool(self._classes)


@dataclass(frozen=True)
class ExtendedRequest:
    """One container's request for one extended resource."""

    container_index: int  # among init containers + containers
    container_name: str
    resource: str
    request_index: int  # among the container's sorted request names
    count: int
    long_lived: bool = True  # an app container or a sidecar; False: a plain init container


    @property
    def request_name(self) -> str:
        return f"container-{self.container_index}-request-{self.request_index}"


def extended_requests(pod: Pod) -> list[ExtendedRequest]:
    """Every non-zero integer extended-resource request, ordered by resource name then container."""
    found: list[ExtendedRequest] = []
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    inits = len(pod.spec.init_containers)
    for index, container in enumerate(containers):
        long_lived = index >= inits or container.restart_policy == "Always"
        requests = dict(container.resources.limits)
        requests.update(container.resources.requests)
        names = sorted(requests)
        for position, name in enumerate(names):
            if not is_extended_resource(name):
                continue
            amount = Quantity.parse(requests[name])
            if amount.sign() <= 0 or not amount.is_integer():
                continue
            found.append(ExtendedRequest(index, container.name, name, position, amount.value(), long_lived))
    found.sort(key=lambda r: (r.resource, r.container_index))
    return found


def dra_served_resources(
    requests: Sequence[ExtendedRequest], node: Node, mapping: ExtendedResourceMap
) -> frozenset[str]:
    """The extended resources this node serves through DRA for this pod (not advertised by a device plugin)."""
    allocatable = node.status.allocatable
    return frozenset(
        r.resource for r in requests if r.resource not in allocatable and mapping.class_for(r.resource) is not None
    )


SPECIAL_CLAIM_IN_MEMORY_NAME = "<extended-resources>"  # the special claim's name until it is created at binding


@dataclass(frozen=True)
class _Request:
    name: str
    resource: str
    count: int


def claim_requests(
    requests: Sequence[ExtendedRequest], served: frozenset[str]
) -> tuple[list[_Request], list[ContainerExtendedResourceRequest]]:
    """The special claim's requests (sorted by name, as upstream sorts them) and the container → request mappings
    (per resource: long-lived containers, then plain init containers), for the resources ``served`` by DRA."""
    by_resource: dict[str, list[ExtendedRequest]] = {}
    for request in requests:
        if request.resource in served:
            by_resource.setdefault(request.resource, []).append(request)
    made: list[_Request] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(by_resource):
        asks = sorted(by_resource[resource], key=lambda r: r.container_index)
        long_lived = [a for a in asks if a.long_lived]
        long_mappings = [_mapping(a, a.request_name) for a in long_lived]
        largest: _Request | None = None
        own_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for ask in (a for a in asks if not a.long_lived):
            reused = 0
            for later in (a for a in long_lived if a.container_index >= ask.container_index):
                reused += later.count
                short_mappings.append(_mapping(ask, later.request_name))
                if reused >= ask.count:
                    break
            if reused >= ask.count:
                continue
            own = _Request(ask.request_name, resource, ask.count - reused)
            own_names.add(own.name)
            short_mappings.append(_mapping(ask, own.name))
            if largest is None or largest.count < own.count:
                largest = own
        if largest is not None and len(own_names) > 1:
            short_mappings = [
                _mapping_to(m, largest.name) if m.request_name in own_names else m for m in short_mappings
            ]
        if largest is not None:
            made.append(largest)
        made.extend(_Request(a.request_name, resource, a.count) for a in long_lived)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    made.sort(key=lambda r: r.name)
    return made, mappings


def _mapping(ask: ExtendedRequest, request_name: str) -> ContainerExtendedResourceRequest:
    return ContainerExtendedResourceRequest(
        container_name=ask.container_name, resource_name=ask.resource, request_name=request_name
    )


def _mapping_to(mapping: ContainerExtendedResourceRequest, request_name: str) -> ContainerExtendedResourceRequest:
    return ContainerExtendedResourceRequest(
        container_name=mapping.container_name, resource_name=mapping.resource_name, request_name=request_name
    )


def special_claim(
    pod: Pod, requests: Sequence[ExtendedRequest], served: frozenset[str], mapping: ExtendedResourceMap, name: str
) -> ResourceClaim | None:
    """The in-memory special claim for the resources ``served`` by DRA on one node, or None if there are none."""
    device_requests: list[DeviceRequest] = []
    for request in claim_requests(requests, served)[0]:
        class_name = mapping.class_for(request.resource)
        assert class_name is not None
        device_requests.append(
            DeviceRequest(
                name=request.name,
                exactly=ExactDeviceRequest(
                    device_class_name=class_name, allocation_mode="ExactCount", count=request.count
                ),
            )
        )
    if not device_requests:
        return None
    metadata = ObjectMeta(
        name=name,
        generate_name=claim_name_base(pod.metadata.name),
        namespace=pod.metadata.namespace,
        annotations={EXTENDED_CLAIM_ANNOTATION: "true"},
        owner_references=[pod_owner_reference(pod)],
    )
    return ResourceClaim(metadata=metadata, spec=ResourceClaimSpec(devices=DeviceClaim(requests=device_requests)))


def node_batch(
    pod: Pod,
    to_allocate: Sequence[ResourceClaim],
    requests: Sequence[ExtendedRequest],
    served: frozenset[str],
    mapping: ExtendedResourceMap,
) -> tuple[list[ResourceClaim], ResourceClaim | None]:
    """The claims to allocate on a node: the pod's own, then its special claim if DRA serves anything there."""
    special = special_claim(pod, requests, served, mapping, SPECIAL_CLAIM_IN_MEMORY_NAME) if served else None
    return [*to_allocate, *([special] if special else [])], special


def request_mappings(
    requests: Sequence[ExtendedRequest], served: frozenset[str]
) -> list[ContainerExtendedResourceRequest]:
    """``pod.status.extendedResourceClaimStatus.requestMappings`` for the served resources."""
    return claim_requests(requests, served)[1]
