"""A targeted search for disagreements: many examples of one profile, with a release and gates pinned.

    python -m tests.differential.hunt STABLE --examples 20000 --version 1.37 \\
        --gates DRAConsumableCapacity=false,DRAResourceClaimDeviceStatus=false --ours error --repeat 8

Examples come from hypothesis (not derandomized; `--seed` replays a run). `--ours RESULT` asks the
oracle only where kubedra's answer is RESULT (several times faster when hunting one kind of
disagreement); `--repeat K` asks the oracle K times for those, since upstream's stable variant
walks its pools in Go map order and may answer differently from run to run. The first
disagreement is written as a ready conformance case under `--out` (tests/differential/found/ by
default) and the search stops.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import profiles
from .fresh import FOUND_DIR, write_found
from .runner import OracleRejected, Outcome, run_both, run_kubedra, to_yaml
from .strategies import Scenario, scenarios


class Found(Exception):  # noqa: N818 - stops hypothesis at the first disagreement
    """A disagreement, already written out."""


def parse_gates(text: str) -> dict[str, bool]:
    gates = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


def _check(scenario: Scenario, ours_only: str | None, repeat: int) -> Outcome | None:
    """The disagreement for `scenario`, if any (None when both agree or the oracle refuses the input)."""
    if ours_only is None:
        try:
            outcome = run_both(scenario)
        except OracleRejected:
            return None
        return None if outcome.agree else outcome
    with tempfile.TemporaryDirectory(prefix="kubedra-hunt-") as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text(to_yaml(scenario))
        ours = run_kubedra(path, scenario)
        if ours["result"] != ours_only:
            return None
    for _ in range(repeat):  # run_both replays other pool orders where upstream walks them randomly
        try:
            outcome = run_both(scenario)
        except OracleRejected:
            return None
        if not outcome.agree:
            return outcome
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.hunt")
    parser.add_argument("profile", help="a profile name of tests/differential/profiles.py, e.g. STABLE")
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--version", help="pin the release (default: the profile's)")
    parser.add_argument("--gates", default="", help="Gate=bool,... forced over the generated gates")
    parser.add_argument("--ours", help="only compare where kubedra's result is this (allocated/unschedulable/error)")
    parser.add_argument("--repeat", type=int, default=1, help="oracle runs per compared example (with --ours)")
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(8), "big"))
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("KUBEDRA_DIFF_OUT", FOUND_DIR)))
    args = parser.parse_args(argv)
    profile = getattr(profiles, args.profile)
    forced = parse_gates(args.gates)
    seen: collections.Counter[str] = collections.Counter()
    print(f"hunting {args.profile}: {args.examples} examples, seed {args.seed}", flush=True)

    @settings(max_examples=args.examples, deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @hypothesis_seed(args.seed)
    @given(scenarios(profile))
    def search(scenario: Scenario) -> None:
        if args.version:
            scenario.version = args.version
        scenario.gates = {**scenario.gates, **forced}
        seen["examples"] += 1
        if seen["examples"] % 500 == 0:
            print(f"  {seen['examples']} examples", flush=True)
        outcome = _check(scenario, args.ours, args.repeat)
        if outcome is not None:
            folder = write_found(scenario, outcome, args.seed, args.out)
            print(outcome.describe(scenario))
            print(f"written: {folder} (seed {args.seed})")
            raise Found

    try:
        search()
    except Found:
        return 1
    print(f"no disagreement in {seen['examples']} examples (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
