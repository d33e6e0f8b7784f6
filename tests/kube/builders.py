"""Plain manifests for the objects the live-cluster tests create (one GPU driver per test keeps tests apart)."""

from __future__ import annotations

from typing import Any

import pytest

from kubedra.cli import main


def device_class(name: str, driver: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def node_slice(node: str, driver: str, gpus: int, memory: str = "40Gi") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver.split('.', maxsplit=1)[0]}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"index": {"int": i}, "model": {"string": "test-gpu"}},
                    "capacity": {"memory": {"value": memory}},
                }
                for i in range(gpus)
            ],
        },
    }


def taint_rule(name: str, driver: str, device: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {
            "deviceSelector": {"driver": driver, "device": device},
            "taint": {"key": "example.com/broken", "value": "true", "effect": "NoSchedule"},
        },
    }


def _requests(device_class_name: str, count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class_name,
                                                                  "count": count}}]}}


def claim(name: str, namespace: str, device_class_name: str, count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": _requests(device_class_name, count),
    }


def template(name: str, namespace: str, device_class_name: str, count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": _requests(device_class_name, count)},
    }


def pod(
    name: str,
    namespace: str,
    *,
    claim_name: str | None = None,
    template_name: str | None = None,
    cpu: str = "100m",
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    claims: list[dict[str, Any]] = []
    if claim_name:
        claims.append({"name": "gpu", "resourceClaimName": claim_name})
    if template_name:
        claims.append({"name": "gpu", "resourceClaimTemplateName": template_name})
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if claims:
        resources["claims"] = [{"name": "gpu"}]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "registry.example/trainer:1", "resources": resources}],
        "resourceClaims": claims,
        "terminationGracePeriodSeconds": 0,
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def is_bound(document: dict[str, Any]) -> bool:
    return bool(document.get("spec", {}).get("nodeName"))


def is_unschedulable(document: dict[str, Any]) -> bool:
    conditions = document.get("status", {}).get("conditions", [])
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``kubedra argv...`` in-process: its exit code, stdout and stderr."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
