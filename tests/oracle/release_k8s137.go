//go:build !k8s136

package main

import (
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// release is the Kubernetes minor this binary emulates (module k8s.io/dynamic-resource-allocation v0.37.x).
const release = "1.37"

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

// allocatorFeatures is kube-scheduler v1.37's own mapping
// (dynamicresources.AllocatorFeatures) of the plugin features these gates give.
func (g gates) allocatorFeatures() structured.Features {
	return dynamicresources.AllocatorFeatures(feature.Features{
		EnableDRAAdminAccess:               g.enabled("DRAAdminAccess"),
		EnableDRAPrioritizedList:           g.enabled("DRAPrioritizedList"),
		EnableDRAPartitionableDevices:      g.enabled("DRAPartitionableDevices"),
		EnableDRADeviceTaints:              g.enabled("DRADeviceTaints"),
		EnableDRADeviceBindingConditions:   g.enabled("DRADeviceBindingConditions"),
		EnableDRAResourceClaimDeviceStatus: g.enabled("DRAResourceClaimDeviceStatus"),
		EnableDRAConsumableCapacity:        g.enabled("DRAConsumableCapacity"),
		EnableDRAFractionalCapacityRange:   g.enabled("DRAFractionalCapacityRange"),
		EnableDRAListTypeAttributes:        g.enabled("DRAListTypeAttributes"),
		EnableDRAOptionalNodeOperations:    g.enabled("DRAOptionalNodeOperations"),
		EnableDRADerivedAttributes:         g.enabled("DRADerivedAttributes"),
		EnableDRADeviceCompatibilityGroups: g.enabled("DRADeviceCompatibilityGroups"),
	})
}
