"""Allocator features: which optional DRA behaviours are on, from Kubernetes feature gates by release.

Mirrors upstream's ``internal.Features``: kept alphabetical, and every flag changes at least one branch of the
search (or, for ``extended_resource``, of the scheduler that calls it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from kubedra.cel import CelOptions

RELEASES = ("1.34", "1.35", "1.36", "1.37")
DEFAULT_RELEASE = "1.37"

# Gate name -> (field, {release: (default, locked)}). A release missing from the map does not know the gate.
_ON, _OFF, _LOCKED = (True, False), (False, False), (True, True)
_GATES: dict[str, tuple[str | None, dict[str, tuple[bool, bool]]]] = {
    "DynamicResourceAllocation": (None, {"1.34": _ON, "1.35": _LOCKED, "1.36": _LOCKED, "1.37": _LOCKED}),
    "DRAAdminAccess": ("admin_access", {"1.34": _ON, "1.35": _ON, "1.36": _LOCKED, "1.37": _LOCKED}),
    "DRAConsumableCapacity": ("consumable_capacity", {"1.34": _OFF, "1.35": _OFF, "1.36": _ON, "1.37": _ON}),
    "DRADeviceBindingConditions": (
        "device_binding_conditions",
        {"1.34": _OFF, "1.35": _OFF, "1.36": _ON, "1.37": _ON},
    ),
    "DRADeviceTaintRules": ("device_taint_rules", {"1.35": _OFF, "1.36": _OFF, "1.37": _ON}),
    "DRADeviceTaints": ("device_taints", {"1.34": _OFF, "1.35": _OFF, "1.36": _ON, "1.37": _ON}),
    "DRAExtendedResource": ("extended_resource", {"1.34": _OFF, "1.35": _OFF, "1.36": _ON, "1.37": _LOCKED}),
    "DRAListTypeAttributes": ("list_type_attributes", {"1.36": _OFF, "1.37": _OFF}),
    "DRAPartitionableDevices": ("partitionable_devices", {"1.34": _OFF, "1.35": _OFF, "1.36": _ON, "1.37": _ON}),
    "DRAPrioritizedList": ("prioritized_list", {"1.34": _ON, "1.35": _ON, "1.36": _ON, "1.37": _LOCKED}),
    "DRAResourceClaimDeviceStatus": ("device_status", {"1.34": _ON, "1.35": _ON, "1.36": _ON, "1.37": _ON}),
    "DRASchedulerFilterTimeout": (None, {"1.34": _ON, "1.35": _ON, "1.36": _ON, "1.37": _ON}),
    # Known to the releases but without an effect on the device search kubedra implements.
    "DRANodeAllocatableResources": (None, {"1.36": _OFF, "1.37": _OFF}),
    "DRAResourceClaimGranularStatusAuthorization": (None, {"1.36": _ON, "1.37": _ON}),
    "DRAResourcePoolStatus": (None, {"1.36": _OFF, "1.37": _OFF}),
    "DRAWorkloadResourceClaims": (None, {"1.36": _OFF, "1.37": _OFF}),
    "DRADerivedAttributes": (None, {"1.37": _OFF}),
    "DRADeviceCompatibilityGroups": (None, {"1.37": _OFF}),
    "DRAFractionalCapacityRange": (None, {"1.37": _OFF}),
    "DRAOptionalNodeOperations": (None, {"1.37": _OFF}),
    "DRAPartitionableDevicesType": (None, {"1.37": _OFF}),
}


class FeatureGateError(ValueError):
    """An unknown gate, a malformed ``--feature-gates`` value, or an unknown release."""


@dataclass(frozen=True)
class Features:
    """The optional behaviours of the structured allocator (all on = the newest behaviour)."""

    admin_access: bool = True
    consumable_capacity: bool = True
    device_binding_conditions: bool = True
    device_status: bool = True
    device_taint_rules: bool = True
    device_taints: bool = True
    extended_resource: bool = True
    list_type_attributes: bool = False
    partitionable_devices: bool = True
    prioritized_list: bool = True
    release: str = DEFAULT_RELEASE

    @property
    def binding_and_status(self) -> bool:
        """Upstream's ``DeviceBindingAndStatus``: binding conditions need the device-status gate too."""
        return self.device_binding_conditions and self.device_status

    @property
    def taint_rules_apply(self) -> bool:
        """DeviceTaintRule objects add taints only when taints are on (1.34 had no separate gate)."""
        if not self.device_taints:
            return False
        return self.device_taint_rules if "DRADeviceTaintRules" in gates_of(self.release) else True

    @classmethod
    def for_release(cls, version: str = DEFAULT_RELEASE) -> Features:
        """The gate defaults of one Kubernetes release (1.34 to 1.37)."""
        release = _release(version)
        values: dict[str, bool] = {}
        for field_name, by_release in _GATES.values():
            if field_name is not None and release in by_release:
                values[field_name] = by_release[release][0]
        for spec in fields(cls):
            if spec.name not in values and spec.name != "release":
                values[spec.name] = False
        return cls(release=release, **values)

    def cel_options(self) -> CelOptions:
        """The CEL environment these gates imply (``allowMultipleAllocations``, list-typed attributes)."""
        return CelOptions(consumable_capacity=self.consumable_capacity, list_type_attributes=self.list_type_attributes)

    def with_gates(self, gates: Mapping[str, bool]) -> Features:
        """These features with Kubernetes gates switched (``{"DRAAdminAccess": False}``).

        Unknown gates are refused as kube refuses them. Gates that a release locks to their default can still be
        switched here (as in the oracle), so that what the allocator does without them stays observable.
        """
        known = gates_of(self.release)
        changes: dict[str, bool] = {}
        for gate, value in gates.items():
            if gate not in known:
                raise FeatureGateError(f"unrecognized feature gate: {gate}")
            field_name, _ = _GATES[gate]
            if field_name is not None:
                changes[field_name] = value
        return replace(self, **changes)  # type: ignore[arg-type]

    def enabled_gates(self) -> list[str]:
        """The gate names that are on, sorted (for messages and reports)."""
        return sorted(
            gate
            for gate, (field_name, by_release) in _GATES.items()
            if field_name is not None and self.release in by_release and getattr(self, field_name)
        )


def gates_of(release: str) -> set[str]:
    """The gate names one release knows."""
    return {gate for gate, (_, by_release) in _GATES.items() if release in by_release}


def _release(version: str) -> str:
    text = version.strip().removeprefix("v")
    parts = text.split(".")
    if len(parts) >= 2:
        text = f"{parts[0]}.{parts[1]}"
    if text not in RELEASES:
        raise FeatureGateError(f"unsupported Kubernetes version {version!r}: expected one of {', '.join(RELEASES)}")
    return text


def parse_gates(text: str) -> dict[str, bool]:
    """``Gate=bool,Gate=bool`` as ``--feature-gates`` takes it."""
    gates: dict[str, bool] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or not name:
            raise FeatureGateError(f"missing bool value for {item}")
        if value not in ("true", "false"):
            raise FeatureGateError(
                f"invalid value of {name}={value}, err: strconv.ParseBool: parsing {value!r}: invalid syntax"
            )
        gates[name] = value == "true"
    return gates
