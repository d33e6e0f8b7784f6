"""Hypothesis fuzzing of the command line, in-process: whatever the input, every command exits 0, 1 or 2.

Inputs are small documents of every kind the commands read (NodePool, Node, ResourceSlice, DeviceClass,
ResourceClaim(Template), Pod, Deployment, StatefulSet, Job, CronJob) and the seed article's legacy documents, mutated — a field replaced by a wrong type, a huge,
negative or non-finite number, a numeric string, a deleted or an unknown key — then written as YAML, as a JSON
List, or as raw and damaged bytes, and given on stdin or as a directory of files. Every command runs on them:
simulate, explain pod/claim, allocate, cel, convert, validate. An uncaught exception fails the test; a
bug it found is kept below as an ``@example``. Examples per command: ``KUBEDRA_FUZZ_EXAMPLES`` (default 1,500,
so the module runs over 10,000 in all).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubedra.cli import main
from kubedra.data import seed_dir

EXAMPLES = int(os.environ.get("KUBEDRA_FUZZ_EXAMPLES", "1500"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

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

COMMANDS: dict[str, list[str]] = {
    "simulate": ["simulate", "-o", "json"],
    "explain-pod": ["explain", "pod", "p1"],
    "explain-claim": ["explain", "claim", "default/c1"],
    "allocate": ["allocate", "--node", "n1", "-o", "json"],
    "cel": ["cel", 'device.attributes["gpu.nvidia.com"].index >= 0', "-o", "json"],
    "convert": ["convert", "-o", "json"],
    "validate": ["validate"],
}

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


@st.composite
def documents(draw: st.DrawFn) -> list[Any]:
    """All or some of DOCUMENTS (now and then one twice: a duplicate), then a few mutations."""
    pool = draw(st.sampled_from([DOCUMENTS, DOCUMENTS, SEED_DOCUMENTS + DOCUMENTS[:4]]))
    picked = pool
    if draw(st.booleans()):
        picked = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=7, unique_by=id))
    chosen: list[Any] = [copy.deepcopy(d) for d in picked]
    if draw(st.integers(0, 9)) == 0:
        chosen.append(copy.deepcopy(draw(st.sampled_from(chosen))))
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
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
    return chosen


def _yaml(docs: list[Any]) -> bytes:
    return yaml.safe_dump_all(docs, sort_keys=False).encode()


def _json(docs: list[Any]) -> bytes:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})  # NaN and Infinity as Python writes them
    return text.encode()


@st.composite
def inputs(draw: st.DrawFn) -> bytes:
    """The bytes of one input: documents as YAML or JSON, sometimes damaged, or arbitrary bytes."""
    kind = draw(st.sampled_from(["yaml", "yaml", "yaml", "json", "json", "damaged", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    docs = draw(documents())
    data = _json(docs) if kind == "json" or (draw(st.booleans()) and kind == "damaged") else _yaml(docs)
    if kind == "damaged":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(max_size=4)) + data[at + 1 :]
    return data


@contextlib.contextmanager
def _stdio(stdin: bytes) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def run(command: str, data: bytes, *, as_files: int = 0) -> int:
    """``kubedra COMMAND -f -`` on ``data``; with ``as_files``, ``-f DIR`` on that many copies of it."""
    argv = list(COMMANDS[command])
    if not as_files:
        with _stdio(data):
            code = main([*argv, "-f", "-"])
    else:
        with tempfile.TemporaryDirectory() as directory:
            for i in range(as_files):
                with open(os.path.join(directory, f"{i}.yaml"), "wb") as handle:
                    handle.write(data)
            with _stdio(b""):
                code = main([*argv, "-f", directory])
    assert code in (0, 1, 2), f"kubedra {' '.join(argv)} exited {code}"
    return code


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
HUGE_GPU = _yaml([NODEPOOL, _with(DEPLOYMENT, GPU_LIMIT, 2**63)])
# allocatable cpu past a float (the score was inf - inf = NaN, so no node was best and the tie draw had none),
INFINITE_CPU = _yaml([NODEPOOL, SLICE, CLASS, _with(NODE, ("status", "allocatable", "cpu"), "1e999"), DEPLOYMENT])
# allocatable pods past int64 (read with as_int64 where kube-scheduler reads Value(), which overflows to 0),
HUGE_PODS = _yaml([_with(NODE, ("status", "allocatable", "pods"), "1e30"), POD, CLAIM])
# a NodePool without metadata beside a valid one (node names were looked up in every pool's raw metadata).
NAMELESS_POOL = _yaml([NODE, _with(NODEPOOL, ("metadata",), None), _with(NODEPOOL, ("metadata", "name"), "n1")])
# a nameless pod (the legacy dialect's) whose resources are not a map (its conversion took every type for granted).
LEGACY_POD = _yaml([_with(_with(POD, ("metadata",), [None]), ("spec", "containers", 0, "resources"), True)])


# --------------------------------------------------------------------------------------------------
# One test per command, on stdin; the directory path and the bugs found, below.


@FUZZ
@given(inputs())
@example(b"\xff\xfe not utf-8")
@example(HUGE_GPU)
@example(INFINITE_CPU)
@example(HUGE_PODS)
@example(NAMELESS_POOL)
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
@example(_yaml([_with(_with(POD, ("metadata", "name"), None), ("spec", "containers", 0, "resources"), True)]))
def test_validate(data: bytes) -> None:
    run("validate", data)


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
    with _stdio(b""):
        code = main(["simulate", "-f", str(tmp_path), "-o", "json"])
        report = json.loads(sys.stdout.getvalue())
        errors = sys.stderr.getvalue()
    assert (code, errors) == (0, "")
    assert report["summary"]["pods"]["running"] == 2
