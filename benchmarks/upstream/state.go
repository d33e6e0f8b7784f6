package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// allocatedDevices keeps what every allocated claim uses, updated as claims
// get allocated, the way the DynamicResources plugin's event handlers do
// (allocateddevices.go): admin-access results are not in use; with
// DRAConsumableCapacity a result with a shareID is a shared allocation whose
// consumedCapacity adds up per device; anything else is a dedicated device.
type allocatedDevices struct {
	ids        sets.Set[structured.DeviceID]
	shareIDs   sets.Set[structured.SharedDeviceID]
	capacities structured.ConsumedCapacityCollection
}

func newAllocatedDevices() *allocatedDevices {
	return &allocatedDevices{
		ids:        sets.New[structured.DeviceID](),
		shareIDs:   sets.New[structured.SharedDeviceID](),
		capacities: structured.NewConsumedCapacityCollection(),
	}
}

func (a *allocatedDevices) add(allocation *resourceapi.AllocationResult) {
	a.update(allocation, true)
}

func (a *allocatedDevices) remove(allocation *resourceapi.AllocationResult) {
	a.update(allocation, false)
}

func (a *allocatedDevices) update(allocation *resourceapi.AllocationResult, add bool) {
	for _, result := range allocation.Devices.Results {
		if ptr.Deref(result.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
		if result.ShareID != nil { // DRAConsumableCapacity is on in 1.37
			shared := structured.MakeSharedDeviceID(id, result.ShareID)
			var consumed *structured.DeviceConsumedCapacity
			if result.ConsumedCapacity != nil {
				c := structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity)
				consumed = &c
			}
			if add {
				a.shareIDs.Insert(shared)
				if consumed != nil {
					a.capacities.Insert(*consumed)
				}
			} else {
				a.shareIDs.Delete(shared)
				if consumed != nil {
					a.capacities.Remove(*consumed)
				}
			}
			continue
		}
		if add {
			a.ids.Insert(id)
		} else {
			a.ids.Delete(id)
		}
	}
}

// gather is GatherAllocatedState: copies, because an Allocator keeps the
// state it was built with while the tracker moves on.
func (a *allocatedDevices) gather() structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         a.ids.Clone(),
		AllocatedSharedDeviceIDs: a.shareIDs.Clone(),
		AggregatedCapacity:       a.capacities.Clone(),
	}
}
