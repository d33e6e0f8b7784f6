"""GPU sharing from ``GpuConfig``: TimeSlicing as nvidia-smi commands; MPS as a control daemon per claim and CDI
edits; commands go through a runner interface (real, or recording in tests — nothing is ever executed there).

MPS as NVIDIA's driver sets it up, minus the Deployment: NVIDIA runs ``nvidia-cuda-mps-control -d`` in a per-claim
Deployment pinned to the node; this driver runs it itself (its container is privileged and sees the host's
driver), with the pipe and log directories under ``<plugin dir>/mps/<claim UID>``, then pipes NVIDIA's
``set_default_active_thread_percentage`` and ``set_default_device_pinned_mem_limit`` to it, and ``quit`` at
unprepare.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubedra.objects.gpuconfig import GpuSharing
from kubedra.objects.quantity import parse_quantity

log = logging.getLogger("kubedra.driver")
MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"  # noqa: S108 - the path inside the container, as NVIDIA's driver uses
MIB = 1024 * 1024
# pipe and shm are bind-mounted into the claim's containers, which may run as any user, and the MPS server runs as
# the client's user and writes into log: world-writable with the sticky bit, as /dev/shm and /tmp are (the driver
# cannot know the containers' UIDs at prepare). Their parent, <plugin dir>/mps/<claim UID>, stays root's 0755.
MPS_SHARED_MODE = 0o1777
MPS_ROOT_MODE = 0o755


class CommandRunner(Protocol):
    """Runs one command; ``env`` is added to the environment, ``stdin`` written to its standard input (the MPS
    control daemon reads its commands there)."""

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, stdin: str | None = None) -> None: ...


class SubprocessRunner:
    """Runs commands on the node (``nvidia-smi``, ``nvidia-cuda-mps-control``); a failing one raises with its
    output."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, stdin: str | None = None) -> None:
        log.info("running %s%s", " ".join(argv), f" <<< {stdin.strip()}" if stdin else "")
        done = subprocess.run(  # noqa: S603 - fixed argument lists, no shell
            list(argv),
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
            input=stdin,
            env={**os.environ, **env} if env else None,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")


@dataclass(frozen=True, slots=True)
class Run:
    argv: list[str]
    env: dict[str, str]
    stdin: str | None


@dataclass
class RecordingRunner:
    """Records commands instead of running them (tests, and ``--backend fake``): ``commands`` the argument
    lists, ``runs`` with their environment and input."""

    commands: list[list[str]] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, stdin: str | None = None) -> None:
        self.commands.append(list(argv))
        self.runs.append(Run(list(argv), dict(env or {}), stdin))


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


MPS_CONTROL = "nvidia-cuda-mps-control"


def _pinned_limit_mib(sharing: GpuSharing, index: int, uuid: str) -> int | None:
    limit = sharing.mps_per_device_pinned_memory_limit.get(uuid) or sharing.mps_per_device_pinned_memory_limit.get(
        str(index)
    )
    limit = limit or sharing.mps_pinned_memory_limit
    return None if limit is None else parse_quantity(limit).as_int64() // MIB


def mps_root(plugin_dir: Path, claim_uid: str) -> Path:
    return plugin_dir / "mps" / claim_uid


def mps_settings(sharing: GpuSharing, gpus: Sequence[tuple[int, str]]) -> list[str]:
    """The control daemon's commands for the claim's limits (NVIDIA's), ``gpus`` as (index in claim, UUID)."""
    lines = []
    if sharing.mps_active_thread_percentage is not None:
        lines.append(f"set_default_active_thread_percentage {sharing.mps_active_thread_percentage}")
    for index, uuid in gpus:
        mib = _pinned_limit_mib(sharing, index, uuid)
        if mib is not None:
            lines.append(f"set_default_device_pinned_mem_limit {uuid} {mib}M")
    return lines


def mps_daemon_env(plugin_dir: Path, claim_uid: str, gpus: Sequence[str]) -> dict[str, str]:
    root = mps_root(plugin_dir, claim_uid)
    return {
        "CUDA_MPS_PIPE_DIRECTORY": str(root / "pipe"),
        "CUDA_MPS_LOG_DIRECTORY": str(root / "log"),
        "CUDA_VISIBLE_DEVICES": ",".join(gpus),
    }


def start_mps(
    runner: CommandRunner, plugin_dir: Path, claim_uid: str, gpus: Sequence[str], settings: Sequence[str]
) -> None:
    """The claim's control daemon: its directories, ``nvidia-cuda-mps-control -d``, then its settings."""
    root = mps_root(plugin_dir, claim_uid)
    for name in ("pipe", "log", "shm"):
        (root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(root / name, MPS_SHARED_MODE)  # explicitly: mkdir's mode is cut by the umask
    os.chmod(root, MPS_ROOT_MODE)
    env = mps_daemon_env(plugin_dir, claim_uid, gpus)
    runner.run([MPS_CONTROL, "-d"], env=env)
    for line in settings:
        runner.run([MPS_CONTROL], env=env, stdin=line + "\n")


def stop_mps(runner: CommandRunner, plugin_dir: Path, claim_uid: str, gpus: Sequence[str]) -> None:
    """``quit`` to the claim's control daemon (one already gone is logged), then its directories go."""
    try:
        runner.run([MPS_CONTROL], env=mps_daemon_env(plugin_dir, claim_uid, gpus), stdin="quit\n")
    except Exception:
        log.exception("stopping the MPS control daemon of claim %s", claim_uid)
    shutil.rmtree(mps_root(plugin_dir, claim_uid), ignore_errors=True)


def mps_edits(
    sharing: GpuSharing, plugin_dir: Path, claim_uid: str, index: int, uuid: str
) -> tuple[tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """MPS for one GPU of a claim: the pipe directory and /dev/shm of the claim's MPS directory, and the client
    limits as CUDA reads them from the environment (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``,
    ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``)."""
    root = mps_root(plugin_dir, claim_uid)
    env = [f"CUDA_MPS_PIPE_DIRECTORY={MPS_PIPE_DIRECTORY}"]
    if sharing.mps_active_thread_percentage is not None:
        env.append(f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={sharing.mps_active_thread_percentage}")
    mib = _pinned_limit_mib(sharing, index, uuid)
    if mib is not None:
        env.append(f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={index}={mib}M")
    options = ("rw", "nosuid", "nodev", "bind")
    shm = "/dev/shm"  # noqa: S108 - the container's /dev/shm
    mounts = ((str(root / "shm"), shm, options), (str(root / "pipe"), MPS_PIPE_DIRECTORY, options))
    return tuple(env), mounts
