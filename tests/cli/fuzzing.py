"""What the fuzz tests share: documents of every kind, the strategies that mutate them, and the contract every
command keeps (``check``): see test_fuzz_cli.py."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import yaml
from hypothesis import strategies as st

from kubedra.cli import main
from kubedra.data import seed_dir

ROOT = Path(__file__).resolve().parents[2]
HANG_SECONDS = 30.0
"""No single run on these small inputs may take longer (a run takes ~20 ms; the slowest seen, well under 2 s)."""

NODEPOOL: dict[str, Any] = {
    "apiVersion": "kubedra.io/v1alpha1",
    "kind": "NodePool",
    "metadata": {"name": "l4"},
    "spec": {
        "count": 1,
        "allocatable": {"cpu": 8, "memory": "64Gi", "pods": 110},
        "gpu": {"model": "L4", "count": 1},
        "sharing": {"shares": 2},
    },
}
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": 1}},
}
SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "n1-gpu"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {"productName": {"string": "NVIDIA L4"}, "index": {"int": 0}},
                "capacity": {"memory": {"value": "24Gi"}},
            }
        ],
    },
}
CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
}
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c1", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {"deviceClassName": "gpu", "count": 1, "capacity": {"requests": {"memory": "8Gi"}}},
                }
            ]
        }
    },
}
TEMPLATE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu", "allocationMode": "All"}]}}},
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p1", "annotations": {"kubedra.io/run-for": "1m"}},
    "spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5}, "claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "c1"}],
    },
}
TEMPLATE_SPEC: dict[str, Any] = {
    "metadata": {"labels": {"app": "w"}},
    "spec": {"containers": [{"name": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 2}}}]},
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "w", "annotations": {"kubedra.io/start-after": "10s"}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}}, "template": TEMPLATE_SPEC},
}
STATEFULSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": TEMPLATE_SPEC},
}
JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train"},
    "spec": {
        "completions": 2,
        "parallelism": 1,
        "template": {**TEMPLATE_SPEC, "spec": {**TEMPLATE_SPEC["spec"], "restartPolicy": "Never"}},
    },
}
CRONJOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "@daily", "jobTemplate": {"spec": copy.deepcopy(JOB["spec"])}},
}
DOCUMENTS = [NODEPOOL, NODE, SLICE, CLASS, CLAIM, TEMPLATE, POD, DEPLOYMENT, STATEFULSET, JOB, CRONJOB]
# The seed article's documents: the legacy dialect (ResourceClass, NvidiaGPUConfig, the nameless pod, fragments).
SEED_DOCUMENTS = [d for p in sorted(seed_dir().glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]

# The migration examples: workloads asking nvidia.com/gpu and MIG profiles, the device plugin's configs.
MIGRATE_FILES = sorted((ROOT / "examples" / "migrate").rglob("*.yaml"))
MIGRATE_DOCUMENTS = [d for p in MIGRATE_FILES for d in yaml.safe_load_all(p.read_text()) if d]

# The custom kinds' examples (RayCluster, PyTorchJob, JobSet, LeaderWorkerSet, TrainJob), each file its own pool: NodePools,
# a ResourceClaimTemplate and the workload that names it.
WORKLOAD_FILES = [ROOT / "examples" / "workloads" / f"{name}.yaml"
                  for name in ("ray-cluster", "pytorchjob", "jobset-train", "vllm-lws", "trainjob")]
WORKLOAD_POOLS = [[d for d in yaml.safe_load_all(p.read_text()) if d] for p in WORKLOAD_FILES]

odd_numbers = st.one_of(
    st.sampled_from([0, -1, 1.5, -0.0, 2**31, 2**31 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, 1e308, 1e-300]),
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
    st.integers(),
    st.floats(),
)
odd_strings = st.one_of(
    st.sampled_from(["", "-1", "1.5", "1e999", "0x10", "9" * 40, "abc", "1Gi", "-5Gi", "1e3", "..", "A_B", "a/b"]),
    st.text(max_size=12),
)
scalars = st.one_of(st.none(), st.booleans(), odd_numbers, odd_strings)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _like(value: Any) -> st.SearchStrategy[Any]:
    """An odd value of the same JSON type as ``value``: what gets past type checks into the semantics."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int | float):
        return odd_numbers
    if isinstance(value, str):
        return odd_strings
    return values


def mutate(draw: st.DrawFn, chosen: list[Any], times: int) -> None:
    """``times`` mutations in place: a value tweaked to an odd one of its type, replaced, deleted, or a key added."""
    for _ in range(times):
        index = draw(st.integers(0, len(chosen) - 1))
        paths = _paths(chosen[index])[1:]
        if not paths:
            chosen[index] = draw(values)
            continue
        path = draw(st.sampled_from(paths))
        parent = chosen[index]
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["tweak", "tweak", "tweak", "replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(values)
        elif action == "tweak":
            parent[path[-1]] = draw(_like(parent[path[-1]]))
        else:
            parent[path[-1]] = draw(values)


@st.composite
def documents(draw: st.DrawFn, pools: tuple[list[Any], ...] | None = None) -> list[Any]:
    """All or some of one pool of documents (now and then one twice: a duplicate), then a few mutations.

    By default: the kinds above, the seed article's legacy documents, or one of the custom kinds' examples."""
    pool = draw(st.sampled_from(pools or (DOCUMENTS, DOCUMENTS, SEED_DOCUMENTS + DOCUMENTS[:4], WORKLOAD_POOLS)))
    if pool is WORKLOAD_POOLS:
        pool = draw(st.sampled_from(WORKLOAD_POOLS))
    picked = pool
    if draw(st.booleans()):
        picked = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=7, unique_by=id))
    chosen: list[Any] = [copy.deepcopy(d) for d in picked]
    if draw(st.integers(0, 9)) == 0:
        chosen.append(copy.deepcopy(draw(st.sampled_from(chosen))))
    mutate(draw, chosen, draw(st.sampled_from([0, 1, 1, 1, 2, 3])))
    return chosen


def as_yaml(docs: list[Any]) -> bytes:
    return yaml.safe_dump_all(docs, sort_keys=False).encode()


def as_json(docs: list[Any]) -> bytes:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})  # NaN and Infinity as Python writes them
    return text.encode()


@st.composite
def inputs(draw: st.DrawFn, pools: tuple[list[Any], ...] | None = None) -> bytes:
    """The bytes of one input: documents as YAML or JSON, sometimes damaged, or arbitrary bytes."""
    kind = draw(st.sampled_from(["yaml", "yaml", "yaml", "json", "json", "damaged", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    docs = draw(documents(pools))
    data = as_json(docs) if kind == "json" or (draw(st.booleans()) and kind == "damaged") else as_yaml(docs)
    if kind == "damaged":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(max_size=4)) + data[at + 1 :]
    return data


@dataclass
class Outcome:
    argv: list[str]
    code: int
    out: str
    err: str


class HangError(Exception):
    """A run took longer than HANG_SECONDS."""


@contextlib.contextmanager
def deadline(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """No hang: a run past ``seconds`` is interrupted and fails the example."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise HangError(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def stdio(stdin: bytes) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def invoke(argv: list[str], stdin: bytes = b"", *, hang: float = HANG_SECONDS) -> Outcome:
    """``kubedra ARGV`` in-process, with a deadline of ``hang`` seconds; what it printed."""
    with stdio(stdin), deadline(hang):
        code = main(argv)
        out, err = sys.stdout.getvalue(), sys.stderr.getvalue()  # type: ignore[attr-defined]
    return Outcome(argv, code, out, err)


ERROR_LINE = re.compile(r"^(error|Error): \S", re.MULTILINE)
"""kubedra's own ``error: ...``, or click's ``Error: ...`` after the usage line for a bad flag value."""


def check(outcome: Outcome, *, json_output: bool = False, codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """The contract every command keeps, whatever its input (see the module docstring)."""
    where = f"kubedra {' '.join(outcome.argv)[:300]}"
    assert outcome.code in codes, f"{where} exited {outcome.code}\n{outcome.err[-2000:]}"
    assert "Traceback" not in outcome.err, f"{where}: {outcome.err[-3000:]}"
    if outcome.code == 2:
        if json_output and outcome.out and outcome.argv[0] == "allocate":
            decision = json.loads(outcome.out)  # allocate's third outcome: the allocator's error, as a decision
            assert decision["result"] == "error", where
            assert decision["message"], where
            return
        assert outcome.out == "", f"{where} exited 2 and wrote to stdout: {outcome.out[:300]!r}"
        assert ERROR_LINE.search(outcome.err), f"{where} exited 2 without an error: line: {outcome.err[-1000:]!r}"
    elif json_output:
        json.loads(outcome.out)  # whole: one document, not a partial write


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its content (None for a directory)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


