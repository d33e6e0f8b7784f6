"""``kubedra migrate`` never writes an object the API server rejects: generated device-plugin workloads (every kind
migrate rewrites, init containers and sidecars, counts from 0 to past int32, MIG profiles, names chosen to collide,
identical copies, templates already in the input) are migrated in both modes, and the output is fed back through
``kubedra validate`` — the same checks migrate's own input passed — which must find nothing (issue 37, item 3).

The input is asserted valid first, so a generator that drifts into invalid input fails loudly instead of testing
nothing. The control-plane test (``test_migrate_controlplane.py``) dry-runs migrate's output on the real API server.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.depth import examples

from kubedra.cli import main

# Small pools, so that workloads share names across kinds and namespaces, and "<workload>-<container>-gpu" of one
# workload is "<workload>-<container>" of another (p + c-gpu, p-c + gpu).
WORKLOAD_NAMES = ["p", "p-c", "p-pod"]
CONTAINER_NAMES = ["c", "gpu", "c-gpu", "init"]
NAMESPACES = [None, "default", "ml"]
RESOURCES = ["nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"]
COUNTS = st.one_of(st.integers(0, 8), st.sampled_from([16, 2**31, 2**40]))
POD_SPEC = {"Pod": ("spec",), "Deployment": ("spec", "template", "spec"),
            "StatefulSet": ("spec", "template", "spec"), "DaemonSet": ("spec", "template", "spec"),
            "ReplicaSet": ("spec", "template", "spec"), "Job": ("spec", "template", "spec"),
            "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
API = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1"}


@st.composite
def containers(draw: st.DrawFn, prefix: str, sidecars: bool) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(CONTAINER_NAMES), unique=True, max_size=3,
                          min_size=0 if prefix == "init" else 1))
    out = []
    for name in names:
        body: dict[str, Any] = {"name": f"{prefix}-{name}" if prefix == "init" else name, "image": "x"}
        asks = draw(st.dictionaries(st.sampled_from(RESOURCES), COUNTS, max_size=2))
        limits: dict[str, Any] = {r: draw(st.sampled_from([n, str(n)])) for r, n in asks.items()}
        if draw(st.booleans()):
            limits["cpu"] = "1"
        if limits:
            body["resources"] = {"limits": limits}
            both: bool = draw(st.booleans())
            if asks and both:  # requests equal to the limits, as kubectl users often write
                body["resources"]["requests"] = dict(limits)
        if sidecars and draw(st.booleans()):
            body["restartPolicy"] = "Always"
        out.append(body)
    return out


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(POD_SPEC)))
    name = draw(st.sampled_from(WORKLOAD_NAMES))
    metadata: dict[str, Any] = {"name": name}
    namespace = draw(st.sampled_from(NAMESPACES))
    if namespace:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {"containers": draw(containers("app", False))}
    inits = draw(containers("init", True))
    if inits:
        spec["initContainers"] = inits
    if kind in ("Job", "CronJob"):
        spec["restartPolicy"] = draw(st.sampled_from(["Never", "OnFailure"]))
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": spec}
    body: dict[str, Any]
    if kind == "Pod":
        body = spec
    elif kind == "Job":
        body = {"template": template}
    elif kind == "CronJob":
        body = {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": template}}}
    else:
        body = {"selector": {"matchLabels": labels}, "template": template}
        if kind == "StatefulSet":
            body["serviceName"] = name
        if kind != "DaemonSet":
            body["replicas"] = draw(st.integers(0, 3))
    return {"apiVersion": API.get(kind, "apps/v1"), "kind": kind, "metadata": metadata, "spec": body}


def _identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace") or "default", obj["metadata"]["name"]


def _template(name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": metadata,
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}}


@st.composite
def inputs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Workloads of distinct identities (the API server holds one object per kind, namespace and name), maybe an
    identical copy of one, maybe a template already named as migrate would name one."""
    objects: dict[tuple[str, str, str], dict[str, Any]] = {}
    for workload in draw(st.lists(workloads(), min_size=1, max_size=4)):
        objects.setdefault(_identity(workload), workload)
    out = list(objects.values())
    if draw(st.booleans()):
        out.append(draw(st.sampled_from(out)))
    if draw(st.booleans()):
        out.insert(0, _template(draw(st.sampled_from(["p-c-gpu", "p-gpu-gpu", "p-c-gpu-gpu", "p-pod-c-gpu"])),
                                draw(st.sampled_from(NAMESPACES))))
    return out


OPTIONS = st.sampled_from([[], ["--mode", "extended-resource"], ["--same-pcie-root", "--min-memory", "40Gi"],
                           ["--model", "A100*"]])


def _run(*argv: str) -> tuple[int, str, str]:
    """``kubedra ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=examples(40, 400, "KUBEDRA_MIGRATE_EXAMPLES"), deadline=None)
@given(inputs(), OPTIONS)
def test_migrated_output_is_what_validate_accepts(objects: list[dict[str, Any]], options: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "in.yaml"
        source.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        code, report, _ = _run("validate", "-f", str(source), "-q")
        assert code == 0, f"the generator made invalid input:\n{report}"
        code, out, err = _run("migrate", "-f", str(source), "-q", *options)
        assert code == 0, err
        migrated = Path(directory) / "out.yaml"
        migrated.write_text(out)
        code, report, _ = _run("validate", "-f", str(migrated), "-q")
        assert code == 0, f"migrate wrote what validate refuses:\n{report}\n--- output:\n{out}"
        # and no claim of a count the API server refuses, whatever validate's wording
        for document in yaml.safe_load_all(out):
            if isinstance(document, dict) and document.get("kind") == "ResourceClaimTemplate":
                for request in document["spec"]["spec"]["devices"]["requests"]:
                    assert request["exactly"]["count"] > 0
