"""The docs site's pages and the commands they show, for the tests that keep them true.

Blocks follow the runbook's convention (tests/runbook.py): a ``console`` block's ``$ `` lines are commands, run in
order from one scratch directory that sees the clone's ``examples/``, and the lines after each are exactly what it
prints (stdout and stderr together). A command ending in `` &`` is started in the background, and the next one runs
once its ``--listen HOST:PORT`` accepts connections; it is stopped when the page is done. ``127.0.0.1:9400``, the
exporter's port, is replaced by a free port in every command, so runs side by side do not collide. ``shell`` blocks are
commands for a real cluster (kubectl, helm, docker); their ``helm`` lines are rendered with the real helm by
tests/helm/test_docs_helm.py.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.controlplane.fixture import free_port
from tests.runbook import RUNBOOK, Command, blocks, console_commands

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
RUN_AS_SHOWN = ("kubedra", "cat", "curl", "ls")
"""What a console block may run: kubedra itself and the few tools that show what it wrote or serves."""


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def console_pages() -> list[Path]:
    """The README and the pages with console blocks, but the runbook, which tests/test_runbook.py runs."""
    return [p for p in [README, *pages()] if p != RUNBOOK and console_commands(p)]


@dataclass
class Outcome:
    command: Command
    returncode: int
    output: str


def _environment() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "100", "PYTHONUNBUFFERED": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("KUBECONFIG", None)
    return env


def _wait_for_listener(command: str, process: subprocess.Popen[str], timeout: float = 60.0) -> None:
    found = re.search(r"--listen (\S+):(\d+)", command)
    assert found, f"a background command must say where it listens (--listen HOST:PORT): {command}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{command}: exited {process.returncode} before listening"
        try:
            with socket.create_connection((found.group(1), int(found.group(2))), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{command}: nothing listens after {timeout} s")


def run_page(path: Path, scratch: Path) -> list[Outcome]:
    """Every console command of the page, in order, from ``scratch``; background ones stopped at the end."""
    if not (scratch / "examples").exists():
        (scratch / "examples").symlink_to(ROOT / "examples")
    env, outcomes, background = _environment(), [], []
    port = f"127.0.0.1:{free_port()}"
    try:
        for shown in console_commands(path):
            command = Command(shown.command.replace("127.0.0.1:9400", port), shown.expected, shown.line)
            assert command.command.split()[0] in RUN_AS_SHOWN, command.command
            if command.command.endswith(" &"):
                process = subprocess.Popen(["bash", "-c", command.command[:-2]], cwd=scratch, env=env, text=True,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True)
                background.append(process)
                _wait_for_listener(command.command, process)
                outcomes.append(Outcome(command, 0, ""))
                continue
            done = subprocess.run(["bash", "-c", command.command], cwd=scratch, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=180, check=False)
            outcomes.append(Outcome(command, done.returncode, done.stdout))
    finally:
        for process in background:  # each in its own session: the group holds the command and what it started
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
    return outcomes


def shown_commands(path: Path) -> list[tuple[str, int, str]]:
    """(block tag, line, command) of every command outside console blocks: ``sh``/``shell`` lines, a trailing
    backslash joining the next, and each line also split at `` && ``, so ``... && kubedra simulate`` yields
    ``kubedra simulate``; a whole line is kept as well (``cat FILE | kubedra ...`` is one command)."""
    found = []
    for block in blocks(path):
        if block.tag not in ("sh", "shell", "bash"):
            continue
        logical: list[tuple[int, str]] = []
        for offset, line in enumerate(block.text.splitlines()):
            if logical and logical[-1][1].endswith("\\"):
                logical[-1] = (logical[-1][0], logical[-1][1][:-1].rstrip() + " " + line.strip())
            else:
                logical.append((block.line + 1 + offset, line.strip()))
        for line_number, line in logical:
            if line and not line.startswith("#"):
                parts = line.split(" && ")
                found.extend((block.tag, line_number, part.strip()) for part in parts)
    return found
