"""kubedra's CEL against upstream's own: k8s.io/dynamic-resource-allocation/cel through the Go oracle's `cel` mode.

The celpy differential (test_differential.py) runs on kubedra's own Quantity and Semver; this one asks the real
module kube-scheduler compiles selectors with (upstream_fidelity.py says what is compared and on what). No class
of difference is excused: each one is listed by expression in ``upstream_fidelity.KNOWN`` with its reason, and the
fidelity page's table (docs/fidelity.md) is this run's.
"""

from __future__ import annotations

import pytest
import test_environment as te
import upstream_fidelity as uf
from tests import fidelity
from tests.conformance.oracle import go_available, oracle_path

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built"),
]


@pytest.fixture(scope="module")
def tally() -> uf.Tally:
    assert oracle_path("1.37").exists(), "run tests/oracle/build.sh"
    return uf.compare_all()


def test_every_difference_is_known_by_expression_and_every_known_one_occurs(tally: uf.Tally) -> None:
    print(tally.report())
    found = uf.problems(tally)
    assert not found, "\n".join(found[:30])


def test_counts_are_at_least_the_floors(tally: uf.Tally) -> None:
    for what, floor in uf.FLOORS.items():
        assert tally.total(what) >= floor, what
    assert tally.total(uf.RESULT) > 300
    assert tally.total(uf.COMPILE) > len(te.COMPILE_ERRORS)
    # What agrees follows from the totals and KNOWN, which the test above holds exact.
    for what in uf.COMPARED:
        listed = sum(k.times for k in uf.KNOWN if k.what == what)
        assert tally.agree(what) == tally.total(what) - listed, what


def test_the_readme_table_is_this_run(tally: uf.Tally) -> None:
    fidelity.assert_section("cel", uf.markdown(tally))


def test_the_corpus_is_the_frozen_one_and_replays() -> None:
    """The sample does not move with the code: the same file gives the same expressions, twice."""
    first, second = uf.load_corpus(), uf.load_corpus()
    assert [e for e, _ in first] == [e for e, _ in second]
    assert len(first) >= 300


def test_a_new_difference_and_a_stale_entry_both_fail() -> None:
    """The checker itself: an unlisted difference, a listed one that did not occur, a count that moved."""
    tally = uf.Tally()
    for what in uf.FLOORS:
        for _ in range(uf.FLOORS[what]):
            tally.check(what, "true", True, "")
    for known in uf.KNOWN[1:]:
        for _ in range(known.times):
            tally.check(known.what, known.expression, False, "listed")
    tally.check(uf.RESULT, uf.KNOWN[-1].expression, False, "one device more")
    tally.check(uf.RESULT, "device.driver == 'x'", False, "kubedra True, upstream False")
    found = uf.problems(tally)
    assert any(p.startswith("new difference, kubedra True") for p in found), found
    assert any("no longer differs" in p and uf.KNOWN[0].expression[:20] in p for p in found), found
    assert any("differs 2 time(s), KNOWN says 1" in p for p in found), found
    short = uf.Tally()
    assert any("fewer than the floor" in p for p in uf.problems(short))
