//go:build k8s136

package kube

import (
	"context"

	resourcev1beta2api "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	resourcev1 "k8s.io/kubernetes/pkg/apis/resource/v1"
	resourcev1beta2 "k8s.io/kubernetes/pkg/apis/resource/v1beta2"
)

// TaintRule is the DeviceTaintRule version the 1.36 slice tracker watches
// (resource.k8s.io/v1beta2; the v1 API came in 1.37).
type TaintRule = resourcev1beta2api.DeviceTaintRule

// registerDefaults adds the API server's defaulting of the types ReadFile
// returns: resource.k8s.io/v1, and v1beta2 for DeviceTaintRules.
func registerDefaults(scheme *runtime.Scheme) error {
	if err := resourcev1.RegisterDefaults(scheme); err != nil {
		return err
	}
	return resourcev1beta2.RegisterDefaults(scheme)
}

// startTracker starts the slice tracker as kube-scheduler v1.36 does
// (pkg/scheduler/scheduler.go): the DeviceTaintRule and DeviceClass informers only with DRADeviceTaintRules.
func startTracker(ctx context.Context, factory informers.SharedInformerFactory, client kubernetes.Interface, opts ClusterOptions) (*resourceslicetracker.Tracker, error) {
	trackerOpts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   opts.DeviceTaintRules,
		EnableConsumableCapacity: opts.ConsumableCapacity,
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.DeviceTaintRules {
		trackerOpts.TaintInformer = factory.Resource().V1beta2().DeviceTaintRules()
		trackerOpts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	return resourceslicetracker.StartTracker(ctx, trackerOpts)
}
