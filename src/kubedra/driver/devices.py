"""The ResourceSlices of this node's pool, from its inventory — built by the simulator's own builder
(:class:`kubedra.cluster.gpuslices.SliceFactory`), so the driver and ``kubedra simulate`` publish the same devices.

Pure. Without MIG the devices go into slices of at most 128 (``ResourceSliceMaxDevices``); with MIG profiles the
"split" layout of NVIDIA's driver: counter-set slices, then one device slice per GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from kubedra.cluster.catalogue import GpuModel
from kubedra.cluster.gpuslices import (
    MAX_COUNTER_SETS_PER_SLICE,
    GpuIdentity,
    GpuNodeLayout,
    SliceFactory,
    mig_device_suffix,
    slice_name,
)
from kubedra.driver.inventory import MIB, GpuInfo, Inventory, MigProfileInfo, version_value
from kubedra.objects.model import (
    CounterSet,
    Device,
    DeviceTaint,
    ObjectMeta,
    OwnerReference,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

MAX_DEVICES_PER_SLICE = 128


@dataclass(frozen=True, slots=True)
class Sharing:
    """``--consumable-shares``: None (off), an integer N, or ``memory``."""

    shares: int | None = None
    memory: bool = False

    @classmethod
    def parse(cls, text: str | None) -> Sharing:
        if text is None or text in ("", "disabled"):
            return cls()
        if text == "memory":
            return cls(memory=True)
        if not (text.isascii() and text.isdigit()) or int(text) < 1:
            raise ValueError(f"--consumable-shares: {text!r} is neither a positive integer nor 'memory'")
        return cls(shares=int(text))


@dataclass(frozen=True, slots=True)
class MigPlacement:
    """What a published MIG device (``gpu-0-mig-1g5gb-19-0``) stands for: a profile at a placement of a GPU."""

    gpu: GpuInfo
    profile: MigProfileInfo
    start: int
    size: int


def mig_placements(inventory: Inventory) -> dict[str, MigPlacement]:
    """Every MIG device name the pool publishes → its placement (names as the slice builder makes them)."""
    out: dict[str, MigPlacement] = {}
    for gpu in inventory.gpus:
        for profile in gpu.mig_profiles:
            catalogue = profile.catalogue()
            for start, size in profile.placements:
                out[gpu.device_name + mig_device_suffix(catalogue, start)] = MigPlacement(gpu, profile, start, size)
    return out


def gpu_model(gpu: GpuInfo) -> GpuModel:
    """The catalogue's view of an inventory GPU (what SliceFactory builds from)."""
    return GpuModel(
        name=gpu.product_name,
        product_name=gpu.product_name,
        brand=gpu.brand,
        architecture=gpu.architecture,
        compute_capability=gpu.cuda_compute_capability,
        memory_mib=(gpu.memory_bytes or 0) // MIB,
        multiprocessors=0,
        mig_profiles=tuple(p.catalogue() for p in gpu.mig_profiles),
    )


class DeviceBuilder:
    """Devices of an inventory's GPUs; one SliceFactory per distinct GPU model."""

    def __init__(self, inventory: Inventory, sharing: Sharing = Sharing()) -> None:
        self.inventory = inventory
        self.sharing = sharing
        self.mig = any(g.mig_profiles for g in inventory.gpus)
        self._factories: dict[GpuModel, SliceFactory] = {}

    def factory(self, gpu: GpuInfo) -> SliceFactory:
        model = gpu_model(gpu)
        factory = self._factories.get(model)
        if factory is None:
            layout = GpuNodeLayout(
                model=model,
                count=len(self.inventory.gpus),
                driver_version=version_value(self.inventory.driver_version),
                cuda_driver_version=version_value(self.inventory.cuda_driver_version),
                mig=bool(gpu.mig_profiles),
                shares=self.sharing.shares,
                memory_shares=self.sharing.memory,
            )
            factory = self._factories[model] = SliceFactory(layout)
        return factory

    def gpu_devices(self, node: str, gpu: GpuInfo) -> list[Device]:
        identity = GpuIdentity(gpu.uuid, gpu.pci_bus_id, gpu.pcie_root, gpu.numa_node)
        devices = self.factory(gpu).gpu_devices(node, gpu.minor, identity)
        if gpu.memory_bytes is None:  # NVML: memory NOT_SUPPORTED, NVIDIA publishes no memory capacity
            for d in devices:
                d.capacity = {k: v for k, v in d.capacity.items() if k != "memory"}
        return devices

    def counter_sets(self) -> list[CounterSet]:
        return [self.factory(g).counter_set(g.minor) for g in self.inventory.gpus if g.mig_profiles]


def pool_specs(
    inventory: Inventory, node: str, sharing: Sharing = Sharing()
) -> list[tuple[list[Device], list[CounterSet]]]:
    """(devices, counter sets) of each slice, in order."""
    builder = DeviceBuilder(inventory, sharing)
    gpus = sorted(inventory.gpus, key=lambda g: g.minor)
    specs: list[tuple[list[Device], list[CounterSet]]] = []
    if builder.mig:
        sets = builder.counter_sets()
        for i in range(0, len(sets), MAX_COUNTER_SETS_PER_SLICE):
            specs.append(([], sets[i : i + MAX_COUNTER_SETS_PER_SLICE]))
        for gpu in gpus:
            devices = builder.gpu_devices(node, gpu)
            specs.extend(
                (devices[i : i + MAX_DEVICES_PER_SLICE], []) for i in range(0, len(devices), MAX_DEVICES_PER_SLICE)
            )
        return specs
    devices = [d for gpu in gpus for d in builder.gpu_devices(node, gpu)]
    specs.extend((devices[i : i + MAX_DEVICES_PER_SLICE], []) for i in range(0, len(devices), MAX_DEVICES_PER_SLICE))
    return specs or [([], [])]


def pool_slices(
    inventory: Inventory,
    driver: str,
    node: str,
    node_uid: str,
    *,
    generation: int = 1,
    sharing: Sharing | None = None,
    taints: Mapping[str, list[DeviceTaint]] | None = None,
) -> list[ResourceSlice]:
    """Every slice of the node's pool (pool name = node name), owned by the Node, ``resourceSliceCount`` set;
    ``taints``: device name → the taints it carries (XIDs)."""
    specs = pool_specs(inventory, node, sharing or Sharing())
    if taints:
        specs = [
            (
                [msgspec.structs.replace(d, taints=list(taints[d.name])) if d.name in taints else d for d in devices],
                sets,
            )
            for devices, sets in specs
        ]
    owner = [OwnerReference(api_version="v1", kind="Node", name=node, uid=node_uid, controller=True)]
    return [
        ResourceSlice(
            metadata=ObjectMeta(name=slice_name(node, i, len(specs), driver), owner_references=owner),
            spec=ResourceSliceSpec(
                driver=driver,
                pool=ResourcePool(name=node, generation=generation, resource_slice_count=len(specs)),
                node_name=node,
                devices=devices,
                shared_counters=sets,
            ),
        )
        for i, (devices, sets) in enumerate(specs)
    ]
