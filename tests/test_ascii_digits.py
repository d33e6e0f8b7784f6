"""Digits are ASCII digits: ``str.isdigit()`` also says yes to "¹" and "٣", which ``int()`` refuses or reads.

Found by tests/cli/test_fuzz_cli.py (``kubedra migrate --min-compute-capability=¹`` was a traceback); every place
that checked a number with ``isdigit()`` now refuses other scripts' digits as bad input.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main
from kubedra.driver.devices import Sharing
from kubedra.metrics.serve import parse_listen
from kubedra.migrate.documents import field_parts
from kubedra.objects.gpuconfig import _version_literal

ODD_DIGITS = ["¹", "٣", "8.¹", "²²"]


@pytest.mark.parametrize("text", ODD_DIGITS)
def test_a_compute_capability_of_other_digits_is_no_version(text: str) -> None:
    assert _version_literal(text) is None
    assert _version_literal("8.0") == "8.0.0"


@pytest.mark.parametrize("text", ODD_DIGITS)
def test_consumable_shares_and_listen_ports_of_other_digits_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="neither a positive integer nor 'memory'"):
        Sharing.parse(text)
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_listen(f"127.0.0.1:{text}")


def test_a_field_index_of_other_digits_is_a_key() -> None:
    assert field_parts("spec.containers[0]")[-1] == 0
    assert field_parts("spec.containers[٣]")[-1] == "٣"


def test_migrate_refuses_the_option_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    job = Path(__file__).resolve().parents[1] / "examples" / "migrate" / "training-job.yaml"
    code = main(["migrate", "-f", str(job), "--min-compute-capability=¹"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert "error: " in err
    assert "¹" in err
