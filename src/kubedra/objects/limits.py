"""API limits of resource.k8s.io/v1, named as upstream names them (``k8s.io/api/resource/v1/types.go``).

Values are those of Kubernetes 1.37 (unchanged since 1.35 except where noted). The loader's own safety
limits (document size, nesting, alias expansion) are at the end; they are kubedra's, not the API's.
"""

from __future__ import annotations

from typing import Final

# ResourceSlice
ResourceSliceMaxDevices: Final = 128
ResourceSliceMaxDevicesWithTaintsOrConsumesCounters: Final = 64
ResourceSliceMaxAttributesAndCapacitiesPerDevice: Final = 32
ResourceSliceMaxAttributeValuesPerDevice: Final = 48
ResourceSliceMaxCounterSets: Final = 8
ResourceSliceMaxCountersPerCounterSet: Final = 32
ResourceSliceMaxDeviceCounterConsumptionsPerDevice: Final = 2
ResourceSliceMaxCountersPerDeviceCounterConsumption: Final = 32
DeviceAttributeMaxValueLength: Final = 64
DeviceMaxDomainLength: Final = 63
DeviceMaxIDLength: Final = 32
DriverNameMaxLength: Final = 63
PoolNameMaxLength: Final = 253
DeviceTaintsMaxLength: Final = 16  # 4 in 1.34
BindingConditionsMaxSize: Final = 4
BindingFailureConditionsMaxSize: Final = 4
CapacityRequestPolicyDiscreteMaxOptions: Final = 10

# ResourceClaim
DeviceRequestsMaxSize: Final = 32
DeviceConstraintsMaxSize: Final = 32
DeviceConfigMaxSize: Final = 32
FirstAvailableDeviceRequestMaxSize: Final = 8
DeviceSelectorsMaxSize: Final = 32
DeviceTolerationsMaxLength: Final = 16
AllocationResultsMaxSize: Final = 32
AllocationConfigMaxSize: Final = 64
ResourceClaimReservedForMaxSize: Final = 256
AllocatedDeviceStatusMaxConditions: Final = 8
AllocatedDeviceStatusDataMaxLength: Final = 10 * 1024

# CEL and opaque parameters
CELSelectorExpressionMaxLength: Final = 10 * 1024
CELSelectorExpressionMaxCost: Final = 1_000_000
OpaqueParametersMaxLength: Final = 10 * 1024

# apimachinery name formats
DNS1123LabelMaxLength: Final = 63
DNS1123SubdomainMaxLength: Final = 253
QualifiedNameMaxLength: Final = 63

# kubedra's loader safety limits (not API limits)
MaxFileBytes: Final = 8 * 1024 * 1024  # the default; --max-file-size changes it
MaxReadableFileBytes: Final = 4 * 1024 * 1024 * 1024  # the most --max-file-size allows
MaxNestingDepth: Final = 64
MaxExpandedNodes: Final = 1_000_000
