"""GPU sharing from ``GpuConfig``: TimeSlicing as nvidia-smi commands, MPS as CDI edits; commands go through a
runner interface (real, or recording in tests — nothing is ever executed there)."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubedra.objects.gpuconfig import GpuSharing
from kubedra.objects.quantity import parse_quantity

log = logging.getLogger("kubedra.driver")
MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"  # noqa: S108 - the path inside the container, as NVIDIA's driver uses
MIB = 1024 * 1024


class CommandRunner(Protocol):
    def run(self, argv: Sequence[str]) -> None: ...


class SubprocessRunner:
    """Runs commands on the node (``nvidia-smi``); a failing command raises with its output."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout

    def run(self, argv: Sequence[str]) -> None:
        log.info("running %s", " ".join(argv))
        done = subprocess.run(  # noqa: S603 - fixed nvidia-smi argument lists, no shell
            list(argv), capture_output=True, text=True, timeout=self.timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")


@dataclass
class RecordingRunner:
    """Records commands instead of running them (tests, and ``--backend fake``)."""

    commands: list[list[str]] = field(default_factory=list)

    def run(self, argv: Sequence[str]) -> None:
        self.commands.append(list(argv))


def set_time_slice(uuid: str, level: int) -> list[list[str]]:
    """NVIDIA's ``setTimeSlice``: default compute mode, then the time-slice level (0 = Default)."""
    return [
        ["nvidia-smi", "-i", uuid, "-c", "DEFAULT"],
        ["nvidia-smi", "compute-policy", "-i", uuid, "--set-timeslice", str(level)],
    ]


def reset_time_slice(uuid: str) -> list[list[str]]:
    return [["nvidia-smi", "compute-policy", "-i", uuid, "--set-timeslice", "0"]]


def set_exclusive_process(uuid: str) -> list[list[str]]:
    return [["nvidia-smi", "-i", uuid, "-c", "EXCLUSIVE_PROCESS"]]


def mps_edits(
    sharing: GpuSharing, plugin_dir: Path, claim_uid: str, index: int, uuid: str
) -> tuple[tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """MPS for one GPU of a claim: the pipe directory and /dev/shm of the claim's MPS directory, and the client
    limits as CUDA reads them from the environment (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``,
    ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``)."""
    root = plugin_dir / "mps" / claim_uid
    env = [f"CUDA_MPS_PIPE_DIRECTORY={MPS_PIPE_DIRECTORY}"]
    if sharing.mps_active_thread_percentage is not None:
        env.append(f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={sharing.mps_active_thread_percentage}")
    limit = sharing.mps_per_device_pinned_memory_limit.get(uuid) or sharing.mps_per_device_pinned_memory_limit.get(
        str(index)
    )
    limit = limit or sharing.mps_pinned_memory_limit
    if limit is not None:
        mib = parse_quantity(limit).as_int64() // MIB
        env.append(f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={index}={mib}M")
    options = ("rw", "nosuid", "nodev", "bind")
    shm = "/dev/shm"  # noqa: S108 - the container's /dev/shm
    mounts = ((str(root / "shm"), shm, options), (str(root / "pipe"), MPS_PIPE_DIRECTORY, options))
    return tuple(env), mounts
