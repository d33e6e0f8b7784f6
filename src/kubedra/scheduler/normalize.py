"""framework.MaxNodeScore, helper.DefaultNormalizeScore and the Go integer arithmetic the plugins' Score formulas
use, so that kubedra's scores round as kube-scheduler's do."""

from __future__ import annotations

import math

MAX_NODE_SCORE = 100


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """``math.Round``: half away from zero (Python's ``round`` goes to even)."""
    whole = math.floor(abs(x))
    r = whole + 1 if abs(x) - whole >= 0.5 else whole
    return r if x >= 0 else -r


def default_normalize(scores: list[int], reverse: bool) -> list[int]:
    """``helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)``."""
    highest = max([0, *scores])
    if highest == 0:
        return [MAX_NODE_SCORE if reverse else s for s in scores]
    out = [go_div(MAX_NODE_SCORE * s, highest) for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out
