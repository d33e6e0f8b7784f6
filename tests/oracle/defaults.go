package main

import resourceapi "k8s.io/api/resource/v1"

// applyClaimDefaults sets what the API server's v1 defaulting sets on a
// ResourceClaim before the scheduler ever sees it (k8s.io/kubernetes
// pkg/apis/resource/v1 defaults.go and zz_generated.defaults.go):
// allocationMode ExactCount, count 1 for ExactCount, toleration operator
// Equal (in requests, subrequests and allocation results).
// DeviceTaint.timeAdded defaulting is left out: it never reaches a result.
func applyClaimDefaults(claim *resourceapi.ResourceClaim) {
	for i := range claim.Spec.Devices.Requests {
		req := &claim.Spec.Devices.Requests[i]
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
	if alloc := claim.Status.Allocation; alloc != nil {
		for i := range alloc.Devices.Results {
			defaultTolerations(alloc.Devices.Results[i].Tolerations)
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
