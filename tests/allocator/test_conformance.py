"""The conformance suite, run twice per case: through the Python API and through ``kubedra allocate -o json``."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest
from tests.conformance.cases import Case, load_cases, messages_match, normalize, share_ids

from kubedra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    Features,
    allocation_to_dict,
)
from kubedra.allocator.requests import claim_ref
from kubedra.cel import CelOptions, CompileCache
from kubedra.cli import main
from kubedra.objects.load import load_paths
from kubedra.objects.model import DeviceClass, DeviceTaintRule, Node, ObjectMeta, ResourceClaim, ResourceSlice

CASES = load_cases()
EXIT = {"allocated": 0, "unschedulable": 1, "error": 2}


def _check(case: Case, actual: dict[str, Any]) -> None:
    assert normalize(actual) == normalize(case.expected), case.comment
    if case.expected["result"] == "error":
        assert messages_match(case.expected["message"], actual["message"]), (
            case.expected["message"],
            actual["message"],
        )
    ids = share_ids(actual)
    assert all(ids)
    assert len(set(ids)) == len(ids)


def _via_api(case: Case) -> tuple[dict[str, Any], int]:
    loaded = load_paths([str(case.input_path)], api_validation=False)
    features = Features.for_release(case.kubernetes_version).with_gates(case.feature_gates)
    claims = loaded.of_kind(ResourceClaim)
    pending = [c for c in claims if c.status.allocation is None]
    allocated = [c for c in claims if c.status.allocation is not None]
    node = next(
        (n for n in loaded.of_kind(Node) if n.metadata.name == case.node), Node(metadata=ObjectMeta(name=case.node))
    )
    allocator = Allocator(
        features,
        AllocatedState.from_claims(allocated, consumable_capacity=features.consumable_capacity),
        {c.metadata.name: c for c in loaded.of_kind(DeviceClass)},
        loaded.of_kind(ResourceSlice),
        CompileCache(
            CelOptions(
                consumable_capacity=features.consumable_capacity, list_type_attributes=features.list_type_attributes
            )
        ),
        loaded.of_kind(DeviceTaintRule),
    )
    out: dict[str, Any] = {"node": case.node, "allocations": {}, "message": ""}
    try:
        results = allocator.allocate(node, pending)
    except AllocationError as exc:
        out.update(result="error", message=str(exc))
    else:
        if results is None:
            out.update(result="unschedulable", message="cannot allocate all claims")
        else:
            out["result"] = "allocated"
            out["allocations"] = {claim_ref(c): allocation_to_dict(r) for c, r in zip(pending, results, strict=True)}
    return out, allocator.last_steps


@pytest.mark.skipif(not CASES, reason="no conformance cases yet")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_through_the_api(case: Case) -> None:
    actual, steps = _via_api(case)
    _check(case, actual)
    if case.allocate_one_calls is not None and case.kubernetes_version >= "1.36":
        assert steps == case.allocate_one_calls


@pytest.mark.skipif(not CASES, reason="no conformance cases yet")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_through_the_cli(case: Case) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["allocate", *case.argv, "-o", "json"])
    actual = json.loads(out.getvalue())
    _check(case, actual)
    assert code == EXIT[actual["result"]]
