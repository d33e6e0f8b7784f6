//go:build k8s136

package main

import "k8s.io/dynamic-resource-allocation/structured"

// release is the Kubernetes minor this binary emulates (module k8s.io/dynamic-resource-allocation v0.36.x).
const release = "1.36"

// nilSelectorMatchesAll: in 1.36 a DeviceTaintRule without deviceSelector taints every device.
const nilSelectorMatchesAll = true

// releaseDefaults are the DRA gate defaults of k8s.io/kubernetes v1.36
// (pkg/features/kube_features.go).
var releaseDefaults = map[string]bool{
	"DynamicResourceAllocation":                   true,
	"DRAAdminAccess":                              true,
	"DRAConsumableCapacity":                       true,
	"DRADeviceBindingConditions":                  true,
	"DRADeviceTaintRules":                         false,
	"DRADeviceTaints":                             true,
	"DRAExtendedResource":                         true,
	"DRAListTypeAttributes":                       false,
	"DRANodeAllocatableResources":                 false,
	"DRAPartitionableDevices":                     true,
	"DRAPrioritizedList":                          true,
	"DRAResourceClaimDeviceStatus":                true,
	"DRAResourceClaimGranularStatusAuthorization": true,
	"DRAResourcePoolStatus":                       false,
	"DRASchedulerFilterTimeout":                   true,
	"DRAWorkloadResourceClaims":                   false,
}

// allocatorFeatures maps gates like kube-scheduler v1.36's
// dynamicresources.AllocatorFeatures, which does not pass
// DRAListTypeAttributes to the allocator (only to the CEL cache).
func (g gates) allocatorFeatures() structured.Features {
	return structured.Features{
		AdminAccess:            g.enabled("DRAAdminAccess"),
		PrioritizedList:        g.enabled("DRAPrioritizedList"),
		PartitionableDevices:   g.enabled("DRAPartitionableDevices"),
		DeviceTaints:           g.enabled("DRADeviceTaints"),
		DeviceBindingAndStatus: g.enabled("DRADeviceBindingConditions") && g.enabled("DRAResourceClaimDeviceStatus"),
		ConsumableCapacity:     g.enabled("DRAConsumableCapacity"),
	}
}
