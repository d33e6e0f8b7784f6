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

The survivors of each generation-1 pass are frozen too, not only those of full passes: an object that outlived two
passes is, in a run, one the run keeps, and walking it a third time in a full pass was the collector's largest part
(at 100,000 pods on 10,000 nodes, 41 full passes took 1.1 s of a 15.9 s run, and the run was 1.7 s faster without
them; peak RSS unchanged). Cycles are still collected while young, by the generation-0 and -1 passes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    """After a pass over generation 1 or 2 every tracked object left is a survivor (the younger ones were swept into
    it): freeze them all."""
    if phase == "stop" and info.get("generation", 0) >= 1:
        gc.freeze()


@contextmanager
def batch_collection() -> Iterator[None]:
    """Inside: what exists is frozen now, and the survivors of each generation-1 or full pass after it too."""
    gc.freeze()
    gc.callbacks.append(_freeze_survivors)
    try:
        yield
    finally:
        gc.callbacks.remove(_freeze_survivors)
