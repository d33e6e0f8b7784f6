package kube

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// apiDefaults defaults objects with the API server's own defaulting functions
// (k8s.io/kubernetes pkg/apis/resource, registerDefaults per release).
var apiDefaults = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := registerDefaults(scheme); err != nil {
		panic(err)
	}
	return scheme
}()

// DefaultNamespace is the namespace a namespaced object without one gets
// (kubectl's default context namespace).
func DefaultNamespace(namespace string) string {
	if namespace == "" {
		return "default"
	}
	return namespace
}

// The kinds ReadFile decodes, and the Go type each document becomes.
const (
	KindNode                  = "Node"                  // *v1.Node (apiVersion v1)
	KindPod                   = "Pod"                   // *v1.Pod (apiVersion v1)
	KindDeviceClass           = "DeviceClass"           // *resourceapi.DeviceClass
	KindResourceSlice         = "ResourceSlice"         // *resourceapi.ResourceSlice
	KindResourceClaim         = "ResourceClaim"         // *resourceapi.ResourceClaim
	KindResourceClaimTemplate = "ResourceClaimTemplate" // *resourceapi.ResourceClaimTemplate
	KindDeviceTaintRule       = "DeviceTaintRule"       // *TaintRule (the release's tracker version)
)

// typeMeta is read first to pick the Go type of a document.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ReadFile splits a multi-document YAML file and decodes each document of
// one of the given kinds strictly (unknown fields are errors, so a typo fails
// loudly instead of being ignored), with the API server's defaults and
// namespace "default" where none is given, and passes it to add in document
// order. resource.k8s.io objects are read in v1 or v1beta2 (the same JSON
// shape), DeviceTaintRules also in v1alpha3 (each decoded into the version
// the release's slice tracker watches: one shape since 1.36); Node and Pod in
// core v1. Every
// error names the file and the document.
func ReadFile(file string, kinds []string, add func(obj any) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(f, 1<<20))
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if onlyComments(data) {
			continue
		}
		var tm typeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		obj, err := decode(tm, data, kinds)
		if err == nil {
			err = add(obj)
		}
		if err != nil {
			return fmt.Errorf("%s: document %d (%s): %w", file, doc, tm.Kind, err)
		}
	}
}

// onlyComments reports whether a document is empty: blank lines, comments
// and separators only.
func onlyComments(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

func decode(tm typeMeta, data []byte, kinds []string) (any, error) {
	accepted := slices.Contains(kinds, tm.Kind)
	if tm.APIVersion == "v1" {
		switch {
		case accepted && tm.Kind == KindNode:
			return strict[v1.Node](data)
		case accepted && tm.Kind == KindPod:
			pod, err := strict[v1.Pod](data)
			if pod != nil {
				pod.Namespace = DefaultNamespace(pod.Namespace)
			}
			return pod, err
		}
		return nil, fmt.Errorf("unsupported kind %q in apiVersion v1", tm.Kind)
	}
	group, version, _ := strings.Cut(tm.APIVersion, "/")
	if group != "resource.k8s.io" {
		return nil, fmt.Errorf("unsupported apiVersion %q", tm.APIVersion)
	}
	if tm.Kind == KindDeviceTaintRule && accepted {
		if version != "v1" && version != "v1beta2" && version != "v1alpha3" {
			return nil, fmt.Errorf("unsupported apiVersion %q", tm.APIVersion)
		}
		return defaulted(strict[TaintRule](data))
	}
	if version != "v1" && version != "v1beta2" {
		return nil, fmt.Errorf("unsupported apiVersion %q (use resource.k8s.io/v1)", tm.APIVersion)
	}
	if !accepted {
		return nil, fmt.Errorf("unsupported kind %q", tm.Kind)
	}
	switch tm.Kind {
	case KindDeviceClass:
		return defaulted(strict[resourceapi.DeviceClass](data))
	case KindResourceSlice:
		return defaulted(strict[resourceapi.ResourceSlice](data))
	case KindResourceClaim:
		claim, err := defaulted(strict[resourceapi.ResourceClaim](data))
		if claim != nil {
			claim.Namespace = DefaultNamespace(claim.Namespace)
		}
		return claim, err
	case KindResourceClaimTemplate:
		template, err := defaulted(strict[resourceapi.ResourceClaimTemplate](data))
		if template != nil {
			template.Namespace = DefaultNamespace(template.Namespace)
		}
		return template, err
	}
	return nil, fmt.Errorf("unsupported kind %q", tm.Kind)
}

// defaulted applies the API server's defaults to a decoded object.
func defaulted[T any, P interface {
	*T
	runtime.Object
}](obj P, err error) (P, error) {
	if obj != nil {
		apiDefaults.Default(obj)
	}
	return obj, err
}

// strict decodes one document, failing on unknown or duplicate fields.
func strict[T any](data []byte) (*T, error) {
	obj := new(T)
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}
