package main

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"kubedra/tests/oracle/kube"
)

// measuredAnnotation marks the pods whose scheduling is timed; the pods
// before them only fill the cluster (scheduler_perf's init pods).
const measuredAnnotation = "kubedra.io/measured"

// workload is one benchmark input: the cluster and the pods in scheduling order.
type workload struct {
	nodes      []*v1.Node
	classes    map[string]*resourceapi.DeviceClass // by name
	classOrder []*resourceapi.DeviceClass          // document order, for extended-resource names
	slices     []*resourceapi.ResourceSlice
	taintRules []*kube.TaintRule
	templates  map[string]*resourceapi.ResourceClaimTemplate // namespace/name
	claims     map[string]*resourceapi.ResourceClaim         // namespace/name
	claimOrder []string                                      // keys of claims in the file, in document order
	pods       []*v1.Pod
}

func key(namespace, name string) string { return namespace + "/" + name }

// workloadKinds are what benchmarks/workloads.py writes.
var workloadKinds = []string{
	kube.KindNode, kube.KindPod, kube.KindDeviceClass, kube.KindResourceSlice,
	kube.KindResourceClaimTemplate, kube.KindResourceClaim, kube.KindDeviceTaintRule,
}

// loadWorkload reads the multi-document YAML that benchmarks/workloads.py
// writes (and `kubedra allocate`/`simulate` read), strictly and with the API
// server's defaults (kube.ReadFile), so a field this harness would silently
// ignore is an error instead.
func loadWorkload(file string) (*workload, error) {
	w := &workload{
		classes:   map[string]*resourceapi.DeviceClass{},
		templates: map[string]*resourceapi.ResourceClaimTemplate{},
		claims:    map[string]*resourceapi.ResourceClaim{},
	}
	if err := kube.ReadFile(file, workloadKinds, w.add); err != nil {
		return nil, err
	}
	return w, nil
}

// add files one decoded object; a pod without a UID gets a stable one.
func (w *workload) add(obj any) error {
	switch obj := obj.(type) {
	case *v1.Node:
		w.nodes = append(w.nodes, obj)
	case *v1.Pod:
		if obj.UID == "" {
			obj.UID = types.UID("pod-" + obj.Namespace + "-" + obj.Name)
		}
		w.pods = append(w.pods, obj)
	case *resourceapi.DeviceClass:
		w.classes[obj.Name] = obj
		w.classOrder = append(w.classOrder, obj)
	case *resourceapi.ResourceSlice:
		w.slices = append(w.slices, obj)
	case *resourceapi.ResourceClaimTemplate:
		w.templates[key(obj.Namespace, obj.Name)] = obj
	case *resourceapi.ResourceClaim:
		k := key(obj.Namespace, obj.Name)
		if _, dup := w.claims[k]; dup {
			return fmt.Errorf("duplicate ResourceClaim %s", k)
		}
		w.claims[k] = obj
		w.claimOrder = append(w.claimOrder, k)
	case *kube.TaintRule:
		w.taintRules = append(w.taintRules, obj)
	}
	return nil
}

// isMeasured reports whether a pod carries kubedra.io/measured: "true".
func isMeasured(pod *v1.Pod) bool {
	return strings.EqualFold(pod.Annotations[measuredAnnotation], "true")
}
