package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kubedra/tests/oracle/kube"
)

// inputs is everything one Allocate call needs, decoded from the YAML files.
type inputs struct {
	node       *v1.Node
	gates      gates
	classes    []*resourceapi.DeviceClass
	slices     []*resourceapi.ResourceSlice
	taintRules []*kube.TaintRule
	claims     []*resourceapi.ResourceClaim // without status.allocation, in document order
	allocated  []*resourceapi.ResourceClaim // with status.allocation
}

// caseArgs is a conformance case's optional args.json.
type caseArgs struct {
	Node              string          `json:"node"`
	FeatureGates      map[string]bool `json:"feature_gates"`
	KubernetesVersion string          `json:"kubernetes_version"`
}

// loadInputs reads every -f argument (a file, or a case folder with
// input.yaml and optional args.json); flags override args.json.
func loadInputs(paths []string, nodeFlag, gatesFlag string) (*inputs, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input: use -f FILE (or -f CASE_DIR)")
	}
	in := &inputs{gates: defaultGates()}
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

// oracleKinds are the objects one Allocate call needs; anything else in a
// file is an error.
var oracleKinds = []string{kube.KindNode, kube.KindDeviceClass, kube.KindResourceSlice, kube.KindResourceClaim, kube.KindDeviceTaintRule}

// decodeFile reads one YAML file into in (claims split by whether they
// carry status.allocation) and returns the Nodes it holds.
func decodeFile(file string, in *inputs) ([]*v1.Node, error) {
	var nodes []*v1.Node
	err := kube.ReadFile(file, oracleKinds, func(obj any) error {
		switch obj := obj.(type) {
		case *v1.Node:
			nodes = append(nodes, obj)
		case *resourceapi.DeviceClass:
			in.classes = append(in.classes, obj)
		case *resourceapi.ResourceSlice:
			in.slices = append(in.slices, obj)
		case *resourceapi.ResourceClaim:
			if obj.Status.Allocation != nil {
				in.allocated = append(in.allocated, obj)
			} else {
				in.claims = append(in.claims, obj)
			}
		case *kube.TaintRule:
			in.taintRules = append(in.taintRules, obj)
		}
		return nil
	})
	return nodes, err
}
