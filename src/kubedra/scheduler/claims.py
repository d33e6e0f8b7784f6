"""The ResourceClaim lifecycle, as the resourceclaim controller and the scheduler drive it.

Templates yield one claim per pod (``<pod>-<claim>-<5 random>``, owned by the pod, annotated with the pod claim name);
the scheduler allocates a claim when its first pod is scheduled and reserves it for each pod (at most 256); a pod that
is done leaves ``reservedFor``; a claim nobody uses any more is deallocated, and a generated claim whose pod is done
is deleted. Each function returns new objects and never mutates its input.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import msgspec

from kubedra.objects.model import (
    AllocationResult,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodResourceClaim,
    PodResourceClaimStatus,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
    ResourceClaimTemplate,
)

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256
MAX_GENERATED_BASE = 57
# The API server's name generator draws from these characters (no vowels, no look-alikes).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


_ALPHABET_SIZE = len(NAME_ALPHABET)
_ALPHABET_BITS = _ALPHABET_SIZE.bit_length()


def random_suffix(rng: random.Random, length: int = 5) -> str:
    """``length`` draws of ``rng.choice(NAME_ALPHABET)``, inlined: CPython's ``choice`` takes
    ``getrandbits(bit_length)`` until it is below the alphabet size (a test holds the two streams equal)."""
    bits = rng.getrandbits
    out = []
    for _ in range(length):
        r = bits(_ALPHABET_BITS)
        while r >= _ALPHABET_SIZE:
            r = bits(_ALPHABET_BITS)
        out.append(NAME_ALPHABET[r])
    return "".join(out)


def generate_name_base(pod_name: str, claim_name: str) -> str:
    """``<pod>-<claim>-``, or both parts truncated in proportion when that is longer than 57 characters."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) <= MAX_GENERATED_BASE:
        return base
    total = len(base)
    return pod_name[: len(pod_name) * MAX_GENERATED_BASE // total] + "-" + claim_name[
        : len(claim_name) * MAX_GENERATED_BASE // total
    ]


def key_of(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def claim_key(claim: ResourceClaim) -> str:
    return key_of(claim.metadata.namespace, claim.metadata.name)


def template_not_found(pod_claim_name: str, template_name: str) -> str:
    """The resourceclaim controller's FailedResourceClaimCreation event when a pod's template does not exist."""
    return (f'PodResourceClaim {pod_claim_name}: resource claim template "{template_name}": '
            f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found')


def pod_owner_reference(pod: Pod) -> OwnerReference:
    """The controller reference a claim made for a pod carries (template claims and KEP-5004's special claim)."""
    return OwnerReference(
        api_version="v1",
        kind="Pod",
        name=pod.metadata.name,
        uid=pod.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )


def claim_from_template(
    pod: Pod, pod_claim: PodResourceClaim, template: ResourceClaimTemplate, rng: random.Random
) -> ResourceClaim:
    """The claim the resourceclaim controller creates for one pod claim that names a template."""
    annotations = dict(template.spec.metadata.annotations)
    annotations[POD_CLAIM_NAME_ANNOTATION] = pod_claim.name
    base = generate_name_base(pod.metadata.name, pod_claim.name)
    metadata = ObjectMeta(
        name=base + random_suffix(rng),
        generate_name=base,
        namespace=pod.metadata.namespace,
        labels=dict(template.spec.metadata.labels),
        annotations=annotations,
        owner_references=[pod_owner_reference(pod)],
    )
    return ResourceClaim(metadata=metadata, spec=template.spec.spec)


def generated_name(statuses: Sequence[PodResourceClaimStatus], pod_claim: str) -> str | None:
    """The name of the claim made for a pod claim, from the pod's ``status.resourceClaimStatuses`` (None: not
    made yet). A pod has a handful of claims at most: a walk, no index."""
    for status in statuses:
        if status.name == pod_claim:
            return status.resource_claim_name
    return None


def pod_owner_keys(claim: ResourceClaim) -> list[str]:
    """``claimPodOwnerIndex``'s values: ``namespace/uid`` of each pod that controls the claim (one, in practice)."""
    return [f"{claim.metadata.namespace}/{owner.uid}" for owner in claim.metadata.owner_references
            if owner.controller and owner.api_version == "v1" and owner.kind == "Pod"]


def orphaned_claim(pod_claim: str, owned: Sequence[ResourceClaim]) -> ResourceClaim | None:
    """``findPodResourceClaim``: among the claims a pod controls, the one made for ``pod_claim`` (its
    ``pod-claim-name`` annotation), which the controller made but had not yet recorded in the pod's status when it
    stopped (or when a snapshot was taken). The controller adopts it instead of making a second; a claim without the
    annotation is not a generated one and is ignored. Upstream takes the first its index returns; here the first by
    name, so runs repeat."""
    for claim in sorted(owned, key=lambda c: c.metadata.name):
        if claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim:
            return claim
    return None


def owning_pod(claim: ResourceClaim) -> tuple[str, str] | None:
    """(name, uid) of the pod that controls a generated claim, if any."""
    for owner in claim.metadata.owner_references:
        if owner.controller and owner.api_version == "v1" and owner.kind == "Pod":
            return owner.name, owner.uid
    return None


def is_reserved_for(claim: ResourceClaim, pod: Pod) -> bool:
    uid = pod.metadata.uid
    return uid in [ref.uid for ref in claim.status.reserved_for] if claim.status.reserved_for else False


def can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX


def consumer_ref(pod: Pod) -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)


def allocate_and_reserve(claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod) -> ResourceClaim:
    """PreBind: write ``status.allocation`` (when new) and add the pod to ``reservedFor``."""
    status = claim.status
    metadata = claim.metadata
    reserved = status.reserved_for if is_reserved_for(claim, pod) else [*status.reserved_for, consumer_ref(pod)]
    if allocation is not None:
        if DELETE_PROTECTION_FINALIZER not in metadata.finalizers:
            metadata = msgspec.structs.replace(metadata, finalizers=[*metadata.finalizers, DELETE_PROTECTION_FINALIZER])
        status = msgspec.structs.replace(status, allocation=allocation, reserved_for=reserved)
    elif reserved is not status.reserved_for:
        status = msgspec.structs.replace(status, reserved_for=reserved)
    return msgspec.structs.replace(claim, metadata=metadata, status=status)


class Release(msgspec.Struct, frozen=True, gc=False):
    """What happens to a claim when a pod is done with it."""

    claim: ResourceClaim | None  # None: the claim is deleted
    deallocated: AllocationResult | None  # the allocation that was cleared, if any


def release(claim: ResourceClaim, pod: Pod) -> Release:
    """The pod leaves ``reservedFor``; an unused claim is deallocated; a generated claim of this pod is deleted."""
    remaining = [ref for ref in claim.status.reserved_for if ref.uid != pod.metadata.uid]
    if remaining:
        status = msgspec.structs.replace(claim.status, reserved_for=remaining)
        return Release(msgspec.structs.replace(claim, status=status), None)
    deallocated = claim.status.allocation
    owner = owning_pod(claim)
    if owner is not None and owner[1] == pod.metadata.uid:
        return Release(None, deallocated)
    finalizers = [f for f in claim.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER]
    metadata = msgspec.structs.replace(claim.metadata, finalizers=finalizers)
    return Release(msgspec.structs.replace(claim, metadata=metadata, status=ResourceClaimStatus()), deallocated)
