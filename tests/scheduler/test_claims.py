"""The claim lifecycle: template → claim, reservation, release, deallocation, deletion."""

from __future__ import annotations

import random

import msgspec

from kubedra.objects.model import AllocationResult, Pod, PodResourceClaim, ResourceClaim, ResourceClaimTemplate
from kubedra.scheduler.claims import (
    DELETE_PROTECTION_FINALIZER,
    NAME_ALPHABET,
    POD_CLAIM_NAME_ANNOTATION,
    RESERVED_FOR_MAX,
    allocate_and_reserve,
    can_be_reserved,
    claim_from_template,
    generate_name_base,
    random_suffix,
    release,
)

ALLOCATION = msgspec.convert(
    {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}},
    AllocationResult,
)


def pod(name: str, uid: str) -> Pod:
    return msgspec.convert({"metadata": {"name": name, "namespace": "ml", "uid": uid}}, Pod)


def template() -> ResourceClaimTemplate:
    return msgspec.convert(
        {
            "metadata": {"name": "gpu-template", "namespace": "ml"},
            "spec": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
            },
        },
        ResourceClaimTemplate,
    )


def test_claim_from_template_is_named_owned_and_annotated_like_the_controller_does() -> None:
    p = pod("trainer-0", "uid-1")
    claim = claim_from_template(p, PodResourceClaim(name="gpu", resource_claim_template_name="gpu-template"),
                                template(), random.Random(1))
    assert claim.metadata.name.startswith("trainer-0-gpu-")
    suffix = claim.metadata.name.removeprefix("trainer-0-gpu-")
    assert len(suffix) == 5 and set(suffix) <= set(NAME_ALPHABET)
    assert claim.metadata.namespace == "ml"
    assert claim.metadata.annotations == {"note": "x", POD_CLAIM_NAME_ANNOTATION: "gpu"}
    assert claim.metadata.labels == {"team": "a"}
    owner = claim.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Pod", "trainer-0", "uid-1", True)
    assert claim.spec.devices.requests[0].exactly is not None


def test_long_names_are_truncated_in_proportion() -> None:
    base = generate_name_base("p" * 60, "c" * 20)
    assert len(base) <= 57
    assert base.startswith("p" * 40) and "-c" in base


def test_reserve_then_release_deallocates_a_user_claim_and_deletes_a_generated_one() -> None:
    p1, p2 = pod("a", "u1"), pod("b", "u2")
    shared = msgspec.convert({"metadata": {"name": "shared", "namespace": "ml"}}, ResourceClaim)
    shared = allocate_and_reserve(shared, ALLOCATION, p1)
    shared = allocate_and_reserve(shared, None, p2)
    assert [r.name for r in shared.status.reserved_for] == ["a", "b"]
    assert DELETE_PROTECTION_FINALIZER in shared.metadata.finalizers
    first = release(shared, p1)
    assert first.deallocated is None and first.claim is not None
    assert first.claim.status.allocation is not None
    second = release(first.claim, p2)
    assert second.deallocated == ALLOCATION
    assert second.claim is not None and second.claim.status.allocation is None
    assert DELETE_PROTECTION_FINALIZER not in second.claim.metadata.finalizers

    generated = claim_from_template(p1, PodResourceClaim(name="gpu", resource_claim_template_name="t"),
                                    template(), random.Random(2))
    generated = allocate_and_reserve(generated, ALLOCATION, p1)
    gone = release(generated, p1)
    assert gone.claim is None and gone.deallocated == ALLOCATION


def test_reserved_for_has_a_limit() -> None:
    claim = msgspec.convert({"metadata": {"name": "c", "namespace": "ml"}}, ResourceClaim)
    for i in range(RESERVED_FOR_MAX):
        claim = allocate_and_reserve(claim, ALLOCATION if i == 0 else None, pod(f"p{i}", f"u{i}"))
    assert not can_be_reserved(claim)


def test_random_suffix_draws_what_rng_choice_would() -> None:
    """The inlined draw keeps generated names (and every later seeded draw) exactly as ``rng.choice`` makes them."""
    ours, theirs = random.Random(42), random.Random(42)
    for _ in range(2000):
        assert random_suffix(ours) == "".join(theirs.choice(NAME_ALPHABET) for _ in range(5))
    assert ours.random() == theirs.random()
