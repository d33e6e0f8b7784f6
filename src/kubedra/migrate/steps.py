"""The steps a migration report lists: NVIDIA's DRA driver chart installed so that it serves no node yet, then node
by node: drained, its device plugin turned off, the driver's kubelet plugin let in (pure; commands as text).

The chart (``nvidia/nvidia-dra-driver-gpu``; NVIDIA/k8s-dra-driver-gpu commit 2240711, ``templates/validation.yaml``)
refuses to render with ``resources.gpus.enabled`` (its default) unless ``gpuResourcesEnabledOverride=true``: its
kubelet plugin must not serve a node where the device plugin still runs. So the install names a node label
(``kubeletPlugin.nodeSelector``) that each node gets only once its device plugin is off. The chart has no
consumable shares: time-slicing's ``consumableShares`` (driver-values.yaml) are kubedra's own chart's
``sharing.consumableShares``; NVIDIA's driver shares a GPU among the pods of one claim (GpuConfig ``TimeSlicing``).
"""

from __future__ import annotations

from kubedra.migrate.dradriver import PLUGIN_LABEL, VALUES_FILE
from kubedra.migrate.model import Migration, Mode, Options

CHART = "nvidia/nvidia-dra-driver-gpu"
RELEASE = "nvidia-dra-driver-gpu"
DEVICE_PLUGIN_OFF = "nvidia.com/gpu.deploy.device-plugin=false"


def install(values_file: bool) -> str:
    """The chart's install, serving no node until one is labelled."""
    escaped = PLUGIN_LABEL.replace(".", "\\.")
    settings = (f"-f {VALUES_FILE}" if values_file else
                f"--set gpuResourcesEnabledOverride=true --set-string 'kubeletPlugin.nodeSelector.{escaped}=true'")
    return (f"helm upgrade --install {RELEASE} {CHART} --namespace {RELEASE} --create-namespace {settings}"
            "   # the chart refuses GPUs without gpuResourcesEnabledOverride (no node may run the device plugin too); "
            f"its kubelet plugin runs only on nodes labelled {PLUGIN_LABEL}=true")


def per_node() -> list[str]:
    """One node (or pool) at a time; the device plugin keeps serving the others."""
    return [
        "kubectl cordon <node> && kubectl drain <node> --ignore-daemonsets --delete-emptydir-data   # node by node, "
        "or pool by pool (-l <pool label>); kubedra migrate plan orders them",
        f"kubectl label node <node> {DEVICE_PLUGIN_OFF}   # the GPU Operator stops its device plugin there; wait "
        "until the node's allocatable nvidia.com/gpu is 0",
        f"kubectl label node <node> {PLUGIN_LABEL}=true && kubectl uncordon <node>   # the DRA driver serves it: "
        "kubectl get resourceslices --field-selector spec.nodeName=<node>",
    ]


def steps(result: Migration, options: Options, classes: list[str], policy: bool) -> list[str]:
    """The order of steps for the cluster (the seed's helm/kubectl steps, with the real chart and resource names);
    ``classes``: the DeviceClasses the converted claims use; ``policy``: a ClusterPolicy was read."""
    added_classes = sorted({c.location.object.split("/", 1)[1] for c in result.changes
                            if c.location.object.startswith("DeviceClass/") and c.action == "added"})
    templates = sorted({(c.location.object.split("/", 1)[1]) for c in result.changes
                        if c.location.object.startswith("ResourceClaimTemplate/") and c.action == "added"})
    if policy and options.dra_install == "gpucluster":
        return ["on a new cluster with GPU Operator v26.7.0+ (no ClusterPolicy): kubectl apply -f <the GPUCluster "
                "above>", "kubectl get gpucluster gpu-cluster -o jsonpath='{.status.state}'   # ready",
                *_workloads(added_classes, templates, options)]
    out = ["helm repo add nvidia https://helm.ngc.nvidia.com/nvidia && helm repo update",
           install(result.dra_values is not None),
           "kubectl get deviceclasses" + (f" {' '.join(classes)}" if classes else "")]
    if any("consumableShares" in v for v in result.driver_values):
        out.append("# driver-values.yaml's consumableShares are kubedra's chart's sharing.consumableShares "
                   "(deploy/helm/kubedra); NVIDIA's driver has none: there, pods share a GPU by sharing one claim")
    return [*out, *_workloads(added_classes, templates, options, nodes=per_node())]


def _workloads(added_classes: list[str], templates: list[str], options: Options,
               nodes: list[str] | None = None) -> list[str]:
    out = []
    if added_classes:
        out.append(f"kubectl apply -f <the DeviceClasses above>   # {', '.join(added_classes)}")
    out.append("kubectl apply -f <the migrated manifests>   # templates come before the workloads that use them")
    if templates:
        out.append(f"kubectl get resourceclaimtemplates -A | grep -E '{'|'.join(templates)}'")
    out.extend(nodes or [])
    out.append("kubectl get resourceclaims -A   # one claim per pod, allocated when the pod is scheduled")
    out.append("kubectl describe pod <pod> | grep -A 5 Events:")
    if options.mode is Mode.extended_resource:
        out.append("kubectl get pods -A -o custom-columns=NAME:.metadata.name,CLAIM:.status.extendedResourceClaimStatus"
                   ".resourceClaimName   # pods served through DRA")
    return out
