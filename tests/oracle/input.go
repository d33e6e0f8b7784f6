package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// inputs is everything one Allocate call needs, decoded from the YAML files.
type inputs struct {
	node       *v1.Node
	gates      gates
	classes    classLister
	slices     []*resourceapi.ResourceSlice
	taintRules []taintRule
	claims     []*resourceapi.ResourceClaim // without status.allocation, in document order
	allocated  []*resourceapi.ResourceClaim // with status.allocation
}

// caseArgs is a conformance case's optional args.json.
type caseArgs struct {
	Node              string          `json:"node"`
	FeatureGates      map[string]bool `json:"feature_gates"`
	KubernetesVersion string          `json:"kubernetes_version"`
}

// classLister serves DeviceClasses like the scheduler's informer lister,
// including its NotFound error text (which the allocator wraps).
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

// loadInputs reads every -f argument (a file, or a case folder with
// input.yaml and optional args.json); flags override args.json.
func loadInputs(paths []string, nodeFlag, gatesFlag string) (*inputs, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input: use -f FILE (or -f CASE_DIR)")
	}
	in := &inputs{classes: classLister{}, gates: defaultGates()}
	nodeName := ""
	var nodes []*v1.Node
	for _, path := range paths {
		file := path
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			file = filepath.Join(path, "input.yaml")
			args, err := readCaseArgs(filepath.Join(path, "args.json"))
			if err != nil {
				return nil, err
			}
			if args.KubernetesVersion != "" && args.KubernetesVersion != release {
				return nil, fmt.Errorf("%s: case is for Kubernetes %s, this oracle emulates %s", path, args.KubernetesVersion, release)
			}
			if args.Node != "" {
				nodeName = args.Node
			}
			for gate, on := range args.FeatureGates {
				if err := in.gates.set(gate, on); err != nil {
					return nil, fmt.Errorf("%s: args.json: %w", path, err)
				}
			}
		}
		found, err := decodeFile(file, in)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, found...)
	}
	if nodeFlag != "" {
		nodeName = nodeFlag
	}
	if nodeName == "" {
		return nil, errors.New("no node: use --node NAME (or \"node\" in args.json)")
	}
	if err := in.gates.parse(gatesFlag); err != nil {
		return nil, fmt.Errorf("--feature-gates: %w", err)
	}
	in.node = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	for _, n := range nodes {
		if n.Name == nodeName {
			in.node = n
		}
	}
	return in, nil
}

func readCaseArgs(path string) (caseArgs, error) {
	var args caseArgs
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return args, nil
	}
	if err != nil {
		return args, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&args); err != nil {
		return args, fmt.Errorf("%s: %w", path, err)
	}
	return args, nil
}

// typeMeta is read first to pick the Go type of a document.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// decodeFile splits a multi-document YAML file and decodes each v1 object
// strictly (unknown fields are errors), so typos in cases fail loudly.
func decodeFile(file string, in *inputs) ([]*v1.Node, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var nodes []*v1.Node
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nodes, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if len(bytes.TrimSpace(data)) == 0 || isOnlyComments(data) {
			continue
		}
		var tm typeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		where := fmt.Sprintf("%s: document %d (%s)", file, doc, tm.Kind)
		node, err := decodeObject(tm, data, in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if node != nil {
			nodes = append(nodes, node)
		}
	}
}

func isOnlyComments(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

// decodeObject accepts resource.k8s.io v1 (and v1beta2, which has the same
// JSON shape) plus DeviceTaintRule in v1alpha3/v1beta2/v1, and core/v1 Node.
func decodeObject(tm typeMeta, data []byte, in *inputs) (*v1.Node, error) {
	group, version, _ := strings.Cut(tm.APIVersion, "/")
	if tm.APIVersion == "v1" {
		if tm.Kind != "Node" {
			return nil, fmt.Errorf("unsupported kind %q in apiVersion v1", tm.Kind)
		}
		var node v1.Node
		return &node, yaml.UnmarshalStrict(data, &node)
	}
	if group != "resource.k8s.io" {
		return nil, fmt.Errorf("unsupported apiVersion %q", tm.APIVersion)
	}
	if tm.Kind == "DeviceTaintRule" {
		if version != "v1" && version != "v1beta2" && version != "v1alpha3" {
			return nil, fmt.Errorf("unsupported apiVersion %q", tm.APIVersion)
		}
		rule, err := decodeTaintRule(data)
		if err != nil {
			return nil, err
		}
		in.taintRules = append(in.taintRules, rule)
		return nil, nil
	}
	if version != "v1" && version != "v1beta2" {
		return nil, fmt.Errorf("unsupported apiVersion %q (use resource.k8s.io/v1)", tm.APIVersion)
	}
	switch tm.Kind {
	case "DeviceClass":
		var class resourceapi.DeviceClass
		if err := yaml.UnmarshalStrict(data, &class); err != nil {
			return nil, err
		}
		in.classes[class.Name] = &class
	case "ResourceSlice":
		var slice resourceapi.ResourceSlice
		if err := yaml.UnmarshalStrict(data, &slice); err != nil {
			return nil, err
		}
		in.slices = append(in.slices, &slice)
	case "ResourceClaim":
		var claim resourceapi.ResourceClaim
		if err := yaml.UnmarshalStrict(data, &claim); err != nil {
			return nil, err
		}
		applyClaimDefaults(&claim)
		if claim.Namespace == "" {
			claim.Namespace = "default"
		}
		if claim.Status.Allocation != nil {
			in.allocated = append(in.allocated, &claim)
		} else {
			in.claims = append(in.claims, &claim)
		}
	default:
		return nil, fmt.Errorf("unsupported kind %q", tm.Kind)
	}
	return nil, nil
}
