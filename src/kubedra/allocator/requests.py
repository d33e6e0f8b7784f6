"""Requests as the search sees them: validated once per claim, with class, count and covering constraints.

``validateDeviceRequest`` and the claim checks of ``Allocate`` upstream, in the same order and with the same
error texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubedra.allocator.constraints import Constraint, DistinctAttribute, MatchAttribute
from kubedra.allocator.devices import DeviceEntry, parse_quantity
from kubedra.allocator.errors import AllocationError
from kubedra.allocator.features import Features
from kubedra.objects.model import DeviceClass, DeviceSubRequest, DeviceToleration, ExactDeviceRequest, ResourceClaim
from kubedra.objects.quantity import Quantity

MAX_RESULTS = 32
"""``AllocationResultsMaxSize``: devices per claim."""


def claim_ref(claim: ResourceClaim) -> str:
    """``klog.KObj``: ``namespace/name`` (claims without a namespace are in ``default``)."""
    return f"{claim.metadata.namespace or 'default'}/{claim.metadata.name}"


@dataclass(eq=False)
class Candidate:
    """A device that passed the static checks of one request on one node (position = search order)."""

    pos: int
    entry: DeviceEntry
    counters_key: tuple[str, str]
    failure: Any = None
    capacity_check: bool = False


@dataclass(eq=False)
class RequestData:
    """One request, or one subrequest of a ``firstAvailable`` list."""

    claim_index: int
    name: str
    parent: str | None
    class_obj: DeviceClass
    mode_all: bool
    num_devices: int
    admin: bool
    tolerations: list[DeviceToleration]
    capacity: dict[str, Quantity] | None
    request_exprs: tuple[str, ...]
    class_exprs: tuple[str, ...]
    constraints: list[Constraint] = field(default_factory=list)
    all_devices: list[Candidate] = field(default_factory=list)
    candidates: list[Candidate] | None = None
    positions: list[int] = field(default_factory=list)
    selected: int = 0

    @property
    def base(self) -> str:
        return self.parent if self.parent is not None else self.name

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent is not None else self.name


def _capacity(claim: str, name: str, req: ExactDeviceRequest | DeviceSubRequest) -> dict[str, Quantity] | None:
    if req.capacity is None:
        return None
    where = f"claim {claim}, request {name}, capacity"
    return {k: parse_quantity(v, f"{where} {k}") for k, v in req.capacity.requests.items()}


def build_request(  # noqa: PLR0917
    claim_index: int,
    claim: ResourceClaim,
    req: ExactDeviceRequest | DeviceSubRequest,
    name: str,
    parent: str | None,
    features: Features,
    classes: dict[str, DeviceClass],
) -> RequestData:
    """Validate one (sub)request; ``All`` requests get their device list from the search afterwards."""
    ref = claim_ref(claim)
    if req.derived_attributes and features.code >= "1.37" and features.implementation != "experimental":
        raise AllocationError(
            f"claim {ref}, request {name}: cannot handle request with derived attributes, the feature is disabled"
        )
    for i, selector in enumerate(req.selectors):
        if selector.cel is None:
            raise AllocationError(
                f"claim {ref}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
    admin_field = req.admin_access if isinstance(req, ExactDeviceRequest) else None
    if not features.admin_access and admin_field is not None:
        raise AllocationError(f"claim {ref}, request {name}: admin access is requested, but the feature is disabled")
    if not req.device_class_name:
        raise AllocationError(f"claim {ref}, request {name}: missing device class name (unsupported request type?)")
    class_obj = classes.get(req.device_class_name)
    if class_obj is None:
        raise AllocationError(
            f"claim {ref}, request {name}: could not retrieve device class {req.device_class_name}: "
            f'deviceclass.resource.k8s.io "{req.device_class_name}" not found'
        )
    mode = req.allocation_mode or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise AllocationError(f"claim {ref}, request {name}: unsupported count mode {mode}")
    count = req.count or 1
    class_exprs = []
    for i, selector in enumerate(class_obj.spec.selectors):
        if selector.cel is None:
            raise AllocationError(
                f"class {class_obj.metadata.name}: selector #{i}: CEL expression empty (unsupported selector type?)"
            )
        class_exprs.append(selector.cel.expression)
    return RequestData(
        claim_index=claim_index,
        name=name,
        parent=parent,
        class_obj=class_obj,
        mode_all=mode == "All",
        num_devices=count if mode == "ExactCount" else 0,
        admin=bool(admin_field),
        tolerations=list(req.tolerations),
        capacity=None if features.stable else _capacity(ref, name, req),
        request_exprs=tuple(s.cel.expression for s in req.selectors if s.cel is not None),
        class_exprs=tuple(class_exprs),
    )


def claim_constraints(claim: ResourceClaim, features: Features) -> list[Constraint]:
    """The claim's constraints, fresh for one search.

    The stable variant only knows ``matchAttribute`` (``allocator_stable.go``): a ``distinctAttribute`` constraint
    is an "empty constraint" there.
    """
    out: list[Constraint] = []
    lists = features.list_constraints
    distinct = not features.stable
    per_request = features.distinct_per_request
    for i, c in enumerate(claim.spec.devices.constraints):
        if c.match_attribute is not None:
            out.append(MatchAttribute(c.match_attribute, c.requests, lists=lists))
        elif c.distinct_attribute is not None and distinct:
            out.append(DistinctAttribute(c.distinct_attribute, c.requests, lists=lists, per_request=per_request))
        else:
            raise AllocationError(
                f"claim {claim_ref(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
    return out
