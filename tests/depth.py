"""How hard the suite looks: the per-run sample CI runs on every change, or the deep run (``scripts/test --deep``).

``KUBEDRA_DEEP=1`` (what ``--deep`` sets) raises the example counts of the fuzz and property tests that take them
from here and runs the tests marked ``deep`` (the 4,000-pod scale run); without it those are skipped with the
reason printed, and every fuzz test still runs, on a smaller sample. A per-test variable (e.g.
``KUBEDRA_FUZZ_EXAMPLES``) overrides both.
"""

from __future__ import annotations

import os

DEEP = os.environ.get("KUBEDRA_DEEP", "") not in ("", "0")
DEEP_REASON = "deep mode only: scripts/test --deep (or KUBEDRA_DEEP=1)"


def examples(per_run: int, deep: int, override: str | None = None) -> int:
    """``per_run`` examples, ``deep`` ones in deep mode, or the value of the environment variable ``override``."""
    if override and os.environ.get(override):
        return int(os.environ[override])
    return deep if DEEP else per_run
