"""Nothing a user gives vanishes without a word (issue 37 item 5): an empty file, a directory entry of another type
and a subdirectory without ``-R`` each get a note, in every command that reads files; ``-R`` reads subdirectories as
kubectl's does. Each failed before: the commands exited 0 and said nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.cli import main

POD = """apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec: {containers: [{name: c, image: x}]}
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.yaml").write_text(POD.replace("NAME", "a"))
    (tmp_path / "empty.yaml").write_text("# nothing here yet\n")
    (tmp_path / "README.md").write_text("not a manifest\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text(POD.replace("NAME", "b"))
    return tmp_path


@pytest.mark.parametrize("command", ["simulate", "validate", "convert"])
def test_every_entry_not_read_is_noted(command: str, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "-f", str(tree)]) == 0
    err = capsys.readouterr().err
    assert f"Note: {tree / 'README.md'}: skipped: not a .yaml, .yml or .json file" in err
    assert f"Note: {tree / 'sub'}: directory skipped (-R, --recursive reads subdirectories)" in err
    assert f"Note: {tree / 'empty.yaml'}: no objects in this file (empty, or only comments)" in err


@pytest.mark.parametrize("command", ["simulate", "validate", "convert"])
def test_recursive_reads_subdirectories(command: str, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "-R", "-f", str(tree)] + (["-o", "json"] if command != "validate" else [])
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "directory skipped" not in err
    if command != "validate":
        assert '"b"' in out or "default/b" in out


def test_quiet_drops_the_notes(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-q", "-f", str(tree)]) == 0
    assert "Note:" not in capsys.readouterr().err


def test_migrate_notes_what_it_skips(tree: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["migrate", str(tree)]) == 0
    err = capsys.readouterr().err
    assert f"{tree / 'README.md'}: skipped: not a .yaml, .yml or .json file" in err
    assert f"{tree / 'empty.yaml'}: no objects in this file" in err
