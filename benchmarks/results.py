"""Results files: what a benchmark measured, with the commit and machine it measured on, so pages render from them.

A benchmark run with ``--save`` writes ``benchmarks/results/<name>.json``: the commit (and whether the tree had
uncommitted changes), the machine (cores, CPU model, Python), the load average before and after, the command line,
and its rows, each figure a list of the runs' values beside their median. ``benchmarks/figures.py`` renders the
documentation's tables from these files; ``tests/docs/test_figures.py`` fails when a page differs from them.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCHEMA = "kubedra.io/benchmark-results/v1"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "cpu": _cpu_model(), "python": platform.python_version(),
            "system": platform.system()}


def figure(values: Sequence[float]) -> dict[str, Any]:
    """One figure: every run's value and their median (the median is what pages show)."""
    return {"median": round(statistics.median(values), 6), "runs": [round(v, 6) for v in values]}


class Recorder:
    """Collects one benchmark's rows; ``save`` writes them with where and when they were measured."""

    def __init__(self, name: str, settings: dict[str, Any]) -> None:
        self.name = name
        self.settings = settings
        self.rows: list[dict[str, Any]] = []
        self.load_before = os.getloadavg()[0]
        self.started = time.time()

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def document(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "benchmark": self.name,
            "commit": _git("rev-parse", "--short=12", "HEAD"),
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", "src")),
            "date": time.strftime("%Y-%m-%d", time.gmtime(self.started)),
            "machine": machine(), "load": {"before": self.load_before, "after": os.getloadavg()[0]},
            "command": " ".join(["python", *sys.argv]), "settings": self.settings, "rows": self.rows,
        }

    def save(self, directory: Path = RESULTS) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.name}.json"
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.document(), indent=1, sort_keys=True) + "\n")
        temporary.replace(path)  # a run stopped half-way leaves the last complete file
        return path


def load(name: str, directory: Path = RESULTS) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((directory / f"{name}.json").read_text())
    if document.get("schema") != SCHEMA:
        raise ValueError(f"{directory / name}.json: not a {SCHEMA} file")
    return document


def main() -> None:
    """Lists the results files: which benchmark, measured when, at which commit, on what machine."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    for path in sorted(args.dir.glob("*.json")):
        document = load(path.stem, args.dir)
        print(f"{path.stem}: {document['date']} commit {document['commit']}{' (dirty)' * document['dirty']}, "
              f"{document['machine']['cores']} cores, load {document['load']['before']:.1f}, "
              f"{len(document['rows'])} rows{' (quick)' * bool(document['settings'].get('quick'))}")


if __name__ == "__main__":
    main()
