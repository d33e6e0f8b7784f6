"""Fresh differential inputs on every run: the seed, and where a disagreement is written as a ready case.

The derandomized tests replay the same inputs on every run (reproducible, but they can never find
anything new); the fresh-sample test draws from a new seed each run. The seed comes from
os.urandom unless KUBEDRA_DIFF_SEED replays one; it is printed in pytest's summary and recorded
as the test's `kubedra_diff_seed` property (junit XML). A disagreement is written to
$KUBEDRA_DIFF_OUT (default tests/differential/found/) in the conformance layout, so that it
cannot be lost: explain it, then move it to tests/conformance/cases/.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .runner import Outcome, to_yaml, write_case
from .strategies import Scenario

FOUND_DIR = Path(__file__).parent / "found"


def _seed() -> int:
    given = os.environ.get("KUBEDRA_DIFF_SEED", "").strip()
    return int(given, 0) if given else int.from_bytes(os.urandom(8), "big")


SEED = _seed()
"""This run's seed (one per process, so the summary line and the test agree)."""


def out_dir() -> Path:
    return Path(os.environ.get("KUBEDRA_DIFF_OUT") or FOUND_DIR)


def write_found(scenario: Scenario, outcome: Outcome, seed: int, root: Path | None = None) -> Path:
    """Write the disagreement as conformance case found-<hash>/ (upstream's answer as expected.json)."""
    digest = hashlib.sha256(
        (to_yaml(scenario) + json.dumps([scenario.node, scenario.version, sorted(scenario.gates.items())]))
        .encode()).hexdigest()[:12]
    comment = (f"found by a fresh differential sample (KUBEDRA_DIFF_SEED={seed}): " + "; ".join(outcome.problems)
               + f"; kubedra said {outcome.ours['result']}: {outcome.ours['message']}")
    folder = write_case((root or out_dir()) / f"found-{digest}", scenario, outcome.upstream, comment)
    (folder / "kubedra.json").write_text(json.dumps(outcome.ours, indent=1, sort_keys=True) + "\n")
    return folder
