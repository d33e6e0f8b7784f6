"""One realistic document per kind and version, shared by the loader tests."""

from __future__ import annotations

import copy
from typing import Any

NVIDIA = "gpu.nvidia.com"


def gpu_device(i: int, *, memory: str = "80Gi") -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{i:08d}-aaaa-bbbb-cccc-000000000000"},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "580.126.20"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{i + 16:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{i // 4:02x}"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def v1_slice(name: str = "node-1-gpu", devices: int = 8) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": NVIDIA,
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [gpu_device(i) for i in range(devices)],
        },
    }


def v1_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": NVIDIA},
        "spec": {
            "selectors": [{"cel": {"expression": f"device.driver == '{NVIDIA}'"}}],
            "config": [
                {
                    "opaque": {
                        "driver": NVIDIA,
                        "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"},
                    }
                }
            ],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }


def _claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": NVIDIA,
                        "selectors": [
                            {
                                "cel": {
                                    "expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
                                }
                            }
                        ],
                        "allocationMode": "ExactCount",
                        "count": 2,
                        "tolerations": [{"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}],
                    },
                },
                {
                    "name": "nic",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": NVIDIA, "count": 1},
                        {"name": "small", "deviceClassName": NVIDIA, "allocationMode": "All"},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpu", "nic/big"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": NVIDIA, "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}}}],
        }
    }


def v1_claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": _claim_spec(),
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": NVIDIA, "pool": "node-1", "device": "gpu-0"}],
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u-1"}],
        },
    }


def v1_template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "train-template", "namespace": "ml"},
        "spec": {"metadata": {"labels": {"app": "train"}}, "spec": _claim_spec()},
    }


def v1_taint_rule() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "xid-79"},
        "spec": {
            "deviceSelector": {"driver": NVIDIA, "pool": "node-1", "device": "gpu-3"},
            "taint": {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"},
        },
    }


def v1_node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"gpu": "h100"}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi"}},
    }


def v1_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {
            "containers": [{"name": "c", "image": "pytorch", "resources": {"claims": [{"name": "gpus"}]}}],
            "resourceClaims": [{"name": "gpus", "resourceClaimName": "train"}],
            "volumes": [  # the volumes the model keeps: a claim's (the others are dropped)
                {"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOncePod"], "storageClassName": "gp3", "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": "200Gi"}, "limits": {"storage": "1Ti"}},
                }}}},
            ],
        },
    }


V1_DOCUMENTS = {
    "DeviceClass": v1_class,
    "ResourceSlice": v1_slice,
    "ResourceClaim": v1_claim,
    "ResourceClaimTemplate": v1_template,
    "DeviceTaintRule": v1_taint_rule,
    "Node": v1_node,
    "Pod": v1_pod,
}


def to_v1beta1(document: dict[str, Any]) -> dict[str, Any]:
    """The v1beta1 form of a v1 document (basic: devices, flat requests)."""
    doc = copy.deepcopy(document)
    doc["apiVersion"] = "resource.k8s.io/v1beta1"
    kind = doc["kind"]
    if kind == "ResourceSlice":
        doc["spec"]["devices"] = [
            {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in doc["spec"]["devices"]
        ]
    spec = doc["spec"]["spec"] if kind == "ResourceClaimTemplate" else doc.get("spec")
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        spec["devices"]["requests"] = [
            {"name": r["name"], **r["exactly"]} if "exactly" in r else r for r in spec["devices"]["requests"]
        ]
    return doc


def with_version(document: dict[str, Any], version: str) -> dict[str, Any]:
    doc = copy.deepcopy(document)
    doc["apiVersion"] = f"resource.k8s.io/{version}"
    return doc
