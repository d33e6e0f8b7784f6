"""The ResourceSlices NVIDIA's DRA driver publishes for one node, built from a catalogue model.

Without MIG: one slice with every full GPU ``gpu-<minor>`` (``GetDevice`` in ``deviceinfo.go``).
With MIG (gate ``DynamicMIG``, Kubernetes >= 1.35 "split" layout, ``generateSplitResourceSlices``):
slices holding only ``sharedCounters`` (one counter set ``gpu-<minor>-counter-set`` per GPU; NVIDIA puts
them all in one slice, kubedra starts a new slice every 8 sets so a node with more than 8 GPUs stays within
``ResourceSliceMaxCounterSets``), then one device-only slice per GPU with the full GPU (Hopper and newer
only: an Ampere GPU in MIG mode cannot leave it without a reset, so NVIDIA does not offer it) and one
device per MIG placement, ``gpu-<minor>-mig-<profile>-<profileID>-<start>``, devices sorted by name.
Counters: the per-dimension maximum over all profiles (``multiprocessors``, ``copy-engines``, ...,
``memory``) plus ``memory-slice-<i>`` = 1; the full GPU consumes all of them, a placement its profile's
values and its own memory slices.

``static_mig`` is the other MIG mode, without ``DynamicMIG``: the MIG devices mig-parted (the GPU Operator's MIG
manager) made, found by NVML and published as they are: per GPU the (profile, placement start) of each MIG device,
named as above, with its ``uuid`` and a ``memorySlice<i>`` capacity per memory slice it holds, no counters; a GPU
with none is a whole GPU (MIG off).

``shares: N`` applies NVIDIA's ``--consumable-shares=N`` (``consumable_shares.go``) to every device.
Objects shared between devices (attribute values) must be treated as immutable.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from kubedra.cluster.catalogue import GpuModel, MigProfile
from kubedra.objects.model import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    ObjectMeta,
    OwnerReference,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

DRIVER = "gpu.nvidia.com"
MAX_COUNTER_SETS_PER_SLICE = 8
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))
_CAPACITY_COUNTERS = (  # capacity name -> counter name (camelToDNSName)
    ("copyEngines", "copy-engines"),
    ("decoders", "decoders"),
    ("encoders", "encoders"),
    ("jpegEngines", "jpeg-engines"),
    ("memory", "memory"),
    ("multiprocessors", "multiprocessors"),
    ("ofaEngines", "ofa-engines"),
)


@dataclass(frozen=True, slots=True)
class GpuNodeLayout:
    """What every node of a pool carries: how many GPUs of which model, and how they are offered."""

    model: GpuModel
    count: int
    driver_version: str
    cuda_driver_version: str
    mig: bool = False
    shares: int | None = None
    memory_shares: bool = False  # --consumable-shares=memory
    attributes: tuple[tuple[str, DeviceAttribute], ...] = ()  # the pool's own, on every GPU device (after NVML's)
    static_mig: tuple[tuple[tuple[str, int], ...], ...] | None = None  # per minor: (profile, start) of its MIG devices


def binary_si(value: int) -> str:
    """Canonical BinarySI quantity of a non-negative integer, as ``resource.NewQuantity(v, BinarySI)`` prints it."""
    if value >= 1024:
        for shift, suffix in _BINARY_SUFFIXES:
            if value % (1 << shift) == 0:
                return f"{value >> shift}{suffix}"
    return str(value)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def stable_uid(*parts: str) -> str:
    """A UUID-shaped uid derived from the parts, so runs are reproducible."""
    h = _digest(*parts)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def gpu_uuid(node: str, minor: int) -> str:
    """NVML-style ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``, deterministic from node and minor."""
    return "GPU-" + stable_uid("gpu", node, str(minor))


def name_suffix(*parts: str) -> str:
    """Five characters from the Kubernetes random-name alphabet, deterministic from the parts."""
    # The digest's first 8 bytes as a number (its first 16 hex digits), then 5 base-27 digits, lowest first: run
    # once per pod a workload makes, so neither the hex text nor a loop.
    n = int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:8], "big")
    alphabet, base = _SUFFIX_ALPHABET, len(_SUFFIX_ALPHABET)
    n, a = divmod(n, base)
    n, b = divmod(n, base)
    n, c = divmod(n, base)
    n, d = divmod(n, base)
    return alphabet[a] + alphabet[b] + alphabet[c] + alphabet[d] + alphabet[n % base]


def slice_name(node: str, index: int, total: int, driver: str = DRIVER) -> str:
    """``<index as hex, at least 5 digits>-<driver>-<node>-<5 chars>``: the kubelet plugin helper's generateName
    (``resourceslicecontroller.go``) plus the API server's random suffix, made deterministic."""
    width = max(5, len(f"{max(total - 1, 0):x}"))
    parts = ("slice", node, str(index)) if driver == DRIVER else ("slice", driver, node, str(index))
    suffix = name_suffix(*parts)
    return f"{index:0{width}x}-{driver}-{node}-{suffix}"


@functools.lru_cache(maxsize=4096)  # the same few per node: a pure function of two small ints
def pci_location(minor: int, count: int) -> tuple[str, str, int]:
    """(pciBusID, pcieRoot, numaNode) for a GPU: two GPUs per PCIe root, first half on NUMA node 0."""
    root = minor // 2
    domain, slot = divmod(root, 8)
    root_bus = 0x0F + 0x20 * slot
    bus = root_bus + 1 + minor % 2
    numa = 0 if minor < (count + 1) // 2 else 1
    return f"{domain:04x}:{bus:02x}:00.0", f"pci{domain:04x}:{root_bus:02x}", numa


def _common_attributes(layout: GpuNodeLayout) -> dict[str, DeviceAttribute]:
    """What NVML tells the driver; a model declared in a pool may not know its architecture or compute capability,
    and then publishes neither (no made-up value a selector could match)."""
    m = layout.model
    attributes = {
        "brand": DeviceAttribute(string=m.brand),
        "cudaDriverVersion": DeviceAttribute(version=layout.cuda_driver_version),
        "driverVersion": DeviceAttribute(version=layout.driver_version),
        "productName": DeviceAttribute(string=m.product_name),
    }
    if m.architecture:
        attributes["architecture"] = DeviceAttribute(string=m.architecture)
    if m.compute_capability:
        attributes["cudaComputeCapability"] = DeviceAttribute(version=f"{m.compute_capability}.0")
    attributes.update(layout.attributes)
    return dict(sorted(attributes.items()))


def mig_capacities(p: MigProfile) -> dict[str, int]:
    """What a GPU instance of profile ``p`` takes of its GPU, by NVIDIA's capacity names."""
    return {
        "copyEngines": p.copy_engines,
        "decoders": p.decoders,
        "encoders": p.encoders,
        "jpegEngines": p.jpeg_engines,
        "memory": p.memory_mib * 1024 * 1024,
        "multiprocessors": p.multiprocessors,
        "ofaEngines": p.ofa_engines,
    }


def max_capacities(model: GpuModel) -> dict[str, int]:
    """Per-dimension maximum over all MIG profiles: the full GPU's capacity and its counter set's values."""
    result: dict[str, int] = {}
    for profile in model.mig_profiles:
        for name, value in mig_capacities(profile).items():
            result[name] = max(result.get(name, 0), value)
    return result


def _counters(capacities: dict[str, int], start: int, size: int) -> dict[str, Counter]:
    counters = {counter: Counter(value=binary_si(capacities[cap])) for cap, counter in _CAPACITY_COUNTERS}
    for i in range(start, start + size):
        counters[f"memory-slice-{i}"] = Counter(value="1")
    return dict(sorted(counters.items()))


def _shared_capacity(capacity: dict[str, DeviceCapacity], shares: int | None) -> dict[str, DeviceCapacity]:
    """NVIDIA's ``applyConsumableShares``: memory becomes consumable (1Mi steps); for an integer N its default is 0
    and a ``shares`` capacity of N appears (one share by default); for ``memory`` (``shares`` None) a request
    takes the whole memory unless it asks for less."""
    result = dict(capacity)
    memory = capacity.get("memory")
    if memory is not None:
        mib = 1024 * 1024
        maximum = binary_si(_parse_binary_si(memory.value) // mib * mib)
        result["memory"] = DeviceCapacity(
            value=maximum,
            request_policy=CapacityRequestPolicy(
                default="0" if shares is not None else maximum,
                valid_range=CapacityRequestPolicyRange(min="0", max=maximum, step="1Mi"),
            ),
        )
        if shares is None:
            return dict(sorted(result.items()))
        n = str(shares)
        result["shares"] = DeviceCapacity(
            value=n,
            request_policy=CapacityRequestPolicy(
                default="1", valid_range=CapacityRequestPolicyRange(min="1", max=n, step="1")
            ),
        )
    return dict(sorted(result.items()))


def _parse_binary_si(text: str) -> int:
    for shift, suffix in _BINARY_SUFFIXES:
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) << shift
    return int(text)


def mig_device_suffix(profile: MigProfile, start: int) -> str:
    """What follows ``gpu-<minor>`` in a MIG device name: ``-mig-<profile, RFC 1123>-<profileID>-<start>``."""
    pname = profile.name.replace(".", "").lower().replace("+", "-")
    return f"-mig-{pname}-{profile.profile_id}-{start}"


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """What tells one physical GPU from another of the same model: NVML's UUID and where it sits on PCIe."""

    uuid: str
    pci_bus_id: str
    pcie_root: str | None
    numa_node: int | None = None


def simulated_identity(node: str, minor: int, count: int) -> GpuIdentity:
    """The identity a simulated GPU gets: a UUID from node and minor, a PCIe location from ``pci_location``."""
    bus_id, root, numa = pci_location(minor, count)
    return GpuIdentity(gpu_uuid(node, minor), bus_id, root, numa)


@dataclass(frozen=True, slots=True)
class _Placement:
    suffix: str
    profile: DeviceAttribute
    capacity: dict[str, DeviceCapacity]
    counters: dict[str, Counter]


class SliceFactory:
    """Builds the slices of every node of one layout; the parts equal on every GPU are made once and shared."""

    def __init__(self, layout: GpuNodeLayout) -> None:
        self.layout = layout
        model = layout.model
        self.common = _common_attributes(layout)
        self.type_gpu = DeviceAttribute(string="gpu")
        self.type_mig = DeviceAttribute(string="mig")
        self.full_counters: dict[str, Counter] = {}
        self.placements: list[_Placement] = []
        self._placed: dict[tuple[str, int | None, str | None], tuple[dict[str, DeviceAttribute], tuple[str, ...]]] = {}
        self.static: dict[tuple[str, int], _Placement] = {}
        if not layout.mig:
            self.full_capacity = self._capacity({"memory": model.memory_bytes})
            if layout.static_mig is not None:
                for profile in model.mig_profiles:
                    for start, size in profile.placements:
                        slices = {f"memorySlice{i}": 1 for i in range(start, start + size)}
                        caps = {**mig_capacities(profile), **slices}
                        self.static[(profile.name, start)] = _Placement(
                            mig_device_suffix(profile, start), DeviceAttribute(string=profile.name),
                            self._capacity(caps), {})
            return
        maxima = max_capacities(model)
        self.full_capacity = self._capacity(maxima)
        self.full_counters = _counters(maxima, 0, model.memory_slices)
        for profile in model.mig_profiles:
            caps = mig_capacities(profile)
            capacity = self._capacity(caps)
            name = DeviceAttribute(string=profile.name)
            for start, size in profile.placements:
                suffix = mig_device_suffix(profile, start)
                self.placements.append(_Placement(suffix, name, capacity, _counters(caps, start, size)))
        self.placements.sort(key=lambda p: p.suffix)  # NVIDIA publishes devices sorted by name

    def _capacity(self, values: dict[str, int]) -> dict[str, DeviceCapacity]:
        capacity = {name: DeviceCapacity(value=binary_si(v)) for name, v in values.items()}
        if self.layout.shares is None and not self.layout.memory_shares:
            return capacity
        return _shared_capacity(capacity, self.layout.shares)

    def gpu_devices(self, node: str, minor: int, identity: GpuIdentity | None = None) -> list[Device]:
        """The devices of one GPU: the full GPU (unless an Ampere GPU in MIG mode) and its MIG placements.

        ``identity``: the real GPU's (the node driver's inventory); without it, a simulated one."""
        layout = self.layout
        multiple = True if layout.shares is not None or layout.memory_shares else None
        ident = identity or simulated_identity(node, minor, layout.count)
        uuid = ident.uuid
        location = (ident.pci_bus_id, ident.numa_node, ident.pcie_root)
        found = self._placed.get(location)
        if found is None:  # the same on every node's GPU at this PCIe location: built once, shared (never mutated)
            placed = {**self.common, "resource.kubernetes.io/pciBusID": DeviceAttribute(string=ident.pci_bus_id)}
            if ident.numa_node is not None:
                placed["resource.kubernetes.io/numaNode"] = DeviceAttribute(int=ident.numa_node)
            if ident.pcie_root is not None:
                placed["resource.kubernetes.io/pcieRoot"] = DeviceAttribute(string=ident.pcie_root)
            whole = {**placed, "type": self.type_gpu, "uuid": None}
            found = self._placed[location] = (placed, tuple(sorted(whole)))
        placed, order = found
        devices: list[Device] = []
        name = f"gpu-{minor}"
        static = layout.static_mig[minor] if layout.static_mig is not None else ()
        if static:
            return self._static_devices(node, name, placed, uuid, static, multiple=multiple)
        if not layout.mig or layout.model.mig_toggle_without_reset:
            # as dict(sorted({**placed, "type": ..., "uuid": ...}.items())), with the sorted names made once
            uuid_attribute = DeviceAttribute(string=uuid)
            full = {**placed, "type": self.type_gpu}
            attrs = {key: uuid_attribute if key == "uuid" else full[key] for key in order}
            consumes = []
            if layout.mig:
                consumes = [DeviceCounterConsumption(counter_set=f"{name}-counter-set", counters=self.full_counters)]
            devices.append(
                Device(
                    name=name,
                    attributes=attrs,
                    capacity=self.full_capacity,
                    consumes_counters=consumes,
                    allow_multiple_allocations=multiple,
                )
            )
        if not layout.mig:
            return devices
        mig_attrs = {**placed, "type": self.type_mig, "parentUUID": DeviceAttribute(string=uuid)}
        by_profile: dict[int, dict[str, DeviceAttribute]] = {}
        for p in self.placements:
            if id(p.profile) not in by_profile:
                by_profile[id(p.profile)] = dict(sorted({**mig_attrs, "profile": p.profile}.items()))
            attrs = by_profile[id(p.profile)]
            devices.append(
                Device(
                    name=name + p.suffix,
                    attributes=attrs,
                    capacity=p.capacity,
                    consumes_counters=[
                        DeviceCounterConsumption(counter_set=f"{name}-counter-set", counters=p.counters)
                    ],
                    allow_multiple_allocations=multiple,
                )
            )
        return devices

    def _static_devices(self, node: str, name: str, placed: dict[str, DeviceAttribute], uuid: str,
                        static: tuple[tuple[str, int], ...], *, multiple: bool | None) -> list[Device]:
        """A GPU in MIG mode without ``DynamicMIG``: the MIG devices mig-parted made, as NVML lists them."""
        devices = []
        for profile, start in static:
            p = self.static[(profile, start)]
            attrs = {**placed, "type": self.type_mig, "parentUUID": DeviceAttribute(string=uuid), "profile": p.profile,
                     "uuid": DeviceAttribute(string="MIG-" + stable_uid("mig", node, name + p.suffix))}
            devices.append(Device(name=name + p.suffix, attributes=dict(sorted(attrs.items())), capacity=p.capacity,
                                  allow_multiple_allocations=multiple))
        return sorted(devices, key=lambda d: d.name)

    def counter_set(self, minor: int) -> CounterSet:
        """The shared counter set NVIDIA publishes for one MIG-partitionable GPU."""
        return CounterSet(name=f"gpu-{minor}-counter-set", counters=self.full_counters)

    def node_slices(self, node: str, node_uid: str) -> list[ResourceSlice]:
        """Every ResourceSlice of the node's ``gpu.nvidia.com`` pool, counters first, ``resourceSliceCount`` set."""
        count = self.layout.count
        specs: list[tuple[list[Device], list[CounterSet]]] = []
        if self.layout.mig:
            sets = [self.counter_set(minor) for minor in range(count)]
            for i in range(0, len(sets), MAX_COUNTER_SETS_PER_SLICE):
                specs.append(([], sets[i : i + MAX_COUNTER_SETS_PER_SLICE]))
            specs.extend((self.gpu_devices(node, minor), []) for minor in range(count))
        else:
            specs.append(([d for minor in range(count) for d in self.gpu_devices(node, minor)], []))
        owner = [OwnerReference(api_version="v1", kind="Node", name=node, uid=node_uid, controller=True)]
        return [
            ResourceSlice(
                metadata=ObjectMeta(name=slice_name(node, i, len(specs)), owner_references=owner),
                spec=ResourceSliceSpec(
                    driver=DRIVER,
                    pool=ResourcePool(name=node, generation=1, resource_slice_count=len(specs)),
                    node_name=node,
                    devices=devices,
                    shared_counters=sets,
                ),
            )
            for i, (devices, sets) in enumerate(specs)
        ]


def node_slices(node: str, node_uid: str, layout: GpuNodeLayout) -> list[ResourceSlice]:
    """One node's slices; use a SliceFactory directly for many nodes of the same layout."""
    return SliceFactory(layout).node_slices(node, node_uid)
