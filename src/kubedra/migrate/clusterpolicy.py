"""NVIDIA GPU Operator's ``ClusterPolicy`` (``nvidia.com/v1``): what a move to DRA has to read from it (pure).

Field names and defaults from NVIDIA/gpu-operator v26.7.0 (commit a22dbf6, ``api/nvidia/v1/clusterpolicy_types.go``
and ``deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml``): ``devicePlugin.{enabled, config {name,
default}, mps {root}}``, ``mig.strategy`` (enum none, single, mixed), ``migManager.config.name``, ``cdi.enabled``
(default true), ``dcgm.enabled``, ``dcgmExporter.enabled`` (default true), ``driver.enabled`` (default true),
``hostPaths.{rootFS, driverInstallDir, kubeletRootDir}``. ``spec.draDriver`` is not in that CRD; NVIDIA documents it
for OpenShift, so it is read when present. The settings become DRA install values in ``dradriver.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubedra.migrate.deviceplugin import CONFIG_LABEL

API_VERSION = "nvidia.com/v1"
KIND = "ClusterPolicy"
MIG_STRATEGIES = ("none", "single", "mixed")
MIG_CONFIG_LABEL = "nvidia.com/mig.config"


def is_cluster_policy(data: Any) -> bool:
    return isinstance(data, dict) and data.get("apiVersion") == API_VERSION and data.get("kind") == KIND


@dataclass
class Policy:
    """The settings of one ClusterPolicy a migration needs (defaults as the CRD sets them)."""

    name: str
    plugin_enabled: bool = True
    config_name: str | None = None
    config_default: str | None = None
    mps_root: str | None = None  # devicePlugin.mps set (its root, or the default /run/nvidia/mps)
    mig_strategy: str | None = None  # the CRD sets no default
    mig_config: str | None = None
    cdi_enabled: bool = True
    dcgm_enabled: bool = False
    dcgm_exporter_enabled: bool = True
    driver_enabled: bool = True
    host_paths: dict[str, str] = field(default_factory=dict)
    dra_driver: dict[str, Any] | None = None


def _section(spec: dict[str, Any], path: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    value: Any = spec
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return {}
    if not isinstance(value, dict):
        problems.append((f"spec.{path}", f"Invalid value: {value!r}: must be an object"))
        return {}
    return value


def _bool(section: dict[str, Any], key: str, path: str, default: bool, problems: list[tuple[str, str]]) -> bool:
    value = section.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        problems.append((f"spec.{path}.{key}", f"Invalid value: {value!r}: must be a boolean"))
        return default
    return value


def _string(section: dict[str, Any], key: str, path: str, problems: list[tuple[str, str]]) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        problems.append((f"spec.{path}.{key}", f"Invalid value: {value!r}: must be a string"))
        return None
    return value


def read_policy(data: dict[str, Any], configmaps: dict[str, set[str]]) -> tuple[Policy, list[tuple[str, str]]]:
    """The policy's settings and its problems as (field path, message). ``configmaps``: the input's ConfigMaps,
    name -> keys, to check that ``devicePlugin.config.default`` names a key of the ConfigMap it names."""
    problems: list[tuple[str, str]] = []
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    policy = Policy(name=str((metadata or {}).get("name") or ""))
    spec = data.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return policy, [("spec", "Invalid value: must be an object")]
    plugin = _section(spec, "devicePlugin", problems)
    policy.plugin_enabled = _bool(plugin, "enabled", "devicePlugin", True, problems)
    config = _section(spec, "devicePlugin.config", problems)
    policy.config_name = _string(config, "name", "devicePlugin.config", problems)
    policy.config_default = _string(config, "default", "devicePlugin.config", problems)
    if policy.config_default and not policy.config_name:
        problems.append(("spec.devicePlugin.config.name", "Required value: config.default names a key of the "
                                                          "ConfigMap config.name names"))
    keys = configmaps.get(policy.config_name or "")
    if policy.config_default and keys is not None and policy.config_default not in keys:
        known = ", ".join(f'"{k}"' for k in sorted(keys)) or "none"
        problems.append(("spec.devicePlugin.config.default",
                         f'Invalid value: "{policy.config_default}": not a key of ConfigMap {policy.config_name} '
                         f"(its keys: {known})"))
    if "mps" in plugin and plugin["mps"] is not None:
        mps = _section(spec, "devicePlugin.mps", problems)
        policy.mps_root = _string(mps, "root", "devicePlugin.mps", problems) or "/run/nvidia/mps"
    strategy = _section(spec, "mig", problems).get("strategy")
    if strategy is not None:
        if strategy not in MIG_STRATEGIES:
            shown = f'"{strategy}"' if isinstance(strategy, str) else repr(strategy)
            problems.append(("spec.mig.strategy", f"Unsupported value: {shown}: supported values: "
                                                  + ", ".join(f'"{s}"' for s in MIG_STRATEGIES)))
        else:
            policy.mig_strategy = strategy
    policy.mig_config = _string(_section(spec, "migManager.config", problems), "name", "migManager.config", problems)
    policy.cdi_enabled = _bool(_section(spec, "cdi", problems), "enabled", "cdi", True, problems)
    policy.dcgm_enabled = _bool(_section(spec, "dcgm", problems), "enabled", "dcgm", False, problems)
    policy.dcgm_exporter_enabled = _bool(_section(spec, "dcgmExporter", problems), "enabled", "dcgmExporter", True,
                                         problems)
    policy.driver_enabled = _bool(_section(spec, "driver", problems), "enabled", "driver", True, problems)
    paths = _section(spec, "hostPaths", problems)
    for key in ("rootFS", "driverInstallDir", "kubeletRootDir"):
        value = _string(paths, key, "hostPaths", problems)
        if value is not None:
            policy.host_paths[key] = value
    if spec.get("draDriver") is not None:
        policy.dra_driver = _section(spec, "draDriver", problems)
    return policy, problems


def policy_notes(policy: Policy, configmaps: dict[str, set[str]], install: str) -> list[str]:
    """What changes, said plainly: one note per setting that has no DRA twin or moves elsewhere."""
    notes = [
        "GPUCluster cannot take over a ClusterPolicy in place (NVIDIA's docs support greenfield GPUCluster only): "
        "move node by node with the standalone DRA driver chart, or build a new cluster with a GPUCluster"
        + (" (the helm values above are the chosen install, NVIDIA's fully supported one)" if install == "helm"
           else " (the GPUCluster written here is for that new cluster)"),
        "ClusterPolicy and GPUCluster must not both serve GPUs (the operator refuses a GPUCluster while a "
        "ClusterPolicy exists), and a node is served by the device plugin or by the DRA driver, never both",
    ]
    if not policy.plugin_enabled:
        notes.append("devicePlugin.enabled false: no node gets GPUs through this ClusterPolicy's device plugin; "
                     "nothing to switch node by node")
    if policy.config_name:
        keys = configmaps.get(policy.config_name)
        if keys is None:
            notes.append(f"devicePlugin.config.name {policy.config_name}: that ConfigMap is not among the inputs; "
                         "give it too to convert its configs to DeviceClasses")
        else:
            default = policy.config_default or "(none: nodes without the label get the plugin's built-in config)"
            notes.append(f"devicePlugin.config.default {default}: nodes without the label {CONFIG_LABEL} use it")
            for key in sorted(keys):
                notes.append(f"node label {CONFIG_LABEL}={key} selected config {key}: its DeviceClasses and driver "
                             f"values (nodeSelector {CONFIG_LABEL}: {key}) replace it; keep the label on those nodes")
            notes.append("time-slicing replicas were node-wide (every pod on a node got a replica of the node's "
                         "GPUs); in DRA sharing is per claim: a class's GpuConfig applies to the claims of that "
                         "class, and pods that share a GPU share one ResourceClaim")
    if policy.mps_root is not None:
        notes.append(f"devicePlugin.mps (root {policy.mps_root}): the DRA driver starts an MPS control daemon per "
                     "claim whose GpuConfig asks for MPS; feature gate MPSSupport")
    if policy.mig_strategy == "mixed":
        notes.append("mig.strategy mixed: resource names such as nvidia.com/mig-1g.10gb have no DRA resource name; "
                     "they become requests for DeviceClass mig.nvidia.com with a selector on the profile "
                     "(kubedra migrate rewrites such workloads so)")
    elif policy.mig_strategy == "single":
        notes.append("mig.strategy single: MIG slices were advertised as nvidia.com/gpu; in DRA they are devices of "
                     "DeviceClass mig.nvidia.com, and nvidia.com/gpu claims (class gpu.nvidia.com) get whole GPUs only")
    if policy.mig_config:
        notes.append(f"migManager.config {policy.mig_config}: MIG layouts stay as mig-parted sets them (node label "
                     f"{MIG_CONFIG_LABEL}); the DRA driver publishes the MIG devices it finds; GPUCluster runs no MIG "
                     "manager (DynamicMIG, alpha, creates them per claim instead)")
    if not policy.cdi_enabled:
        notes.append("cdi.enabled false: the DRA driver always injects devices through CDI; the container runtime "
                     "must support CDI (containerd 1.7+, CRI-O 1.23+)")
    if "rootFS" in policy.host_paths:
        notes.append(f"hostPaths.rootFS {policy.host_paths['rootFS']}: neither GPUCluster nor the driver's chart "
                     "has this setting")
    if policy.dra_driver is not None:
        notes.append("spec.draDriver: this ClusterPolicy already runs the DRA driver as an operand (a third model, "
                     "documented for OpenShift); its settings are carried where the target has a field")
    return notes
