"""Compare one input through both allocators, and keep it as a named conformance case.

    python -m tests.differential.keep INPUT.yaml [--node N] [--version 1.37] [--gates A=false,...]
    python -m tests.differential.keep INPUT.yaml ... --save NAME [--comment TEXT]

Without --save it prints both answers and whether they agree. With --save it writes
tests/conformance/cases/diff-NAME/ (input.yaml, args.json, expected.json from the oracle), the
conformance layout of tests/conformance/generate.py. A KUBEDRA_DIFF_SAVE folder holds a
scenario.json with node, gates and version: pass the folder instead of a file to use them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from .runner import run_both, save_case
from .strategies import Scenario


def _scenario(args: argparse.Namespace) -> Scenario:
    path = Path(args.input)
    node, version, gates = args.node, args.version, {}
    if path.is_dir():
        meta = json.loads((path / "scenario.json").read_text())
        node, version, gates = meta["node"], meta["version"], meta["gates"]
        path = path / "input.yaml"
    for item in filter(None, (args.gates or "").split(",")):
        name, _, value = item.partition("=")
        gates[name.strip()] = value.strip().lower() == "true"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return Scenario(docs=docs, node=node or "node-1", gates=gates, version=version or "1.37")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.keep")
    parser.add_argument("input")
    parser.add_argument("--node")
    parser.add_argument("--version")
    parser.add_argument("--gates")
    parser.add_argument("--save", metavar="NAME")
    parser.add_argument("--comment", default="")
    args = parser.parse_args(argv)
    scenario = _scenario(args)
    outcome = run_both(scenario)
    for label, out in (("kubedra", outcome.ours), ("upstream", outcome.upstream)):
        print(f"{label:9s} {out['result']:13s} {out['message']}")
        if out["allocations"]:
            print(json.dumps(out["allocations"], sort_keys=True))
    print("agree" if outcome.agree else "DISAGREE: " + "; ".join(outcome.problems))
    if args.save:
        print(f"saved {save_case(args.save, scenario, args.comment)}")
    return 0 if outcome.agree else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
