"""``kubedra migrate`` reads the GPU Operator's ClusterPolicy (issue 42): its DRA side (the standalone chart's values
or a GPUCluster), the DeviceClasses of its ConfigMap's keys, a note for every setting with no DRA twin, and exit 2
naming file, object and field for a malformed policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.migrate.test_migrate import documents, run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "migrate" / "gpu-operator"


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    code, out, err = run(capsys, "migrate", *argv, "--report-format", "json")
    assert code == 0, err
    return documents(out), json.loads(err)


def test_helm_install_writes_chart_values_and_keeps_the_policy(capsys: pytest.CaptureFixture[str]) -> None:
    docs, data = report(capsys, str(EXAMPLE))
    kinds = [d["kind"] for d in docs]
    assert kinds == ["ClusterPolicy", "ConfigMap", "DeviceClass", "DeviceClass", "DeviceClass"]
    assert "GPUCluster" not in kinds
    # NVIDIA's chart refuses GPUs without the override; its kubelet plugin goes only where nodes are let in.
    assert data["draDriverValues"] == {
        "gpuResourcesEnabledOverride": True, "nvidiaDriverRoot": "/run/nvidia/driver",
        "featureGates": {"TimeSlicingSettings": True},
        "kubeletPlugin": {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"}},
    }
    values = {v["config"]: v for v in data["driverValues"]}
    assert set(values) == {"a100-40gb", "l4"}
    assert values["a100-40gb"]["nodeSelector"] == {"nvidia.com/device-plugin.config": "a100-40gb"}
    assert values["l4"]["nodeSelector"] == {"nvidia.com/device-plugin.config": "l4"}
    install = next(s for s in data["steps"] if s.startswith("helm upgrade --install"))
    assert install.startswith("helm upgrade --install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu --namespace "
                              "nvidia-dra-driver-gpu --create-namespace -f nvidia-dra-driver-gpu-values.yaml ")
    assert "consumableShares" not in install  # not a value of NVIDIA's chart
    order = [next(i for i, s in enumerate(data["steps"]) if marker in s) for marker in
             ("helm upgrade", "kubectl drain", "nvidia.com/gpu.deploy.device-plugin=false",
              "nvidia.com/dra-kubelet-plugin=true && kubectl uncordon")]
    assert order == sorted(order)  # the device plugin is off on a node before the DRA driver is let in


def test_output_dir_writes_a_values_file_helm_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "migrate", str(EXAMPLE), "--output-dir", str(tmp_path / "out"), "-q")
    assert code == 0, err
    values = yaml.safe_load((tmp_path / "out" / "nvidia-dra-driver-gpu-values.yaml").read_text())
    assert values["gpuResourcesEnabledOverride"] is True and "config" not in values


def test_policy_default_key_gets_the_plain_class_names(capsys: pytest.CaptureFixture[str]) -> None:
    docs, _ = report(capsys, str(EXAMPLE))
    classes = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "DeviceClass"}
    assert set(classes) == {"gpu.nvidia.com", "mig-1g.5gb.nvidia.com", "l4.gpu.nvidia.com"}
    gpu = classes["gpu.nvidia.com"]
    assert gpu["extendedResourceName"] == "nvidia.com/gpu"
    params = gpu["config"][0]["opaque"]["parameters"]
    assert params["kind"] == "GpuConfig" and params["sharing"]["strategy"] == "TimeSlicing"
    assert "extendedResourceName" not in classes["l4.gpu.nvidia.com"]


def test_gpucluster_install_writes_the_singleton_after_the_policy(capsys: pytest.CaptureFixture[str]) -> None:
    docs, data = report(capsys, str(EXAMPLE), "--dra-install", "gpucluster")
    kinds = [d["kind"] for d in docs]
    assert kinds[:2] == ["ClusterPolicy", "GPUCluster"]
    cluster = docs[1]
    assert cluster["apiVersion"] == "nvidia.com/v1alpha1"
    assert cluster["metadata"] == {"name": "gpu-cluster"}
    assert cluster["spec"] == {
        "dcgmExporter": {"enabled": True},
        "draDriver": {"featureGates": {"TimeSlicingSettings": True}},
        "hostPaths": {"driverInstallDir": "/run/nvidia/driver"},
    }
    assert not any(v["config"].startswith("ClusterPolicy/") for v in data["driverValues"])
    assert any("GPUCluster" in s for s in data["steps"])
    added = [c for c in data["changes"] if c["object"] == "GPUCluster/gpu-cluster"]
    assert added and added[0]["action"] == "added"


def test_a_second_run_adds_no_second_gpucluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "migrate", str(EXAMPLE), "--dra-install", "gpucluster", "-q")
    assert code == 0, err
    (tmp_path / "once.yaml").write_text(out)
    code, again, err = run(capsys, "migrate", str(tmp_path / "once.yaml"), "--dra-install", "gpucluster", "-q")
    assert code == 0, err
    assert again == out


NOTES = [
    "mig.strategy mixed: resource names such as nvidia.com/mig-1g.10gb have no DRA resource name",
    "DeviceClass mig.nvidia.com with a selector on the profile",
    "time-slicing replicas were node-wide",
    "sharing is per claim",
    "GPUCluster cannot take over a ClusterPolicy in place",
    "node by node with the standalone DRA driver chart",
    "ClusterPolicy and GPUCluster must not both serve GPUs",
    "node label nvidia.com/device-plugin.config=a100-40gb selected config a100-40gb",
    "node label nvidia.com/device-plugin.config=l4 selected config l4",
    "migManager.config custom-mig-config",
    "hostPaths.rootFS /: neither GPUCluster nor the driver's chart has this setting",
    "feature gate ConsumableShares: not a gate of the DRA driver",
]


@pytest.mark.parametrize("install", ["helm", "gpucluster"])
def test_every_setting_without_a_dra_twin_is_said_plainly(capsys: pytest.CaptureFixture[str], install: str) -> None:
    _, data = report(capsys, str(EXAMPLE), "--dra-install", install)
    messages = [d["message"] for d in data["decisions"] if d["object"] == "ClusterPolicy/cluster-policy"]
    for note in NOTES:
        assert any(note in m for m in messages), note


# What the published CRD (gpu-operator v26.7.0) requires of every ClusterPolicy's spec; the chart always writes them.
REQUIRED = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd", "nodeStatusExporter", "operator",
            "toolkit")


def policy(spec: str) -> str:
    spec += "".join(f"  {key}: {{}}\n" for key in REQUIRED if f"  {key}:" not in spec)
    return f"apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: cp\nspec:\n{spec}"


CONFIGMAP = ("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ts, namespace: gpu-operator}\ndata:\n"
             "  any: |-\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
             "        - {name: nvidia.com/gpu, replicas: 2}\n")


def test_mps_single_strategy_and_settings_the_target_lacks(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    path = tmp_path / "cp.yaml"
    path.write_text(policy("  devicePlugin:\n    enabled: false\n    mps: {root: /run/nvidia/mps}\n"
                           "    config: {name: elsewhere}\n  mig: {strategy: single}\n  cdi: {enabled: false}\n"
                           "  driver: {enabled: false}\n  dcgm: {enabled: true}\n  dcgmExporter: {enabled: false}\n"
                           "  hostPaths: {kubeletRootDir: /data/kubelet}\n"))
    docs, data = report(capsys, str(path))
    assert [d["kind"] for d in docs] == ["ClusterPolicy"]
    assert data["draDriverValues"] == {
        "gpuResourcesEnabledOverride": True, "featureGates": {"MPSSupport": True},
        "kubeletPlugin": {"kubeletRegistrarDirectoryPath": "/data/kubelet/plugins_registry",
                          "kubeletPluginsDirectoryPath": "/data/kubelet/plugins",
                          "nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"}}}
    messages = " | ".join(d["message"] for d in data["decisions"])
    for note in ("devicePlugin.enabled false", "devicePlugin.mps (root /run/nvidia/mps)", "mig.strategy single",
                 "cdi.enabled false", "ConfigMap is not among the inputs"):
        assert note in messages
    docs, _ = report(capsys, str(path), "--dra-install", "gpucluster")
    assert docs[1]["spec"] == {"dcgm": {"enabled": True}, "dcgmExporter": {"enabled": False},
                               "draDriver": {"featureGates": {"MPSSupport": True}},
                               "hostPaths": {"kubeletRootDir": "/data/kubelet"}}


BAD = {
    "mig-strategy": (policy("  mig: {strategy: partial}\n"),
                     'cp.yaml[0]: ClusterPolicy/cp: spec.mig.strategy: Unsupported value: "partial": supported '
                     'values: "none", "single", "mixed"'),
    "default-not-a-key": (policy("  devicePlugin:\n    config: {name: ts, default: h100}\n") + CONFIGMAP,
                          'cp.yaml[0]: ClusterPolicy/cp: spec.devicePlugin.config.default: Invalid value: "h100": '
                          'not a key of ConfigMap ts (its keys: "any")'),
    "default-without-name": (policy("  devicePlugin:\n    config: {default: any}\n"),
                             "ClusterPolicy/cp: spec.devicePlugin.config.name: Required value"),
    "enabled-not-bool": (policy("  devicePlugin: {enabled: 'yes'}\n"),
                         'ClusterPolicy/cp: spec.devicePlugin.enabled: Invalid value: "string": '
                         'spec.devicePlugin.enabled in body must be of type boolean: "string"'),
    "mig-not-object": (policy("  mig: mixed\n"), 'ClusterPolicy/cp: spec.mig: Invalid value: "string": spec.mig in '
                                                  'body must be of type object: "string"'),
    "missing-required": (policy("").replace("  toolkit: {}\n", ""), "ClusterPolicy/cp: spec.toolkit: Required value"),
}


@pytest.mark.parametrize(("text", "message"), BAD.values(), ids=list(BAD))
def test_a_malformed_policy_exits_2_naming_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      text: str, message: str) -> None:
    (tmp_path / "cp.yaml").write_text(text)
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "migrate", str(tmp_path / "cp.yaml"), "--output-dir", str(out_dir))
    assert code == 2
    assert message in err
    assert out == "" and not out_dir.exists()


def test_an_unknown_install_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "migrate", str(EXAMPLE), "--dra-install", "operator")
    assert code == 2
    assert "--dra-install" in err
