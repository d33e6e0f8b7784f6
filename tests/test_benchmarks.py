"""The benchmark scripts cannot rot unnoticed (issue 39, a first step): every script in benchmarks/ imports with the
current code, and each one with a command line answers ``--help``. A ``--quick`` run of each, with its output's shape
checked, is the next step (the scripts take minutes at their sizes)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py"))


def _has_command_line(path: Path) -> bool:
    return "argparse" in path.read_text()


def test_there_are_benchmarks() -> None:
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_each_script_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imported, not run: every name it imports from kubedra (or tests) still exists."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.syspath_prepend(str(script.parent))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    assert hasattr(module, "main")


@pytest.mark.parametrize("script", [p for p in SCRIPTS if _has_command_line(p)],
                         ids=[p.stem for p in SCRIPTS if _has_command_line(p)])
def test_each_command_line_answers_help(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")
