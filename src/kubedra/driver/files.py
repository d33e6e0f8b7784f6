"""The node's files: atomic writes (temp + fsync + rename + directory fsync), the serialization lock, boot ID and
boot time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from kubedra.driver.inventory import DriverError

TEMP_PREFIX = ".kubedra-tmp-"
BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")
PROC_STAT_PATH = Path("/proc/stat")


def atomic_write(path: Path, data: bytes, mode: int = 0o644, *, durable: bool = True) -> None:
    """``path`` holds either its old content or ``data``, whatever happens (a kill, a full disk).

    ``durable``: fsync the file before the rename and the directory after, so the new content also survives a
    power loss. CDI specs are written without: a kill cannot tear them (rename is atomic), and after a power loss
    the boot ID voids every claim anyway (their specs are then removed as stale)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f"{TEMP_PREFIX}{path.name}.{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    if durable:
        sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove(path: Path) -> bool:
    """Remove a file; True if it existed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def remove_temp_files(directory: Path) -> list[Path]:
    """Half-written files a killed run left behind."""
    removed = []
    if directory.is_dir():
        for path in directory.iterdir():
            if path.name.startswith(TEMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 10.0) -> Iterator[None]:
    """An exclusive flock on ``path``: two driver pods on one node (a rolling update) never prepare at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DriverError(f"{path}: another driver holds the lock for more than {timeout:g}s") from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def boot_id(path: Path = BOOT_ID_PATH) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def boot_time(path: Path = PROC_STAT_PATH) -> float | None:
    """When this boot began (``btime`` of /proc/stat, seconds since the epoch); None if it cannot be read."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "btime":
                return float(value.strip())
    except (OSError, ValueError):
        return None
    return None
