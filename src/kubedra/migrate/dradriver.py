"""The DRA side of a ClusterPolicy: values for the standalone DRA driver chart, or a ``GPUCluster`` (pure).

Standalone chart: NVIDIA/k8s-dra-driver-gpu at commit 2240711 (chart dra-driver-nvidia-gpu 0.5.0-dev,
``deployments/helm/dra-driver-nvidia-gpu/values.yaml``): ``nvidiaDriverRoot`` (``/`` for a host-installed driver,
``/run/nvidia/driver`` under the operator's driver container), ``featureGates``,
``kubeletPlugin.kubeletRegistrarDirectoryPath`` and ``kubeletPluginsDirectoryPath``. Its feature gates
(``pkg/featuregates/featuregates.go``) are the names in ``DRIVER_GATES``. GPUCluster: NVIDIA/gpu-operator v26.7.0
(commit a22dbf6, ``api/nvidia/v1alpha1/gpucluster_types.go``): a singleton whose CRD pins ``metadata.name`` to
``gpu-cluster``; ``spec.draDriver`` is required, ``dcgm``, ``dcgmExporter`` and ``hostPaths {driverInstallDir,
kubeletRootDir}`` are optional.
"""

from __future__ import annotations

from typing import Any

from kubedra.migrate.clusterpolicy import Policy

GPU_CLUSTER_VERSION = "nvidia.com/v1alpha1"
GPU_CLUSTER_NAME = "gpu-cluster"
INSTALLS = ("helm", "gpucluster")
DRIVER_GATES = frozenset({"TimeSlicingSettings", "MPSSupport", "IMEXDaemonsWithDNSNames", "PassthroughSupport",
                          "NVMLDeviceHealthCheck", "DynamicMIG", "ComputeDomainCliques", "CrashOnNVLinkFabricErrors",
                          "DeviceMetadata"})
KUBELET_ROOT = "/var/lib/kubelet"
PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"  # kubedra's choice: nodes get it once their device plugin is off
VALUES_FILE = "nvidia-dra-driver-gpu-values.yaml"
CONTAINER_DRIVER_ROOT = "/run/nvidia/driver"


def driver_gates(policy: Policy, pool_gates: dict[str, bool]) -> tuple[dict[str, bool], list[str]]:
    """The driver's feature gates the policy and its converted configs imply, and a note per gate the driver
    does not know (left out: the driver refuses an unknown gate)."""
    wanted = dict(pool_gates)
    if policy.mps_root is not None:
        wanted["MPSSupport"] = True
    dra = policy.dra_driver or {}
    if isinstance(dra.get("featureGates"), dict):
        wanted.update({str(k): bool(v) for k, v in dra["featureGates"].items()})
    gates = {k: v for k, v in sorted(wanted.items()) if k in DRIVER_GATES}
    notes = [f"feature gate {k}: not a gate of the DRA driver (chart 0.5.0-dev), left out of the install; the "
             "per-pool values keep it" for k in sorted(wanted) if k not in DRIVER_GATES]
    return gates, notes


def helm_values(policy: Policy, gates: dict[str, bool]) -> dict[str, Any]:
    """Values for ``helm upgrade --install ... -f`` of the standalone chart: GPUs let in
    (``gpuResourcesEnabledOverride``: the chart refuses them otherwise), its kubelet plugin only on nodes labelled
    ``PLUGIN_LABEL`` (those whose device plugin is off), what differs from its defaults, and the gates."""
    values: dict[str, Any] = {"gpuResourcesEnabledOverride": True}
    root = policy.host_paths.get("driverInstallDir") or (CONTAINER_DRIVER_ROOT if policy.driver_enabled else None)
    if root and root != "/":
        values["nvidiaDriverRoot"] = root
    if gates:
        values["featureGates"] = gates
    kubelet = policy.host_paths.get("kubeletRootDir")
    if kubelet and kubelet.rstrip("/") != KUBELET_ROOT:
        base = kubelet.rstrip("/")
        values["kubeletPlugin"] = {"kubeletRegistrarDirectoryPath": f"{base}/plugins_registry",
                                   "kubeletPluginsDirectoryPath": f"{base}/plugins"}
    values.setdefault("kubeletPlugin", {})["nodeSelector"] = {PLUGIN_LABEL: "true"}
    return values


def gpu_cluster(policy: Policy, gates: dict[str, bool]) -> dict[str, Any]:
    """The GPUCluster that carries over what maps (keys sorted as kubedra writes objects)."""
    dra: dict[str, Any] = {}
    source = policy.dra_driver or {}
    for key in ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets"):
        if source.get(key) not in (None, "", []):
            dra[key] = source[key]
    if gates:
        dra["featureGates"] = gates
    spec: dict[str, Any] = {"draDriver": dra, "dcgmExporter": {"enabled": policy.dcgm_exporter_enabled}}
    if policy.dcgm_enabled:
        spec["dcgm"] = {"enabled": True}
    paths = {k: v for k, v in policy.host_paths.items() if k in ("driverInstallDir", "kubeletRootDir")}
    if paths:
        spec["hostPaths"] = paths
    return {"apiVersion": GPU_CLUSTER_VERSION, "kind": "GPUCluster", "metadata": {"name": GPU_CLUSTER_NAME},
            "spec": spec}
