"""ResourceClaims of PodGroups (KEP-5729, DRAWorkloadResourceClaims, beta and off by default in 1.37).

A pod claim matches a claim of the pod's PodGroup when every field is equal (``name``, ``resourceClaimName``,
``resourceClaimTemplateName``: ``core/v1`` ``PodResourceClaim``). A matched template claim resolves to one claim
generated for the whole group (``<podgroup>-<claim>-<5 random>``, owned by the PodGroup); a matched claim is reserved
for the PodGroup (``reservedFor: [{apiGroup: scheduling.k8s.io, resource: podgroups, ...}]``), not for each pod, so
the 256-consumer limit does not apply; it stays allocated while the group lives. Each function returns new objects.
"""

from __future__ import annotations

import random

import msgspec

from kubedra.objects.model import (
    AllocationResult,
    ObjectMeta,
    OwnerReference,
    PodResourceClaim,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
    ResourceClaimTemplate,
)
from kubedra.objects.scheduling import GROUP, V1BETA1, PodGroup, PodGroupResourceClaim
from kubedra.scheduler.claims import DELETE_PROTECTION_FINALIZER, generate_name_base, random_suffix


def matching_claim(pod_claim: PodResourceClaim, group: PodGroup) -> PodGroupResourceClaim | None:
    """The PodGroup's claim this pod claim resolves to, if all their fields are equal."""
    for claim in group.spec.resource_claims:
        if (claim.name, claim.resource_claim_name, claim.resource_claim_template_name) == (
            pod_claim.name, pod_claim.resource_claim_name, pod_claim.resource_claim_template_name
        ):
            return claim
    return None


def group_consumer(group: PodGroup) -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(api_group=GROUP, resource="podgroups", name=group.metadata.name,
                                          uid=group.metadata.uid)


def claim_for_group(
    group: PodGroup, group_claim: PodGroupResourceClaim, template: ResourceClaimTemplate, rng: random.Random
) -> ResourceClaim:
    """The one claim the resourceclaim controller makes for a PodGroup's template claim."""
    base = generate_name_base(group.metadata.name, group_claim.name)
    owner = OwnerReference(api_version=V1BETA1, kind="PodGroup", name=group.metadata.name, uid=group.metadata.uid,
                           controller=True, block_owner_deletion=True)
    metadata = ObjectMeta(
        name=base + random_suffix(rng),
        generate_name=base,
        namespace=group.metadata.namespace,
        labels=dict(template.spec.metadata.labels),
        annotations=dict(template.spec.metadata.annotations),
        owner_references=[owner],
    )
    return ResourceClaim(metadata=metadata, spec=template.spec.spec)


def reserve_for_group(claim: ResourceClaim, allocation: AllocationResult | None, group: PodGroup) -> ResourceClaim:
    """PreBind for a group's claim: the allocation (when new) and the PodGroup, once, in ``reservedFor``."""
    consumer = group_consumer(group)
    status = claim.status
    metadata = claim.metadata
    reserved = status.reserved_for if consumer in status.reserved_for else [*status.reserved_for, consumer]
    if allocation is not None and DELETE_PROTECTION_FINALIZER not in metadata.finalizers:
        metadata = msgspec.structs.replace(metadata, finalizers=[*metadata.finalizers, DELETE_PROTECTION_FINALIZER])
    status = msgspec.structs.replace(status, allocation=allocation or status.allocation, reserved_for=reserved)
    return msgspec.structs.replace(claim, metadata=metadata, status=status)


def release_for_group(claim: ResourceClaim) -> ResourceClaim:
    """The group is done: its claim is no longer reserved and is deallocated."""
    finalizers = [f for f in claim.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER]
    return msgspec.structs.replace(claim, metadata=msgspec.structs.replace(claim.metadata, finalizers=finalizers),
                                   status=ResourceClaimStatus())
