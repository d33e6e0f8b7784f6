// Command upstream-bench schedules a benchmark workload with the real
// Kubernetes structured allocator (k8s.io/dynamic-resource-allocation v0.37.2,
// the library kube-scheduler's DynamicResources plugin allocates with), doing
// per pod what that plugin does: one Allocator per pod, Allocate on every
// candidate node in order, the first feasible node wins (first-fit).
//
// Input: the multi-document YAML of benchmarks/workloads.py (Nodes,
// ResourceSlices, DeviceClasses, ResourceClaimTemplates/ResourceClaims, Pods
// in scheduling order; measured pods annotated kubedra.io/measured: "true").
// Output: one JSON line per file. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"time"

	"k8s.io/dynamic-resource-allocation/structured"
)

// report is the JSON line printed per workload.
type report struct {
	Workload          string  `json:"workload"`
	Pods              int     `json:"pods"`
	MeasuredPods      int     `json:"measured_pods"`
	Seconds           float64 `json:"seconds"`
	PodsPerSecond     float64 `json:"pods_per_second"`
	AllocateCalls     int     `json:"allocate_calls"`
	AllocateUsPerCall float64 `json:"allocate_us_per_call"`
	Unschedulable     int     `json:"unschedulable"`
	// Beyond the contract: what the figures above are made of.
	Scheduled             int     `json:"scheduled"`
	MeasuredScheduled     int     `json:"measured_scheduled"`
	Errors                int     `json:"errors"`
	FirstError            string  `json:"first_error,omitempty"`
	NodesVisited          int     `json:"nodes_visited"`
	DecisionUsPerNode     float64 `json:"decision_us_per_node"`
	NewAllocatorUsPerPod  float64 `json:"new_allocator_us_per_pod"`
	LoadSeconds           float64 `json:"load_seconds"`
	Allocator             string  `json:"allocator"`
	KubernetesVersion     string  `json:"kubernetes_version"`
	GoMaxProcs            int     `json:"gomaxprocs"`
	InitSeconds           float64 `json:"init_seconds"`
	AllCallsAllocateUs    float64 `json:"all_pods_allocate_us_per_call"`
	AllCallsAllocateCalls int     `json:"all_pods_allocate_calls"`
	// An Allocator's first Allocate call (per measured pod) vs its later ones.
	FirstAllocateUsPerPod  float64 `json:"first_allocate_us_per_pod"`
	LaterAllocateUsPerCall float64 `json:"later_allocate_us_per_call"`
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	fs := flag.NewFlagSet("upstream-bench", flag.ContinueOnError)
	placements := fs.String("placements", "", "also write {workload: {pod: node}} as JSON to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: upstream-bench [--placements FILE] WORKLOAD.yaml...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	all := map[string]map[string]string{}
	enc := json.NewEncoder(os.Stdout)
	for _, file := range fs.Args() {
		rep, placed, err := benchmark(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-bench: %v\n", err)
			return 2
		}
		all[rep.Workload] = placed
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(os.Stderr, "upstream-bench: %v\n", err)
			return 2
		}
	}
	if *placements != "" {
		data, err := json.Marshal(all)
		if err == nil {
			err = os.WriteFile(*placements, data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-bench: --placements: %v\n", err)
			return 2
		}
	}
	return 0
}

// benchmark loads one workload and schedules its pods in order. The clock
// runs from the first measured pod's PreFilter to the last measured pod's bind.
func benchmark(file string) (*report, map[string]string, error) {
	// benchmarks/workloads.py writes "A/b" as A__b.yaml.
	name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), "__", "/")
	loadStart := time.Now()
	w, err := loadWorkload(file)
	if err != nil {
		return nil, nil, err
	}
	rep := &report{
		Workload:          name,
		Pods:              len(w.pods),
		LoadSeconds:       time.Since(loadStart).Seconds(),
		KubernetesVersion: "1.37",
		GoMaxProcs:        runtime.GOMAXPROCS(0),
	}
	arrivals, err := timeline(w.pods)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	s, err := newScheduler(w)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	defer s.cluster.Close()
	placed := make(map[string]string, len(w.pods))
	var running []arrival // bound pods with a run-for, in bind order
	var measuredStart, measuredEnd, initStart time.Time
	var allocTime, decision, newAlloc, allAllocTime, firstAlloc time.Duration
	firstCalls := 0
	initStart = time.Now()
	for _, a := range arrivals {
		pod := a.pod
		measured := isMeasured(pod)
		start := time.Now()
		running = finishUntil(s, running, a.at)
		if measured && measuredStart.IsZero() {
			measuredStart = start
			rep.InitSeconds = start.Sub(initStart).Seconds()
		}
		if err := s.createTemplateClaims(pod); err != nil {
			return nil, nil, err
		}
		res := s.schedule(pod)
		end := time.Now()
		placed[pod.Namespace+"/"+pod.Name] = res.node
		if res.node != "" {
			rep.Scheduled++
			if a.runFor >= 0 {
				running = append(running, arrival{pod: pod, at: a.at + a.runFor})
			}
		}
		if res.err != nil {
			rep.Errors++
			if rep.FirstError == "" {
				rep.FirstError = fmt.Sprintf("pod %s/%s: %v", pod.Namespace, pod.Name, res.err)
			}
		}
		rep.AllCallsAllocateCalls += res.allocCalls
		allAllocTime += res.allocTime
		if !measured {
			continue
		}
		measuredEnd = end
		rep.MeasuredPods++
		if res.node != "" {
			rep.MeasuredScheduled++
		} else {
			rep.Unschedulable++
		}
		rep.AllocateCalls += res.allocCalls
		rep.NodesVisited += res.nodesVisited
		allocTime += res.allocTime
		if res.allocCalls > 0 {
			firstAlloc += res.firstAlloc
			firstCalls++
		}
		decision += res.decision
		newAlloc += res.newAllocTime
	}
	if !measuredStart.IsZero() {
		rep.Seconds = measuredEnd.Sub(measuredStart).Seconds()
	}
	if rep.Seconds > 0 {
		rep.PodsPerSecond = float64(rep.MeasuredScheduled) / rep.Seconds
	}
	rep.AllocateUsPerCall = perCall(allocTime, rep.AllocateCalls)
	rep.AllCallsAllocateUs = perCall(allAllocTime, rep.AllCallsAllocateCalls)
	rep.FirstAllocateUsPerPod = perCall(firstAlloc, firstCalls)
	rep.LaterAllocateUsPerCall = perCall(allocTime-firstAlloc, rep.AllocateCalls-firstCalls)
	rep.DecisionUsPerNode = perCall(decision, rep.NodesVisited)
	rep.NewAllocatorUsPerPod = perCall(newAlloc, rep.MeasuredPods)
	rep.Allocator = allocatorName(s)
	return rep, placed, nil
}

func perCall(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / 1e3 / float64(n)
}

// allocatorName is the implementation NewAllocator picks for these features
// (incubating by default in 1.37).
func allocatorName(s *scheduler) string {
	state, err := s.cluster.AllocatedState()
	if err != nil {
		return "?"
	}
	alloc, err := structured.NewAllocator(context.Background(), s.features, state, s.cluster.Classes(), nil, s.cache)
	if err != nil {
		return "?"
	}
	return reflect.TypeOf(alloc).String()
}
