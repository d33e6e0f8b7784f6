package main

import (
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatorFeatures are kube-scheduler v1.37's dynamicresources.AllocatorFeatures
// under that release's default feature gates (pkg/features/kube_features.go of
// k8s.io/kubernetes v1.37.2; the same table as tests/oracle/release_k8s137.go):
// DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
// DRADeviceBindingConditions+DRAResourceClaimDeviceStatus and DRAConsumableCapacity
// on; DRAFractionalCapacityRange, DRAListTypeAttributes, DRAOptionalNodeOperations,
// DRADerivedAttributes and DRADeviceCompatibilityGroups off.
func allocatorFeatures() structured.Features {
	return structured.Features{
		AdminAccess:            true,
		PrioritizedList:        true,
		PartitionableDevices:   true,
		DeviceTaints:           true,
		DeviceBindingAndStatus: true,
		ConsumableCapacity:     true,
	}
}

// celFeatures mirror the CEL cache the DynamicResources plugin creates.
func celFeatures() cel.Features {
	return cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: false}
}

// celCacheSize is the plugin's cel.NewCache size.
const celCacheSize = 10

// deviceTaintRules: DRADeviceTaintRules is on by default in 1.37, so the
// scheduler's slice tracker merges DeviceTaintRule taints into devices.
const deviceTaintRules = true
