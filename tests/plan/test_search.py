"""The pure search against brute force: on random small fleet spaces and random monotone goals, it answers the
cheapest meeting fleet, never simulates what monotonicity or the cost bound already settled, and, stopped by
``max_candidates``, gives a lower bound that holds."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from kubedra.plan.frontier import Fleet, Frontier, Status
from kubedra.plan.search import Search


@st.composite
def spaces(draw: st.DrawFn) -> tuple[tuple[float, ...], int, list[Fleet]]:
    """Prices (0 included, for ties), the most nodes per pool, and the minimal fleets of a monotone goal: every
    monotone goal on a finite grid is "at or above one of these" (none: no fleet meets)."""
    pools = draw(st.integers(2, 3))
    max_nodes = draw(st.integers(1, 6))
    prices = tuple(draw(st.lists(st.sampled_from([0.0, 0.5, 0.8, 1.0, 1.4, 3.7]), min_size=pools, max_size=pools)))
    fleet = st.tuples(*[st.integers(0, max_nodes)] * pools)
    return prices, max_nodes, draw(st.lists(fleet, max_size=4))


def meets(fleet: Fleet, minimal: list[Fleet]) -> bool:
    return any(all(m <= c for m, c in zip(low, fleet, strict=True)) for low in minimal)


def brute_force(search: Search, minimal: list[Fleet]) -> Fleet | None:
    space = itertools.product(range(search.max_nodes + 1), repeat=len(search.costs))
    met = [f for f in space if meets(f, minimal)]
    return min(met, key=search.key) if met else None


class Recorder:
    """``evaluate`` that checks every batch asks only what nothing settled yet."""

    def __init__(self, minimal: list[Fleet]) -> None:
        self.minimal = minimal
        self.seen: dict[Fleet, bool] = {}
        self.search: Search | None = None

    def __call__(self, fleets: Sequence[Fleet]) -> list[bool]:
        assert self.search is not None
        met = [f for f, ok in self.seen.items() if ok]
        bound = min(map(self.search.key, met)) if met else None
        for fleet in fleets:
            assert fleet not in self.seen
            assert not any(ok and all(a <= b for a, b in zip(f, fleet, strict=True)) for f, ok in self.seen.items())
            assert not any(not ok and all(a <= b for a, b in zip(fleet, f, strict=True))
                           for f, ok in self.seen.items())
            assert bound is None or self.search.key(fleet) < bound, (fleet, bound)
        answers = [meets(f, self.minimal) for f in fleets]
        self.seen.update(zip(fleets, answers, strict=True))
        return answers


def _search(prices: tuple[float, ...], max_nodes: int, minimal: list[Fleet], width: int,
            max_candidates: int | None = None) -> tuple[Search, Recorder]:
    recorder = Recorder(minimal)
    search = Search(prices, max_nodes, recorder, width=width, max_candidates=max_candidates)
    recorder.search = search
    return search, recorder


@given(spaces(), st.integers(1, 4))
def test_the_search_answers_what_brute_force_does(space: tuple[tuple[float, ...], int, list[Fleet]],
                                                  width: int) -> None:
    prices, max_nodes, minimal = space
    search, recorder = _search(prices, max_nodes, minimal, width)
    outcome = search.run()
    cheapest = brute_force(search, minimal)
    assert outcome.exact
    assert outcome.answer == cheapest
    assert outcome.evaluated == len(recorder.seen)
    if cheapest is None:
        assert outcome.lower_bound is None
    else:
        assert recorder.seen[cheapest]  # simulated, and it met
        assert outcome.lower_bound == search.cost(cheapest)


@given(spaces(), st.integers(1, 3), st.integers(0, 6))
def test_a_capped_search_says_whether_it_is_exact_and_its_bound_holds(
    space: tuple[tuple[float, ...], int, list[Fleet]], width: int, cap: int
) -> None:
    prices, max_nodes, minimal = space
    search, recorder = _search(prices, max_nodes, minimal, width, max_candidates=cap)
    outcome = search.run()
    cheapest = brute_force(search, minimal)
    assert outcome.evaluated == len(recorder.seen) <= cap
    if outcome.exact:
        assert outcome.answer == cheapest
        return
    if outcome.answer is not None:
        assert recorder.seen[outcome.answer]
    if cheapest is not None:
        assert outcome.lower_bound is not None
        assert outcome.lower_bound <= search.cost(cheapest)
        if outcome.answer is not None:
            assert search.cost(cheapest) <= search.cost(outcome.answer)


def test_a_failure_settles_everything_below_it_and_a_success_everything_above() -> None:
    frontier = Frontier(2, 4)
    frontier.add((2, 1), met=False)
    assert frontier.status((0, 1)) is Status.FAILS and frontier.status((3, 0)) is Status.UNKNOWN
    assert sorted(frontier.corners) == [(0, 2), (3, 0)]
    frontier.add((1, 3), met=True)
    assert frontier.status((4, 4)) is Status.MEETS and frontier.status((1, 2)) is Status.UNKNOWN
    frontier.add((4, 4), met=False)  # monotonicity already said it meets: a contradiction changes nothing
    assert frontier.status((4, 4)) is Status.MEETS
    top_fails = Frontier(2, 4)
    top_fails.add((4, 4), met=False)
    assert top_fails.corners == []  # no fleet meets


def test_the_search_finds_the_cheapest_fleet_mixing_pools() -> None:
    """Failed before the exact search: the old search tried each pool alone first and answered (5, 0) at 5."""
    search = Search((1.0, 1.4), 20, lambda fleets: [2 * a + 3 * b >= 10 for a, b in fleets], width=3)
    outcome = search.run()
    assert outcome.answer == (2, 2) and outcome.exact and outcome.lower_bound == 4.8
    assert search.explored[(2, 2)] and not search.explored.get((1, 2), True)


def test_pools_needed_together_are_found_together() -> None:
    search = Search((1.0, 1.0), 10, lambda fleets: [a >= 3 and b >= 2 for a, b in fleets])
    assert search.run().answer == (3, 2)


def test_a_cap_too_small_gives_the_best_found_and_a_lower_bound() -> None:
    search = Search((1.0, 1.4), 20, lambda fleets: [2 * a + 3 * b >= 10 for a, b in fleets], width=2,
                    max_candidates=2)
    outcome = search.run()
    assert not outcome.exact and outcome.evaluated == 2
    assert outcome.answer == (20, 0)  # the first round: the top and the cheaper pool alone at its most, both met
    assert outcome.lower_bound == 0.0  # (0, 0) is not known to fail yet
