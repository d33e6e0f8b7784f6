"""The garbage collector tuned for one long batch computation (a simulation run), where almost every object made
stays alive until the end.

CPython's full collection walks every tracked object of the oldest generation. A simulation keeps each pod's
records, claims and results (a dozen tracked lists per pod inside the model's structs), so each full pass walks
everything made so far, and passes come every ~100,000 survivors: at 50,000 pods on 5,000 nodes eleven passes took
2.6 s of a 16 s run, and the cost per pod grew with the run's length. Freezing the survivors of each full pass
(``gc.freeze``) moves them out of every later pass, so each object is walked by at most one full pass: the
collector's cost per pod stays flat. Young cycles are still collected by the generation-0 and -1 passes; a cycle
that becomes garbage after it was frozen lives until the process ends, which for a batch run that keeps its
objects anyway costs nothing measurable (``benchmarks/scaling.py`` reports peak RSS beside the run time).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _freeze_after_full_pass(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def batch_collection() -> Iterator[None]:
    """Inside: what exists is frozen now, and the survivors of each full pass after it are frozen too."""
    gc.freeze()
    gc.callbacks.append(_freeze_after_full_pass)
    try:
        yield
    finally:
        gc.callbacks.remove(_freeze_after_full_pass)
