package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cluster writes nodes n0..n<nodes-1> (pods allocatable per node), one slice
// of `devices` devices per node, class test-class, and the given extra docs.
func cluster(t *testing.T, nodes, devices int, pods string, extra ...string) string {
	t.Helper()
	var docs []string
	for i := 0; i < nodes; i++ {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata: {name: n%d}
status: {allocatable: {pods: %q}}`, i, pods))
		var devs []string
		for d := 0; d < devices; d++ {
			devs = append(devs, fmt.Sprintf("  - {name: dev-%d, attributes: {model: {string: A100}}}", d))
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n%[1]d-slice}
spec:
  driver: test-driver.cdi.k8s.io
  nodeName: n%[1]d
  pool: {name: n%[1]d, generation: 1, resourceSliceCount: 1}
  devices:
%[2]s`, i, strings.Join(devs, "\n")))
	}
	docs = append(docs, `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: test-class}
spec:
  selectors: [{cel: {expression: 'device.driver == "test-driver.cdi.k8s.io"'}}]`)
	docs = append(docs, extra...)
	path := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const template = `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tpl, namespace: test}
spec: {spec: {devices: {requests: [{name: req-0, exactly: {deviceClassName: test-class}}]}}}`

func templatePod(i int, annotations string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: p%d, namespace: test, annotations: {%s}}
spec:
  containers: [{name: c, image: pause}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: tpl}]`, i, annotations)
}

func mustBenchmark(t *testing.T, path string) (*report, map[string]string) {
	t.Helper()
	rep, placed, err := benchmark(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep, placed
}

func TestFirstFitFillsNodesInOrder(t *testing.T) {
	extra := []string{template}
	for i := 0; i < 7; i++ {
		annotations := ""
		if i >= 3 {
			annotations = `kubedra.io/measured: "true"`
		}
		extra = append(extra, templatePod(i, annotations))
	}
	rep, placed := mustBenchmark(t, cluster(t, 3, 2, "110", extra...))
	want := []string{"n0", "n0", "n1", "n1", "n2", "n2", ""}
	for i, node := range want {
		if got := placed[fmt.Sprintf("test/p%d", i)]; got != node {
			t.Errorf("p%d: got node %q, want %q", i, got, node)
		}
	}
	if rep.MeasuredPods != 4 || rep.MeasuredScheduled != 3 || rep.Unschedulable != 1 || rep.Scheduled != 6 {
		t.Errorf("counts: %+v", rep)
	}
	// p3 visits n0, n1; p4 and p5 visit n0..n2; p6 visits all three and fails.
	if rep.NodesVisited != 2+3+3+3 || rep.AllocateCalls != rep.NodesVisited {
		t.Errorf("nodes visited %d, allocate calls %d", rep.NodesVisited, rep.AllocateCalls)
	}
	if rep.Errors != 0 || rep.Allocator != "*incubating.Allocator" {
		t.Errorf("errors %d (%s), allocator %s", rep.Errors, rep.FirstError, rep.Allocator)
	}
}

func TestPodsLimitSkipsFullNodes(t *testing.T) {
	extra := []string{template, templatePod(0, ""), templatePod(1, "")}
	_, placed := mustBenchmark(t, cluster(t, 2, 4, "1", extra...))
	if placed["test/p0"] != "n0" || placed["test/p1"] != "n1" {
		t.Errorf("placements %v", placed)
	}
}

func TestFinishedPodsFreeTheirDevices(t *testing.T) {
	extra := []string{template}
	for i := 0; i < 4; i++ {
		extra = append(extra, templatePod(i,
			fmt.Sprintf(`kubedra.io/measured: "true", kubedra.io/start-after: "%ds", kubedra.io/run-for: 500ms`, i/2)))
	}
	rep, placed := mustBenchmark(t, cluster(t, 2, 2, "110", extra...))
	// Each pair fills n0 and is gone before the next pair arrives.
	for i := 0; i < 4; i++ {
		if got := placed[fmt.Sprintf("test/p%d", i)]; got != "n0" {
			t.Errorf("p%d on %q, want n0", i, got)
		}
	}
	if rep.Scheduled != 4 {
		t.Errorf("scheduled %d", rep.Scheduled)
	}
}

func TestSharedClaimIsAllocatedOnceAndFollowed(t *testing.T) {
	claim := `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: test}
spec: {devices: {requests: [{name: req-0, exactly: {deviceClassName: test-class}}]}}`
	extra := []string{claim, template, templatePod(0, "")}
	for i := 1; i <= 3; i++ {
		extra = append(extra, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: s%d, namespace: test, annotations: {kubedra.io/measured: "true"}}
spec:
  containers: [{name: c, image: pause}]
  resourceClaims: [{name: gpu, resourceClaimName: shared}]`, i))
	}
	rep, placed := mustBenchmark(t, cluster(t, 2, 1, "110", extra...))
	// p0 takes n0's only device; the shared claim lands on n1 and its pods follow it.
	if placed["test/p0"] != "n0" {
		t.Errorf("p0 on %q", placed["test/p0"])
	}
	for i := 1; i <= 3; i++ {
		if got := placed[fmt.Sprintf("test/s%d", i)]; got != "n1" {
			t.Errorf("s%d on %q, want n1", i, got)
		}
	}
	// Only the first sharer allocates (n0 fails, n1 fits); the others only check the nodeSelector.
	if rep.AllocateCalls != 2 || rep.NodesVisited != 2+2+2 {
		t.Errorf("allocate calls %d, nodes visited %d", rep.AllocateCalls, rep.NodesVisited)
	}
}

func TestExtendedResourceGetsASpecialClaim(t *testing.T) {
	class := `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-class}
spec:
  extendedResourceName: example.com/gpu
  selectors: [{cel: {expression: 'device.driver == "test-driver.cdi.k8s.io"'}}]`
	extra := []string{class}
	for i := 0; i < 3; i++ {
		extra = append(extra, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: e%d, namespace: test, annotations: {kubedra.io/measured: "true"}}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {example.com/gpu: "2"}, limits: {example.com/gpu: "2"}}`, i))
	}
	rep, placed := mustBenchmark(t, cluster(t, 2, 3, "110", extra...))
	if placed["test/e0"] != "n0" || placed["test/e1"] != "n1" || placed["test/e2"] != "" {
		t.Errorf("placements %v", placed)
	}
	if rep.Errors != 0 || rep.MeasuredScheduled != 2 {
		t.Errorf("report %+v", rep)
	}
}

func TestExtendedRequestNames(t *testing.T) {
	r := extendedRequest{container: 1, position: 2}
	if r.requestName() != "container-1-request-2" {
		t.Errorf("got %s", r.requestName())
	}
	if !isExtendedResourceName("example.com/gpu") || isExtendedResourceName("cpu") ||
		isExtendedResourceName("kubernetes.io/foo") || !isExtendedResourceName(implicitClassPrefix+"x") {
		t.Error("isExtendedResourceName")
	}
}

func TestBadInputNamesTheDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {bogus: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := benchmark(path)
	if err == nil || !strings.Contains(err.Error(), "document 2 (Pod)") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("got %v", err)
	}
}
