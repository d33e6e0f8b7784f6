"""Render and lint deploy/helm/kubedra with the real helm; the value combinations the chart documents."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "kubedra"

# Each documented value (values.yaml) on its own and in the combinations users pick; ids name them in reports.
COMBINATIONS: dict[str, list[str]] = {
    "defaults": [],
    "v1beta2": ["resourceApiVersion=v1beta2"],
    "v1beta1": ["resourceApiVersion=v1beta1"],
    "shares": ["sharing.consumableShares=4", "sharing.timeSlicing.interval=Long"],
    "shares-memory": ["sharing.consumableShares=memory"],
    "shares-v1beta2": ["resourceApiVersion=v1beta2", "sharing.consumableShares=2"],
    "mig": ["mig.enabled=true"],
    "extended-resource": ["deviceClasses.extendedResourceName=nvidia.com/gpu"],
    "everything": [
        "mig.enabled=true", "sharing.consumableShares=8", "deviceClasses.extendedResourceName=nvidia.com/gpu",
        "driver.xidTaints=true", "exporter.serviceMonitor.enabled=true", "exporter.prometheusRule.enabled=true",
    ],
    "driver-only": ["exporter.enabled=false"],
    "exporter-only": ["driver.enabled=false", "deviceClasses.create=false"],
    "monitoring-crds": ["exporter.serviceMonitor.enabled=true", "exporter.prometheusRule.enabled=true",
                        "exporter.serviceMonitor.labels.release=prometheus"],
    "no-dashboard": ["exporter.grafanaDashboard.enabled=false"],
    "unprivileged": ["driver.privileged=false", "driver.runtimeClassName=nvidia"],
    "runtime-class": ["driver.runtimeClassName=nvidia", "driverRoot=/run/nvidia/driver", "cdiRoot=/etc/cdi"],
    "one-pool": ["driver.nodeSelector.cloud\\.google\\.com/gke-nodepool=gpu-a",
                 "string:driver.nodeSelector.kubedra\\.io/dra=true", "image.repository=registry.example/kubedra",
                 "image.tag=0.1.0", "image.pullPolicy=Always", "driver.resources.requests.cpu=100m",
                 "exporter.resources.limits.memory=512Mi", "imagePullSecrets[0].name=registry"],
    "no-classes-no-policy": ["deviceClasses.create=false", "nodeRestriction.enabled=false"],
    "beside-device-plugin": ["nvidiaDevicePlugin.enabled=true", "allowBesideDevicePlugin=true"],
    "exporter-version": ["exporter.kubernetesVersion=1.35", "exporter.port=9500", "exporter.replicas=2"],
}

# Which resource.k8s.io version a combination renders in, and the releases whose schemas it must pass.
RELEASES = {"v1": ("1.34", "1.35", "1.36"), "v1beta2": ("1.33", "1.34", "1.35", "1.36"), "v1beta1": ("1.32", "1.33")}


def api_version_of(settings: list[str]) -> str:
    for setting in settings:
        key, _, value = setting.partition("=")
        if key == "resourceApiVersion":
            return value
    return "v1"


def helm_run(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, check=check)


def set_args(settings: list[str]) -> list[str]:
    """``--set`` for each setting; ``string:KEY=VALUE`` is a ``--set-string`` (a label value such as "true")."""
    return [arg for s in settings for arg in (
        ("--set-string", s.removeprefix("string:")) if s.startswith("string:") else ("--set", s))]


def render(helm: Path, settings: list[str], *, kube_version: str = "1.36", namespace: str = "kubedra",
           release: str = "kubedra") -> list[dict[str, Any]]:
    """Every object ``helm template`` renders, in order."""
    out = helm_run(helm, "template", release, str(CHART), "--namespace", namespace,
                   "--kube-version", f"{kube_version}.0", *set_args(settings)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objects, kind)
    assert len(found) == 1, f"{len(found)} {kind} objects rendered"
    return found[0]
