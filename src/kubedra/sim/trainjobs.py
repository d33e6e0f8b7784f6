"""Kubeflow Trainer's TrainJob (``trainer.kubeflow.org/v1alpha1``) as the trainer controller manager v2.3.0
(github.com/kubeflow/trainer/v2@v2.3.0) turns it into a JobSet, read from ``pkg/runtime/core/trainingruntime.go``
(``newRuntimeInfo``, ``mergeRuntimePatches``), ``clustertrainingruntime.go``, ``pkg/runtime/framework/plugins/``
``jobset/jobset.go`` and ``builder.go`` (``Build``, ``Initializer``, ``Trainer``), ``torch/torch.go``
(``EnforceMLPolicy``), ``plainml/plainml.go``, ``coscheduling`` and ``volcano`` (the pods' group label and
annotation), ``pkg/webhooks`` (defaults) and ``pkg/util/trainingruntime`` (``MergeResourceRequirements``).

**The JobSet.** The TrainJob's runtime (``spec.runtimeRef``: a ``ClusterTrainingRuntime`` by default, or a
``TrainingRuntime`` of its namespace) holds a JobSet template; the controller applies a JobSet of the TrainJob's name
and namespace, owned by it, labelled and annotated as the template's metadata (and the ``runtimePatches``'), with
the template's spec after each ``runtimePatches[].trainingRuntimeSpec.template.spec`` is merged into it as a
strategic merge patch (replicated jobs, containers, env, volumes by name). A replicated job labelled
``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` runs the training: one Job (``replicas: 1``) of
``numNodes`` pods (``parallelism`` and ``completions``: the runtime's ``mlPolicy.numNodes``, default 1, or the
TrainJob's ``spec.trainer.numNodes``); its ``node`` container takes the TrainJob's ``image``, ``command``,
``args``, ``env``, and ``resourcesPerNode`` merged over its own limits and requests (resource by resource). The
container's own ``resources.claims`` do not survive that merge in v2.3.0 (``newRuntimeInfo`` copies only limits and
requests), so a runtime whose ``node`` container names DRA claims loses them when the TrainJob sets
``resourcesPerNode``: the pod still has the claims (its ``resourceClaims``, allocated as any), but its container no
longer references them; kubedra does the same. The dataset and model initializers' replicated jobs run one Job
each. With ``mlPolicy.torch`` the ``node`` container also gets torchrun's environment (``PET_NNODES``,
``PET_NPROC_PER_NODE`` -- ``auto``, the TrainJob's ``numProcPerNode``, or the CPUs per node where no GPU is asked
--, ``PET_NODE_RANK``, ``PET_MASTER_ADDR`` ``<trainjob>-node-0-0.<trainjob>``, ``PET_MASTER_PORT`` 29500) and
port 29500. ``podGroupPolicy.coscheduling``
labels every pod ``scheduling.x-k8s.io/pod-group: <trainjob>`` and ``volcano`` annotates it
``scheduling.k8s.io/group-name``: the PodGroups those name are scheduler-plugins' and Volcano's, which kube-scheduler
does not read, so the pods are scheduled one by one. ``suspend`` is the TrainJob's. The JobSet is then simulated as
any (``sim.jobsets``): its Jobs, its pods, their completion. Checked against the real controller manager v2.3.0 with
the JobSet controller v0.12.0 (``tests/trainer``).

**Not modelled (said in a note).** MPI (``mlPolicy.mpi``: the launcher, its hostfile and SSH keys), JAX, XGBoost
and Flux policies' environment; their pods are counted and placed as the template says. A TrainJob
``managedBy`` MultiKueue is left to it (no pods here); ``activeDeadlineSeconds`` and the status server are not
modelled.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

API_VERSION = "trainer.kubeflow.org/v1alpha1"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER, DATASET, MODEL = "trainer", "dataset-initializer", "model-initializer"
NODE = "node"
MANAGED_BY = "trainer.kubeflow.org/trainjob-controller"
MASTER_PORT = 29500
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
STORAGE_URI = "STORAGE_URI"
RESERVED_TORCH = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
KUBEDRA_PREFIX = "kubedra.io/"
DEFAULT_NAMESPACE = "default"
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
# strategic merge keys of the lists a runtime patch reaches (JobSetSpec, PodSpec, Container)
MERGE_KEYS = {"replicatedJobs": "name", "containers": "name", "initContainers": "name", "volumes": "name",
              "imagePullSecrets": "name", "schedulingGates": "name", "env": "name", "volumeMounts": "mountPath",
              "ports": "containerPort", "claims": "name"}


def runtime_ref(spec: dict[str, Any]) -> tuple[str, str]:
    """(kind, name) of the runtime, after the webhook's defaults (``ClusterTrainingRuntime``)."""
    ref = spec.get("runtimeRef") or {}
    return str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref.get("name") or "")


def strategic_merge(base: Any, patch: Any) -> Any:
    """``patch`` merged into ``base`` as a strategic merge patch over these types: maps merged key by key (a null
    deletes), lists with a merge key merged item by item (new items appended), other lists and values replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in MERGE_KEYS and isinstance(value, list) and isinstance(out.get(key), list):
                out[key] = _merge_list(out[key], value, MERGE_KEYS[key])
            else:
                out[key] = strategic_merge(out.get(key), value) if key in out else copy.deepcopy(value)
        return out
    return copy.deepcopy(patch)


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = [copy.deepcopy(item) for item in base]
    index = {item.get(key): i for i, item in enumerate(out) if isinstance(item, dict)}
    for item in patch:
        found = index.get(item.get(key)) if isinstance(item, dict) else None
        if found is None:
            out.append(copy.deepcopy(item))
        else:
            out[found] = strategic_merge(out[found], item)
    return out


def _upsert(items: list[dict[str, Any]], new: list[dict[str, Any]], key: str = "name") -> None:
    """``apply.UpsertEnvVars``/``UpsertPort``: replace the item of the same key in place, else append."""
    for item in new:
        for i, old in enumerate(items):
            if old.get(key) == item.get(key):
                items[i] = copy.deepcopy(item)
                break
        else:
            items.append(copy.deepcopy(item))


def _ancestor(rjob: dict[str, Any]) -> str | None:
    labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(ANCESTOR)
    return value if isinstance(value, str) else None


def containers_of(rjob: dict[str, Any]) -> list[dict[str, Any]]:
    spec = rjob.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
    containers: list[dict[str, Any]] = spec.setdefault("containers", [])
    return containers


def _value(text: Any) -> int:
    """``Quantity.Value()``: rounded up to a whole number; 0 where it does not parse (the schema said so)."""
    from kubedra.objects.quantity import Quantity, QuantityError

    try:
        return Quantity.parse(str(text)).scaled_value(0)
    except QuantityError:
        return 0


def _gpus(resources: dict[str, Any]) -> int:
    """``GetNumGPUPerNode``: the requests' first resource whose name has "gpu" in it, else the limits'."""
    found = 0
    for which in ("requests", "limits"):
        found = next((_value(v) for k, v in (resources.get(which) or {}).items() if "gpu" in k.lower()), 0)
        if found:
            return found
    return found


def _cpus(resources: dict[str, Any]) -> int:
    """``getNumCPUPerNode``: the cpu request, else (none, or zero) its limit."""
    request = (resources.get("requests") or {}).get("cpu")
    if request is not None and _value(request):
        return _value(request)
    limit = (resources.get("limits") or {}).get("cpu")
    return _value(limit) if limit is not None else 0


@dataclass(frozen=True)
class _Context:
    """What shaping one replicated job reads: the TrainJob's name and ``spec.trainer``, the runtime's ``mlPolicy``,
    the pod counts and the (patched) JobSet spec."""

    name: str
    spec: dict[str, Any]
    policy: Any
    counts: dict[str, int]
    js_spec: dict[str, Any]

    @property
    def trainer(self) -> dict[str, Any]:
        found: dict[str, Any] = self.spec.get("trainer") or {}
        return found


def trainjob_jobset(trainjob: dict[str, Any], runtime: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The JobSet the controller applies for ``trainjob`` from ``runtime``, and notes on what is not modelled."""
    meta, spec = trainjob["metadata"], trainjob.get("spec") or {}
    name, namespace = meta["name"], meta.get("namespace", "")
    rspec = runtime.get("spec") or {}
    policy = rspec.get("mlPolicy")
    labels, annotations, js_spec = patched_template(rspec.get("template") or {}, spec.get("runtimePatches") or [])
    context = _Context(name, spec, policy, _counts(js_spec, policy, spec.get("trainer") or {}), js_spec)
    for rjob in js_spec["replicatedJobs"]:
        _shape(rjob, context)
    notes: list[str] = []
    _mark_pods(js_spec, rspec.get("podGroupPolicy"), name, notes)
    js_spec["suspend"] = bool(spec.get("suspend", False))
    if isinstance(policy, dict):
        notes += [f"TrainJob {namespace}/{name}: mlPolicy.{kind}'s environment (and MPI's launcher, hostfile and "
                  "SSH keys) is not modelled; its pods are placed as the runtime's template makes them"
                  for kind in ("mpi", "jax", "xgboost", "flux") if policy.get(kind) is not None]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "ownerReferences": [{
        "apiVersion": API_VERSION, "kind": "TrainJob", "name": name, "uid": meta.get("uid", ""),
        "controller": True, "blockOwnerDeletion": True}]}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata, "spec": js_spec}, notes


def patched_template(template: dict[str, Any],
                     patches: list[Any]) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """The template's labels, annotations and spec with each runtime patch applied (``newRuntimeInfo``,
    ``mergeRuntimePatches``: the replicated jobs kept in the template's order)."""
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    js_spec = copy.deepcopy(template.get("spec") or {})
    order = {r.get("name"): i for i, r in enumerate(js_spec.get("replicatedJobs") or [])}
    for patch in patches:
        patched = ((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}
        labels.update((patched.get("metadata") or {}).get("labels") or {})
        annotations.update((patched.get("metadata") or {}).get("annotations") or {})
        if patched.get("spec") is not None:
            js_spec = strategic_merge(js_spec, patched["spec"])
    js_spec["replicatedJobs"] = sorted(js_spec.get("replicatedJobs") or [], key=lambda r: order.get(r.get("name"), 0))
    return labels, annotations, js_spec


def _shape(rjob: dict[str, Any], context: _Context) -> None:
    """One replicated job as ``newRuntimeInfo``, ``SyncParallelCount`` and the builder leave it."""
    ancestor, trainer = _ancestor(rjob), context.trainer
    if ancestor == TRAINER and context.policy is not None and trainer.get("resourcesPerNode") is not None:
        for container in containers_of(rjob):
            if container.get("name") == NODE:  # only its limits and requests: v2.3.0 drops the container's claims
                base = {k: v for k, v in (container.get("resources") or {}).items() if k in ("limits", "requests")}
                container["resources"] = strategic_merge(base, trainer["resourcesPerNode"])
                break
    if rjob.get("name") in context.counts:
        job = rjob.setdefault("template", {}).setdefault("spec", {})
        job["parallelism"] = job["completions"] = context.counts[rjob["name"]]
    if ancestor in (DATASET, MODEL):
        rjob["replicas"] = 1
        source = (context.spec.get("initializer") or {}).get("dataset" if ancestor == DATASET else "model")
        _initializer(rjob, ancestor, source)
    elif ancestor == TRAINER:
        rjob["replicas"] = 1
        _trainer(rjob, context)


def _mark_pods(js_spec: dict[str, Any], group_policy: Any, name: str, notes: list[str]) -> None:
    pod_labels, pod_annotations = _group_marks(group_policy, name, notes)
    for rjob in js_spec["replicatedJobs"]:
        pod = rjob.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        if pod_labels:
            pod.setdefault("metadata", {}).setdefault("labels", {}).update(pod_labels)
        if pod_annotations:
            pod.setdefault("metadata", {}).setdefault("annotations", {}).update(pod_annotations)


def _counts(js_spec: dict[str, Any], policy: Any, trainer: dict[str, Any]) -> dict[str, int]:
    """Each replicated job's pod count (``PodSet.Count``): its parallelism (default 1); the trainer's is the
    runtime's ``numNodes`` where it has an ``mlPolicy``, then the TrainJob's ``numNodes`` (torch's and plain ML's
    ``EnforceMLPolicy``; MPI and JAX set it their own way, not modelled beyond ``numNodes``)."""
    counts: dict[str, int] = {}
    for rjob in js_spec.get("replicatedJobs") or []:
        count = ((rjob.get("template") or {}).get("spec") or {}).get("parallelism")
        count = 1 if count is None else int(count)
        if _ancestor(rjob) == TRAINER:
            if isinstance(policy, dict):
                count = int(policy.get("numNodes", 1))
            if trainer.get("numNodes") is not None:
                count = int(trainer["numNodes"])
        counts[str(rjob.get("name"))] = count
    return counts


def _initializer(rjob: dict[str, Any], ancestor: str, source: Any) -> None:
    if not isinstance(source, dict):
        return
    for container in containers_of(rjob):
        if container.get("name") != ancestor:
            continue
        env = container.setdefault("env", [])
        if source.get("storageUri") is not None:
            _upsert(env, [{"name": STORAGE_URI, "value": source["storageUri"]}])
        _upsert(env, list(source.get("env") or []))
        if source.get("secretRef") is not None:
            container.setdefault("envFrom", []).append({"secretRef": {"name": source["secretRef"].get("name")}})


def _trainer(rjob: dict[str, Any], context: _Context) -> None:
    trainer, policy = context.trainer, context.policy
    for container in containers_of(rjob):
        if container.get("name") != NODE:
            continue
        for key in ("image", "command", "args"):
            if trainer.get(key) is not None:
                container[key] = copy.deepcopy(trainer[key])
        env = container.setdefault("env", [])
        _upsert(env, list(trainer.get("env") or []))
        if isinstance(policy, dict) and policy.get("torch") is not None:
            nodes = context.counts.get(str(rjob.get("name")), 1)
            _upsert(env, _torch_env(trainer, context.name, nodes, context.js_spec))
            _upsert(container.setdefault("ports", []), [{"containerPort": MASTER_PORT, "protocol": "TCP"}],
                    key="containerPort")
        if not env:
            del container["env"]
        break


def _torch_env(trainer: dict[str, Any], name: str, nodes: int, js_spec: dict[str, Any]) -> list[dict[str, Any]]:
    resources = trainer.get("resourcesPerNode") or _runtime_resources(js_spec) or {}
    per_node: str = "auto"
    if trainer.get("numProcPerNode") is not None:
        per_node = str(trainer["numProcPerNode"])
    elif _gpus(resources) == 0:
        per_node = str(max(1, _cpus(resources)))
    return [{"name": "PET_NNODES", "value": str(nodes)}, {"name": "PET_NPROC_PER_NODE", "value": per_node},
            {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}},
            {"name": "PET_MASTER_ADDR", "value": f"{name}-{NODE}-0-0.{name}"},
            {"name": "PET_MASTER_PORT", "value": str(MASTER_PORT)}]


def _runtime_resources(js_spec: dict[str, Any]) -> dict[str, Any] | None:
    """``ExtractResourcePerNodeFromRuntime``: the ``node`` container's resources of the replicated job named
    ``node`` or the trainer's."""
    for rjob in js_spec.get("replicatedJobs") or []:
        if rjob.get("name") == NODE or _ancestor(rjob) == TRAINER:
            for container in containers_of(rjob):
                if container.get("name") == NODE and container.get("resources") is not None:
                    found: dict[str, Any] = container["resources"]
                    return found
    return None


def _group_marks(policy: Any, name: str, notes: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    if not isinstance(policy, dict):
        return {}, {}
    if policy.get("coscheduling") is not None:
        notes.append(f"TrainJob {name}: podGroupPolicy.coscheduling makes a scheduler-plugins PodGroup, which "
                     "kube-scheduler does not read: its pods are scheduled one by one")
        return {POD_GROUP_LABEL: name}, {}
    if policy.get("volcano") is not None:
        notes.append(f"TrainJob {name}: podGroupPolicy.volcano makes a Volcano PodGroup, which kube-scheduler does "
                     "not read: its pods are scheduled one by one")
        return {}, {VOLCANO_GROUP: name}
    return {}, {}
