package main

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// allocatedState builds structured.AllocatedState from the allocated claims
// the way kube-scheduler's DynamicResources plugin does
// (allocateddevices.go, foreachAllocatedDevice): admin-access results are
// not in use; with DRAConsumableCapacity a result with a shareID is a shared
// allocation whose consumedCapacity adds up per device; everything else is
// a dedicated device.
func allocatedState(claims []*resourceapi.ResourceClaim, consumableCapacity bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range claims {
		for _, result := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(result.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumableCapacity && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// taintRule is the part of a DeviceTaintRule (v1alpha3, v1beta2 or v1) that
// kube-scheduler's ResourceSlice tracker applies: the taint goes onto every
// device selected by driver, pool and device name.
type taintRule struct {
	Name     string
	Selector *taintSelector
	Taint    resourceapi.DeviceTaint
}

type taintSelector struct {
	Driver *string `json:"driver,omitempty"`
	Pool   *string `json:"pool,omitempty"`
	Device *string `json:"device,omitempty"`
	// Only in early v1alpha3; the tracker of 1.36+ has no such fields.
	DeviceClassName *string `json:"deviceClassName,omitempty"`
	Selectors       []any   `json:"selectors,omitempty"`
}

type taintRuleDoc struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		DeviceSelector *taintSelector          `json:"deviceSelector"`
		Taint          resourceapi.DeviceTaint `json:"taint"`
	} `json:"spec"`
}

func decodeTaintRule(data []byte) (taintRule, error) {
	var doc taintRuleDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return taintRule{}, err
	}
	sel := doc.Spec.DeviceSelector
	if sel != nil && (sel.DeviceClassName != nil || len(sel.Selectors) > 0) {
		return taintRule{}, fmt.Errorf("DeviceTaintRule %s: deviceClassName/selectors are not supported (gone since v1beta2)", doc.Metadata.Name)
	}
	return taintRule{Name: doc.Metadata.Name, Selector: sel, Taint: doc.Spec.Taint}, nil
}

// applyDeviceTaintRules returns the slices with the rules' taints appended to
// the matching devices, like the tracker behind ListWithDeviceTaintRules.
// What a rule without deviceSelector matches differs by release
// (nilSelectorMatchesAll, release_*.go).
func applyDeviceTaintRules(slices []*resourceapi.ResourceSlice, rules []taintRule) []*resourceapi.ResourceSlice {
	if len(rules) == 0 {
		return slices
	}
	out := make([]*resourceapi.ResourceSlice, 0, len(slices))
	for _, slice := range slices {
		patched := slice
		for _, rule := range rules {
			sel := rule.Selector
			if sel == nil && !nilSelectorMatchesAll {
				continue
			}
			if sel == nil {
				sel = &taintSelector{}
			}
			if sel.Driver != nil && *sel.Driver != slice.Spec.Driver {
				continue
			}
			if sel.Pool != nil && *sel.Pool != slice.Spec.Pool.Name {
				continue
			}
			for i, device := range slice.Spec.Devices {
				if sel.Device != nil && *sel.Device != device.Name {
					continue
				}
				if patched == slice {
					patched = slice.DeepCopy()
				}
				patched.Spec.Devices[i].Taints = append(patched.Spec.Devices[i].Taints, rule.Taint)
			}
		}
		out = append(out, patched)
	}
	return out
}
