"""Hypothesis fuzzing of the command line, in-process: whatever the input, every command keeps its contract.

Inputs are small documents of every kind the commands read (NodePool, Node, ResourceSlice, DeviceClass,
ResourceClaim(Template), Pod, Deployment, StatefulSet, Job, CronJob), the seed article's legacy documents, the custom
kinds' examples (RayCluster, PyTorchJob, JobSet, LeaderWorkerSet, TrainJob) and the migration examples (workloads asking
nvidia.com/gpu and MIG profiles, the device plugin's configs, the GPU Operator's ClusterPolicy), mutated — a field
replaced by a wrong type, a huge, negative or non-finite number, a numeric string, a deleted or an unknown key — then
written as YAML, as a JSON List, or as raw and damaged bytes, and given on stdin, as files or as a directory. Every
command that reads files runs on them: simulate, explain (pod, claim, workload), allocate, cel, convert, validate
migrate (with random options and output directories) and migrate plan (the rollout example, small, with random
--max-unavailable, --order and -o). The live commands (snapshot, exporter, simulate and
explain with --kubeconfig) are fuzzed against the real control plane in test_fuzz_live.py, the driver's flags,
inventories and gRPC requests in tests/driver/test_fuzz_driver.py.

The contract (``check``): exit 0, 1 or 2 only; no traceback; no run longer than ``HANG_SECONDS``; on exit 2 a line
``error: ...`` (click's ``Error: ...`` for a bad flag) on stderr and nothing on stdout (allocate's ``error``
decision excepted, printed as the decision it is), and for migrate nothing written to the output directory;
otherwise machine output that parses whole, and migrating migrate's output changes nothing. A bug it found is kept
below as an ``@example``. Examples per test: ``KUBEDRA_FUZZ_EXAMPLES``, else tests/depth.py's per-run or deep count.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from fuzzing import (
    CLAIM,
    CLASS,
    DEPLOYMENT,
    DOCUMENTS,
    MIGRATE_DOCUMENTS,
    MIGRATE_FILES,
    NODE,
    NODEPOOL,
    POD,
    ROOT,
    SLICE,
    WORKLOAD_FILES,
    Outcome,
    as_yaml,
    check,
    inputs,
    invoke,
    odd_strings,
    stdio,
    tree,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.cli import main

EXAMPLES = depth.examples(per_run=200, deep=3000, override="KUBEDRA_FUZZ_EXAMPLES")
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

COMMANDS: dict[str, list[str]] = {
    "simulate": ["simulate", "-o", "json"],
    "explain-pod": ["explain", "pod", "p1"],
    "explain-claim": ["explain", "claim", "default/c1"],
    "explain-workload": ["explain", "deployment/w", "-o", "json"],
    "allocate": ["allocate", "--node", "n1", "-o", "json"],
    "cel": ["cel", 'device.attributes["gpu.nvidia.com"].index >= 0', "-o", "json"],
    "convert": ["convert", "-o", "json"],
    "validate": ["validate"],
    "migrate": ["migrate"],
}
JSON_OUTPUT = {"simulate", "explain-workload", "allocate", "cel", "convert"}
"""Commands whose stdout is one JSON document whenever they exit 0 or 1."""


@st.composite
def migrate_inputs(draw: st.DrawFn) -> bytes:
    """An example file as written (comments kept), sometimes with a line damaged, or generated documents."""
    if draw(st.integers(0, 2)) == 0:
        lines = draw(st.sampled_from(MIGRATE_FILES)).read_bytes().splitlines(keepends=True)
        if draw(st.booleans()):
            at = draw(st.integers(0, len(lines) - 1))
            lines[at] = draw(st.sampled_from([b"", b"  - x\n", b"\t\n", b"---\n", b": :\n"])) or draw(
                st.binary(max_size=6))
        return b"".join(lines)
    return draw(inputs((MIGRATE_DOCUMENTS, MIGRATE_DOCUMENTS + DOCUMENTS, DOCUMENTS)))


def _option(name: str, *likely: str) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.sampled_from(likely), odd_strings).map(lambda value: [f"{name}={value}"])


migrate_options = st.lists(
    st.one_of(
        st.sampled_from([["--mode=claims"], ["--mode=extended-resource"], ["--mode=all"], ["--same-pcie-root"],
                         ["--report"], ["-o", "json"], ["-o", "table"], ["-o", "yaml"]]),
        _option("--min-memory", "40Gi", "0", "-1Gi", "1e999", "80G", "1.5Ti"),
        _option("--model", "A100*", "H100-80GB", "[", "*", "NVIDIA T4"),
        _option("--min-compute-capability", "8.0", "9", "x", "-1", "8.0.0.0", "10.10"),
        _option("--gpu-memory", "80Gi", "0", "x", "-1"),
    ),
    max_size=4,
).map(lambda groups: [arg for group in groups for arg in group])

CLUSTER_POLICY = ROOT / "examples" / "migrate" / "gpu-operator" / "cluster-policy.yaml"
assert CLUSTER_POLICY in MIGRATE_FILES, "the migrate corpus reads every file under examples/migrate"
OUTPUT_DIRS = ["stdout", "stdout", "fresh", "existing", "is-a-file", "under-a-file", "target-is-a-directory"]


def run(command: str, data: bytes, *, as_files: int = 0) -> int:
    """``kubedra COMMAND -f -`` on ``data``; with ``as_files``, ``-f DIR`` on that many copies of it."""
    argv = list(COMMANDS[command])
    if not as_files:
        outcome = invoke([*argv, "-f", "-"], data)
    else:
        with tempfile.TemporaryDirectory() as directory:
            for i in range(as_files):
                with open(os.path.join(directory, f"{i}.yaml"), "wb") as handle:
                    handle.write(data)
            outcome = invoke([*argv, "-f", directory])
    check(outcome, json_output=command in JSON_OUTPUT, codes=(0, 2) if command == "migrate" else (0, 1, 2))
    return outcome.code


def _prepare_output(root: Path, where: str, planned: str) -> Path | None:
    """The --output-dir for one migrate run, set up as ``where`` says (None: stdout)."""
    if where == "stdout":
        return None
    out = root / "out"
    if where == "existing":
        out.mkdir()
        (out / "keep.txt").write_text("not ours\n")
    elif where == "is-a-file":
        out.write_text("a file\n")
    elif where == "under-a-file":
        out.write_text("a file\n")
        return out / "below"
    elif where == "target-is-a-directory":
        (out / planned).mkdir(parents=True)
    return out


def run_migrate(data: bytes, options: list[str], how: str, where: str) -> Outcome:
    """``kubedra migrate OPTIONS`` on ``data`` (stdin, a file or a directory) into stdout or an --output-dir."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        if how == "stdin":
            paths, stdin, planned = ["-f", "-"], data, "stdin.yaml"
        else:
            source = root / "in"
            source.mkdir()
            (source / "a.yaml").write_bytes(data)
            paths, stdin, planned = [str(source if how == "directory" else source / "a.yaml")], b"", "a.yaml"
        output = _prepare_output(root, where, planned)
        before = tree(root)
        argv = ["migrate", *paths, *options] + (["--output-dir", str(output)] if output else [])
        outcome = invoke(argv, stdin)
        check(outcome, codes=(0, 2))
        after = tree(root)
        if outcome.code == 2 or output is None:
            assert after == before, f"kubedra {' '.join(argv)} exited {outcome.code} and changed {sorted(set(after) ^ set(before))}"
            if outcome.code == 0:
                list(yaml.safe_load_all(outcome.out))  # the manifests, whole
            return outcome
        written = {k: v for k, v in after.items() if before.get(k, b"") != v and v is not None}
        assert not [k for k in after if k.endswith(".tmp")], sorted(after)
        for name, content in written.items():
            list(yaml.safe_load_all(content))  # each file whole
            assert name.startswith(str(output.relative_to(root))), name
        return outcome


def _with(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(doc)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return changed


# Bugs the fuzzer found, kept as examples (each crashed with a traceback before its fix):
# an extended-resource limit past int64 (extended_requests took as_int64 where kube-scheduler takes Value()),
GPU_LIMIT = ("spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu")
HUGE_GPU = as_yaml([NODEPOOL, _with(DEPLOYMENT, GPU_LIMIT, 2**63)])
# allocatable cpu past a float (the score was inf - inf = NaN, so no node was best and the tie draw had none),
INFINITE_CPU = as_yaml([NODEPOOL, SLICE, CLASS, _with(NODE, ("status", "allocatable", "cpu"), "1e999"), DEPLOYMENT])
# allocatable pods past int64 (read with as_int64 where kube-scheduler reads Value(), which overflows to 0),
HUGE_PODS = as_yaml([_with(NODE, ("status", "allocatable", "pods"), "1e30"), POD, CLAIM])
# a NodePool without metadata beside a valid one (node names were looked up in every pool's raw metadata).
NAMELESS_POOL = as_yaml([NODE, _with(NODEPOOL, ("metadata",), None), _with(NODEPOOL, ("metadata", "name"), "n1")])
# a nameless pod (the legacy dialect's) whose resources are not a map (its conversion took every type for granted).
LEGACY_POD = as_yaml([_with(_with(POD, ("metadata",), [None]), ("spec", "containers", 0, "resources"), True)])


# --------------------------------------------------------------------------------------------------
# One test per command, on stdin; the directory path and the bugs found, below.


@FUZZ
@given(inputs())
@example(b"\xff\xfe not utf-8")
@example(HUGE_GPU)
@example(INFINITE_CPU)
@example(HUGE_PODS)
@example(NAMELESS_POOL)
@example(WORKLOAD_FILES[3].read_bytes())
def test_simulate(data: bytes) -> None:
    run("simulate", data)


@FUZZ
@given(inputs())
@example(INFINITE_CPU)
@example(HUGE_PODS)
def test_explain_pod(data: bytes) -> None:
    run("explain-pod", data)


@FUZZ
@given(inputs())
@example(HUGE_GPU)
def test_explain_claim(data: bytes) -> None:
    run("explain-claim", data)


@FUZZ
@given(inputs())
def test_explain_workload(data: bytes) -> None:
    run("explain-workload", data)


@FUZZ
@given(inputs())
@example(NAMELESS_POOL)
def test_allocate(data: bytes) -> None:
    run("allocate", data)


@FUZZ
@given(inputs())
def test_cel(data: bytes) -> None:
    run("cel", data)


@FUZZ
@given(inputs())
def test_convert(data: bytes) -> None:
    run("convert", data)


@FUZZ
@given(inputs())
@example(LEGACY_POD)
@example(as_yaml([_with(_with(POD, ("metadata", "name"), None), ("spec", "containers", 0, "resources"), True)]))
@example(WORKLOAD_FILES[0].read_bytes())  # the custom kinds' examples are in inputs()'s pools; one whole, always
def test_validate(data: bytes) -> None:
    run("validate", data)


@FUZZ
@given(migrate_inputs(), migrate_options, st.sampled_from(["stdin", "file", "directory"]), st.sampled_from(OUTPUT_DIRS))
@example(MIGRATE_FILES[0].read_bytes(), [], "file", "target-is-a-directory")  # wrote the first files, then failed
@example(MIGRATE_FILES[0].read_bytes(), ["--min-compute-capability=¹"], "stdin", "stdout")  # isdigit() took "¹"
@example(CLUSTER_POLICY.read_bytes(), ["-o", "json"], "stdin", "stdout")  # in MIGRATE_FILES; whole, at least once
def test_migrate(data: bytes, options: list[str], how: str, where: str) -> None:
    """Exit 0 or 2; on 2 nothing written anywhere; on 0 every output whole; migrating the output changes nothing."""
    outcome = run_migrate(data, options, how, where)
    if outcome.code == 0 and where == "stdout" and outcome.out:
        again = invoke(["migrate", "-f", "-", *options], outcome.out.encode())
        check(again, codes=(0,))
        assert again.out == outcome.out, "migrating migrated output changed it"


@settings(FUZZ, max_examples=max(EXAMPLES // 10, 10))
@given(st.sampled_from(sorted(COMMANDS)), inputs(), st.integers(1, 2))
def test_directories(command: str, data: bytes, copies: int) -> None:
    """Files in a directory, twice over sometimes: every object then has a duplicate in the other file."""
    run(command, data, as_files=copies)


def test_the_issue_reproduction_through_the_cli(tmp_path: Any) -> None:
    """Issue 8: integers where people write integers, in a NodePool and NVIDIA's usual Deployment."""
    pool = {**NODEPOOL, "spec": {"count": 1, "allocatable": {"cpu": 64, "memory": "512Gi", "pods": 110},
                                 "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool))
    (tmp_path / "app.yaml").write_text(yaml.safe_dump(DEPLOYMENT))
    with stdio(b""):
        code = main(["simulate", "-f", str(tmp_path), "-o", "json"])
        report = json.loads(sys.stdout.getvalue())
        errors = sys.stderr.getvalue()
    assert (code, errors) == (0, "")
    assert report["summary"]["pods"]["running"] == 2


# --------------------------------------------------------------------------------------------------
# migrate plan: the rollout example's cluster and workloads, made small (each wave is simulated, several times
# over for --order smart), mutated as above, with random --max-unavailable, --order and -o.

PLAN_FILES = sorted((ROOT / "examples" / "migrate" / "rollout").glob("*.yaml"))
PLAN_EXAMPLES = depth.examples(per_run=25, deep=400, override="KUBEDRA_FUZZ_EXAMPLES")


def _small(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with one node per pool, four GPUs a node and at most two replicas: the same shapes, fewer waves."""
    doc = copy.deepcopy(doc)
    spec = doc.get("spec") or {}
    if doc.get("kind") == "NodePool":
        spec["count"] = 1
        spec["gpu"]["count"] = min(spec["gpu"]["count"], 4)
    elif "replicas" in spec:
        spec["replicas"] = min(spec["replicas"], 2)
    if doc.get("kind") == "StatefulSet":
        spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4
    return doc


PLAN_DOCUMENTS = [_small(d) for p in PLAN_FILES for d in yaml.safe_load_all(p.read_text()) if d]
plan_options = st.lists(
    st.one_of(
        st.sampled_from([["--order", "naive"], ["--order", "smart"], ["-o", "json"], ["-o", "yaml"], ["-o", "table"],
                         ["-o", "wide"], ["-o", "name"], ["--order", "best"], ["-q"]]),
        st.sampled_from(["1", "2", "3", "1", "2", "3", "0", "-1", "x", "1e3", "999999", str(2**63)]).map(
            lambda n: [f"--max-unavailable={n}"]),
        odd_strings.map(lambda n: [f"--max-unavailable={n}"]),
    ),
    max_size=3,
).map(lambda groups: [arg for group in groups for arg in group])


def run_plan(data: bytes, options: list[str], how: str) -> Outcome:
    """``kubedra migrate plan`` on ``data`` (stdin, or a file in a directory); the output parses whole on exit 0."""
    with tempfile.TemporaryDirectory() as directory:
        if how == "stdin":
            paths, stdin = ["-f", "-"], data
        else:
            (Path(directory) / "cluster.yaml").write_bytes(data)
            paths, stdin = [directory], b""
        outcome = invoke(["migrate", "plan", *paths, *options], stdin)
    output = next((options[i + 1] for i in reversed(range(len(options) - 1)) if options[i] == "-o"), "table")
    check(outcome, json_output=output == "json", codes=(0, 2))
    if outcome.code == 0:
        assert outcome.out, f"kubedra {' '.join(outcome.argv)} exited 0 and printed nothing"
        if output == "yaml":
            plan = yaml.safe_load(outcome.out)
            assert plan["kind"] == "RolloutPlan", outcome.out[:300]
    return outcome


@settings(FUZZ, max_examples=PLAN_EXAMPLES)
@given(inputs((PLAN_DOCUMENTS, PLAN_DOCUMENTS, PLAN_DOCUMENTS + DOCUMENTS[:2])), plan_options,
       st.sampled_from(["stdin", "directory"]))
@example(as_yaml(PLAN_DOCUMENTS), ["-o", "json", "--order", "naive"], "stdin")
@example(as_yaml(PLAN_DOCUMENTS), ["-o", "yaml", "--max-unavailable=2"], "directory")
# sixty nodes: smart's greedy search (a simulation per candidate per wave) took 18 s, a hundred past 30; now name order,
@example(as_yaml([_with(PLAN_DOCUMENTS[0], ("spec", "count"), 60), *PLAN_DOCUMENTS[1:]]), [], "stdin")
# a thousand nodes a wave each: a thousand waves simulated; now exit 2 asking for a larger --max-unavailable.
@example(as_yaml([_with(PLAN_DOCUMENTS[0], ("spec", "count"), 1000), *PLAN_DOCUMENTS[1:]]), ["-o", "json"], "stdin")
def test_migrate_plan(data: bytes, options: list[str], how: str) -> None:
    """Exit 0 or 2 only, no traceback, no hang; -o json|yaml parses whole on exit 0; on exit 2 an error: line."""
    run_plan(data, options, how)
