"""Find and run the Go oracle (tests/oracle) from Python tests and tools.

The oracle is built by tests/oracle/build.sh (scripts/test runs it when `go`
is on PATH) into tests/oracle/bin/oracle-<release>.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ORACLE_DIR = Path(__file__).resolve().parent.parent / "oracle"
EXIT_CODES = {"allocated": 0, "unschedulable": 1, "error": 2}


def go_available() -> bool:
    return shutil.which("go") is not None


def oracle_path(version: str = "1.37") -> Path:
    return ORACLE_DIR / "bin" / f"oracle-{version}"


def run_oracle(target: Path, *, version: str = "1.37", node: str | None = None,
               feature_gates: dict[str, bool] | None = None, stats: bool = False) -> dict[str, Any]:
    """Run the oracle on an input file or a case folder and return its JSON output.

    Raises FileNotFoundError when the binary is missing and RuntimeError when
    it fails on its input or its exit code does not match its result.
    """
    binary = oracle_path(version)
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: run tests/oracle/build.sh")
    cmd = [str(binary), "-f", str(target)]
    if node:
        cmd += ["--node", node]
    if feature_gates:
        cmd += ["--feature-gates", ",".join(f"{k}={str(v).lower()}" for k, v in feature_gates.items())]
    if stats:
        cmd.append("--stats")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if not proc.stdout.strip():
        raise RuntimeError(f"oracle failed (exit {proc.returncode}): {proc.stderr.strip()}")
    out: dict[str, Any] = json.loads(proc.stdout)
    if EXIT_CODES[out["result"]] != proc.returncode:
        raise RuntimeError(f"oracle exit {proc.returncode} does not match result {out['result']}")
    return out
