"""How often each feature and each outcome occurs in the generated differential inputs, per profile.

    python -m tests.differential.census [--examples 300] [--seed 1] [--oracle] [PROFILE ...]

Draws the examples as the tests do (hypothesis, seeded), reads which API features each input uses
from its documents, and runs kubedra's allocator on it (with --oracle, upstream's too; the outcome
columns are then upstream's and inputs it refuses are counted apart). Prints a Markdown table:
the share of inputs using each feature, and of each outcome.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import profiles
from .runner import OracleRejected, run_both, run_kubedra, to_yaml
from .strategies import Profile, Scenario, scenarios
from .vocab import LIST_ATTRIBUTES, Doc

FEATURES = (
    "counters", "capacity", "constraint", "firstAvailable", "adminAccess", "taints", "combined",
    "list attrs", "extended class", "allocated claims", "binding", "count>3", "pools>3", "devices/slice>3",
    "claims>2",
)
OUTCOMES = ("allocated", "unschedulable", "error")


def features_of(scenario: Scenario) -> set[str]:
    """The features an input uses (a feature counts when the input holds what exercises it)."""
    found: set[str] = set()
    kinds: collections.defaultdict[str, list[Doc]] = collections.defaultdict(list)
    for doc in scenario.docs:
        kinds[doc["kind"]].append(doc)
    slices = kinds["ResourceSlice"]
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    pending = [c for c in kinds["ResourceClaim"] if "status" not in c]
    requests = [r for c in pending for r in c["spec"]["devices"]["requests"]]
    bodies = [r["exactly"] for r in requests if "exactly" in r] + [
        sub for r in requests for sub in r.get("firstAvailable", [])]
    if any(s["spec"].get("sharedCounters") for s in slices) and any(d.get("consumesCounters") for d in devices):
        found.add("counters")
    if any(d.get("allowMultipleAllocations") for d in devices) or any("capacity" in b for b in bodies):
        found.add("capacity")
    if any(c["spec"]["devices"].get("constraints") for c in pending):
        found.add("constraint")
    if any("firstAvailable" in r for r in requests):
        found.add("firstAvailable")
    if any(b.get("adminAccess") for b in bodies):
        found.add("adminAccess")
    if any(d.get("taints") for d in devices) or kinds["DeviceTaintRule"]:
        found.add("taints")
    if {"counters", "capacity", "constraint"} <= found:
        found.add("combined")
    if any(name in d.get("attributes", {}) for d in devices for name in LIST_ATTRIBUTES):
        found.add("list attrs")
    if any(b.get("deviceClassName") == "class-ext" for b in bodies):
        found.add("extended class")
    if any("status" in c for c in kinds["ResourceClaim"]):
        found.add("allocated claims")
    if any(d.get("bindingConditions") for d in devices):
        found.add("binding")
    if any(int(b.get("count", 1)) > 3 for b in bodies):
        found.add("count>3")
    if len({(s["spec"]["driver"], s["spec"]["pool"]["name"]) for s in slices}) > 3:
        found.add("pools>3")
    if any(len(s["spec"].get("devices", [])) > 3 for s in slices):
        found.add("devices/slice>3")
    if len(pending) > 2:
        found.add("claims>2")
    return found


def _outcome(scenario: Scenario, oracle: bool) -> str:
    if oracle:
        try:
            return str(run_both(scenario).upstream["result"])
        except OracleRejected:
            return "refused"
    with tempfile.TemporaryDirectory(prefix="kubedra-census-") as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text(to_yaml(scenario))
        return str(run_kubedra(path, scenario)["result"])


def census(profile: Profile, examples: int, seed: int, oracle: bool) -> collections.Counter[str]:
    """Counts of each feature and outcome over `examples` inputs of `profile` ("inputs" holds the total)."""
    counts: collections.Counter[str] = collections.Counter()

    @settings(max_examples=examples, deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @hypothesis_seed(seed)
    @given(scenarios(profile))
    def draw(scenario: Scenario) -> None:
        counts["inputs"] += 1
        counts.update(features_of(scenario))
        counts["= " + _outcome(scenario, oracle)] += 1

    draw()
    return counts


def table(rows: dict[str, collections.Counter[str]], oracle: bool) -> str:
    outcomes = [*OUTCOMES, *(["refused"] if oracle else [])]
    head = ["profile", "inputs", *FEATURES, *outcomes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, c in rows.items():
        n = max(c["inputs"], 1)
        cells = [name, str(c["inputs"])]
        cells += [f"{100 * c[f] / n:.0f}%" for f in FEATURES]
        cells += [f"{100 * c['= ' + o] / n:.0f}%" for o in outcomes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


README_PROFILES = ("POOLS", "REQUESTS", "COUNTERS_CAPACITY", "TAINTS_ADMIN", "EVERYTHING", "STABLE", "COMBINED")
README_COLUMNS = {  # the README's column -> the census's count (outcomes prefixed "= ")
    "counters": "counters", "capacity": "capacity", "constraint": "constraint", "firstAvailable": "firstAvailable",
    "admin": "adminAccess", "taints": "taints", "all three¹": "combined", "list attrs": "list attrs",
    "ext. class": "extended class", "allocated claims": "allocated claims", "count>3": "count>3",
    "pools>3": "pools>3", "claims>2": "claims>2", "allocated": "= allocated", "unschedulable": "= unschedulable",
    "error": "= error",
}
README_EXAMPLES, README_SEED = 200, 1


def readme_table(rows: dict[str, collections.Counter[str]]) -> str:
    """The README's census table (scripts/fidelity census writes it): shares of each profile's inputs."""
    lines = ["| profile | " + " | ".join(README_COLUMNS) + " |", "|" + "---|" * (len(README_COLUMNS) + 1)]
    for name, c in rows.items():
        n = max(c["inputs"], 1)
        lines.append(f"| {name} | " + " | ".join(f"{100 * c[key] / n:.0f}%" for key in README_COLUMNS.values())
                     + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.census")
    parser.add_argument("profiles", nargs="*", default=list(README_PROFILES))
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--oracle", action="store_true", help="outcomes from upstream (slower)")
    args = parser.parse_args(argv)
    rows: dict[str, Any] = {}
    for name in args.profiles:
        rows[name] = census(getattr(profiles, name), args.examples, args.seed, args.oracle)
        print(f"{name}: {rows[name]['inputs']} inputs", file=sys.stderr, flush=True)
    print(table(rows, args.oracle))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
