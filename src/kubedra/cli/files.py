"""Writing a command's output files: all of them, each whole, or none.

Every target is checked first (a directory or other non-file in a file's place is refused before anything is
written), then each file is written to a temporary name beside it and, once all are written, renamed into place.
A failure before the renames leaves the directory as it was, apart from a directory created for the output; only
a change made by someone else between the check and the renames can leave part of the files renamed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path


class OutputFilesError(OSError):
    """The files cannot be written: the message names the path and why."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _check_targets(directory: Path, names: list[str]) -> None:
    """Refuse before writing anything: names that are not plain, a non-directory, a non-file in a file's place."""
    if len(set(names)) != len(names) or any(os.sep in n or n in ("", ".", "..") for n in names):
        raise ValueError(f"file names must be distinct plain names: {names}")
    if directory.exists() and not directory.is_dir():
        raise OutputFilesError(f"{directory}: not a directory")
    for name in names:
        target = directory / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise OutputFilesError(f"{target}: exists and is not a regular file")


def write_all(directory: Path, files: Sequence[tuple[str, str]]) -> None:
    """Write ``files`` (name, text) into ``directory`` (created when missing): all, each whole, or none."""
    _check_targets(directory, [name for name, _ in files])
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFilesError(f"{directory}: cannot create: {_reason(exc)}") from exc
    mask = os.umask(0)
    os.umask(mask)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in files:
            try:
                handle, created = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
            except OSError as exc:
                raise OutputFilesError(f"{directory}: cannot write: {_reason(exc)}") from exc
            staged.append((name, Path(created)))
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.chmod(created, 0o666 & ~mask)  # as open() would create it (mkstemp's is 0600)
            except OSError as exc:
                raise OutputFilesError(f"{directory / name}: cannot write: {_reason(exc)}") from exc
            except UnicodeEncodeError as exc:
                raise OutputFilesError(f"{directory / name}: cannot write: not UTF-8: {exc.reason}") from exc
        for name, staged_path in staged:
            try:
                os.replace(staged_path, directory / name)
            except OSError as exc:
                raise OutputFilesError(f"{directory / name}: cannot write: {_reason(exc)}") from exc
    finally:
        for _, staged_path in staged:
            staged_path.unlink(missing_ok=True)
