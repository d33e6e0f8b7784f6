package kube

import resourceapi "k8s.io/api/resource/v1"

// DefaultNamespace is what the API server gives a namespaced object without one.
func DefaultNamespace(namespace string) string {
	if namespace == "" {
		return "default"
	}
	return namespace
}

// ApplyClaimDefaults sets what the API server's v1 defaulting sets on a
// ResourceClaim before the scheduler ever sees it (k8s.io/kubernetes
// pkg/apis/resource/v1 defaults.go and zz_generated.defaults.go): the spec's
// defaults and toleration operator Equal in allocation results.
// DeviceTaint.timeAdded defaulting is left out: it never reaches a result.
func ApplyClaimDefaults(claim *resourceapi.ResourceClaim) {
	ApplyClaimSpecDefaults(&claim.Spec)
	if alloc := claim.Status.Allocation; alloc != nil {
		for i := range alloc.Devices.Results {
			defaultTolerations(alloc.Devices.Results[i].Tolerations)
		}
	}
}

// ApplyClaimSpecDefaults defaults a claim's (or a template's claim) spec:
// allocationMode ExactCount, count 1 for ExactCount, toleration operator
// Equal, in requests and subrequests.
func ApplyClaimSpecDefaults(spec *resourceapi.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		req := &spec.Devices.Requests[i]
		if ex := req.Exactly; ex != nil {
			defaultMode(&ex.AllocationMode, &ex.Count)
			defaultTolerations(ex.Tolerations)
		}
		for j := range req.FirstAvailable {
			sub := &req.FirstAvailable[j]
			defaultMode(&sub.AllocationMode, &sub.Count)
			defaultTolerations(sub.Tolerations)
		}
	}
}

func defaultMode(mode *resourceapi.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultTolerations(tolerations []resourceapi.DeviceToleration) {
	for i := range tolerations {
		if tolerations[i].Operator == "" {
			tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
		}
	}
}
