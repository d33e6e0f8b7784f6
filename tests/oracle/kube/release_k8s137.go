//go:build !k8s136

package kube

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	resourcev1 "k8s.io/kubernetes/pkg/apis/resource/v1"
)

// TaintRule is the DeviceTaintRule version the 1.37 slice tracker watches.
type TaintRule = resourceapi.DeviceTaintRule

// registerDefaults adds the API server's defaulting of the types ReadFile
// returns (resource.k8s.io/v1, DeviceTaintRule included).
func registerDefaults(scheme *runtime.Scheme) error {
	return resourcev1.RegisterDefaults(scheme)
}

// startTracker starts the slice tracker as kube-scheduler v1.37 does
// (pkg/scheduler/scheduler.go): the DeviceTaintRule informer only with DRADeviceTaintRules.
func startTracker(ctx context.Context, factory informers.SharedInformerFactory, client kubernetes.Interface, opts ClusterOptions) (*resourceslicetracker.Tracker, error) {
	trackerOpts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   opts.DeviceTaintRules,
		EnableConsumableCapacity: opts.ConsumableCapacity,
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.DeviceTaintRules {
		trackerOpts.TaintInformer = factory.Resource().V1().DeviceTaintRules()
	}
	return resourceslicetracker.StartTracker(ctx, trackerOpts)
}
