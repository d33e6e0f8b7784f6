"""Object loads per second: 1,000 ResourceSlices of 8 NVIDIA-shaped GPUs, through ``load_text``.

Run: ``python benchmarks/load.py``. Parses YAML (libyaml), converts, decodes and validates every object.
"""

from __future__ import annotations

import json
import time

import yaml

from kubedra.objects.load import load_text


def _device(node: int, i: int) -> dict[str, object]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{node:05d}{i:03d}-1111-2222-3333-444455556666"},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "driverVersion": {"version": "580.126.20"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{16 + i:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{i // 4:02x}"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def slices(count: int = 1000) -> list[dict[str, object]]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"node-{n}-gpu.nvidia.com"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
                "nodeName": f"node-{n}",
                "devices": [_device(n, i) for i in range(8)],
            },
        }
        for n in range(count)
    ]


def measure(text: str, repeat: int = 3, count: int = 1000) -> float:
    """The best of ``repeat`` loads of ``text`` (``count`` objects), in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        loaded = load_text(text)
        best = min(best, time.perf_counter() - start)
        assert len(loaded.objects) == count
    return best


def texts(count: int = 1000) -> list[tuple[str, str]]:
    """The same ``count`` ResourceSlices as a YAML stream and as a JSON List."""
    documents = slices(count)
    return [("YAML", yaml.safe_dump_all(documents)),
            ("JSON List", json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))]


def main() -> None:
    for name, text in texts():
        seconds = measure(text)
        print(f"{name}: 1000 ResourceSlices x 8 GPUs loaded in {seconds:.3f} s = {1000 / seconds:,.0f} objects/s")


if __name__ == "__main__":
    main()
