"""The per-input size limit: 8 MiB by default, named in the refusal, raised with ``--max-file-size``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main
from kubedra.objects.limits import MaxFileBytes

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"


@pytest.fixture
def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.yaml"
    path.write_text(POD + "#" * (MaxFileBytes + 1) + "\n")
    return path


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_the_limit_is_named_and_raised_by_the_flag(
    capsys: pytest.CaptureFixture[str], big: Path, command: str
) -> None:
    assert main([command, "-f", str(big), "-q"]) == 2
    assert "is more than the limit of 8388608 bytes (--max-file-size raises it)" in capsys.readouterr().err
    assert main([command, "-f", str(big), "-q", "--max-file-size", "16Mi"]) == 0


@pytest.mark.parametrize("value", ["0", "lots", "-1Mi", "5Gi"])
def test_a_size_that_is_no_size_is_exit_2(capsys: pytest.CaptureFixture[str], big: Path, value: str) -> None:
    assert main(["validate", "-f", str(big), f"--max-file-size={value}"]) == 2
    assert f'error: --max-file-size: Invalid value: "{value}"' in capsys.readouterr().err
