"""Run one scenario through kubedra's allocator (in-process) and the upstream oracle (a subprocess), and compare.

The oracle takes one input per process (~25 ms, mostly start-up), so it is started first and
kubedra's Python allocator runs while it works. Comparison follows the conformance suite
(tests/conformance/cases.py): `normalize` for everything but messages (shareIDs masked), then
`messages_match` on the stable part of an upstream error text, and kubedra's shareIDs must be
distinct and non-empty.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tests.conformance.cases import CASES_DIR, mask_share_ids, messages_match, normalize, share_ids
from tests.conformance.oracle import EXIT_CODES, oracle_path

from kubedra.allocator import AllocatedState, AllocationError, Allocator, Features, allocation_to_dict
from kubedra.allocator.requests import claim_ref
from kubedra.cel import CompileCache
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_paths
from kubedra.objects.model import DeviceClass, DeviceTaintRule, Node, ObjectMeta, ResourceClaim, ResourceSlice

from .strategies import Scenario

STEP_BUDGET = 200_000
"""Generated inputs are small; a search longer than this is retried with the budget upstream needed (see run_both)."""
LIFTED_BUDGET_CAP = 5_000_000
"""The most steps a retried search may take (upstream's 10 s filter timeout ends its own search at ~1-2 M)."""

PROVEN_RELEASES = ("1.36", "1.37")
"""The releases with an oracle of their own modules (tests/oracle): every scenario runs on its own release's oracle.
1.34 and 1.35 have none (their k8s.io/kubernetes build would add ~5 min to a cold CI), so no scenario draws them."""


class OracleRejected(Exception):  # noqa: N818 - a filter signal, not an error
    """The oracle refused the input as malformed (exit 2, nothing on stdout) or timed out: not comparable."""


@dataclass
class Outcome:
    """Both answers for one scenario and whether they agree."""

    ours: dict[str, Any]
    upstream: dict[str, Any]
    problems: list[str]

    @property
    def agree(self) -> bool:
        return not self.problems

    def describe(self, scenario: Scenario) -> str:
        return "\n".join([
            "disagreement: " + "; ".join(self.problems),
            f"node={scenario.node} version={scenario.version} gates={scenario.gates}",
            "--- input.yaml", to_yaml(scenario),
            "--- kubedra", json.dumps(self.ours, indent=1, sort_keys=True),
            "--- upstream", json.dumps(self.upstream, indent=1, sort_keys=True),
        ])


def to_yaml(scenario: Scenario) -> str:
    return yaml.safe_dump_all(scenario.docs, sort_keys=False, width=120)


def _gate_flag(gates: dict[str, bool]) -> str:
    return ",".join(f"{k}={str(on).lower()}" for k, on in sorted(gates.items()))


def _start_oracle(path: Path, scenario: Scenario) -> subprocess.Popen[str]:
    if scenario.version not in PROVEN_RELEASES:
        raise ValueError(f"no oracle for Kubernetes {scenario.version} (proven: {', '.join(PROVEN_RELEASES)})")
    cmd = [str(oracle_path(scenario.version)), "-f", str(path), "--node", scenario.node, "--stats"]
    if scenario.gates:
        cmd += ["--feature-gates", _gate_flag(scenario.gates)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish_oracle(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=60)
    if not stdout.strip():
        raise OracleRejected(stderr.strip())
    out: dict[str, Any] = json.loads(stdout)
    if EXIT_CODES[out["result"]] != proc.returncode:
        raise AssertionError(f"oracle exit {proc.returncode} does not match result {out['result']}")
    if out["result"] == "error" and "filter operation aborted" in out["message"]:
        raise OracleRejected(out["message"])  # upstream ran out of its 10 s filter timeout: no decision to compare
    return out


def run_kubedra(path: Path, scenario: Scenario, pool_order: tuple[int, ...] | None = None,
                step_budget: int = STEP_BUDGET) -> dict[str, Any]:
    """kubedra's answer, built exactly as `kubedra allocate -o json` builds it (invalid input → result "invalid").

    `stats.allocate_one_calls` holds the search steps and `stats.pools` the number of pools gathered for the node;
    `pool_order` visits those pools in another order (upstream's stable variant takes a random one).
    """
    out: dict[str, Any] = {"node": scenario.node, "allocations": {}, "message": ""}
    try:
        loaded = load_paths([str(path)])
    except InvalidInputError as exc:
        out.update(result="invalid", message=str(exc))
        return out
    features = Features.for_release(scenario.version).with_gates(scenario.gates)
    gathered: list[int] = []

    def reorder(pools: list[Any]) -> list[Any]:
        gathered.append(len(pools))
        return [pools[i] for i in pool_order] if pool_order is not None and len(pool_order) == len(pools) else pools

    claims = loaded.of_kind(ResourceClaim)
    pending = [c for c in claims if c.status.allocation is None]
    allocated = [c for c in claims if c.status.allocation is not None]
    node = next((n for n in loaded.of_kind(Node) if n.metadata.name == scenario.node),
                Node(metadata=ObjectMeta(name=scenario.node)))
    allocator = Allocator(
        features,
        AllocatedState.from_claims(allocated, consumable_capacity=features.consumable_capacity),
        {c.metadata.name: c for c in loaded.of_kind(DeviceClass)},
        loaded.of_kind(ResourceSlice),
        CompileCache(features.cel_options()),
        loaded.of_kind(DeviceTaintRule),
        step_budget=step_budget,
        pool_order=reorder,
    )
    try:
        results = allocator.allocate(node, pending)
    except AllocationError as exc:
        out.update(result="error", message=str(exc))
        return out
    finally:
        out["stats"] = {"allocate_one_calls": allocator.last_steps, "pools": gathered[0] if gathered else 0}
    if results is None:
        out.update(result="unschedulable", message="cannot allocate all claims")
    else:
        out["result"] = "allocated"
        out["allocations"] = {claim_ref(c): allocation_to_dict(r) for c, r in zip(pending, results, strict=True)}
    return out


def compare(ours: dict[str, Any], upstream: dict[str, Any]) -> list[str]:
    """What differs between kubedra's answer and upstream's (empty when they agree)."""
    problems = []
    if ours["result"] != upstream["result"]:
        problems.append(f"result {ours['result']} vs upstream {upstream['result']}")
    elif normalize(ours) != normalize(upstream):
        problems.append("allocations differ")
    elif upstream["result"] == "error" and not messages_match(upstream["message"], ours["message"]):
        problems.append("error messages differ")
    ids = share_ids(ours)
    if not all(ids) or len(set(ids)) != len(ids):
        problems.append(f"shareIDs not distinct and non-empty: {ids}")
    steps = upstream.get("stats", {}).get("allocate_one_calls")
    if not problems and steps is not None and ours.get("stats", {}).get("allocate_one_calls") != steps:
        problems.append(f"allocateOne calls {ours.get('stats', {}).get('allocate_one_calls')} vs upstream {steps}")
    return problems


def run_both(scenario: Scenario) -> Outcome:
    """Both answers for `scenario`; raises OracleRejected when upstream refuses the input itself."""
    with tempfile.TemporaryDirectory(prefix="kubedra-diff-") as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text(to_yaml(scenario))
        proc = _start_oracle(path, scenario)
        try:
            ours = run_kubedra(path, scenario)
        finally:
            upstream = _finish_oracle(proc)
        budget = STEP_BUDGET
        if ours["result"] == "error" and ours["message"].startswith("search step budget"):
            # The harness's step budget is no decision (kubedra allocate has upstream's 10 s timeout, not a step
            # budget): search again with room for the steps upstream took (in any pool order, see below).
            steps = upstream.get("stats", {}).get("allocate_one_calls") or 0
            budget = min(max(4 * steps, STEP_BUDGET), LIFTED_BUDGET_CAP)
            ours = run_kubedra(path, scenario, step_budget=budget)
        problems = compare(ours, upstream)
        pools = ours.get("stats", {}).get("pools", 0)
        if problems and _random_pool_order(scenario) and pools > 1:
            # Upstream's stable variant walks pools in Go map order: agreeing in any order is agreeing.
            for order in itertools.islice(itertools.permutations(range(pools)), 1, None):
                other = run_kubedra(path, scenario, order, budget)
                if not compare(other, upstream):
                    return Outcome(other, upstream, [])
    return Outcome(ours, upstream, problems)


def _random_pool_order(scenario: Scenario) -> bool:
    return Features.for_release(scenario.version).with_gates(scenario.gates).stable


def save_case(name: str, scenario: Scenario, comment: str = "", root: Path = CASES_DIR) -> Path:
    """Keep a (shrunk) scenario as conformance case `diff-<name>`: input.yaml, args.json, and upstream's answer.

    `root` is the conformance cases folder by default; fresh-sample disagreements go elsewhere first
    (tests/differential/found/), ready to be moved there once explained.
    """
    with tempfile.TemporaryDirectory(prefix="kubedra-case-") as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text(to_yaml(scenario))
        upstream = _finish_oracle(_start_oracle(path, scenario))
    return write_case(root / (name if name.startswith("diff-") else f"diff-{name}"), scenario, upstream, comment)


def write_case(folder: Path, scenario: Scenario, upstream: dict[str, Any], comment: str = "") -> Path:
    """Write `folder` in the conformance layout (tests/conformance/cases.py): input.yaml, args.json, expected.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.yaml").write_text(to_yaml(scenario))
    args: dict[str, Any] = {"node": scenario.node}
    if scenario.gates:
        args["feature_gates"] = dict(sorted(scenario.gates.items()))
    args["kubernetes_version"] = scenario.version
    if comment:
        args["comment"] = comment
    upstream = dict(upstream)
    steps = upstream.pop("stats", {}).get("allocate_one_calls")
    if steps is not None:
        args["allocate_one_calls"] = steps
    (folder / "args.json").write_text(json.dumps(args, indent=2) + "\n")
    (folder / "expected.json").write_text(json.dumps(mask_share_ids(upstream), indent=2) + "\n")
    return folder


def record_failure(scenario: Scenario, outcome: Outcome) -> None:
    """With KUBEDRA_DIFF_SAVE=DIR, write the latest failing scenario to DIR/<test> (hypothesis replays the shrunk one last)."""
    target = os.environ.get("KUBEDRA_DIFF_SAVE")
    if not target:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "scenario").split("::")[-1].split(" ")[0]
    folder = Path(target) / test
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.yaml").write_text(to_yaml(scenario))
    (folder / "scenario.json").write_text(json.dumps(
        {"node": scenario.node, "gates": scenario.gates, "version": scenario.version}, indent=2))
    (folder / "report.txt").write_text(outcome.describe(scenario))
