package kube

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// AllocatedDevices keeps what the allocated claims use, the way the
// DynamicResources plugin's allocatedDevices tracker does
// (allocateddevices.go, foreachAllocatedDevice): admin-access results are not
// in use; with DRAConsumableCapacity a result with a shareID is a shared
// allocation whose consumedCapacity adds up per device; anything else is a
// dedicated device.
type AllocatedDevices struct {
	consumableCapacity bool
	ids                sets.Set[structured.DeviceID]
	shareIDs           sets.Set[structured.SharedDeviceID]
	capacities         structured.ConsumedCapacityCollection
}

// NewAllocatedDevices starts an empty tracker; consumableCapacity is the
// allocator's Features.ConsumableCapacity.
func NewAllocatedDevices(consumableCapacity bool) *AllocatedDevices {
	return &AllocatedDevices{
		consumableCapacity: consumableCapacity,
		ids:                sets.New[structured.DeviceID](),
		shareIDs:           sets.New[structured.SharedDeviceID](),
		capacities:         structured.NewConsumedCapacityCollection(),
	}
}

// GatherAllocatedState is the state the plugin hands NewAllocator when the
// given claims (all with status.allocation) are the allocated ones.
func GatherAllocatedState(claims []*resourceapi.ResourceClaim, consumableCapacity bool) structured.AllocatedState {
	devices := NewAllocatedDevices(consumableCapacity)
	for _, claim := range claims {
		devices.Add(claim.Status.Allocation)
	}
	return devices.State()
}

// Add counts an allocation's devices as in use (a claim got allocated).
func (a *AllocatedDevices) Add(allocation *resourceapi.AllocationResult) {
	a.update(allocation, true)
}

// Remove frees an allocation's devices (a claim got deallocated or deleted).
func (a *AllocatedDevices) Remove(allocation *resourceapi.AllocationResult) {
	a.update(allocation, false)
}

func (a *AllocatedDevices) update(allocation *resourceapi.AllocationResult, add bool) {
	for _, result := range allocation.Devices.Results {
		if ptr.Deref(result.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
		if a.consumableCapacity && result.ShareID != nil {
			shared := structured.MakeSharedDeviceID(id, result.ShareID)
			if add {
				a.shareIDs.Insert(shared)
			} else {
				a.shareIDs.Delete(shared)
			}
			if result.ConsumedCapacity != nil {
				consumed := structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity)
				if add {
					a.capacities.Insert(consumed)
				} else {
					a.capacities.Remove(consumed)
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

// State is GatherAllocatedState's answer: copies, because an Allocator keeps
// the state it was built with while the tracker moves on.
func (a *AllocatedDevices) State() structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         a.ids.Clone(),
		AllocatedSharedDeviceIDs: a.shareIDs.Clone(),
		AggregatedCapacity:       a.capacities.Clone(),
	}
}
