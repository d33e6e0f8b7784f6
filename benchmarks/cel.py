"""CEL evaluations per second: a precompiled three-clause selector over 10,000 GPU devices.

Run: ``python benchmarks/cel.py``. Each device gets a fresh DeviceView (its activation is built on first
use), so the figure includes building the activation once per device, as the allocator does.
"""

from __future__ import annotations

import time

from kubedra.cel import CompileCache, DeviceView
from kubedra.objects.model import Device, DeviceAttribute, DeviceCapacity

DRIVER = "gpu.nvidia.com"
EXPRESSION = (
    'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100" '
    '&& device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
)
PRODUCTS = ["NVIDIA A100", "NVIDIA H100", "NVIDIA L4", "NVIDIA A100"]
MEMORY = ["40Gi", "80Gi", "24Gi", "16Gi"]


def devices(n: int) -> list[Device]:
    return [
        Device(
            name=f"gpu-{i}",
            attributes={
                "productName": DeviceAttribute(string=PRODUCTS[i % 4]),
                "type": DeviceAttribute(string="gpu"),
                "index": DeviceAttribute(int=i % 8),
                "driverVersion": DeviceAttribute(version="560.35.3"),
            },
            capacity={"memory": DeviceCapacity(value=MEMORY[i % 4])},
        )
        for i in range(n)
    ]


def measure(count: int = 10_000) -> dict[str, float]:
    """One pass building each device's activation (``cold_s``), then one reusing them (``warm_s``)."""
    program = CompileCache().compile(EXPRESSION)
    views = [DeviceView(DRIVER, d) for d in devices(count)]
    start = time.perf_counter()
    matches = sum(program.evaluate(v) for v in views)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for v in views:
        program.evaluate(v)
    warm = time.perf_counter() - start
    return {"devices": len(views), "matches": matches, "cold_s": cold, "warm_s": warm}


def main() -> None:
    m = measure()
    print(f"devices: {m['devices']}, matches: {m['matches']}")
    print(f"first pass (builds each device's activation): {m['devices'] / m['cold_s']:,.0f} evaluations/s")
    print(f"precompiled, activations reused: {m['devices'] / m['warm_s']:,.0f} evaluations/s")


if __name__ == "__main__":
    main()
