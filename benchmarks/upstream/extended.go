package main

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Extended resources backed by DRA (KEP-5004, GA in 1.37): a pod asking for
// `example.com/gpu: 1` on a node that does not advertise it gets one special
// claim, allocated after the pod's own claims in the same Allocate call.

const implicitClassPrefix = "deviceclass.resource.kubernetes.io/"

// extendedClasses maps extended resource names to DeviceClass names: on a
// clash the newest class (creationTimestamp) wins, then the lower name.
type extendedClasses struct {
	explicit map[string]*resourceapi.DeviceClass
	classes  map[string]*resourceapi.DeviceClass
}

func newExtendedClasses(order []*resourceapi.DeviceClass, classes map[string]*resourceapi.DeviceClass) *extendedClasses {
	m := &extendedClasses{explicit: map[string]*resourceapi.DeviceClass{}, classes: classes}
	for _, class := range order {
		name := class.Spec.ExtendedResourceName
		if name == nil || *name == "" {
			continue
		}
		cur, ok := m.explicit[*name]
		if !ok || class.CreationTimestamp.After(cur.CreationTimestamp.Time) ||
			(class.CreationTimestamp.Equal(&cur.CreationTimestamp) && class.Name < cur.Name) {
			m.explicit[*name] = class
		}
	}
	return m
}

func (m *extendedClasses) empty() bool { return len(m.explicit) == 0 && len(m.classes) == 0 }

func (m *extendedClasses) classFor(resourceName string) (string, bool) {
	if class, ok := m.explicit[resourceName]; ok {
		return class.Name, true
	}
	if name, ok := strings.CutPrefix(resourceName, implicitClassPrefix); ok {
		if _, found := m.classes[name]; found {
			return name, true
		}
	}
	return "", false
}

// extendedRequest is one container's request for one extended resource.
type extendedRequest struct {
	container int // index among init containers, then containers
	position  int // index among the container's sorted resource names
	resource  string
	count     int64
}

func (r extendedRequest) requestName() string {
	return fmt.Sprintf("container-%d-request-%d", r.container, r.position)
}

func isExtendedResourceName(name string) bool {
	if strings.HasPrefix(name, implicitClassPrefix) {
		return true
	}
	if strings.HasPrefix(name, "requests.") || strings.HasPrefix(name, "hugepages-") {
		return false
	}
	domain, _, found := strings.Cut(name, "/")
	return found && domain != "" && !strings.HasSuffix(domain, "kubernetes.io")
}

// extendedRequests lists a pod's positive integer extended-resource requests
// (requests defaulted from limits) that some DeviceClass maps.
func extendedRequests(pod *v1.Pod, classes *extendedClasses) []extendedRequest {
	var found []extendedRequest
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i, c := range containers {
		amounts := map[v1.ResourceName]resource.Quantity{}
		for name, q := range c.Resources.Limits {
			amounts[name] = q
		}
		for name, q := range c.Resources.Requests {
			amounts[name] = q
		}
		names := make([]string, 0, len(amounts))
		for name := range amounts {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for j, name := range names {
			if !isExtendedResourceName(name) {
				continue
			}
			if _, ok := classes.classFor(name); !ok {
				continue
			}
			q := amounts[v1.ResourceName(name)]
			if n, ok := q.AsInt64(); ok && n > 0 {
				found = append(found, extendedRequest{container: i, position: j, resource: name, count: n})
			}
		}
	}
	sort.SliceStable(found, func(a, b int) bool {
		if found[a].resource != found[b].resource {
			return found[a].resource < found[b].resource
		}
		return found[a].container < found[b].container
	})
	return found
}

// specialClaim builds the in-memory claim for the requests a node serves
// through DRA (those it does not advertise in status.allocatable); nil if none.
func specialClaim(pod *v1.Pod, requests []extendedRequest, node *v1.Node, classes *extendedClasses) *resourceapi.ResourceClaim {
	var devReqs []resourceapi.DeviceRequest
	for _, r := range requests {
		if _, advertised := node.Status.Allocatable[v1.ResourceName(r.resource)]; advertised {
			continue
		}
		class, _ := classes.classFor(r.resource)
		devReqs = append(devReqs, resourceapi.DeviceRequest{
			Name: r.requestName(),
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class,
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           r.count,
			},
		})
	}
	if len(devReqs) == 0 {
		return nil
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:         "<extended-resources>",
			GenerateName: extendedClaimBase(pod.Name),
			Namespace:    pod.Namespace,
			Annotations:  map[string]string{"resource.kubernetes.io/extended-resource-claim": "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
			}},
		},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: devReqs}},
	}
}

func extendedClaimBase(podName string) string {
	base := podName + "-extended-resources-"
	if len(base) > 58 {
		base = base[:58]
	}
	return base
}

func ptrTo[T any](v T) *T { return &v }
