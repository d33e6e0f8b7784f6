"""What a TrainJob goes through before its JobSet is expanded: the runtimes among the inputs indexed, the TrainJob
admitted as the trainer's webhooks v2.3.0 admit it (the runtime it names exists, torchrun's variables are not set by
hand, the initializers have their job, container and volume mount, no env is patched onto the node or initializer
containers), then its JobSet (``sim.trainjobs``) expanded as any JobSet. Refusals are worded as the webhook words
them (``tests/trainer`` compares them with the real one's)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kubedra.cluster.gpuslices import stable_uid
from kubedra.sim.trainjobs import (
    API_VERSION,
    DATASET,
    DEFAULT_NAMESPACE,
    KUBEDRA_PREFIX,
    MANAGED_BY,
    MODEL,
    NODE,
    RESERVED_TORCH,
    RUNTIME_KINDS,
    containers_of,
    patched_template,
    runtime_ref,
    trainjob_jobset,
)

if TYPE_CHECKING:
    from kubedra.cluster.nodepool import RawLike
    from kubedra.objects.errors import Location
    from kubedra.sim.workloads import _Expander


def _invalid(value: Any, detail: str) -> str:
    """``field.Invalid`` as the webhook prints it: the value as JSON, then why."""
    return f"Invalid value: {json.dumps(value, separators=(',', ':'))}: {detail}"


def webhook_problems(trainjob: dict[str, Any], runtime: dict[str, Any],
                     ref: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for what the TrainJob webhook's plugins refuse on create (``ref``: the defaulted
    ``runtimeRef``): torch's reserved variables in ``spec.trainer.env``; the JobSet plugin's initializers (their job,
    container and ``initializer`` volume mount) and runtime patches (no replicated job or container the runtime
    lacks, no env on the node and initializer containers)."""
    spec = trainjob.get("spec") or {}
    rspec = runtime.get("spec") or {}
    out: list[tuple[str, str]] = []
    env = (spec.get("trainer") or {}).get("env") or []
    used = sorted({e.get("name") for e in env if e.get("name") in RESERVED_TORCH})
    if (rspec.get("mlPolicy") or {}).get("torch") is not None and used:
        out.append(("spec.trainer.env", _invalid(env, "must not have reserved envs, invalid envs configured: "
                                                      f"[{' '.join(used)}]")))
    _, _, js_spec = patched_template(rspec.get("template") or {}, spec.get("runtimePatches") or [])
    names = {str(r.get("name")): {str(c.get("name")) for key in ("initContainers", "containers")
                                  for c in ((r.get("template") or {}).get("spec") or {}).get("template", {}).get(
                                      "spec", {}).get(key) or []}
             for r in js_spec["replicatedJobs"]}
    for which, job in (("dataset", DATASET), ("model", MODEL)):
        if (spec.get("initializer") or {}).get(which) is None:
            continue
        detail = None
        if job not in names:
            detail = f"must have {job} job when trainJob is configured with input {which}Config"
        elif job not in names[job]:
            detail = f"must have container with name - {job} in the {job} job"
        elif not _mounts_initializer(js_spec, job):
            detail = f"must have volumeMount with name - initializer in container {job} of the {job} job"
        if detail is not None:
            out.append(("spec.runtimeRef", _invalid(ref, detail)))
    patches = spec.get("runtimePatches") or []
    for detail in _patch_problems(patches, names):
        out.append(("spec.runtimePatches", _invalid(patches, detail)))
    return out


def _mounts_initializer(js_spec: dict[str, Any], job: str) -> bool:
    for rjob in js_spec["replicatedJobs"]:
        if rjob.get("name") == job:
            for container in containers_of(rjob):
                if container.get("name") == job and any(m.get("name") == "initializer"
                                                        for m in container.get("volumeMounts") or []):
                    return True
    return False


def _patch_problems(patches: list[Any], names: dict[str, set[str]]) -> list[str]:
    """The JobSet plugin's checks of the runtime patches. Its replicated jobs and containers are read from the spec
    the patches were already merged into, so a patch naming a job or container the runtime lacks adds it and is not
    refused (as v2.3.0 behaves, checked in tests/trainer): only the env rule can fire."""
    out = []
    for patch in patches:
        for rjob in ((((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get(
                "replicatedJobs") or []:
            containers = names.get(str(rjob.get("name")))
            if containers is None:
                out.append("must not have replicated job that doesn't exist in the runtime job template")
                continue
            pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            out += [f"must not have initContainer that doesn't exist in the runtime job {rjob['name']}"
                    for c in pod.get("initContainers") or [] if c.get("name") not in containers]
            for c in pod.get("containers") or []:
                if c.get("name") not in containers:
                    out.append(f"must not have container that doesn't exist in the runtime job {rjob['name']}")
                elif c.get("env") and c.get("name") in (DATASET, MODEL, NODE):
                    out.append(f"must not have envs for the {DATASET}, {MODEL}, {NODE} containers")
    return out


def training_runtimes(raw_objects: Iterable[RawLike]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind, namespace or "" for a ClusterTrainingRuntime, name) -> each runtime among the inputs."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for raw in raw_objects:
        data = raw.data
        if data.get("apiVersion") != API_VERSION or data.get("kind") not in RUNTIME_KINDS:
            continue
        meta = data.get("metadata") or {}
        namespace = "" if data["kind"] == "ClusterTrainingRuntime" else str(meta.get("namespace") or DEFAULT_NAMESPACE)
        found.setdefault((data["kind"], namespace, str(meta.get("name") or "")), data)
    return found


def expand_trainjob(expander: _Expander, where: Location, data: dict[str, Any]) -> None:
    """The TrainJob's JobSet, expanded as any JobSet (its Jobs and pods); problems where the webhook would refuse
    the TrainJob. Its ``kubedra.io/`` annotations (start-after, run-for) go to the JobSet kubedra simulates."""
    from kubedra.cluster.nodepool import convert_strict
    from kubedra.objects.decode import decode
    from kubedra.objects.model import ObjectMeta
    from kubedra.sim.manifests import JobSetDoc

    meta = data.get("metadata") or {}
    _, found = decode(meta, ObjectMeta)  # what the API server's ObjectMeta refuses (annotations that are no map)
    for path, message in found:
        expander.bad(where, f"metadata.{path}".rstrip("."), message)
    spec = data.get("spec") or {}
    if not isinstance(spec, dict):
        expander.bad(where, "spec", f"Invalid value: must be an object, not {type(spec).__name__}")
    if found or not isinstance(spec, dict):
        return
    name = str(meta.get("name") or "")
    if not name:
        expander.bad(where, "metadata.name", "Required value")
        return
    namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
    managed = spec.get("managedBy") or MANAGED_BY
    if managed != MANAGED_BY:
        expander.notes.append(f"TrainJob {namespace}/{name}: spec.managedBy {managed}: the trainer controller leaves "
                              "it to that manager, so no pods are simulated for it")
        return
    kind, runtime_name = runtime_ref(spec)
    group = str((spec.get("runtimeRef") or {}).get("apiGroup") or "trainer.kubeflow.org")
    if kind not in RUNTIME_KINDS or group != "trainer.kubeflow.org":  # no runtime registered under that key
        expander.bad(where, "spec.runtimeRef", f"unsupported runtime: {kind}.{group}")
        return
    ref = {"name": runtime_name, "apiGroup": group, "kind": kind}
    runtime = expander.runtimes.get((kind, "" if kind == "ClusterTrainingRuntime" else namespace, runtime_name))
    if runtime is None:  # the webhook names the field spec.RuntimeRef for a ClusterTrainingRuntime (Go's name)
        lower = kind[0].lower() + kind[1:]
        expander.bad(where, "spec.runtimeRef", _invalid(ref, f'{kind}.trainer.kubeflow.org "{runtime_name}" not '
                                                             f"found: specified {lower} must be created before the "
                                                             "TrainJob is created"))
        return
    problems = webhook_problems(data, runtime, ref)
    for path, message in problems:
        expander.bad(where, path, message)
    if problems:
        return
    uid = str(meta.get("uid") or stable_uid("TrainJob", namespace, name))
    jobset, notes = trainjob_jobset({**data, "metadata": {**meta, "namespace": namespace, "uid": uid}}, runtime)
    expander.notes.extend(notes)
    ours = {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(KUBEDRA_PREFIX)}
    if ours:
        jobset["metadata"]["annotations"] = {**jobset["metadata"].get("annotations", {}), **ours}
    doc = convert_strict(jobset, JobSetDoc, where, expander.problems)
    if doc is not None:
        expander.jobset(where, doc, namespace, jobset["spec"])
