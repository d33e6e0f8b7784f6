//go:build !k8s136

package main

import "k8s.io/dynamic-resource-allocation/structured"

// release is the Kubernetes minor this binary emulates (module k8s.io/dynamic-resource-allocation v0.37.x).
const release = "1.37"

// nilSelectorMatchesAll: since 1.37 a DeviceTaintRule without deviceSelector matches no device.
const nilSelectorMatchesAll = false

// releaseDefaults are the DRA gate defaults of k8s.io/kubernetes v1.37
// (pkg/features/kube_features.go). DRAFractionalCapacityRange is on only with
// --min-compatibility-version=1.37; the default minimum compatibility version
// is one minor below, so it is off by default.
var releaseDefaults = map[string]bool{
	"DynamicResourceAllocation":                   true,
	"DRAAdminAccess":                              true,
	"DRAConsumableCapacity":                       true,
	"DRADerivedAttributes":                        false,
	"DRADeviceBindingConditions":                  true,
	"DRADeviceCompatibilityGroups":                false,
	"DRADeviceTaintRules":                         true,
	"DRADeviceTaints":                             true,
	"DRAExtendedResource":                         true,
	"DRAFractionalCapacityRange":                  false,
	"DRAListTypeAttributes":                       false,
	"DRANodeAllocatableResources":                 false,
	"DRAOptionalNodeOperations":                   false,
	"DRAPartitionableDevices":                     true,
	"DRAPartitionableDevicesType":                 false,
	"DRAPrioritizedList":                          true,
	"DRAResourceClaimDeviceStatus":                true,
	"DRAResourceClaimGranularStatusAuthorization": true,
	"DRAResourcePoolStatus":                       false,
	"DRASchedulerFilterTimeout":                   true,
	"DRAWorkloadResourceClaims":                   false,
}

// allocatorFeatures maps gates like kube-scheduler v1.37's
// dynamicresources.AllocatorFeatures.
func (g gates) allocatorFeatures() structured.Features {
	return structured.Features{
		AdminAccess:             g.enabled("DRAAdminAccess"),
		PrioritizedList:         g.enabled("DRAPrioritizedList"),
		PartitionableDevices:    g.enabled("DRAPartitionableDevices"),
		DeviceTaints:            g.enabled("DRADeviceTaints"),
		DeviceBindingAndStatus:  g.enabled("DRADeviceBindingConditions") && g.enabled("DRAResourceClaimDeviceStatus"),
		ConsumableCapacity:      g.enabled("DRAConsumableCapacity"),
		FractionalCapacityRange: g.enabled("DRAFractionalCapacityRange"),
		ListTypeAttributes:      g.enabled("DRAListTypeAttributes"),
		OptionalNodeOperations:  g.enabled("DRAOptionalNodeOperations"),
		DerivedAttributes:       g.enabled("DRADerivedAttributes"),
		CompatibilityGroups:     g.enabled("DRADeviceCompatibilityGroups"),
	}
}
