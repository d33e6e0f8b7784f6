//go:build k8s136

package main

import (
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// release is the Kubernetes minor this binary emulates (module k8s.io/dynamic-resource-allocation v0.36.x).
const release = "1.36"

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

// allocatorFeatures is kube-scheduler v1.36's own mapping
// (dynamicresources.AllocatorFeatures) of the plugin features these gates
// give; it does not pass DRAListTypeAttributes to the allocator (only to the
// CEL cache).
func (g gates) allocatorFeatures() structured.Features {
	return dynamicresources.AllocatorFeatures(feature.Features{
		EnableDRAAdminAccess:               g.enabled("DRAAdminAccess"),
		EnableDRAPrioritizedList:           g.enabled("DRAPrioritizedList"),
		EnableDRAPartitionableDevices:      g.enabled("DRAPartitionableDevices"),
		EnableDRADeviceTaints:              g.enabled("DRADeviceTaints"),
		EnableDRADeviceBindingConditions:   g.enabled("DRADeviceBindingConditions"),
		EnableDRAResourceClaimDeviceStatus: g.enabled("DRAResourceClaimDeviceStatus"),
		EnableDRAConsumableCapacity:        g.enabled("DRAConsumableCapacity"),
		EnableDRAListTypeAttributes:        g.enabled("DRAListTypeAttributes"),
	})
}
