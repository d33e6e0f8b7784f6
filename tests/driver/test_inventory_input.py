"""A binary or non-YAML ``--inventory`` for ``kubedra driver`` is exit 2 with the file named, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\x89PNG\r\n\x1a\n\x00", "not UTF-8 text"), (b"\x00\x01binary", "not YAML"), (b"- a\n- b\n", "")],
    ids=["binary", "control-characters", "a-list"],
)
def test_a_bad_inventory_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_bytes(content)
    code = main(["driver", "--node", "n", "--backend", "fake", "--inventory", str(inventory),
                 "--plugin-dir", str(tmp_path / "p"), "--registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"error: {inventory}: {message}"), err
    assert "Traceback" not in err
