"""The census table of docs/fidelity.md (what each differential profile reaches), held to a fresh census in the deep
run.

The census draws its inputs with a seeded Hypothesis, and Hypothesis mixes literals of the local source into what
it draws, so the same seed draws other inputs after an edit anywhere: the table cannot be reproduced to the digit.
What it claims can: a profile the page gives 0% of a feature or outcome never reaches it, one it gives a share
reaches it, and each share is within ``TOLERANCE`` points of a fresh census (seed 1, 200 inputs per profile, outcomes
from upstream's allocator), and ``scripts/fidelity census`` rewrites the table from one. Deep mode only (~2.5 minutes
on 2 cores, with the oracle).
"""

from __future__ import annotations

import re

import pytest
from tests import fidelity
from tests.conformance.oracle import go_available, oracle_path

from . import profiles
from .census import README_COLUMNS, README_EXAMPLES, README_PROFILES, README_SEED, census

DEEP_WITH_THE_ORACLE = [
    pytest.mark.oracle,
    pytest.mark.slow,
    pytest.mark.deep,
    pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built"),
]

TOLERANCE = 15
"""Percentage points a share may move (the page notes 46-56% for one cell over other seeds)."""
def readme_table() -> dict[str, dict[str, int]]:
    lines = fidelity.section("census").splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = {h: int(re.sub(r"%$", "", c)) for h, c in zip(head[1:], cells[1:], strict=True)}
    return rows


def test_the_readme_table_has_every_profile_and_column() -> None:
    """Every run: the generated section is there, whole, in the census's own order."""
    rows = readme_table()
    assert list(rows) == list(README_PROFILES)
    assert all(list(row) == list(README_COLUMNS) for row in rows.values())


@pytest.mark.parametrize("profile", [pytest.param(p, marks=DEEP_WITH_THE_ORACLE) for p in README_PROFILES])
def test_a_fresh_census_reaches_what_the_readme_says(profile: str) -> None:
    assert oracle_path("1.37").exists(), "run tests/oracle/build.sh"
    counts = census(getattr(profiles, profile), README_EXAMPLES, README_SEED, oracle=True)
    inputs = counts["inputs"]
    assert inputs >= README_EXAMPLES * 9 // 10
    wrong = []
    for column, stated in readme_table()[profile].items():
        measured = round(100 * counts[README_COLUMNS[column]] / inputs)
        if (stated == 0) != (counts[README_COLUMNS[column]] == 0) or abs(measured - stated) > TOLERANCE:
            wrong.append(f"{column}: docs/fidelity.md {stated}%, census {measured}%")
    assert not wrong, f"{profile}: " + "; ".join(wrong)
