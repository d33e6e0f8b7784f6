"""Realistic GPU cases: NVIDIA-shaped slices (gpu.nvidia.com attributes), pcieRoot alignment, MIG counter sets."""

from __future__ import annotations

from .fixtures import (
    NODES,
    Case,
    Version,
    allocated,
    claim,
    consumes,
    counter_set,
    device,
    device_class,
    match,
    req,
    result,
    slice_,
)

DRIVER = "gpu.nvidia.com"
GPU_CLASS = device_class("gpu.nvidia.com", DRIVER, "device.attributes['gpu.nvidia.com'].type == 'gpu'")
MIG_CLASS = device_class("mig.nvidia.com", DRIVER, "device.attributes['gpu.nvidia.com'].type == 'mig'")
PCIE = "resource.kubernetes.io/pcieRoot"
SLICES = 8  # memory slices per H100 counter set


def gpu(i: int, *, mig_counters: bool = False) -> dict:
    d = device(f"gpu-{i}", {
        "type": "gpu", "index": i, "uuid": f"GPU-0000000{i}-aaaa-bbbb-cccc-000000000000",
        "productName": "NVIDIA H100 80GB HBM3", "architecture": "Hopper", "brand": "Nvidia",
        "cudaComputeCapability": Version("9.0.0"), "driverVersion": Version("560.35.3"),
        "cudaDriverVersion": Version("12.6.0"), PCIE: f"pci0000:{0x10 if i < 4 else 0x90:02x}",
    }, capacity={"memory": "80Gi"})
    if mig_counters:
        d["consumesCounters"] = [consumes(f"gpu-{i}-counter-set", multiprocessors="132",
                                          **{f"memory-slice-{s}": "1" for s in range(SLICES)})]
    return d


def mig(i: int, profile: str, start: int, size: int, sms: int) -> dict:
    return device(f"gpu-{i}-mig-{profile}-{start}", {
        "type": "mig", "profile": profile, "parentIndex": i, "productName": "NVIDIA H100 80GB HBM3",
        PCIE: f"pci0000:{0x10 if i < 4 else 0x90:02x}",
    }, capacity={"memory": f"{10 * size}Gi"},
        consumesCounters=[consumes(f"gpu-{i}-counter-set", multiprocessors=str(sms),
                                   **{f"memory-slice-{s}": "1" for s in range(start, start + size)})])


def eight_gpus() -> dict:
    return slice_("node-1-gpus", "node-1", [gpu(i) for i in range(8)], driver=DRIVER)


def mig_pool(gpus: int = 2) -> list[dict]:
    devices = []
    for i in range(gpus):
        devices.append(gpu(i, mig_counters=True))
        devices += [mig(i, "1g.10gb", s, 1, 16) for s in range(7)]
        devices += [mig(i, "3g.40gb", s, 4, 60) for s in (0, 4)]
    counters = [counter_set(f"gpu-{i}-counter-set", multiprocessors="132",
                            **{f"memory-slice-{s}": "1" for s in range(SLICES)}) for i in range(gpus)]
    return [slice_("node-1-gpu-devices", "node-1", devices, driver=DRIVER, count=2),
            slice_("node-1-gpu-counters", "node-1", None, driver=DRIVER, count=2, sharedCounters=counters)]


def docs(*extra: dict) -> list[dict]:
    return [*NODES, GPU_CLASS, MIG_CLASS, *extra]


def gpu_req(name: str = "gpu", *selectors: str, count: int | None = None) -> dict:
    return req(name, "gpu.nvidia.com", *selectors, count=count)


CASES = [
    Case("gpu-one-gpu", docs(eight_gpus(), claim("gpu-claim", gpu_req()))),
    Case("gpu-four-gpus-same-pcie-root", docs(
        eight_gpus(), allocated("other", result("gpu", "gpu-0", "node-1", DRIVER)),
        claim("gpu-claim", gpu_req(count=4), constraints=[match(PCIE)])),
        note="gpu-0 is in use, so gpus 1-3 cannot make four on pcie root 0x10: the search backtracks to 4-7"),
    Case("gpu-count-nine", docs(eight_gpus(), claim("gpu-claim", gpu_req(count=9)))),
    Case("gpu-selector-product-and-memory", docs(
        eight_gpus(), claim("gpu-claim", gpu_req(
            "gpu", "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')",
            "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",
            "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", count=2)))),
    Case("gpu-two-claims-pcie-aligned", docs(
        eight_gpus(),
        claim("train-a", gpu_req(count=2), constraints=[match(PCIE)]),
        claim("train-b", gpu_req(count=3), constraints=[match(PCIE)]))),
    Case("gpu-mig-one-1g", docs(
        *mig_pool(), claim("mig-claim", req("mig", "mig.nvidia.com",
                                            "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")))),
    Case("gpu-mig-full-gpu-blocked-by-allocated-mig", docs(
        *mig_pool(), allocated("other", result("mig", "gpu-0-mig-1g.10gb-3", "node-1", DRIVER)),
        claim("gpu-claim", gpu_req())), note="gpu-0's memory slice 3 is taken by a MIG device: the full GPU is gpu-1"),
    Case("gpu-mig-eight-1g-spill-to-second-gpu", docs(
        *mig_pool(), claim("mig-claim", req("mig", "mig.nvidia.com",
                                            "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", count=8)))),
    Case("gpu-mig-3g-and-1g-fill-gpu", docs(
        *mig_pool(1),
        claim("mig-claim",
              req("big", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"),
              req("small", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", count=3)))),
    Case("gpu-mig-and-full-gpu-conflict", docs(
        *mig_pool(1),
        claim("mig-claim", req("mig", "mig.nvidia.com")), claim("gpu-claim", gpu_req()))),
]
