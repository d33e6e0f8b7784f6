package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFileDefaultsAndOrder(t *testing.T) {
	path := writeFile(t, `# only a comment
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: r
      exactly: {deviceClassName: gpu, tolerations: [{key: k}]}
---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: rule}
spec:
  taint: {key: k, effect: NoSchedule}
`)
	var objs []any
	err := ReadFile(path, []string{KindResourceClaim, KindDeviceTaintRule}, func(obj any) error {
		objs = append(objs, obj)
		return nil
	})
	if err != nil || len(objs) != 2 {
		t.Fatalf("ReadFile = %v, %d objects", err, len(objs))
	}
	claim := objs[0].(*resourceapi.ResourceClaim)
	ex := claim.Spec.Devices.Requests[0].Exactly
	if claim.Namespace != "default" || ex.AllocationMode != resourceapi.DeviceAllocationModeExactCount ||
		ex.Count != 1 || ex.Tolerations[0].Operator != resourceapi.DeviceTolerationOpEqual {
		t.Errorf("claim not defaulted: %+v", claim)
	}
	if rule := objs[1].(TaintRule); rule.Name != "rule" || rule.Selector != nil {
		t.Errorf("rule = %+v", rule)
	}
}

func TestReadFileErrorsNameTheDocument(t *testing.T) {
	for text, want := range map[string]string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n":                                                                  `document 1 (Pod): unsupported kind "Pod" in apiVersion v1`,
		"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nspec: {bogus: 1}\n":                                             `document 1 (DeviceClass): `,
		"apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: resource.k8s.io/v1alpha3\nkind: ResourceClaim\n": `document 2 (ResourceClaim): unsupported apiVersion "resource.k8s.io/v1alpha3" (use resource.k8s.io/v1)`,
		"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n":                                                     `document 1 (ResourceClaimTemplate): unsupported kind "ResourceClaimTemplate"`,
		"apiVersion: apps/v1\nkind: Deployment\n":                                                                           `document 1 (Deployment): unsupported apiVersion "apps/v1"`,
		"apiVersion: resource.k8s.io/v1alpha2\nkind: DeviceTaintRule\nmetadata: {}\n":                                       `unsupported apiVersion "resource.k8s.io/v1alpha2"`,
	} {
		path := writeFile(t, text)
		err := ReadFile(path, []string{KindNode, KindDeviceClass, KindResourceClaim, KindDeviceTaintRule}, func(any) error { return nil })
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

func TestApplyDeviceTaintRules(t *testing.T) {
	slice := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: "d", Pool: resourceapi.ResourcePool{Name: "p"},
		Devices: []resourceapi.Device{{Name: "a"}, {Name: "b"}},
	}}
	taint := resourceapi.DeviceTaint{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	onB := TaintRule{Selector: &TaintSelector{Driver: ptr.To("d"), Device: ptr.To("b")}, Taint: taint}
	noSelector := TaintRule{Taint: taint}

	out := ApplyDeviceTaintRules([]*resourceapi.ResourceSlice{slice}, []TaintRule{onB, noSelector}, false)
	if got := out[0].Spec.Devices; len(got[0].Taints) != 0 || len(got[1].Taints) != 1 {
		t.Errorf("1.37: taints %+v", got)
	}
	out = ApplyDeviceTaintRules([]*resourceapi.ResourceSlice{slice}, []TaintRule{noSelector}, true)
	if got := out[0].Spec.Devices; len(got[0].Taints) != 1 || len(got[1].Taints) != 1 {
		t.Errorf("1.36: taints %+v", got)
	}
	if len(slice.Spec.Devices[1].Taints) != 0 {
		t.Error("the input slice was modified")
	}
}

func TestAllocatedDevices(t *testing.T) {
	shared := resourceapi.DeviceRequestAllocationResult{
		Driver: "d", Pool: "p", Device: "a", ShareID: ptr.To(types.UID("s1")),
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")},
	}
	alloc := &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Driver: "d", Pool: "p", Device: "b"},
		{Driver: "d", Pool: "p", Device: "c", AdminAccess: ptr.To(true)},
		shared,
	}}}

	devices := NewAllocatedDevices(true)
	devices.Add(alloc)
	state := devices.State()
	if !state.AllocatedDevices.Has(structured.MakeDeviceID("d", "p", "b")) || state.AllocatedDevices.Len() != 1 ||
		state.AllocatedSharedDeviceIDs.Len() != 1 || len(state.AggregatedCapacity) != 1 {
		t.Errorf("after Add: %+v", state)
	}
	devices.Remove(alloc)
	if state.AllocatedDevices.Len() != 1 {
		t.Error("State is not a copy")
	}
	if s := devices.State(); s.AllocatedDevices.Len() != 0 || s.AllocatedSharedDeviceIDs.Len() != 0 {
		t.Errorf("after Remove: %+v", s)
	}

	claim := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: alloc}}
	if s := GatherAllocatedState([]*resourceapi.ResourceClaim{claim}, false); s.AllocatedDevices.Len() != 2 || s.AllocatedSharedDeviceIDs.Len() != 0 {
		t.Errorf("without DRAConsumableCapacity a shared result is a dedicated device: %+v", s)
	}
}
