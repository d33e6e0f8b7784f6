"""Allocator features: which optional DRA behaviours are on, from Kubernetes feature gates by release.

Mirrors upstream's ``internal.Features``: kept alphabetical, and every flag changes at least one branch of the
search (or, for ``extended_resource``, of the scheduler that calls it).

Besides the gates, ``Features`` carries *which upstream code* kubedra mirrors, as a few explicit switches
(properties below, each naming the upstream file it follows):

* ``release`` picks the module version: ``k8s.io/dynamic-resource-allocation`` v0.37.2 for 1.37, v0.36.6 for
  1.36 and earlier (1.34 and 1.35 have no oracle here; they run 1.36's code with their own gate defaults).
* ``implementation`` is the variant ``structured.NewAllocator`` picks (``structured/allocator.go``
  ``availableAllocators``): the first of stable, incubating, experimental whose ``SupportedFeatures`` cover every
  enabled feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property

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
    "DRAWorkloadResourceClaims": ("workload_resource_claims", {"1.36": _OFF, "1.37": _OFF}),
    # The scheduler's, not the allocator's: the Workload API's gang scheduling (the GangScheduling plugin).
    "GenericWorkload": ("generic_workload", {"1.35": _OFF, "1.36": _OFF, "1.37": _OFF}),
    "DRADerivedAttributes": ("derived_attributes", {"1.37": _OFF}),
    "DRADeviceCompatibilityGroups": ("compatibility_groups", {"1.37": _OFF}),
    "DRAFractionalCapacityRange": ("fractional_capacity_range", {"1.37": _OFF}),
    "DRAOptionalNodeOperations": ("optional_node_operations", {"1.37": _OFF}),
    "DRAPartitionableDevicesType": (None, {"1.37": _OFF}),
}


class FeatureGateError(ValueError):
    """An unknown gate, a malformed ``--feature-gates`` value, or an unknown release."""


@dataclass(frozen=True)
class Features:
    """The optional behaviours of the structured allocator (all on = the newest behaviour)."""

    admin_access: bool = True
    compatibility_groups: bool = False
    consumable_capacity: bool = True
    derived_attributes: bool = False
    device_binding_conditions: bool = True
    device_status: bool = True
    device_taint_rules: bool = True
    device_taints: bool = True
    extended_resource: bool = True
    fractional_capacity_range: bool = False
    generic_workload: bool = False  # scheduler: PodGroups scheduled as gangs
    list_type_attributes: bool = False
    optional_node_operations: bool = False
    partitionable_devices: bool = True
    prioritized_list: bool = True
    workload_resource_claims: bool = False  # scheduler: ResourceClaims of PodGroups (KEP-5729)
    release: str = DEFAULT_RELEASE

    # ---------------------------------------------------------------------------------- which upstream code

    def _allocator_features(self) -> set[str]:
        """The enabled ``structured.Features``, as that release's scheduler plugin fills them in
        (``dynamicresources.AllocatorFeatures``; 1.36 passes neither list-type attributes nor the 1.37 gates)."""
        enabled = {
            name
            for name, on in (
                ("AdminAccess", self.admin_access),
                ("PrioritizedList", self.prioritized_list),
                ("PartitionableDevices", self.partitionable_devices),
                ("DeviceTaints", self.device_taints),
                ("DeviceBindingAndStatus", self.binding_and_status),
                ("ConsumableCapacity", self.consumable_capacity),
            )
            if on
        }
        if self.release >= "1.37":
            enabled |= {
                name
                for name, on in (
                    ("FractionalCapacityRange", self.fractional_capacity_range),
                    ("ListTypeAttributes", self.list_type_attributes),
                    ("OptionalNodeOperations", self.optional_node_operations),
                    ("DerivedAttributes", self.derived_attributes),
                    ("CompatibilityGroups", self.compatibility_groups),
                )
                if on
            }
        return enabled

    @cached_property
    def implementation(self) -> str:
        """``stable``, ``incubating`` or ``experimental``: the first whose ``SupportedFeatures`` (in
        ``internal/<variant>/allocator_<variant>.go``) cover the enabled features (``structured/allocator.go``)."""
        enabled = self._allocator_features()
        for name, supported in _SUPPORTED[self.code]:
            if enabled <= supported:
                return name
        return "experimental"

    @property
    def code(self) -> str:
        """The release whose allocator code kubedra mirrors: ``1.37`` (v0.37.2) or ``1.36`` (v0.36.6, also for
        1.34 and 1.35)."""
        return "1.37" if self.release >= "1.37" else "1.36"

    @property
    def stable(self) -> bool:
        """The stable variant (``internal/stable/allocator_stable.go``): permutations, not combinations; only
        ``matchAttribute``; no capacity checks; slices in input order; counter slices relevant for every node."""
        return self.implementation == "stable"

    @property
    def list_constraints(self) -> bool:
        """Constraints compare list-type attributes as sets (``internal/experimental/constraint.go``)."""
        return self.list_type_attributes and self.implementation == "experimental"

    @property
    def counter_slices_everywhere(self) -> bool:
        """Every slice with ``sharedCounters`` is relevant for every node: ``pools_stable.go`` in both releases and
        ``pools_incubating.go`` of v0.36.6 (``relevant = true``); v0.37.2's incubating gathers only pools with
        devices for the node."""
        return self.stable or self.code == "1.36"

    @property
    def distinct_per_request(self) -> bool:
        """v0.36.6 ``incubating/constraint.go``: ``distinctAttribute`` remembers one value per request name (a later
        device of the same request replaces it, removal forgets it); v0.37.2 compares against every device."""
        return self.code == "1.36"

    @property
    def config_per_request(self) -> bool:
        """v0.36.6 ``allocator_*.go`` result building: a claim config is appended once per request it names
        (``continue``) and ``requests`` is never cleared; v0.37.2 appends it once and clears it when it covers all."""
        return self.code == "1.36"

    @property
    def lenient_capacity(self) -> bool:
        """v0.36.6 ``incubating/allocator_incubating.go`` and ``consumable_capacity.go``: capacity errors skip the
        device instead of aborting, consumed amounts are not checked for sign, a range rounds in BinarySI, an
        ``All`` request's capacity check counts allocated shares, and a share without ``consumedCapacity`` does not
        make the device's capacity "in use" (``deviceCapacityInUse``)."""
        return self.code == "1.36"

    @property
    def hides_compatibility_groups(self) -> bool:
        """v0.37.2 ``pools_*.go``: with DRADeviceCompatibilityGroups off, slices whose devices name compatibility
        groups are ignored (their pool then looks incomplete); v0.36.6 does not know the field."""
        return self.code == "1.37" and not self.compatibility_groups

    @property
    def cel_error_names_device(self) -> bool:
        """v0.37.2 ``selectorsMatch``: ``selector #i on device D: CEL runtime error`` with the optional-chaining hint
        (``cel.EnhanceRuntimeError``); v0.36.6 names neither."""
        return self.code == "1.37"

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
        """The CEL environment the allocator compiles selectors in.

        The allocator's cache compiles stored expressions (``cel/compile.go``: ``environment.StoredExpressions``),
        which ignore the feature gates and keep the newest ``device`` declaration: ``allowMultipleAllocations``
        compiles even with DRAConsumableCapacity off, in 1.36 and 1.37 alike. List-typed declarations follow the
        gate; list values reach CEL whatever the gate in v0.37.2, only with it in v0.36.6 (an error without).
        """
        return CelOptions(consumable_capacity=True, list_type_attributes=self.list_type_attributes,
                          lists_without_gate=self.code == "1.37")

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


_STABLE = frozenset(("AdminAccess", "PrioritizedList", "PartitionableDevices", "DeviceTaints"))
_INCUBATING_136 = _STABLE | {"DeviceBindingAndStatus", "ConsumableCapacity"}
_INCUBATING_137 = _INCUBATING_136 | {"FractionalCapacityRange"}
_SUPPORTED: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {
    "1.36": (("stable", _STABLE), ("incubating", _INCUBATING_136)),
    "1.37": (("stable", _STABLE), ("incubating", _INCUBATING_137)),
}
"""``SupportedFeatures`` of the stable and incubating variants per release (experimental supports everything)."""


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
