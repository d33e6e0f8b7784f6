package main

// The "cel" mode: upstream's own CEL for DRA selectors
// (k8s.io/dynamic-resource-allocation/cel, the cache kube-scheduler's
// DynamicResources plugin compiles with), so kubedra's CEL can be checked
// against it: compile errors, results and runtime errors on given devices,
// the estimated worst-case cost and the actual cost of each evaluation.
//
//	oracle cel [--feature-gates ...] < cases.json > results.json
//
// Input: {"cases": [{"expression": "...", "devices": [{"driver": "...",
// "allowMultipleAllocations": bool, "attributes": {...}, "capacity": {...}}]}]}
// (attributes and capacity as in a v1 ResourceSlice device).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
)

type celDevice struct {
	Driver                   string                                                    `json:"driver"`
	AllowMultipleAllocations *bool                                                     `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity,omitempty"`
}

type celCase struct {
	Expression string      `json:"expression"`
	Devices    []celDevice `json:"devices"`
}

type celEval struct {
	Match      *bool   `json:"match"`
	Error      *string `json:"error"`
	ActualCost *uint64 `json:"actual_cost"`
}

type celResult struct {
	CompileError *string   `json:"compile_error"`
	MaxCost      uint64    `json:"max_cost"`
	CostLimit    uint64    `json:"cost_limit"`
	Results      []celEval `json:"results"`
}

func runCEL(argv []string) int {
	fs := flag.NewFlagSet("oracle cel", flag.ContinueOnError)
	gateSpec := fs.String("feature-gates", "", "comma-separated Gate=bool overrides of this release's defaults")
	if err := fs.Parse(argv); err != nil {
		return exitError
	}
	g := defaultGates()
	if err := g.parse(*gateSpec); err != nil {
		fmt.Fprintf(os.Stderr, "oracle cel: %v\n", err)
		return exitError
	}
	var in struct {
		Cases []celCase `json:"cases"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "oracle cel: reading input: %v\n", err)
		return exitError
	}
	compiler := cel.GetCompiler(g.celFeatures())
	out := make([]celResult, 0, len(in.Cases))
	for _, c := range in.Cases {
		res := compiler.CompileCELExpression(c.Expression, cel.Options{})
		r := celResult{MaxCost: res.MaxCost, CostLimit: resourceapi.CELSelectorExpressionMaxCost, Results: []celEval{}}
		if res.Error != nil {
			msg := res.Error.Error()
			r.CompileError = &msg
			out = append(out, r)
			continue
		}
		for _, d := range c.Devices {
			match, details, err := res.DeviceMatches(context.Background(), cel.Device{
				Driver: d.Driver, AllowMultipleAllocations: d.AllowMultipleAllocations,
				Attributes: d.Attributes, Capacity: d.Capacity,
			})
			e := celEval{}
			if details != nil {
				e.ActualCost = details.ActualCost()
			}
			if err != nil {
				msg := err.Error()
				e.Error = &msg
			} else {
				e.Match = &match
			}
			r.Results = append(r.Results, e)
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "oracle cel: writing output: %v\n", err)
		return exitError
	}
	return 0
}
