"""Differential tests: kubedra's allocator and upstream's (the Go oracle) must decide alike on random valid inputs.

Each test draws scenarios from one focused profile (profiles.py) and runs every example through
both: results, allocations, config and nodeSelector must be identical, shareIDs present and
distinct where upstream has them, error texts equal in their stable part. Inputs the oracle itself
refuses as malformed are filtered out, not compared. Runs are reproducible (derandomize); set
KUBEDRA_DIFF_EXAMPLES=N to run N examples per test instead of the CI default, and
KUBEDRA_DIFF_SHRINK=1 to shrink a failing example (minutes; off in CI so that a failure reports
fast) and KUBEDRA_DIFF_SAVE=DIR to keep the failing input (then `python -m tests.differential.keep`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from tests import depth
from tests.conformance.cases import CASES_DIR
from tests.conformance.oracle import go_available, oracle_path

from . import fresh, profiles
from .runner import PROVEN_RELEASES, STEP_BUDGET, OracleRejected, record_failure, run_both
from .strategies import Scenario, scenarios

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built"),
]

OVERRIDE = int(os.environ.get("KUBEDRA_DIFF_EXAMPLES", "0"))
SHRINK = os.environ.get("KUBEDRA_DIFF_SHRINK", "") not in ("", "0")
PER_TEST = 90
"""CI default: ~0.08 s per example (both allocators), so the six tests that use it stay under a minute on 2 cores."""
PER_RELEASE_TEST = 60
"""The variant-focused test (the stable variant) replays code paths the others reach too."""
FRESH_EXAMPLES = 300
"""The fresh sample: ~0.1 s per example with the oracle, so about 30-45 s on 2 cores."""
FRESH_DEEP = 3000
"""The fresh sample of the deep run (scripts/test --deep)."""
FRESH_PROFILES = (
    profiles.POOLS, profiles.REQUESTS, profiles.COUNTERS_CAPACITY, profiles.TAINTS_ADMIN, profiles.EVERYTHING,
    profiles.STABLE, profiles.COMBINED, profiles.COMBINED,
)


def diff_settings(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=OVERRIDE or depth.examples(examples, 10 * examples),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if SHRINK else []),
    )


@pytest.fixture(scope="module", autouse=True)
def _oracle_built() -> None:
    for version in PROVEN_RELEASES:
        assert oracle_path(version).exists(), f"{oracle_path(version)} missing: run tests/oracle/build.sh"


def check(scenario: Scenario) -> None:
    try:
        outcome = run_both(scenario)
    except OracleRejected:
        reject()
    if not outcome.agree:
        record_failure(scenario, outcome)
        raise AssertionError(outcome.describe(scenario))


@diff_settings(PER_TEST)
@given(scenarios(profiles.POOLS))
def test_pools_selectors_and_modes(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_TEST)
@given(scenarios(profiles.REQUESTS))
def test_first_available_constraints_and_config(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_TEST)
@given(scenarios(profiles.COUNTERS_CAPACITY))
def test_counters_and_consumable_capacity(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_TEST)
@given(scenarios(profiles.TAINTS_ADMIN))
def test_taints_admin_access_and_allocated_state(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_TEST)
@given(scenarios(profiles.EVERYTHING))
def test_everything_with_random_gates(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_TEST)
@given(scenarios(profiles.COMBINED))
def test_features_combined_and_larger(scenario: Scenario) -> None:
    check(scenario)


@diff_settings(PER_RELEASE_TEST)
@given(scenarios(profiles.STABLE))
def test_stable_implementation(scenario: Scenario) -> None:
    check(scenario)


def test_fresh_random_sample(record_property: Callable[[str, object], None]) -> None:
    """New inputs on every run, from every profile: a disagreement is written out as a ready conformance case.

    The seed is os.urandom's unless KUBEDRA_DIFF_SEED replays one; pytest's summary prints it and
    the junit XML records it (property kubedra_diff_seed). KUBEDRA_DIFF_EXAMPLES sets the size.
    """
    record_property("kubedra_diff_seed", fresh.SEED)
    found: list[str] = []

    @settings(max_examples=OVERRIDE or depth.examples(FRESH_EXAMPLES, FRESH_DEEP), deadline=None, derandomize=False, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
              phases=[Phase.generate])
    @hypothesis_seed(fresh.SEED)
    @given(st.sampled_from(FRESH_PROFILES).flatmap(scenarios))
    def sample(scenario: Scenario) -> None:
        try:
            outcome = run_both(scenario)
        except OracleRejected:
            reject()
        if not outcome.agree:
            folder = fresh.write_found(scenario, outcome, fresh.SEED)
            found.append(str(folder))
            raise AssertionError(
                f"{outcome.describe(scenario)}\nwritten as a conformance case: {folder}\n"
                f"replay: KUBEDRA_DIFF_SEED={fresh.SEED} python -m pytest {__file__}::test_fresh_random_sample")

    sample()
    assert not found


def test_search_beyond_the_step_budget_is_compared_not_counted_as_error() -> None:
    """Issue 15's disagreement (STABLE, 1.37, kubedra error vs upstream unschedulable) was the harness's own step
    budget: a search longer than STEP_BUDGET is searched again with the steps upstream took, and must agree."""
    folder = CASES_DIR / "diff-stable-permutations-beyond-the-harness-budget"
    args = json.loads((folder / "args.json").read_text())
    docs = [d for d in yaml.safe_load_all((folder / "input.yaml").read_text()) if d]
    scenario = Scenario(docs, args["node"], args["feature_gates"], args["kubernetes_version"])
    outcome = run_both(scenario)
    assert outcome.upstream["stats"]["allocate_one_calls"] > STEP_BUDGET
    assert outcome.agree, outcome.problems
    assert outcome.ours["result"] == "unschedulable"
