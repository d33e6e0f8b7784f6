"""Before simulate's report, many conversion warnings are one line (counted per file), not a screenful; validate and
convert still list each, and -q drops the line."""

from __future__ import annotations

import pytest

from kubedra.cli import main
from kubedra.cli.output import WARNINGS_LISTED_UP_TO


def test_simulate_summarizes_the_seeds_conversion_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1
    assert warnings[0].startswith("Warning: 12 legacy or beta constructs converted to resource.k8s.io/v1 "
                                  "(01-resourceclass.yaml 4, 02-claim-and-pod.yaml 2,")
    assert main(["simulate", "-q"]) == 0
    assert "Warning" not in capsys.readouterr().err


def test_a_few_warnings_are_still_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", "src/kubedra/data/seed/02-claim-and-pod.yaml"]) in (0, 1)
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Warning:")]
    assert 0 < len(warnings) <= WARNINGS_LISTED_UP_TO
    assert all("02-claim-and-pod.yaml[" in w for w in warnings)
