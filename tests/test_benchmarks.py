"""The benchmark scripts cannot rot unnoticed (issue 39, a first step): every script in benchmarks/ imports with the
current code, and each one with a command line answers ``--help``. A ``--quick`` run of each, with its output's shape
checked, for the scripts whose results the docs render (``QUICK``)."""

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


QUICK = {  # script -> the rows its --quick results file must hold
    "shapes": 6,
    "scaling": 2,
    "openb": 3,
    "affinity": 5,
    "micro": 7,
    "simulate": 2,
    "vs_kube_scheduler": 3,
    "side_by_side": 2,
}
NEEDS_CONTROL_PLANE = {"vs_kube_scheduler"}
NEEDS_GO = {"side_by_side"}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_each_results_benchmark_runs_quick_and_saves_its_figures(name: str, tmp_path: Path) -> None:
    """The scripts whose results files the docs render run end to end at tiny sizes, and save what figures.py
    reads: every figure a median beside its runs, with the commit and machine."""
    import json

    if name in NEEDS_CONTROL_PLANE:
        from tests.controlplane.fixture import missing_binaries

        if missing_binaries():
            pytest.skip(f"needs the test control plane (tests/controlplane/build.sh): {', '.join(missing_binaries())}")
    if name in NEEDS_GO:
        from tests.controlplane.fixture import go_available

        if not go_available():
            pytest.skip("needs Go to build benchmarks/upstream")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick", "--save", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    saved = json.loads((tmp_path / f"{name}.json").read_text())
    assert saved["settings"]["quick"] is True and saved["commit"] and saved["machine"]["cores"] >= 1
    assert len(saved["rows"]) == QUICK[name]

    def figures_in(value: object) -> list[dict[str, object]]:
        if isinstance(value, dict):
            if "median" in value:
                return [value]
            return [f for v in value.values() for f in figures_in(v)]
        if isinstance(value, list):
            return [f for v in value for f in figures_in(v)]
        return []

    found = figures_in(saved["rows"])
    assert found and all(f["runs"] and f["median"] in f["runs"] for f in found)
