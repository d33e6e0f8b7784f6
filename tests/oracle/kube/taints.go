package kube

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// TaintRule is the part of a DeviceTaintRule (v1alpha3, v1beta2 or v1) that
// kube-scheduler's ResourceSlice tracker applies: the taint goes onto every
// device selected by driver, pool and device name.
type TaintRule struct {
	Name     string
	Selector *TaintSelector // nil: the rule has no deviceSelector
	Taint    resourceapi.DeviceTaint
}

// TaintSelector is a DeviceTaintRule's deviceSelector.
type TaintSelector struct {
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
		DeviceSelector *TaintSelector          `json:"deviceSelector"`
		Taint          resourceapi.DeviceTaint `json:"taint"`
	} `json:"spec"`
}

func decodeTaintRule(data []byte) (TaintRule, error) {
	var doc taintRuleDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return TaintRule{}, err
	}
	sel := doc.Spec.DeviceSelector
	if sel != nil && (sel.DeviceClassName != nil || len(sel.Selectors) > 0) {
		return TaintRule{}, fmt.Errorf("DeviceTaintRule %s: deviceClassName/selectors are not supported (gone since v1beta2)", doc.Metadata.Name)
	}
	return TaintRule{Name: doc.Metadata.Name, Selector: sel, Taint: doc.Spec.Taint}, nil
}

// ApplyDeviceTaintRules returns the slices with the rules' taints appended
// to the matching devices, like the tracker behind ListWithDeviceTaintRules;
// slices that no rule touches are returned as they are, the others are
// copied. What a rule without deviceSelector matches differs by release:
// every device in 1.36 (nilSelectorMatchesAll), none since 1.37.
func ApplyDeviceTaintRules(slices []*resourceapi.ResourceSlice, rules []TaintRule, nilSelectorMatchesAll bool) []*resourceapi.ResourceSlice {
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
				sel = &TaintSelector{}
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
