package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// measuredAnnotation marks the pods whose scheduling is timed; the pods
// before them only fill the cluster (scheduler_perf's init pods).
const measuredAnnotation = "kubedra.io/measured"

// workload is one benchmark input: the cluster and the pods in scheduling order.
type workload struct {
	nodes      []*v1.Node
	classes    classLister
	classOrder []*resourceapi.DeviceClass // document order, for extended-resource names
	slices     []*resourceapi.ResourceSlice
	taintRules []taintRule
	templates  map[string]*resourceapi.ResourceClaimTemplate // namespace/name
	claims     map[string]*resourceapi.ResourceClaim         // namespace/name
	claimOrder []string                                      // keys of claims in the file, in document order
	pods       []*v1.Pod
}

// classLister serves DeviceClasses like the scheduler's informer lister.
type classLister map[string]*resourceapi.DeviceClass

func (c classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, class := range c {
		out = append(out, class)
	}
	return out, nil
}

func (c classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := c[name]; ok {
		return class, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclass"}, name)
}

func key(namespace, name string) string { return namespace + "/" + name }

func orDefault(namespace string) string {
	if namespace == "" {
		return "default"
	}
	return namespace
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// loadWorkload reads the multi-document YAML that benchmarks/workloads.py
// writes (and `kubedra allocate`/`simulate` read). Decoding is strict, so a
// field this harness would silently ignore is an error instead.
func loadWorkload(file string) (*workload, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := &workload{
		classes:   classLister{},
		templates: map[string]*resourceapi.ResourceClaimTemplate{},
		claims:    map[string]*resourceapi.ResourceClaim{},
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(f, 1<<20))
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return w, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if onlyComments(data) {
			continue
		}
		var tm typeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if err := w.decode(tm, data); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, doc, tm.Kind, err)
		}
	}
}

func onlyComments(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

func (w *workload) decode(tm typeMeta, data []byte) error {
	if tm.APIVersion == "v1" {
		switch tm.Kind {
		case "Node":
			var node v1.Node
			if err := yaml.UnmarshalStrict(data, &node); err != nil {
				return err
			}
			w.nodes = append(w.nodes, &node)
		case "Pod":
			var pod v1.Pod
			if err := yaml.UnmarshalStrict(data, &pod); err != nil {
				return err
			}
			pod.Namespace = orDefault(pod.Namespace)
			if pod.UID == "" {
				pod.UID = types.UID("pod-" + pod.Namespace + "-" + pod.Name)
			}
			w.pods = append(w.pods, &pod)
		default:
			return fmt.Errorf("unsupported kind %q in apiVersion v1", tm.Kind)
		}
		return nil
	}
	group, version, _ := strings.Cut(tm.APIVersion, "/")
	if group != "resource.k8s.io" {
		return fmt.Errorf("unsupported apiVersion %q", tm.APIVersion)
	}
	if tm.Kind == "DeviceTaintRule" {
		rule, err := decodeTaintRule(data)
		if err != nil {
			return err
		}
		w.taintRules = append(w.taintRules, rule)
		return nil
	}
	if version != "v1" && version != "v1beta2" {
		return fmt.Errorf("unsupported apiVersion %q (use resource.k8s.io/v1)", tm.APIVersion)
	}
	switch tm.Kind {
	case "DeviceClass":
		var class resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict(data, &class); err != nil {
			return err
		}
		w.classes[class.Name] = &class
		w.classOrder = append(w.classOrder, &class)
	case "ResourceSlice":
		var slice resourceapi.ResourceSlice
		if err := yaml.UnmarshalStrict(data, &slice); err != nil {
			return err
		}
		w.slices = append(w.slices, &slice)
	case "ResourceClaimTemplate":
		var template resourceapi.ResourceClaimTemplate
		if err := yaml.UnmarshalStrict(data, &template); err != nil {
			return err
		}
		template.Namespace = orDefault(template.Namespace)
		applyClaimSpecDefaults(&template.Spec.Spec)
		w.templates[key(template.Namespace, template.Name)] = &template
	case "ResourceClaim":
		var claim resourceapi.ResourceClaim
		if err := yaml.UnmarshalStrict(data, &claim); err != nil {
			return err
		}
		claim.Namespace = orDefault(claim.Namespace)
		applyClaimSpecDefaults(&claim.Spec)
		k := key(claim.Namespace, claim.Name)
		if _, dup := w.claims[k]; dup {
			return fmt.Errorf("duplicate ResourceClaim %s", k)
		}
		w.claims[k] = &claim
		w.claimOrder = append(w.claimOrder, k)
	default:
		return fmt.Errorf("unsupported kind %q", tm.Kind)
	}
	return nil
}

// applyClaimSpecDefaults sets what the API server's v1 defaulting sets on a
// claim (or a template's claim spec) before the scheduler sees it:
// allocationMode ExactCount, count 1 for ExactCount, toleration operator Equal.
func applyClaimSpecDefaults(spec *resourceapi.ResourceClaimSpec) {
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

// taintRule is what kube-scheduler's ResourceSlice tracker applies of a
// DeviceTaintRule: the taint goes onto every device selected by driver,
// pool and device name (1.37: a rule without deviceSelector matches nothing).
type taintRule struct {
	selector *taintSelector
	taint    resourceapi.DeviceTaint
}

type taintSelector struct {
	Driver *string `json:"driver,omitempty"`
	Pool   *string `json:"pool,omitempty"`
	Device *string `json:"device,omitempty"`
}

func decodeTaintRule(data []byte) (taintRule, error) {
	var doc struct {
		Spec struct {
			DeviceSelector *taintSelector          `json:"deviceSelector"`
			Taint          resourceapi.DeviceTaint `json:"taint"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return taintRule{}, err
	}
	return taintRule{selector: doc.Spec.DeviceSelector, taint: doc.Spec.Taint}, nil
}

// taintedSlices returns the slices with the rules' taints added, like
// ListWithDeviceTaintRules (done once: the rules do not change in a run).
func taintedSlices(slices []*resourceapi.ResourceSlice, rules []taintRule) []*resourceapi.ResourceSlice {
	if len(rules) == 0 {
		return slices
	}
	out := make([]*resourceapi.ResourceSlice, 0, len(slices))
	for _, slice := range slices {
		patched := slice
		for _, rule := range rules {
			sel := rule.selector
			if sel == nil {
				continue
			}
			if (sel.Driver != nil && *sel.Driver != slice.Spec.Driver) || (sel.Pool != nil && *sel.Pool != slice.Spec.Pool.Name) {
				continue
			}
			for i, device := range slice.Spec.Devices {
				if sel.Device != nil && *sel.Device != device.Name {
					continue
				}
				if patched == slice {
					patched = slice.DeepCopy()
				}
				patched.Spec.Devices[i].Taints = append(patched.Spec.Devices[i].Taints, rule.taint)
			}
		}
		out = append(out, patched)
	}
	return out
}

// isMeasured reports whether a pod carries kubedra.io/measured: "true".
func isMeasured(pod *v1.Pod) bool {
	return strings.EqualFold(pod.Annotations[measuredAnnotation], "true")
}
