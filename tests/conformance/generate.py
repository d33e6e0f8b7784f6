"""Regenerate the conformance cases: write input.yaml/args.json, then expected.json from the oracle.

Usage (from the repository root, after tests/oracle/build.sh):

    python -m tests.conformance.generate            # rewrite every case
    python -m tests.conformance.generate NAME ...   # only these cases

expected.json is exactly what the upstream allocator (the Go oracle of the
case's Kubernetes release) answers, with each shareID value replaced by
"<shareID>" (shareIDs are fresh UUIDs). Read the diff before committing:
every expected.json was checked by hand against the rules when it was added.
"""

from __future__ import annotations

import json
import shutil
import sys

import yaml

from . import cases_features, cases_gpu, cases_rules, cases_upstream
from .cases import CASES_DIR, LATEST_VERSION, mask_share_ids
from .fixtures import Case
from .oracle import run_oracle

KEPT_PREFIX = "diff-"
"""Cases kept by tests/differential/keep.py (not defined here): never rewritten, never reported as stale."""


def all_definitions() -> list[Case]:
    cases = [*cases_upstream.CASES, *cases_rules.CASES, *cases_features.CASES, *cases_gpu.CASES]
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"duplicate case names: {sorted(dupes)}")
    clashing = sorted(n for n in names if n.startswith(KEPT_PREFIX))
    if clashing:
        raise SystemExit(f"case names with the prefix {KEPT_PREFIX!r} are reserved for kept cases: {clashing}")
    return cases


def write_case(case: Case) -> None:
    folder = CASES_DIR / case.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "input.yaml").write_text(yaml.safe_dump_all(case.docs, sort_keys=False, width=120))
    args: dict[str, object] = {"node": case.node}
    if case.gates:
        args["feature_gates"] = case.gates
    if case.version:
        args["kubernetes_version"] = case.version
    if case.note:
        args["comment"] = case.note
    (folder / "args.json").write_text(json.dumps(args, indent=2) + "\n")
    version = case.version or LATEST_VERSION
    out = run_oracle(folder, version=version, stats=True)
    stats = out.pop("stats", {})
    if stats.get("allocate_one_calls") is None:
        raise SystemExit(f"{case.name}: the oracle reported no allocateOne count ({stats})")
    args["allocate_one_calls"] = stats["allocate_one_calls"]  # upstream's search steps, compared on every case
    (folder / "args.json").write_text(json.dumps(args, indent=2) + "\n")
    (folder / "expected.json").write_text(json.dumps(mask_share_ids(out), indent=2) + "\n")


def main(argv: list[str]) -> int:
    wanted = set(argv)
    kept = sorted(n for n in wanted if n.startswith(KEPT_PREFIX))
    if kept:
        raise SystemExit(f"{', '.join(kept)}: kept by tests/differential/keep.py, not generated here")
    for case in all_definitions():
        if wanted and case.name not in wanted:
            continue
        write_case(case)
        out = json.loads((CASES_DIR / case.name / "expected.json").read_text())
        print(f"{case.name:60s} {out['result']:14s} {out['message'][:90]}")
    if not wanted:
        known = {c.name for c in all_definitions()}
        for folder in sorted(CASES_DIR.iterdir()):
            if folder.is_dir() and folder.name not in known and not folder.name.startswith(KEPT_PREFIX):
                print(f"stale case folder (not generated): {folder.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
