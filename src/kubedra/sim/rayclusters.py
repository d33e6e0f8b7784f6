"""KubeRay RayCluster (``ray.io/v1``) as ray-operator v1.5.0 (github.com/ray-project/kuberay/ray-operator@v1.5.0)
makes its pods, read from ``controllers/ray/raycluster_controller.go`` (``reconcilePods``, ``buildHeadPod``,
``buildWorkerPod``), ``controllers/ray/common/pod.go`` (``DefaultHeadPodTemplate``, ``DefaultWorkerPodTemplate``,
``labelPod``, ``mergeLabels``, ``BuildAutoscalerContainer``), ``controllers/ray/utils/util.go`` (``PodName``,
``GetWorkerGroupDesiredReplicas``), ``controllers/ray/utils/validation.go`` (``ValidateRayClusterMetadata``,
``ValidateRayClusterSpec``) and ``apis/ray/v1/raycluster_types.go`` (fields and CRD defaults).

**Pods.** One head pod ``<cluster>-head-<5 chars>`` (``PodName``: a generateName, the prefix cut to 50 characters
and lower-cased) from ``headGroupSpec.template``; per worker group ``<cluster>-<group>-worker-<5 chars>`` from its
template, ``GetWorkerGroupDesiredReplicas`` of them: ``replicas`` (CRD default 0) clamped to
``[minReplicas, maxReplicas]`` (defaults 0 and 2147483647; min above max gives max), times ``numOfHosts``
(default 1, at most 0 taken as 1 as ``reconcilePods`` does), 0 for a suspended group. ``spec.suspend`` makes no
pods. Labels (``labelPod``): ``ray.io/is-ray-node: yes``, ``ray.io/cluster``, ``ray.io/node-type`` (head|worker),
``ray.io/group`` (``headgroup`` for the head), ``ray.io/identifier`` (``<cluster>-<node-type>``),
``app.kubernetes.io/name: kuberay``, ``app.kubernetes.io/created-by: kuberay-operator``, over the template's labels
and the group's ``labels`` (which may not override cluster, node-type or group). Owned by the RayCluster.

What changes scheduling is carried: workers get the ``wait-gcs-ready`` init container (200m CPU, 256Mi, the
operator's default ``ENABLE_INIT_CONTAINER_INJECTION``), and with ``enableInTreeAutoscaling`` the head gets the
``autoscaler`` container (500m CPU, 512Mi, or ``autoscalerOptions.resources``), and with ``autoscalerOptions.version:
v2`` as well every pod gets ``restartPolicy: Never``. GPUs come from the Ray container's
``nvidia.com/gpu`` limits or the template's ``resourceClaims``, as for any pod.

**Not modelled.** Autoscaling: the pod count is ``replicas`` clamped to ``[min, max]`` and stays so. The head
Service, ``rayStartParams`` and the generated ``ray start`` command, environment variables, probes, the metrics
port, the ``/dev/shm`` volume, GCS fault tolerance, ``RayMultiHostIndexing`` labels (an alpha gate, off) and status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cluster.gpuslices import stable_uid
from kubedra.cluster.nodepool import Strict
from kubedra.objects.model import Container, Int32, OwnerReference, Pod, ResourceRequirements
from kubedra.objects.validate import validate_pod_spec
from kubedra.sim.jobsets import dns1035, quote
from kubedra.sim.manifests import PodTemplate, _Doc

if TYPE_CHECKING:
    from kubedra.objects.errors import Location
    from kubedra.sim.workloads import _Expander

API_VERSION = "ray.io/v1"
VERSION = "ray-operator v1.5.0"
MAX_INT32 = 2**31 - 1
MAX_NAME = 53  # MaxRayClusterNameLength
PREFIX_MAX = 50  # PodName's maxPrefixLength
HEAD_GROUP = "headgroup"  # RayNodeHeadGroupLabelValue
PROTECTED = ("ray.io/node-type", "ray.io/group", "ray.io/cluster")  # labels labelPod does not let a template override
START_RESOURCES = ("num-cpus", "num-gpus", "memory", "resources")  # validateRayGroupResources


class AutoscalerOptions(Strict, kw_only=True):
    resources: ResourceRequirements | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    security_context: Any = None
    idle_timeout_seconds: Int32 | None = None
    upscaling_mode: str | None = None
    version: str | None = None
    env: Any = None
    env_from: Any = None
    volume_mounts: Any = None


class HeadGroupSpec(Strict, kw_only=True):
    template: PodTemplate
    head_service: Any = None
    enable_ingress: bool | None = None
    resources: dict[str, str] = {}
    labels: dict[str, str] = {}
    ray_start_params: dict[str, str] = {}
    service_type: str = ""


class WorkerGroupSpec(Strict, kw_only=True):
    suspend: bool | None = None
    group_name: str = ""
    replicas: Int32 | None = 0  # the CRD's defaults
    min_replicas: Int32 = 0
    max_replicas: Int32 = MAX_INT32
    idle_timeout_seconds: Int32 | None = None
    resources: dict[str, str] = {}
    labels: dict[str, str] = {}
    ray_start_params: dict[str, str] = {}
    template: PodTemplate
    scale_strategy: Any = None
    num_of_hosts: Int32 = 1


class RayClusterSpec(Strict, kw_only=True):
    suspend: bool | None = None
    managed_by: str | None = None
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: dict[str, str] = {}
    enable_in_tree_autoscaling: bool | None = None
    gcs_fault_tolerance_options: Any = None
    head_group_spec: HeadGroupSpec
    ray_version: str = ""
    worker_group_specs: list[WorkerGroupSpec] = []


class RayClusterDoc(_Doc, kw_only=True):
    """``ray.io/v1`` RayCluster: a head pod and worker groups' pods (:mod:`kubedra.sim.rayclusters`)."""

    spec: RayClusterSpec
    status: Any = None


def desired_workers(group: WorkerGroupSpec) -> int:
    """``GetWorkerGroupDesiredReplicas``: 0 when suspended; min above max gives max; replicas clamped to
    [min, max]; times numOfHosts (``reconcilePods`` takes numOfHosts <= 0 as 1); never below 0."""
    if group.suspend:
        return 0
    if group.min_replicas > group.max_replicas:
        replicas = group.max_replicas
    elif group.replicas is None or group.replicas < group.min_replicas:
        replicas = group.min_replicas
    else:
        replicas = min(group.replicas, group.max_replicas)
    return max(0, replicas * max(1, group.num_of_hosts))


def pod_prefix(prefix: str, node_type: str) -> str:
    """``PodName`` as a generateName: the prefix cut to 50 characters, ``-<node type>-``, lower-cased."""
    return f"{prefix[:PREFIX_MAX]}-{node_type}-".lower()


def ray_labels(cluster: str, node_type: str, group: str, template: dict[str, str], extra: dict[str, str]) -> dict[
        str, str]:
    """``labelPod`` over ``mergeLabels(template labels, group labels)``."""
    identifier = f"{cluster}-{node_type}"
    if len(identifier) > 63:  # CheckLabel keeps the last 63 characters
        identifier = identifier[len(identifier) - 63:]
    if identifier[0] in "-_.":
        identifier = "r" + identifier[1:]
    labels = {"ray.io/is-ray-node": "yes", "ray.io/cluster": cluster, "ray.io/node-type": node_type,
              "ray.io/group": group, "ray.io/identifier": identifier, "app.kubernetes.io/name": "kuberay",
              "app.kubernetes.io/created-by": "kuberay-operator"}
    merged = {**template, **extra}
    labels.update({k: v for k, v in merged.items() if k not in PROTECTED})
    return labels


def cluster_problems(name: str, spec: RayClusterSpec, *, prefix: str = "spec.",
                     name_max: int = MAX_NAME, kind: str = "RayCluster") -> list[tuple[str, str]]:
    """``ValidateRayClusterMetadata`` (``name_max`` 0: no name, a RayJob's cluster) and ``ValidateRayClusterSpec``
    with the pod templates' checks: (field, message)."""
    out: list[tuple[str, str]] = []
    if name_max:
        if len(name) > name_max:
            out.append(("metadata.name", f"Invalid value: {quote(name)}: {kind} name should be no more than "
                                         f"{name_max} characters"))
        out += [("metadata.name", f"Invalid value: {quote(name)}: {m}") for m in dns1035(name)]
    head = spec.head_group_spec
    groups: list[tuple[str, str, Any]] = [(f"{prefix}headGroupSpec", "Head", head)]
    groups += [(f"{prefix}workerGroupSpecs[{i}]", g.group_name, g) for i, g in enumerate(spec.worker_group_specs)]
    autoscaling = bool(spec.enable_in_tree_autoscaling)
    seen: set[str] = set()
    for path, group_name, group in groups:
        template: PodTemplate = group.template
        if not template.spec.containers:
            which = "headGroupSpec" if group is head else "workerGroupSpec"
            out.append((f"{path}.template.spec.containers", f"Required value: {which} should have at least one "
                                                            "container"))
        if any(group.ray_start_params.get(k) for k in START_RESOURCES) and group.resources:
            out.append((f"{path}.resources", f"Invalid value: resource fields should not be set in both "
                                             f"rayStartParams and Resources for {group_name} group; please use "
                                             "only one"))
        if "labels" in group.ray_start_params:
            out.append((f"{path}.rayStartParams.labels", f"Forbidden: rayStartParams['labels'] is not supported for "
                                                         f"{group_name} group; please use the top-level Labels "
                                                         "field instead"))
        out += validate_pod_spec(template.spec, f"{path}.template.spec", template.metadata.labels)
        if group is head:
            continue
        if not group.group_name:
            out.append((f"{path}.groupName", "Required value"))
        elif group.group_name in seen:
            out.append((f"{path}.groupName", f"Duplicate value: {quote(group.group_name)}"))
        seen.add(group.group_name)
        if group.suspend and autoscaling:
            out.append((f"{path}.suspend", f"Invalid value: true: worker group {group_name} cannot be suspended "
                                           "with Autoscaler enabled"))
    return out


def _autoscaler(spec: RayClusterSpec, image: str) -> Container:
    """``BuildAutoscalerContainer`` with ``mergeAutoscalerOverrides``' resources and image."""
    options = spec.autoscaler_options
    resources = ResourceRequirements(limits={"cpu": "500m", "memory": "512Mi"},
                                     requests={"cpu": "500m", "memory": "512Mi"})
    if options is not None and options.resources is not None:
        resources = options.resources
    if options is not None and options.image:
        image = options.image
    return Container(name="autoscaler", image=image, resources=resources)


def _wait_gcs(template: PodTemplate) -> Container:
    """``DefaultWorkerPodTemplate``'s ``wait-gcs-ready`` init container (resources fixed by the operator)."""
    return Container(name="wait-gcs-ready", image=template.spec.containers[0].image,
                     resources=ResourceRequirements(limits={"cpu": "200m", "memory": "256Mi"},
                                                    requests={"cpu": "200m", "memory": "256Mi"}))


def cluster_pods(exp: _Expander, name: str, namespace: str, spec: RayClusterSpec, uid: str) -> list[Pod]:
    """The head pod then each worker group's pods, as ``reconcilePods`` makes them in one pass."""
    if spec.suspend:
        return []
    ref = OwnerReference(api_version=API_VERSION, kind="RayCluster", name=name, uid=uid, controller=True,
                         block_owner_deletion=True)
    owner = f"RayCluster/{namespace}/{name}"
    head = spec.head_group_spec
    template = head.template
    # IsAutoscalingV2Enabled: DefaultHeadPodTemplate and DefaultWorkerPodTemplate set restartPolicy Never
    never = bool(spec.enable_in_tree_autoscaling) and spec.autoscaler_options is not None and \
        spec.autoscaler_options.version == "v2"
    if spec.enable_in_tree_autoscaling:
        containers = [*template.spec.containers, _autoscaler(spec, template.spec.containers[0].image)]
        template = msgspec.structs.replace(template, spec=msgspec.structs.replace(
            template.spec, containers=containers, **({"restart_policy": "Never"} if never else {})))
    labels = ray_labels(name, "head", HEAD_GROUP, template.metadata.labels, head.labels)
    pods = [exp.pod(exp.unique(namespace, pod_prefix(name, "head"), owner), namespace, template, labels, ref)]
    for group in spec.worker_group_specs:
        template = group.template
        init = [*template.spec.init_containers, _wait_gcs(template)]
        template = msgspec.structs.replace(template, spec=msgspec.structs.replace(
            template.spec, init_containers=init, **({"restart_policy": "Never"} if never else {})))
        labels = ray_labels(name, "worker", group.group_name, template.metadata.labels, group.labels)
        prefix = pod_prefix(f"{name}-{group.group_name}", "worker")
        pods += [exp.pod(exp.unique(namespace, prefix, owner), namespace, template, labels, ref)
                 for _ in range(desired_workers(group))]
    return pods


def expand_raycluster(exp: _Expander, where: Location, doc: RayClusterDoc, namespace: str) -> None:
    """A RayCluster's pods, arriving together at its ``kubedra.io/start-after``; they run for its (or their
    template's) ``kubedra.io/run-for``, else to the end."""
    from kubedra.sim.workloads import PodArrival

    name, spec = doc.metadata.name, doc.spec
    for path, message in cluster_problems(name, spec):
        exp.bad(where, path, message)
    head_timing = exp.timing(where, doc.metadata, spec.head_group_spec.template.metadata,
                             "spec.headGroupSpec.template.")
    timings = [head_timing] + [exp.timing(where, doc.metadata, g.template.metadata,
                                          f"spec.workerGroupSpecs[{i}].template.")
                               for i, g in enumerate(spec.worker_group_specs)]
    if exp.problems:
        return
    uid = doc.metadata.uid or stable_uid("RayCluster", namespace, name)
    owner = f"RayCluster/{namespace}/{name}"
    by_group = {HEAD_GROUP: timings[0], **{g.group_name: timings[i + 1]
                                           for i, g in enumerate(spec.worker_group_specs)}}
    for pod in cluster_pods(exp, name, namespace, spec, uid):
        arrive_at, run_for = by_group[pod.metadata.labels["ray.io/group"]]
        exp.add(arrive_at, PodArrival(pod, arrive_at, run_for, owner))
