"""The conformance suite, run twice per case: through the Python API and through ``kubedra allocate -o json``.

Every case records ``allocate_one_calls`` (upstream's ``NumAllocateOneInvocations``, written by the oracle into
args.json when the case was generated or kept), and the search must take exactly as many steps, in whichever
variant upstream picks for the case's gates: combinations in incubating, permutations in stable
(``diff-stable-check-permutations-*``); 0 where upstream stops before searching.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest
from tests.conformance.cases import Case, load_cases, messages_match, normalize, share_ids

from kubedra.allocator import Features
from kubedra.allocator.snapshot import Snapshot, decision_document
from kubedra.cli import main
from kubedra.objects.load import load_paths

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
    decision, allocator = Snapshot.from_objects(loaded.objects, case.node).decide(features)
    return decision_document(case.node, decision), allocator.last_steps


@pytest.mark.skipif(not CASES, reason="no conformance cases yet")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_through_the_api(case: Case) -> None:
    actual, steps = _via_api(case)
    _check(case, actual)
    assert case.allocate_one_calls is not None, "regenerate the case: python -m tests.conformance.generate NAME"
    assert steps == case.allocate_one_calls, f"allocateOne calls: kubedra {steps}, upstream {case.allocate_one_calls}"


def test_every_case_records_upstreams_step_count() -> None:
    missing = [c.name for c in CASES if c.allocate_one_calls is None]
    assert not missing, missing
    searched = [c for c in CASES if c.allocate_one_calls]
    assert len(searched) > len(CASES) * 3 // 4  # most cases really search; the rest stop before (errors, gates)


@pytest.mark.skipif(not CASES, reason="no conformance cases yet")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_through_the_cli(case: Case) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["allocate", *case.argv, "-o", "json"])
    actual = json.loads(out.getvalue())
    _check(case, actual)
    assert code == EXIT[actual["result"]]
