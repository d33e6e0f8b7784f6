"""Numbers docs/fidelity.md states in prose about the proof, held to what the suite really has.

Tables of measured agreement are generated sections (tests/fidelity.py; the CEL one is checked by
tests/cel/test_upstream_cel.py). The counts below are facts of the checked-in suite, read from the same files the
tests run on, so a page that drifts from them fails here; the conformance runners (tests/allocator/
test_conformance.py, tests/test_oracle.py) assert what each case and step count says.
"""

from __future__ import annotations

from tests import fidelity
from tests.conformance.cases import load_cases
from tests.differential import test_allocator_vs_oracle as differential

CASES = load_cases()


def test_the_conformance_counts() -> None:
    (total,) = fidelity.numbers_in(r"`tests/conformance/cases/` holds (\d+) input/expected cases")
    (kept,) = fidelity.numbers_in(r"and (\d+) `diff-\*` cases that the\s+differential suite found")
    assert total == len(CASES)
    assert kept == sum(c.name.startswith("diff-") for c in CASES)


def test_the_step_counts_cover_every_case() -> None:
    stepped, zero = fidelity.numbers_in(r"must be matched on all (\d+) cases \(0 on the (\d+) where upstream stops")
    assert all(c.allocate_one_calls is not None for c in CASES)
    assert stepped == len(CASES)
    assert zero == sum(c.allocate_one_calls == 0 for c in CASES)


def test_the_kept_permutation_case_and_its_steps() -> None:
    (steps,) = fidelity.numbers_in(r"`diff-stable-permutations-beyond-the-harness-budget` \(([\d,]+) steps on both")
    (case,) = [c for c in CASES if c.name == "diff-stable-permutations-beyond-the-harness-budget"]
    assert case.allocate_one_calls == steps


def test_the_fresh_differential_sample() -> None:
    (fresh,) = fidelity.numbers_in(r"on every run, a fresh random sample of (\d+) inputs")
    assert fresh == differential.FRESH_EXAMPLES
