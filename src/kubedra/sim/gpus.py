"""Physical GPUs behind the devices: how many of each model, how they are used at the end, and the peak over a run.

NVIDIA's DRA driver publishes a MIG-capable GPU as several devices (the whole GPU and one per MIG placement) that
consume one counter set, and with ``--consumable-shares`` one device serves several claims; counting devices would
make one MIG-capable A100 dozens of GPUs. So every device is mapped to the GPU it lives on: its ``uuid`` (a whole
GPU), its ``parentUUID`` (a MIG device), else the counter set it consumes, else the device itself. GPUs a node
still serves through the device plugin (an extended resource ``<vendor>/gpu`` in its allocatable, no slices) are
counted per node, used by the pods bound there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Device, DeviceAttribute, Node, ResourceSlice
from kubedra.sim.run import Event

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery's label, where a device-plugin node has one


def _attribute(device: Device, driver: str, name: str) -> DeviceAttribute | None:
    return device.attributes.get(name) or device.attributes.get(f"{driver}/{name}")


def _string(device: Device, driver: str, name: str) -> str:
    value = _attribute(device, driver, name)
    return value.string if value is not None and value.string else ""


def plugin_resource(node: Node) -> tuple[str, int] | None:
    """The device-plugin GPU resource a node advertises (``nvidia.com/gpu``, ``amd.com/gpu``) and its count."""
    for name, quantity in sorted(node.status.allocatable.items()):
        if name.endswith("/gpu") and str(quantity).isascii() and str(quantity).isdigit() and int(str(quantity)) > 0:
            return name, int(str(quantity))
    return None


@dataclass
class Inventory:
    """Which GPU each device is on and each GPU's model; device-plugin GPUs per node."""

    gpu_of: dict[str, str] = field(default_factory=dict)  # "driver/pool/device" -> GPU id
    model: dict[str, str] = field(default_factory=dict)  # GPU id -> model
    mig: set[str] = field(default_factory=set)  # MIG devices
    mig_capable: set[str] = field(default_factory=set)  # GPUs that publish MIG devices
    plugin: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # node -> (resource, model, count)

    @classmethod
    def build(cls, slices: Iterable[ResourceSlice], nodes: Iterable[Node]) -> Inventory:
        inventory = cls()
        for slice_ in slices:
            driver = slice_.spec.driver
            prefix = f"{driver}/{slice_.spec.pool.name}/"
            for device in slice_.spec.devices:
                inventory._add(prefix, driver, device)
        for node in nodes:
            resource = plugin_resource(node)
            if resource is not None:
                name, count = resource
                model = node.metadata.labels.get(GPU_PRODUCT_LABEL) or f"{name} (device plugin)"
                inventory.plugin[node.metadata.name] = (name, model, count)
        return inventory

    def _add(self, prefix: str, driver: str, device: Device) -> None:
        device_id = prefix + device.name
        uuid = _string(device, driver, "uuid") or _string(device, driver, "parentUUID")
        if uuid:
            gpu = f"{prefix}{uuid}"
        elif device.consumes_counters:
            gpu = f"{prefix}{device.consumes_counters[0].counter_set}"
        else:
            gpu = device_id
        self.gpu_of[device_id] = gpu
        if _string(device, driver, "type") == "mig":
            self.mig.add(device_id)
            self.mig_capable.add(gpu)
        product = _string(device, driver, "productName")
        if product or gpu not in self.model:
            self.model[gpu] = product or driver

    def totals(self) -> Counter[str]:
        """Physical GPUs per model."""
        totals = Counter(self.model.values())
        for _, model, count in self.plugin.values():
            totals[model] += count
        return totals


@dataclass
class Usage:
    """GPUs in use per model, kept incrementally as devices are allocated and freed and plugin GPUs bound."""

    inventory: Inventory
    held: Counter[str] = field(default_factory=Counter)  # allocations per device
    on_gpu: Counter[str] = field(default_factory=Counter)  # allocations per GPU
    plugin_used: Counter[str] = field(default_factory=Counter)  # device-plugin GPUs requested per node
    in_use: Counter[str] = field(default_factory=Counter)  # GPUs in use per model

    def device(self, device_id: str, sign: int) -> None:
        gpu = self.inventory.gpu_of.get(device_id)
        if gpu is None:
            return  # a device no slice publishes (the allocator would not pick one; an input's stale allocation)
        self.held[device_id] += sign
        before = self.on_gpu[gpu] > 0
        self.on_gpu[gpu] += sign
        after = self.on_gpu[gpu] > 0
        if before != after:
            self.in_use[self.inventory.model[gpu]] += 1 if after else -1

    def plugin(self, node: str, count: int, sign: int) -> None:
        _, model, total = self.inventory.plugin[node]
        before = min(self.plugin_used[node], total)
        self.plugin_used[node] += sign * count
        self.in_use[model] += min(self.plugin_used[node], total) - before


@dataclass(frozen=True)
class Peak:
    """The most GPUs in use at one instant and the first instant it was reached; per model, each model's own most."""

    gpus: int
    seconds: float
    by_model: dict[str, int]


def _plugin_count(record: PodRecord, resource: str) -> int:
    quantity = record.requests.get(resource)
    return int(quantity.as_int64()) if quantity is not None else 0


def final_usage(state: ClusterState, inventory: Inventory) -> Usage:
    """Usage at the end of the run: claims' allocations and running pods' device-plugin GPUs."""
    usage = Usage(inventory)
    for claim in state.allocated_claims():
        assert claim.status.allocation is not None
        for device_id in state.devices.held(claim.status.allocation):
            usage.device(device_id, +1)
    for record in state.pods.values():
        node = record.pod.spec.node_name
        if node in inventory.plugin and record.started_at is not None and record.finished_at is None:
            usage.plugin(node, _plugin_count(record, inventory.plugin[node][0]), +1)
    return usage


def _timeline(state: ClusterState, events: list[Event], inventory: Inventory) -> list[tuple[float, int, str, int]]:
    """(time, 0 for a device or 1 for a node's plugin GPUs, device or node, signed count), in time order."""
    changes: list[tuple[float, int, str, int]] = []
    for event in events:
        if event.type in ("Allocated", "Deallocated"):
            sign = 1 if event.type == "Allocated" else -1
            changes.extend((event.time, 0, device_id, sign) for device_id in event.devices)
    for record in state.pods.values():
        node = record.pod.spec.node_name
        count = _plugin_count(record, inventory.plugin[node][0]) if node in inventory.plugin else 0
        if count and record.started_at is not None:
            changes.append((record.started_at, 1, node, count))
            if record.finished_at is not None:
                changes.append((record.finished_at, 1, node, -count))
    changes.sort(key=lambda change: change[0])  # stable: events keep their order within an instant
    return changes


def peak_usage(state: ClusterState, events: list[Event], inventory: Inventory, final: Usage) -> Peak:
    """Most GPUs in use at one instant, measured after all of an instant's changes.

    The start is the end undone: what was held at the end, minus what the timeline allocated, plus what it freed
    (claims allocated in the input hold devices from the start without an event).
    """
    timeline = _timeline(state, events, inventory)
    held_at_start = Counter(final.held)
    for _, kind, key, amount in timeline:
        if kind == 0:
            held_at_start[key] -= amount
    usage = Usage(inventory)
    for device_id, count in held_at_start.items():
        if count:
            usage.device(device_id, count)
    best, best_at = sum(usage.in_use.values()), 0.0
    by_model = Counter(+usage.in_use)
    for i, (time, kind, key, amount) in enumerate(timeline):
        if kind == 0:
            usage.device(key, amount)
        else:
            usage.plugin(key, abs(amount), 1 if amount > 0 else -1)
        if i + 1 < len(timeline) and timeline[i + 1][0] == time:
            continue
        for model, count in usage.in_use.items():
            by_model[model] = max(by_model[model], count)
        total = sum(usage.in_use.values())
        if total > best:
            best, best_at = total, time
    return Peak(best, best_at, dict(by_model))
