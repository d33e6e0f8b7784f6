// Package kube is what the two Go programs around upstream's allocator share:
// the oracle (tests/oracle) and the side-by-side harness
// (benchmarks/upstream, which imports it through a replace directive). It
// reads kubedra's multi-document YAML as the API server would store it
// (strict decoding, the API server's own defaulting) and hands the allocator
// what kube-scheduler's DynamicResources plugin hands it, from the
// scheduler's own code (Cluster): the DeviceClass lister, the slices with
// DeviceTaintRule taints and the allocated-device state.
//
// It compiles against every pinned Kubernetes release (go.mod and
// k8s-1.36.mod); what differs between releases is in release_*.go.
package kube
