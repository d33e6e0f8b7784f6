"""Resource pools for one node: highest generation only, incomplete and invalid pools, upstream's order.

``GatherPools`` in ``pools_incubating.go``: slices for the node (``nodeName``, ``allNodes``, a matching
``nodeSelector``, or per-device selection with at least one matching device) are grouped by (driver, pool);
only the newest generation is kept; a pool short of ``resourceSliceCount`` is checked against all slices of the
cluster (a newer generation elsewhere makes it obsolete; still short means incomplete). Invalid pools (duplicate
device or counter-set names, unknown counter references) are kept but never allocated from. Pools are sorted by
driver then name, pools with binding conditions go last, slices are sorted by name.

Two switches of :class:`Features`: with ``counter_slices_everywhere`` (``pools_stable.go``, and
``pools_incubating.go`` of v0.36.6) every slice with ``sharedCounters`` is relevant for every node; the stable
variant (``pools_stable.go``) neither sorts slices (they keep their input order) nor moves pools with binding
conditions last. It does not sort pools either: it walks a Go map, so its pool order is random; kubedra keeps
the (driver, name) order, one of the orders upstream may use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubedra.allocator.devices import parse_quantity
from kubedra.allocator.errors import AllocationError
from kubedra.allocator.features import Features
from kubedra.allocator.nodes import NodeSelectorError, node_matches
from kubedra.objects.model import Node, ResourceSlice
from kubedra.objects.quantity import Quantity


@dataclass(eq=False)
class Pool:
    """One (driver, pool) as seen from one node."""

    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)
    """Slices with devices that target the node, sorted by name."""
    other_slices: list[ResourceSlice] = field(default_factory=list)
    """Slices of the same generation that do not target the node (their devices still consume counters)."""
    counter_sets: dict[str, dict[str, Quantity]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def usable(self) -> bool:
        return not (self.incomplete or self.invalid)


def _relevant(slice_: ResourceSlice, node: Node, features: Features) -> bool:
    spec = slice_.spec
    if not features.partitionable_devices and (spec.per_device_node_selection is not None or spec.shared_counters):
        return False
    if spec.shared_counters and features.counter_slices_everywhere:
        return True
    try:
        if spec.node_name or spec.all_nodes or spec.node_selector is not None:
            return node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector)
        if spec.per_device_node_selection:
            for device in spec.devices:
                matched = node_matches(node, device.node_name or "", bool(device.all_nodes), device.node_selector)
                if matched:
                    return True
            return False
    except NodeSelectorError as exc:
        raise AllocationError(
            f"gather pool information: failed to perform node selection for slice {slice_.metadata.name}: "
            f"failed to parse node selector: {exc}"
        ) from exc
    return False


def _uses_compatibility_groups(slice_: ResourceSlice) -> bool:
    return any(c.compatibility_groups for d in slice_.spec.devices for c in d.consumes_counters)


def _is_counter_slice(slice_: ResourceSlice, features: Features) -> bool:
    return features.partitionable_devices and bool(slice_.spec.shared_counters)


def _validate(  # noqa: PLR0912
    pool: Pool, device_slices: list[ResourceSlice], counter_slices: list[ResourceSlice], features: Features
) -> None:
    names: set[str] = set()
    for s in device_slices:
        for device in s.spec.devices:
            if device.name in names:
                pool.invalid, pool.invalid_reason = True, f"duplicate device name {device.name}"
                return
            names.add(device.name)
    if not features.partitionable_devices:
        return
    sets: dict[str, dict[str, Quantity]] = {}
    for s in counter_slices:
        for counter_set in s.spec.shared_counters:
            if counter_set.name in sets:
                pool.invalid, pool.invalid_reason = True, f"duplicate counter set name {counter_set.name}"
                return
            where = f"ResourceSlice {s.metadata.name}, counter set {counter_set.name}"
            sets[counter_set.name] = {
                name: parse_quantity(c.value, f"{where}, counter {name}") for name, c in counter_set.counters.items()
            }
    for s in (*device_slices, *pool.other_slices):
        for device in s.spec.devices:
            for consumption in device.consumes_counters:
                counters = sets.get(consumption.counter_set)
                if counters is None:
                    pool.invalid, pool.invalid_reason = True, f"counter set {consumption.counter_set} not found"
                    return
                for name in consumption.counters:
                    if name not in counters:
                        pool.invalid = True
                        pool.invalid_reason = f"counter {name} not found in counter set {consumption.counter_set}"
                        return
    pool.counter_sets = sets


def _build(
    driver: str, name: str, slices: list[ResourceSlice], features: Features, all_in_pool: Sequence[ResourceSlice] | None
) -> Pool:
    if not features.stable:
        slices = sorted(slices, key=lambda s: s.metadata.name)
    pool = Pool(driver, name)
    device_slices = [s for s in slices if not _is_counter_slice(s, features)]
    counter_slices = [s for s in slices if _is_counter_slice(s, features)]
    if all_in_pool is not None and len(slices) < len(all_in_pool):
        mine = {s.metadata.name for s in slices}
        for s in all_in_pool:
            if s.metadata.name in mine:
                continue
            if _is_counter_slice(s, features):
                counter_slices.append(s)
            else:
                pool.other_slices.append(s)
    pool.slices = device_slices
    _validate(pool, device_slices, counter_slices, features)
    if pool.invalid:
        pool.slices, pool.other_slices = [], []
    return pool


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices for d in s.spec.devices)


def gather_pools(  # noqa: PLR0912
    slices_for_node: Sequence[ResourceSlice], node: Node, features: Features, all_slices: Sequence[ResourceSlice]
) -> list[Pool]:
    """The pools a node can allocate from, in the order the search tries them."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    hide = features.hides_compatibility_groups
    for s in slices_for_node:
        if hide and _uses_compatibility_groups(s):
            continue
        if not _relevant(s, node, features):
            continue
        key = (s.spec.driver, s.spec.pool.name)
        current = grouped.get(key)
        if current is None or s.spec.pool.generation > current[0].spec.pool.generation:
            grouped[key] = [s]
        elif s.spec.pool.generation == current[0].spec.pool.generation:
            current.append(s)
    plain: list[Pool] = []
    binding: list[Pool] = []
    for (driver, name), slices in grouped.items():
        first = slices[0].spec.pool
        if len(slices) == first.resource_slice_count:
            pool = _build(driver, name, slices, features, None)
        else:
            everywhere: list[ResourceSlice] = []
            obsolete = False
            for s in all_slices:
                if s.spec.driver != driver or s.spec.pool.name != name:
                    continue
                if s.spec.pool.generation == first.generation:
                    if not (hide and _uses_compatibility_groups(s)):
                        everywhere.append(s)
                elif s.spec.pool.generation > first.generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(everywhere) != first.resource_slice_count:
                plain.append(Pool(driver, name, incomplete=True))
                continue
            pool = _build(driver, name, slices, features, everywhere)
        (binding if not features.stable and _has_binding_conditions(pool) else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.name))
    binding.sort(key=lambda p: (p.driver, p.name))
    return plain + binding


