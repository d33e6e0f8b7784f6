"""Goals a fleet must meet, read from ``p99-pending<=5m,all-placed`` and checked on a simulation's summary."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubedra.sim.durations import parse_duration

_TERM = re.compile(r"^(p50|p99|max)-pending<=(.+)$")
METRICS = {"p50": "p50Seconds", "p99": "p99Seconds", "max": "maxSeconds"}


class GoalError(ValueError):
    """A goal that cannot be read; the message says what is accepted."""


@dataclass(frozen=True)
class Goal:
    """Pending-time bounds (seconds) by percentile, and whether every pod must be placed."""

    bounds: tuple[tuple[str, float], ...]
    all_placed: bool = False
    text: str = ""

    def met(self, summary: dict[str, Any]) -> bool:
        """``summary``: a candidate's figures; a pending time of None (a pod never started) meets no bound."""
        waited = summary["pendingTime"]
        if self.all_placed and summary["pods"]["pending"]:
            return False
        return all((w := waited[METRICS[name]]) is not None and w <= bound for name, bound in self.bounds)


def parse_goal(text: str) -> Goal:
    """``p99-pending<=5m``, ``p50-pending<=30s``, ``max-pending<=1h``, ``all-placed``, joined by commas."""
    bounds: list[tuple[str, float]] = []
    all_placed = False
    for term in (t.strip() for t in text.split(",")):
        if term == "all-placed":
            all_placed = True
            continue
        match = _TERM.match(term)
        if match is None:
            raise GoalError(f"goal {term!r}: use p50-pending<=D, p99-pending<=D, max-pending<=D (D a duration such "
                            "as 5m) or all-placed, joined by commas")
        try:
            seconds = parse_duration(match.group(2))
        except ValueError as exc:
            raise GoalError(f"goal {term!r}: {exc}") from exc
        bounds.append((match.group(1), seconds))
    if not bounds and not all_placed:
        raise GoalError("goal: empty")
    return Goal(tuple(bounds), all_placed, text)
