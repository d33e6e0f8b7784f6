"""Run as a child process by test_crash.py: a NodeDriver preparing and unpreparing claims in a loop until killed.

Every nvidia-smi command "takes" a few milliseconds, so a SIGKILL lands inside prepare or unprepare most of
the time. Usage: python -m tests.driver.crash_child ROOT (ROOT holds claims.json and the driver's directories).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from tests.driver.conftest import Dirs, make_driver
from tests.driver.helpers import StaticClaims

from kubedra.driver.sharing import RecordingRunner
from kubedra.driver.types import ClaimRef


class SlowRunner(RecordingRunner):
    def run(self, argv: list[str]) -> None:  # type: ignore[override]
        time.sleep(0.003)
        super().run(argv)


def main(root: Path) -> None:
    claims = StaticClaims()
    refs = [ClaimRef(*claims.add(doc)) for doc in json.loads((root / "claims.json").read_text())]
    driver = make_driver(Dirs(root), claims, SlowRunner())
    (root / "started").write_text("1")
    rng = random.Random()
    while True:
        batch = rng.sample(refs, rng.randint(1, len(refs)))
        driver.prepare(batch)
        driver.unprepare(rng.sample(batch, rng.randint(0, len(batch))))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
