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

from kubedra.allocator.state import DeviceID
from kubedra.cluster.devices import USE_SCALE
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Device, DeviceAttribute, DeviceRequestAllocationResult, Node, ResourceSlice
from kubedra.objects.quantity import Quantity
from kubedra.sim.run import Event

SHARES_CAPACITY = "shares"  # NVIDIA's --consumable-shares=N capacity
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery's label, where a device-plugin node has one


_READ = ("uuid", "parentUUID", "type", "productName")  # what ``Inventory`` reads of a device, in its order


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
        qualified: dict[str, tuple[str, ...]] = {}
        for slice_ in slices:
            driver = slice_.spec.driver
            prefix = f"{driver}/{slice_.spec.pool.name}/"
            names = qualified.get(driver)
            if names is None:
                names = qualified[driver] = tuple(f"{driver}/{n}" for n in _READ)
            for device in slice_.spec.devices:
                inventory._add(prefix, driver, device, names)
        for node in nodes:
            resource = plugin_resource(node)
            if resource is not None:
                name, count = resource
                model = node.metadata.labels.get(GPU_PRODUCT_LABEL) or f"{name} (device plugin)"
                inventory.plugin[node.metadata.name] = (name, model, count)
        return inventory

    def _add(self, prefix: str, driver: str, device: Device, qualified: tuple[str, ...] | None = None) -> None:
        """``qualified``: the names of ``_READ`` in the driver's domain (``_string``'s second try), made once."""
        if qualified is None:
            qualified = tuple(f"{driver}/{n}" for n in _READ)
        attrs = device.attributes

        def string(i: int) -> str:  # _string, with the qualified name made once per driver
            value = attrs.get(_READ[i]) or attrs.get(qualified[i])
            return value.string if value is not None and value.string else ""

        device_id = prefix + device.name
        uuid = string(0) or string(1)
        if uuid:
            gpu = f"{prefix}{uuid}"
        elif device.consumes_counters:
            gpu = f"{prefix}{device.consumes_counters[0].counter_set}"
        else:
            gpu = device_id
        self.gpu_of[device_id] = gpu
        if string(2) == "mig":
            self.mig.add(device_id)
            self.mig_capable.add(gpu)
        product = string(3)
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
        held, on_gpu = self.held, self.on_gpu  # dict reads: a Counter's missing key costs a Python call each
        held[device_id] = held.get(device_id, 0) + sign
        before = on_gpu.get(gpu, 0)
        on_gpu[gpu] = after = before + sign
        if (before > 0) != (after > 0):
            self.in_use[self.inventory.model[gpu]] += 1 if after > 0 else -1

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
    gpu_seconds: float = 0.0  # GPUs in use integrated over the run: what a fleet's GPU-hours bill counts


def _plugin_count(record: PodRecord, resource: str) -> int:
    quantity = record.requests.get(resource)
    return int(quantity.as_int64()) if quantity is not None else 0


@dataclass
class HeldAs:
    """The GPUs the claims hold at the end, by how: whole, MIG-partitioned, shared (a GPU can be in several)."""

    whole: set[str] = field(default_factory=set)
    mig: set[str] = field(default_factory=set)
    shared: set[str] = field(default_factory=set)


def final_usage(state: ClusterState, inventory: Inventory) -> tuple[Usage, HeldAs]:
    """Usage at the end of the run (claims' allocations and running pods' device-plugin GPUs), and how the claims
    hold their GPUs: one pass over the allocations."""
    usage = Usage(inventory)
    held_as = HeldAs()
    gpu_of, mig = inventory.gpu_of, inventory.mig
    for claim in state.allocated_claims():
        assert claim.status.allocation is not None
        for r in claim.status.allocation.devices.results:
            if r.admin_access:
                continue  # occupies no device
            device_id = f"{r.driver}/{r.pool}/{r.device}"
            usage.device(device_id, +1)
            gpu = gpu_of.get(device_id)
            if gpu is None:
                continue
            if device_id in mig:
                held_as.mig.add(gpu)
            elif r.share_id and not held_whole(state, r):
                held_as.shared.add(gpu)
            else:
                held_as.whole.add(gpu)
    for record in state.pods.values() if inventory.plugin else ():  # no device-plugin GPUs: no pod to read
        node = record.pod.spec.node_name
        if node in inventory.plugin and record.started_at is not None and record.finished_at is None:
            usage.plugin(node, _plugin_count(record, inventory.plugin[node][0]), +1)
    return usage, held_as


def _timeline(state: ClusterState, events: list[Event], inventory: Inventory) -> list[tuple[float, int, str, int]]:
    """(time, 0 for a device or 1 for a node's plugin GPUs, device or node, signed count), in time order."""
    changes: list[tuple[float, int, str, int]] = []
    for event in events:
        if event.type in ("Allocated", "Deallocated"):
            sign = 1 if event.type == "Allocated" else -1
            changes.extend((event.time, 0, device_id, sign) for device_id in event.devices)
    for record in state.pods.values() if inventory.plugin else ():
        node = record.pod.spec.node_name
        count = _plugin_count(record, inventory.plugin[node][0]) if node in inventory.plugin else 0
        if count and record.started_at is not None:
            changes.append((record.started_at, 1, node, count))
            if record.finished_at is not None:
                changes.append((record.finished_at, 1, node, -count))
    changes.sort(key=lambda change: change[0])  # stable: events keep their order within an instant
    return changes


def peak_usage(state: ClusterState, events: list[Event], inventory: Inventory, final: Usage, end: float = 0.0) -> Peak:
    """Most GPUs in use at one instant, measured after all of an instant's changes, and the GPU-seconds in use from
    0 to ``end`` (the run's end).

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
    gpu_seconds, since, held = 0.0, 0.0, best
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
        gpu_seconds += held * (time - since)
        since, held = time, total
        if total > best:
            best, best_at = total, time
    gpu_seconds += held * max(end - since, 0.0)
    return Peak(best, best_at, dict(by_model), gpu_seconds)


def held_whole(state: ClusterState, result: DeviceRequestAllocationResult) -> bool:
    """Whether a share is the device's only one and consumes all of one of its capacities (1000 of 1000 shares):
    no other claim can have the device, so it is held whole, not shared."""
    device = DeviceID(result.driver, result.pool, result.device)
    allocated = state.devices.allocated
    return allocated.shares.get(device, 0) == 1 and state.devices.share_use_of(device) == USE_SCALE


def _memory_slices(record_counters: Iterable[str]) -> int:
    return sum(1 for name in record_counters if name.startswith("memory-slice-"))


def gpu_use(state: ClusterState, inventory: Inventory) -> dict[str, float]:
    """How much of each GPU in use is used, 0 to 1: a GPU held whole is 1, a shared one the largest fraction of a
    capacity its shares consume, a MIG-partitioned one the share of its memory slices its MIG devices hold (the FGD
    artifact's measure, milli-GPUs in use / 1000, generalised). GPUs not listed are unused."""
    table = state.devices
    per_gpu: dict[str, float] = {}
    mig_slices: Counter[str] = Counter()
    for device in table.allocated.allocated_devices:
        key = "/".join(device)  # str(device), without a Python call per device
        gpu = inventory.gpu_of.get(key)
        if gpu is None:
            continue
        record = table.by_key.get(key)
        if key in inventory.mig and record is not None and record.device.consumes_counters:
            mig_slices[gpu] += _memory_slices(record.device.consumes_counters[0].counters)
        else:
            per_gpu[gpu] = 1.0
    for device in table.allocated.aggregated_capacity:
        gpu = inventory.gpu_of.get(str(device))
        if gpu is not None and per_gpu.get(gpu, 0.0) < 1.0:
            per_gpu[gpu] = max(per_gpu.get(gpu, 0.0), table.share_use_of(device) / USE_SCALE)
    for device in table.allocated.shares:  # shares that consume no capacity still make the GPU busy
        gpu = inventory.gpu_of.get(str(device))
        if gpu is not None:
            per_gpu.setdefault(gpu, 0.0)
    total_slices = _slices_per_gpu(state, inventory)
    for gpu, held in mig_slices.items():
        slices = total_slices.get(gpu, 0)
        if slices and per_gpu.get(gpu, 0.0) < 1.0:
            per_gpu[gpu] = min(1.0, held / slices)
    return per_gpu


def capacity_in_use(state: ClusterState, inventory: Inventory) -> dict[str, float]:
    """The GPUs' capacity in use per model, in GPUs (``gpu_use`` summed)."""
    result: dict[str, float] = {}
    for gpu, used in gpu_use(state, inventory).items():
        model = inventory.model[gpu]
        result[model] = result.get(model, 0.0) + used
    return result


def _slices_per_gpu(state: ClusterState, inventory: Inventory) -> dict[str, int]:
    """Memory slices of each MIG-capable GPU: those of the counter set its devices consume."""
    found: dict[str, int] = {}
    for slice_ in state.slices:
        prefix = f"{slice_.spec.driver}/{slice_.spec.pool.name}/"
        for counter_set in slice_.spec.shared_counters:
            gpu = f"{prefix}{counter_set.name}"
            found[gpu] = _memory_slices(counter_set.counters)
    by_gpu: dict[str, int] = {}
    for device_id in inventory.mig:
        record = state.devices.by_key.get(device_id)
        if record is None or not record.device.consumes_counters:
            continue
        prefix = device_id.rsplit("/", 1)[0] + "/"
        slices = found.get(prefix + record.device.consumes_counters[0].counter_set)
        if slices:
            by_gpu[inventory.gpu_of[device_id]] = slices
    return by_gpu


def share_totals(state: ClusterState) -> dict[str, int]:
    """NVIDIA's consumable ``shares``: how many the devices publish and how many claims consume now."""
    total = 0
    for record in state.devices.by_key.values():
        capacity = record.device.capacity.get(SHARES_CAPACITY)
        if capacity is not None and record.device.allow_multiple_allocations:
            total += Quantity.parse(capacity.value).as_int64()
    used = 0
    for consumed in state.devices.allocated.aggregated_capacity.values():
        amount = consumed.get(SHARES_CAPACITY)
        if amount is not None:
            used += amount.as_int64()
    return {"inUse": used, "total": total}
