"""Shared test material: an inventory file, claims as the API returns them, an in-memory claim source."""

from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any

import yaml

DRIVER = "gpu.nvidia.com"

A100 = {
    "productName": "NVIDIA A100-SXM4-40GB",
    "brand": "Nvidia",
    "architecture": "Ampere",
    "cudaComputeCapability": "8.0",
    "memory": "40Gi",
}


def inventory(count: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "driverVersion": "550.54.15",
        "cudaDriverVersion": "12.4",
        "gpus": [
            {
                "minor": i,
                "uuid": f"GPU-2f6a4c1e-0000-4000-8000-{i:012d}",
                **A100,
                "pciBusID": f"0000:{7 + i:02x}:00.0",
                **extra,
            }
            for i in range(count)
        ],
    }


def write_inventory(path: Path, count: int = 2, **extra: Any) -> Path:
    path.write_text(yaml.safe_dump(inventory(count, **extra)))
    return path


def claim(
    name: str,
    devices: list[str] | None = None,
    *,
    namespace: str = "default",
    node: str = "node-1",
    uid: str | None = None,
    driver: str = DRIVER,
    config: list[dict[str, Any]] | None = None,
    allocated: bool = True,
    share_ids: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim as the API returns it, allocated to ``devices`` of ``node``'s pool."""
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuidlib.uuid4()) if uid is None else uid},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
        "status": {},
    }
    if allocated:
        results = []
        for d in devices or ["gpu-0"]:
            r = {"request": "gpu", "driver": driver, "pool": node, "device": d}
            if share_ids and d in share_ids:
                r["shareID"] = share_ids[d]
            results.append(r)
        doc["status"]["allocation"] = {"devices": {"results": results, "config": config or []}}
    return doc


class StaticClaims:
    """Claims by namespace/name, as the API would return them."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.reads = 0

    def add(self, doc: dict[str, Any]) -> tuple[str, str, str]:
        m = doc["metadata"]
        self.claims[(m["namespace"], m["name"])] = doc
        return m["namespace"], m["uid"], m["name"]

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        self.reads += 1
        try:
            return self.claims[(namespace, name)]
        except KeyError:
            raise LookupError(f'resourceclaims.resource.k8s.io "{name}" not found') from None
