"""The small, fixed vocabulary the differential generator draws from.

Random inputs only find disagreements when their parts refer to each other: selectors must name
attributes that devices carry, constraints must name attributes of the same type on several
devices, tolerations must name taint keys, allocated claims must name real devices. So names and
values come from short lists here, and the strategies combine them. Everything is valid per the
resource.k8s.io/v1 API (DNS labels, qualified names, semver, quantities, list limits).
"""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]
V1 = "resource.k8s.io/v1"

DRIVERS = ("driver-a", "driver-b")
QUALIFIED_DOMAIN = "example.com"

# Attribute name -> (CEL type, possible values). Unqualified names live in the driver's domain.
ATTRIBUTES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "model": ("string", ("a100", "h100", "l4")),
    "index": ("int", (0, 1, 2, 3)),
    "numa": ("int", (0, 1)),
    "nvlink": ("bool", (True, False)),
    "driverVersion": ("version", ("1.0.0", "1.2.0", "2.0.0", "2.0.0-rc.1")),
    "example.com/root": ("string", ("r0", "r1")),
}
LIST_ATTRIBUTES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "lanes": ("ints", (0, 1, 2, 3)),
    "tags": ("strings", ("fast", "slow", "nvme")),
}
"""List-type attributes (DRAListTypeAttributes): always lists, so selectors use `in` and constraints a common element."""
MEMORY = ("1Gi", "2Gi", "4Gi", "8Gi")
CORES = ("2", "4", "8")
CAPACITY_REQUESTS = {"memory": ("512Mi", "1Gi", "2Gi", "3Gi", "8Gi"), "cores": ("1", "2", "3", "700m", "1500m")}

TAINT_KEYS = ("example.com/maintenance", "example.com/unhealthy")
TAINT_VALUES = ("v1", "v2")
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")

NODES: list[Doc] = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"region": "region-1", "planet": "earth"}}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-2", "labels": {"region": "region-2", "planet": "earth"}}},
]
TARGET_NODES = ("node-1", "node-2", "node-3")  # node-3 has no Node object: a bare node of that name

# Single-term node selectors (slices and per-device selection allow exactly one term).
NODE_SELECTORS: tuple[Doc, ...] = (
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}]},
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "planet", "operator": "In", "values": ["earth"]}]}]},
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["region-1"]}]}]},
    {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
)

# The gates whose switching changes what the allocator does, per release with an oracle (runner.PROVEN_RELEASES).
SWITCHABLE_GATES = {
    "1.36": (
        "DRAAdminAccess", "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRADeviceTaintRules",
        "DRADeviceTaints", "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
    ),
    "1.37": (
        "DRAAdminAccess", "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRADeviceTaintRules",
        "DRADeviceTaints", "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
        "DRAFractionalCapacityRange",
    ),
}
GATE_DEFAULTS = {
    "1.36": {"DRADeviceTaintRules": False},
    "1.37": {"DRAFractionalCapacityRange": False},
}


STABLE_GATES = ("DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints")
"""The features upstream's stable variant supports (``SupportedFeatures`` in ``allocator_stable.go``)."""


def gate_default(version: str, gate: str) -> bool:
    return GATE_DEFAULTS[version].get(gate, True)


def attr_cel(name: str) -> str:
    """The CEL path of an attribute, for any driver (unqualified names are in the driver's domain)."""
    if "/" in name:
        domain, ident = name.split("/", 1)
        return f'device.attributes["{domain}"].{ident}'
    return f"device.attributes[device.driver].{name}"


def attr_guard(name: str) -> str:
    if "/" in name:
        domain, ident = name.split("/", 1)
        return f'"{ident}" in device.attributes["{domain}"]'
    return f'"{name}" in device.attributes[device.driver]'


def cap_cel(name: str) -> str:
    return f"device.capacity[device.driver].{name}"


def cap_guard(name: str) -> str:
    return f'"{name}" in device.capacity[device.driver]'


def attribute_value(kind: str, value: Any) -> Doc:
    return {kind: value}


def device_class(name: str, driver: str | None, *exprs: str, config: Doc | None = None) -> Doc:
    selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}] if driver else []
    selectors += [{"cel": {"expression": e}} for e in exprs]
    spec: Doc = {}
    if selectors:
        spec["selectors"] = selectors
    if config:
        spec["config"] = [config]
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def opaque(driver: str, tag: str) -> Doc:
    return {"opaque": {"driver": driver, "parameters": {"apiVersion": f"{driver}/v1", "kind": "Config", "tag": tag}}}


CLASSES: list[Doc] = [
    device_class("class-a", "driver-a"),
    device_class("class-b", "driver-b"),
    device_class("class-any", None),
    device_class(
        "class-big", "driver-a", f'{cap_guard("memory")} && {cap_cel("memory")}.compareTo(quantity("4Gi")) >= 0'
    ),
    device_class("class-cfg", "driver-a", config=opaque("driver-a", "from-class")),
]
CLASS_NAMES = ("class-a", "class-b", "class-any", "class-big", "class-cfg")
EXTENDED_CLASS: Doc = {
    "apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "class-ext"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "driver-a"'}}],
             "extendedResourceName": "example.com/gpu"},
}
"""A class that also serves an extended resource (KEP-5004, DRAExtendedResource); claims may name it as any class."""
MISSING_CLASS = "class-missing"
