"""The fresh differential sample's seed, printed in pytest's summary whenever this folder's tests ran."""

from __future__ import annotations

import pytest

from . import fresh


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ran = any(
        "test_fresh_random_sample" in getattr(report, "nodeid", "")
        for outcome in ("passed", "failed", "error") for report in terminalreporter.stats.get(outcome, [])
    )
    if ran:
        terminalreporter.write_line(
            f"kubedra differential: fresh sample seed {fresh.SEED} (replay with KUBEDRA_DIFF_SEED={fresh.SEED}; "
            f"disagreements are written to {fresh.out_dir()})")
