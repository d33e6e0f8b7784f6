package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
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
	if rule := objs[1].(*TaintRule); rule.Name != "rule" || rule.Spec.DeviceSelector != nil || rule.Spec.Taint.TimeAdded == nil {
		t.Errorf("rule not decoded with the API server's defaults: %+v", rule)
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

// TestClusterWiring checks our glue, not upstream's logic (the oracle's
// conformance and differential suites compare that): the objects reach the
// slice tracker and the DRA manager, claims are copied on the way in, and
// Add/Update/DeleteClaim reach the allocated-device tracking.
func TestClusterWiring(t *testing.T) {
	path := writeFile(t, `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  pool: {name: p, resourceSliceCount: 1}
  nodeName: n
  devices: [{name: a}, {name: b}]
---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: rule}
spec:
  deviceSelector: {device: b}
  taint: {key: k, effect: NoSchedule}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec: {}
status:
  allocation:
    devices:
      results:
      - {request: r, driver: d, pool: p, device: a}
      - {request: r, driver: d, pool: p, device: b, shareID: 9b9e9c1e-0000-4000-8000-000000000001, consumedCapacity: {memory: 1Gi}}
`)
	var classes []*resourceapi.DeviceClass
	var slices []*resourceapi.ResourceSlice
	var rules []*TaintRule
	var claims []*resourceapi.ResourceClaim
	err := ReadFile(path, []string{KindDeviceClass, KindResourceSlice, KindDeviceTaintRule, KindResourceClaim}, func(obj any) error {
		switch obj := obj.(type) {
		case *resourceapi.DeviceClass:
			classes = append(classes, obj)
		case *resourceapi.ResourceSlice:
			slices = append(slices, obj)
		case *TaintRule:
			rules = append(rules, obj)
		case *resourceapi.ResourceClaim:
			claims = append(claims, obj)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, taintRules := range []bool{false, true} {
		cluster, err := NewCluster(context.Background(), ClusterOptions{DeviceTaintRules: taintRules, ConsumableCapacity: true},
			classes, slices, rules, claims)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cluster.Slices()
		if err != nil || len(got) != 1 || len(got[0].Spec.Devices[1].Taints) != map[bool]int{false: 0, true: 1}[taintRules] {
			t.Errorf("DeviceTaintRules=%v: slices %+v, %v", taintRules, got, err)
		}
		if class, err := cluster.Classes().Get("gpu"); err != nil || class.Name != "gpu" {
			t.Errorf("class: %v, %v", class, err)
		}
		cluster.Close()
	}

	cluster, err := NewCluster(context.Background(), ClusterOptions{ConsumableCapacity: true}, classes, slices, rules, claims)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	claim := claims[0]
	alloc := claim.Status.Allocation
	claim.Status.Allocation = nil // the caller's object: the cluster holds a copy
	state, err := cluster.AllocatedState()
	if err != nil || state.AllocatedDevices.Len() != 1 || state.AllocatedSharedDeviceIDs.Len() != 1 || len(state.AggregatedCapacity) != 1 {
		t.Fatalf("allocated state %+v, %v", state, err)
	}
	cluster.UpdateClaim(claim)
	if state, _ := cluster.AllocatedState(); state.AllocatedDevices.Len() != 0 || state.AllocatedSharedDeviceIDs.Len() != 0 {
		t.Errorf("after the update that deallocated: %+v", state)
	}
	claim.Status.Allocation = alloc
	cluster.UpdateClaim(claim)
	cluster.DeleteClaim(claim)
	if state, _ := cluster.AllocatedState(); state.AllocatedDevices.Len() != 0 {
		t.Errorf("after delete: %+v", state)
	}
	if err := cluster.AddClaim(claim); err != nil {
		t.Errorf("add after delete: %v", err)
	}
	if err := cluster.AddClaim(claim); err == nil {
		t.Error("a second claim of the same name was accepted")
	}
}
