"""Held-out scenarios for the comparison with kube-scheduler: random GPU clusters and pods, drawn from a seed.

Nodes differ in size (so scores rarely tie), carry GPUs of two models on two PCIe roots, and some are tainted or
labelled; pods ask for cpu and memory, and most for GPUs through templates (count, a model selector, matchAttribute),
a shared claim or KEP-5004's extended resource; some select a pool or tolerate the taint. Every pod's node and devices
and the pending set are compared (``exact: all``), ties included (the real scheduler runs with ``parallelism: 1``,
see ``vs_kube_scheduler``), and every bound pod's scores.
"""

from __future__ import annotations

import random
from typing import Any

from tests.kube.vs_kube_scheduler import DRIVER, Scenario

IMAGE = "registry.k8s.io/pause:3.10"
SIZES = [(4, 16), (8, 32), (12, 48), (16, 64), (24, 96), (32, 128), (48, 192), (64, 256)]  # cpu, GiB


def _devices(rng: random.Random, count: int) -> list[dict[str, Any]]:
    model = rng.choice(["A", "B"])
    return [
        {"name": f"gpu-{i}", "attributes": {"model": {"string": model}, "pcieRoot": {"string": f"root-{i // 2}"}},
         "capacity": {"memory": {"value": rng.choice(["40Gi", "80Gi"])}}}
        for i in range(count)
    ]


def _request(rng: random.Random) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": rng.choice([1, 1, 2])}
    if rng.random() < 0.3:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == '
                                                       f'"{rng.choice(["A", "B"])}"'}}]
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if exactly["count"] == 2 and rng.random() < 0.5:
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/pcieRoot"}]
    return devices


def random_scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                 "extendedResourceName": "example.com/gpu"},
    }]
    sizes = rng.sample(SIZES, rng.randint(3, 6))
    for i, (cpu, memory) in enumerate(sizes):
        name = f"n{i}"
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "pool": rng.choice(["a", "a", "b"])}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}},
        }
        if rng.random() < 0.2:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        docs.append(node)
        gpus = rng.choice([0, 2, 4, 4, 8])
        if gpus:
            docs.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
                "spec": {"driver": DRIVER, "nodeName": name,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                         "devices": _devices(rng, gpus)},
            })
    templates = rng.randint(1, 3)
    docs += [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": f"t{t}"},
              "spec": {"spec": {"devices": _request(rng)}}} for t in range(templates)]
    shared = rng.random() < 0.5
    if shared:
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared"},
                     "spec": {"devices": _request(rng)}})
    for i in range(rng.randint(6, 14)):
        requests = {"cpu": f"{rng.choice([500, 1000, 2000, 3000, 4000, 6000])}m",
                    "memory": f"{rng.choice([1, 2, 4, 8, 16, 24])}Gi"}
        container: dict[str, Any] = {"name": "c", "image": IMAGE, "resources": {"requests": requests}}
        spec: dict[str, Any] = {"containers": [container]}
        roll = rng.random()
        if roll < 0.55:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": f"t{rng.randrange(templates)}"}]
        elif roll < 0.65 and shared:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
        elif roll < 0.75:
            container["resources"]["limits"] = {"example.com/gpu": str(rng.choice([1, 2]))}
        if "resourceClaims" in spec:
            container["resources"]["claims"] = [{"name": "gpu"}]
        if rng.random() < 0.2:
            spec["nodeSelector"] = {"pool": rng.choice(["a", "b"])}
        if rng.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:02d}"}, "spec": spec})
    return Scenario(f"random-{seed}", docs, {"exact": "all"}, f"random GPU cluster, seed {seed}")
