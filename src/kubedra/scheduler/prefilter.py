"""PreFilter for one pod: its claims must exist, an allocated claim must still accept it, its classes must exist.

Shared by the scheduler and ``explain`` so both say the same thing in kube-scheduler's words.
"""

from __future__ import annotations

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ResourceClaim, ResourceClaimSpec
from kubedra.scheduler.claims import can_be_reserved, generated_name, is_reserved_for, key_of

MAX_CHECKED = 1024  # claim specs whose classes are known to exist; beyond that the memory starts over


def _missing_class(state: ClusterState, spec: ResourceClaimSpec) -> str | None:
    for request in spec.devices.requests:
        names = (
            [(request.name, request.exactly.device_class_name)]
            if request.exactly
            else [(f"{request.name}/{s.name}", s.device_class_name) for s in request.first_available]
        )
        for qualified, class_name in names:
            if class_name and class_name not in state.classes:
                return f"request {qualified}: device class {class_name} does not exist"
    return None


class PreFilter:
    """PreFilter over one cluster state. Claims made from one template share its spec object, and a run's classes
    do not change: a spec whose classes exist is checked once."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._checked: dict[int, ResourceClaimSpec] = {}  # id -> spec (held, so ids stay unique)

    def claims(self, record: PodRecord) -> list[ResourceClaim] | str:
        """The pod's claims in ``spec.resourceClaims`` order, or why the pod cannot be scheduled anywhere now."""
        pod = record.pod
        state = self.state
        statuses = pod.status.resource_claim_statuses
        claims: list[ResourceClaim] = []
        for pod_claim in pod.spec.resource_claims:
            name = pod_claim.resource_claim_name or generated_name(statuses, pod_claim.name)
            if not name:
                if pod_claim.resource_claim_template_name:
                    return f"waiting for the ResourceClaim of pod claim {pod_claim.name!r} to be created"
                continue
            claim = state.claims.get(key_of(pod.metadata.namespace, name))
            if claim is None:
                return f'resourceclaim "{name}" not found'
            if claim.status.allocation is not None and not can_be_reserved(claim) and not is_reserved_for(claim, pod):
                return "resourceclaim in use"
            claims.append(claim)
        checked = self._checked
        for claim in claims:
            spec = claim.spec
            if claim.status.allocation is not None or id(spec) in checked:
                continue
            missing = _missing_class(state, spec)
            if missing is not None:
                return missing
            if len(checked) >= MAX_CHECKED:
                checked.clear()
            checked[id(spec)] = spec
        return claims


def prefilter_claims(state: ClusterState, record: PodRecord) -> list[ResourceClaim] | str:
    """``PreFilter(state).claims(record)``, for one-off callers (``explain``)."""
    return PreFilter(state).claims(record)
