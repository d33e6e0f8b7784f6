// Command oracle runs the real Kubernetes structured allocator
// (k8s.io/dynamic-resource-allocation/structured) on a kubedra allocate input
// and prints the same JSON object as `kubedra allocate -o json`.
//
// It exists so that kubedra's own allocator can be checked against upstream
// on every input (see README.md). One binary is built per emulated
// Kubernetes release; release_*.go hold what differs between them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"kubedra/tests/oracle/kube"
)

// filterTimeout mirrors kube-scheduler's default DynamicResourcesArgs.filterTimeout.
const filterTimeout = 10 * time.Second

// Exit codes of the `kubedra allocate` contract.
const (
	exitAllocated     = 0
	exitUnschedulable = 1
	exitError         = 2
)

// output is the `kubedra allocate -o json` object; Stats is only set with --stats.
type output struct {
	Node        string                                   `json:"node"`
	Result      string                                   `json:"result"`
	Allocations map[string]*resourceapi.AllocationResult `json:"allocations"`
	Message     string                                   `json:"message"`
	Stats       *stats                                   `json:"stats,omitempty"`
}

// stats reports facts about the upstream run that the contract does not carry.
type stats struct {
	Release          string `json:"kubernetes_version"`
	Allocator        string `json:"allocator"`
	AllocateOneCalls *int64 `json:"allocate_one_calls,omitempty"`
	// NodeLocalError is true when the error wraps structured.ErrFailedAllocationOnNode.
	NodeLocalError *bool `json:"node_local_error,omitempty"`
}

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	if len(argv) > 0 && argv[0] == "cel" {
		return runCEL(argv[1:])
	}
	if len(argv) > 0 && argv[0] == "heap-root" {
		return runHeapRoot(argv[1:])
	}
	if len(argv) > 0 && argv[0] == "cron-next" {
		return runCronNext(argv[1:])
	}
	fs := flag.NewFlagSet("oracle", flag.ContinueOnError)
	var files fileList
	fs.Var(&files, "f", "input YAML file, or a conformance case folder (input.yaml + args.json); repeatable")
	node := fs.String("node", "", "name of the node to allocate on")
	gates := fs.String("feature-gates", "", "comma-separated Gate=bool overrides of this release's defaults")
	wantStats := fs.Bool("stats", false, "add a \"stats\" object (allocateOne calls, allocator, release)")
	version := fs.Bool("version", false, "print the emulated Kubernetes release and exit")
	if err := fs.Parse(argv); err != nil {
		return exitError
	}
	if *version {
		fmt.Println(release)
		return 0
	}
	in, err := loadInputs(files, *node, *gates)
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
		return exitError
	}
	cluster, err := newCluster(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
		return exitError
	}
	defer cluster.Close()
	out, code := allocate(in, cluster, *wantStats)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "oracle: writing output: %v\n", err)
		return exitError
	}
	return code
}

// newCluster is the plugin's view of the cluster, kept by kube-scheduler's
// own code (the slice tracker, the DRA manager); an input the API server
// would refuse (two objects of one name) is an error.
func newCluster(in *inputs) (*kube.Cluster, error) {
	return kube.NewCluster(context.Background(), kube.ClusterOptions{
		DeviceTaintRules:   in.gates.enabled("DRADeviceTaintRules"),
		ConsumableCapacity: in.gates.allocatorFeatures().ConsumableCapacity,
	}, in.classes, in.slices, in.taintRules, in.allocated)
}

// allocate builds the allocator the way kube-scheduler's DynamicResources
// plugin does (PreFilter) and runs one Allocate call for the node (Filter).
func allocate(in *inputs, cluster *kube.Cluster, wantStats bool) (*output, int) {
	features := in.gates.allocatorFeatures()
	out := &output{Node: in.node.Name, Allocations: map[string]*resourceapi.AllocationResult{}}
	var st *stats
	if wantStats {
		st = &stats{Release: release}
		out.Stats = st
	}
	fail := func(err error) (*output, int) {
		out.Result = "error"
		out.Message = err.Error()
		if st != nil {
			local := errors.Is(err, structured.ErrFailedAllocationOnNode)
			st.NodeLocalError = &local
		}
		return out, exitError
	}

	state, err := cluster.AllocatedState()
	if err != nil {
		return fail(err)
	}
	slices, err := cluster.Slices()
	if err != nil {
		return fail(err)
	}
	cache := cel.NewCache(10, in.gates.celFeatures())
	ctx, cancel := context.WithTimeout(context.Background(), filterTimeout)
	defer cancel()
	alloc, err := structured.NewAllocator(ctx, features, state, cluster.Classes(), slices, cache)
	if err != nil {
		return fail(err)
	}
	results, err := alloc.Allocate(ctx, in.node, in.claims)
	if st != nil {
		st.Allocator = reflect.TypeOf(alloc).String()
		st.AllocateOneCalls = allocateOneCalls(alloc)
	}
	if err != nil {
		return fail(err)
	}
	if results == nil {
		out.Result = "unschedulable"
		out.Message = "cannot allocate all claims"
		return out, exitUnschedulable
	}
	for i, claim := range in.claims {
		out.Allocations[claim.Namespace+"/"+claim.Name] = &results[i]
	}
	out.Result = "allocated"
	return out, exitAllocated
}

// allocateOneCalls reads the allocator's GetStats().NumAllocateOneInvocations.
// The method lives on upstream's internal implementations (incubating and
// experimental; stable has none), so it is reached by reflection.
func allocateOneCalls(alloc structured.Allocator) *int64 {
	m := reflect.ValueOf(alloc).MethodByName("GetStats")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil
	}
	res := m.Call(nil)[0]
	if res.Kind() != reflect.Struct {
		return nil
	}
	field := res.FieldByName("NumAllocateOneInvocations")
	if !field.IsValid() || field.Kind() != reflect.Int64 {
		return nil
	}
	n := field.Int()
	return &n
}
