package kube

import (
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClassLister serves DeviceClasses like the scheduler's informer lister,
// including its NotFound error text (which the allocator wraps).
type ClassLister map[string]*resourceapi.DeviceClass

// List returns every class, in no particular order (as the informer does).
func (c ClassLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, class := range c {
		out = append(out, class)
	}
	return out, nil
}

// Get returns the named class or the API server's NotFound error.
func (c ClassLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := c[name]; ok {
		return class, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclass"}, name)
}
