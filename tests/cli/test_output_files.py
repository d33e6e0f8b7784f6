"""cli/files.write_all, what migrate --output-dir and snapshot --output-dir write with: all files, each whole, or none."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kubedra.cli import main
from kubedra.cli.files import OutputFilesError, write_all


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def test_writes_every_file_whole_and_replaces_old_ones(tmp_path: Path) -> None:
    out = tmp_path / "out" / "deeper"
    write_all(out, [("a.yaml", "a: 1\n"), ("b.yaml", "b: 2\n")])
    write_all(out, [("a.yaml", "a: 3\n")])
    assert _tree(out) == {"a.yaml": b"a: 3\n", "b.yaml": b"b: 2\n"}
    mode = stat.S_IMODE(os.stat(out / "a.yaml").st_mode)
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o666 & ~mask  # as open() creates files, not mkstemp's 0600


def test_a_directory_in_a_files_place_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").mkdir()
    (tmp_path / "a.yaml").write_text("old\n")
    before = _tree(tmp_path)
    with pytest.raises(OutputFilesError, match=r"b\.yaml: exists and is not a regular file"):
        write_all(tmp_path, [("a.yaml", "new\n"), ("b.yaml", "b\n")])
    assert _tree(tmp_path) == before


def test_a_file_in_the_directorys_place_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x\n")
    with pytest.raises(OutputFilesError, match="not a directory"):
        write_all(tmp_path / "out", [("a.yaml", "a\n")])
    with pytest.raises(OutputFilesError, match="cannot create"):
        write_all(tmp_path / "out" / "below", [("a.yaml", "a\n")])
    assert _tree(tmp_path) == {"out": b"x\n"}


def test_a_failure_while_writing_leaves_no_file_and_no_temporary(tmp_path: Path) -> None:
    with pytest.raises(OutputFilesError, match=r"b\.yaml: cannot write"):
        write_all(tmp_path, [("a.yaml", "a\n"), ("b.yaml", "\udc80")])  # a lone surrogate cannot be encoded
    assert _tree(tmp_path) == {}


def test_names_must_be_plain_and_distinct(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="distinct plain names"):
        write_all(tmp_path, [("a", ""), ("a", "")])
    with pytest.raises(ValueError, match="distinct plain names"):
        write_all(tmp_path, [("../a", "")])


def test_migrate_writes_no_file_when_one_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The bug the fuzzer found: the first file was written, then the second failed (exit 2)."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "migrate"
    out = tmp_path / "out"
    (out / "training-job.yaml").mkdir(parents=True)
    argv = ["migrate", "-f", str(examples / "inference-deployment.yaml"), "-f", str(examples / "training-job.yaml"),
            "--output-dir", str(out)]
    assert main(argv) == 2
    assert f"error: {out / 'training-job.yaml'}: exists and is not a regular file" in capsys.readouterr().err
    assert _tree(out) == {"training-job.yaml": None}
