"""PreFilter for one pod: its claims must exist, an allocated claim must still accept it, its classes must exist.

Shared by the scheduler and ``explain`` so both say the same thing in kube-scheduler's words.
"""

from __future__ import annotations

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import ResourceClaim
from kubedra.scheduler.claims import can_be_reserved, is_reserved_for, key_of


def _missing_class(state: ClusterState, claims: list[ResourceClaim]) -> str | None:
    for claim in claims:
        if claim.status.allocation is not None:
            continue
        for request in claim.spec.devices.requests:
            names = (
                [(request.name, request.exactly.device_class_name)]
                if request.exactly
                else [(f"{request.name}/{s.name}", s.device_class_name) for s in request.first_available]
            )
            for qualified, class_name in names:
                if class_name and class_name not in state.classes:
                    return f"request {qualified}: device class {class_name} does not exist"
    return None


def prefilter_claims(state: ClusterState, record: PodRecord) -> list[ResourceClaim] | str:
    """The pod's claims in ``spec.resourceClaims`` order, or why the pod cannot be scheduled anywhere now."""
    pod = record.pod
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    claims: list[ResourceClaim] = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated.get(pod_claim.name)
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
    return _missing_class(state, claims) or claims
