package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"kubedra/tests/oracle/kube"
)

// filterTimeout is kube-scheduler's default DynamicResourcesArgs.filterTimeout.
const filterTimeout = 10 * time.Second

// reservedForMax is ResourceClaimReservedForMaxSize.
const reservedForMax = 256

const podClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// nameAlphabet is what the API server's generateName draws from.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// scheduler is the DynamicResources plugin's part of kube-scheduler, run
// sequentially: per pod PreFilter (claims, one Allocator), Filter on the
// nodes in order until the first feasible one, then Reserve+PreBind
// (the allocation lands in the claim's status at once).
type scheduler struct {
	w        *workload
	features structured.Features
	cache    *cel.Cache
	slices   []*resourceapi.ResourceSlice
	cluster  *kube.Cluster // the plugin's view: slice tracker, allocated devices, classes
	extended *extendedClasses
	podsOn   map[string]int64
	maxPods  map[string]int64 // -1: the node sets no pods allocatable
	rng      *rand.Rand
	// placements records pod namespace/name -> node ("" unschedulable).
	placements map[string]string
}

// podResult is what one scheduling attempt did, for the counters.
type podResult struct {
	node         string // "" if unschedulable
	err          error  // an Allocate/NewAllocator error (aborts the attempt)
	nodesVisited int
	allocCalls   int
	allocTime    time.Duration
	firstAlloc   time.Duration // the first Allocate call of this pod's Allocator
	newAllocTime time.Duration
	decision     time.Duration // PreFilter + Filter: until the node is chosen
}

func newScheduler(w *workload) (*scheduler, error) {
	claims := make([]*resourceapi.ResourceClaim, 0, len(w.claimOrder))
	for _, k := range w.claimOrder {
		claims = append(claims, w.claims[k])
	}
	features := allocatorFeatures()
	cluster, err := kube.NewCluster(context.Background(), kube.ClusterOptions{
		DeviceTaintRules:   deviceTaintRules,
		ConsumableCapacity: features.ConsumableCapacity,
	}, w.classOrder, w.slices, w.taintRules, claims)
	if err != nil {
		return nil, err
	}
	slices, err := cluster.Slices()
	if err != nil {
		cluster.Close()
		return nil, err
	}
	s := &scheduler{
		w:          w,
		features:   features,
		cache:      cel.NewCache(celCacheSize, celFeatures()),
		slices:     slices,
		cluster:    cluster,
		extended:   newExtendedClasses(w.classOrder, w.classes),
		podsOn:     map[string]int64{},
		maxPods:    map[string]int64{},
		rng:        rand.New(rand.NewPCG(1, 2)),
		placements: map[string]string{},
	}
	for _, node := range w.nodes {
		s.maxPods[node.Name] = -1
		if q, ok := node.Status.Allocatable[v1.ResourcePods]; ok {
			s.maxPods[node.Name] = q.Value()
		}
	}
	return s, nil
}

// resolvedClaim is one of the pod's claims and, once allocated, where it may run.
type resolvedClaim struct {
	claim    *resourceapi.ResourceClaim
	selector *nodeaffinity.NodeSelector // nil: any node (or not allocated yet)
}

// createTemplateClaims is the resourceclaim controller's share: one claim per
// pod claim that names a template, called <pod>-<claim>-<5 random characters>.
func (s *scheduler) createTemplateClaims(pod *v1.Pod) error {
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		template, ok := s.w.templates[key(pod.Namespace, *pc.ResourceClaimTemplateName)]
		if !ok {
			return fmt.Errorf("pod %s/%s: resourceclaimtemplate %q not found", pod.Namespace, pod.Name, *pc.ResourceClaimTemplateName)
		}
		base := generateNameBase(pod.Name, pc.Name)
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:         base + s.suffix(),
				GenerateName: base,
				Namespace:    pod.Namespace,
				Labels:       template.Spec.Labels,
				Annotations:  map[string]string{podClaimNameAnnotation: pc.Name},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
					Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
				}},
			},
			Spec: *template.Spec.Spec.DeepCopy(),
		}
		s.w.claims[key(claim.Namespace, claim.Name)] = claim
		if err := s.cluster.AddClaim(claim); err != nil {
			return err
		}
		pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses,
			v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: &claim.Name})
	}
	return nil
}

func generateNameBase(podName, claimName string) string {
	const maxBase = 57
	base := podName + "-" + claimName + "-"
	if len(base) <= maxBase {
		return base
	}
	total := len(base)
	return podName[:len(podName)*maxBase/total] + "-" + claimName[:len(claimName)*maxBase/total]
}

func (s *scheduler) suffix() string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = nameAlphabet[s.rng.IntN(len(nameAlphabet))]
	}
	return string(b)
}

// resolveClaims is PreFilter's claim lookup: every claim must exist, and an
// allocated claim must still have room in reservedFor (or hold this pod).
func (s *scheduler) resolveClaims(pod *v1.Pod) ([]resolvedClaim, string, error) {
	generated := map[string]string{}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			generated[st.Name] = *st.ResourceClaimName
		}
	}
	var out []resolvedClaim
	for _, pc := range pod.Spec.ResourceClaims {
		var name string
		switch {
		case pc.ResourceClaimName != nil:
			name = *pc.ResourceClaimName
		case pc.ResourceClaimTemplateName != nil:
			name = generated[pc.Name]
		default:
			continue
		}
		claim, ok := s.w.claims[key(pod.Namespace, name)]
		if !ok {
			return nil, fmt.Sprintf("resourceclaim %q not found", name), nil
		}
		rc := resolvedClaim{claim: claim}
		if alloc := claim.Status.Allocation; alloc != nil {
			if !reservedFor(claim, pod) && len(claim.Status.ReservedFor) >= reservedForMax {
				return nil, "resourceclaim in use", nil
			}
			if alloc.NodeSelector != nil {
				sel, err := nodeaffinity.NewNodeSelector(alloc.NodeSelector)
				if err != nil {
					return nil, "", err
				}
				rc.selector = sel
			}
		}
		out = append(out, rc)
	}
	return out, "", nil
}

func reservedFor(claim *resourceapi.ResourceClaim, pod *v1.Pod) bool {
	for _, ref := range claim.Status.ReservedFor {
		if ref.UID == pod.UID {
			return true
		}
	}
	return false
}

// schedule runs one attempt and, if a node fits, binds the pod there.
func (s *scheduler) schedule(pod *v1.Pod) podResult {
	var res podResult
	start := time.Now()
	claims, reason, err := s.resolveClaims(pod)
	if err != nil || reason != "" {
		res.err = err
		res.decision = time.Since(start)
		return res
	}
	var toAllocate []*resourceapi.ResourceClaim
	for _, rc := range claims {
		if rc.claim.Status.Allocation == nil {
			toAllocate = append(toAllocate, rc.claim)
		}
	}
	var extReqs []extendedRequest
	if !s.extended.empty() {
		extReqs = extendedRequests(pod, s.extended)
	}
	ctx := context.Background()
	var alloc structured.Allocator
	if len(toAllocate) > 0 || len(extReqs) > 0 {
		t := time.Now()
		var state structured.AllocatedState
		state, err = s.cluster.AllocatedState()
		if err == nil {
			alloc, err = structured.NewAllocator(ctx, s.features, state, s.cluster.Classes(), s.slices, s.cache)
		}
		res.newAllocTime = time.Since(t)
		if err != nil {
			res.err = err
			res.decision = time.Since(start)
			return res
		}
	}
	var chosen *v1.Node
	var results []resourceapi.AllocationResult
	var special *resourceapi.ResourceClaim
	specials := map[string]*resourceapi.ResourceClaim{} // by the set of DRA-served resources
	for _, node := range s.w.nodes {
		res.nodesVisited++
		if max := s.maxPods[node.Name]; max >= 0 && s.podsOn[node.Name]+1 > max {
			continue // NodeResourcesFit: Too many pods
		}
		if !allocatedClaimsFit(claims, node) {
			continue
		}
		if alloc == nil {
			chosen = node
			break
		}
		nodeClaims := toAllocate
		var nodeSpecial *resourceapi.ResourceClaim
		if len(extReqs) > 0 {
			nodeSpecial = s.specialFor(pod, extReqs, node, specials)
			if nodeSpecial != nil {
				nodeClaims = append(append(make([]*resourceapi.ResourceClaim, 0, len(toAllocate)+1), toAllocate...), nodeSpecial)
			}
		}
		if len(nodeClaims) == 0 {
			chosen = node
			break
		}
		callCtx, cancel := context.WithTimeout(ctx, filterTimeout)
		t := time.Now()
		got, err := alloc.Allocate(callCtx, node, nodeClaims)
		took := time.Since(t)
		if res.allocCalls == 0 {
			res.firstAlloc = took
		}
		res.allocTime += took
		res.allocCalls++
		cancel()
		if err != nil {
			if errors.Is(err, structured.ErrFailedAllocationOnNode) {
				continue // only this node is unsuitable
			}
			res.err = err
			res.decision = time.Since(start)
			return res
		}
		if got != nil {
			chosen, results, special = node, got, nodeSpecial
			break
		}
	}
	res.decision = time.Since(start)
	if chosen == nil {
		return res
	}
	s.bind(pod, chosen, toAllocate, results, special)
	res.node = chosen.Name
	return res
}

// allocatedClaimsFit is Filter's first check: the nodeSelector of claims that
// are already allocated must match the node.
func allocatedClaimsFit(claims []resolvedClaim, node *v1.Node) bool {
	for _, rc := range claims {
		if rc.selector != nil && !rc.selector.Match(node) {
			return false
		}
	}
	return true
}

func (s *scheduler) specialFor(pod *v1.Pod, reqs []extendedRequest, node *v1.Node, cache map[string]*resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	served := ""
	for _, r := range reqs {
		if _, advertised := node.Status.Allocatable[v1.ResourceName(r.resource)]; !advertised {
			served += r.resource + ","
		}
	}
	if claim, ok := cache[served]; ok {
		return claim
	}
	claim := specialClaim(pod, reqs, node, s.extended)
	cache[served] = claim
	return claim
}

// bind is Reserve + PreBind + Bind: allocations are written to the claims'
// status, the pod is added to reservedFor, the devices count as allocated and
// the pod counts against the node's pods.
func (s *scheduler) bind(pod *v1.Pod, node *v1.Node, allocated []*resourceapi.ResourceClaim, results []resourceapi.AllocationResult, special *resourceapi.ResourceClaim) {
	ref := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}
	for i, claim := range allocated {
		claim.Status.Allocation = &results[i]
		s.cluster.UpdateClaim(claim)
	}
	for _, pc := range pod.Spec.ResourceClaims {
		name := ""
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		} else {
			for _, st := range pod.Status.ResourceClaimStatuses {
				if st.Name == pc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		if claim, ok := s.w.claims[key(pod.Namespace, name)]; ok && !reservedFor(claim, pod) {
			claim.Status.ReservedFor = append(claim.Status.ReservedFor, ref)
		}
	}
	if special != nil {
		claim := special.DeepCopy()
		claim.Name = special.GenerateName + s.suffix()
		claim.Status.Allocation = &results[len(allocated)]
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{ref}
		s.w.claims[key(claim.Namespace, claim.Name)] = claim
		_ = s.cluster.AddClaim(claim) // a fresh generated name: never a duplicate
		pod.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim.Name}
	}
	pod.Spec.NodeName = node.Name
	s.podsOn[node.Name]++
}

// release is what happens when a pod finishes: it leaves reservedFor of its
// claims; a claim nobody uses is deallocated (its devices are free again) and,
// if the pod owns it (generated from a template, or the extended-resource
// claim), deleted; the pod no longer counts against the node.
func (s *scheduler) release(pod *v1.Pod) {
	var keys []string
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			keys = append(keys, key(pod.Namespace, *pc.ResourceClaimName))
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			keys = append(keys, key(pod.Namespace, *st.ResourceClaimName))
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil {
		keys = append(keys, key(pod.Namespace, ext.ResourceClaimName))
	}
	for _, k := range keys {
		claim, ok := s.w.claims[k]
		if !ok {
			continue
		}
		remaining := claim.Status.ReservedFor[:0]
		for _, ref := range claim.Status.ReservedFor {
			if ref.UID != pod.UID {
				remaining = append(remaining, ref)
			}
		}
		claim.Status.ReservedFor = remaining
		if len(remaining) > 0 {
			continue
		}
		if claim.Status.Allocation != nil {
			claim.Status.Allocation = nil
			s.cluster.UpdateClaim(claim)
		}
		if owner := metav1.GetControllerOf(claim); owner != nil && owner.UID == pod.UID {
			delete(s.w.claims, k)
			s.cluster.DeleteClaim(claim)
		}
	}
	s.podsOn[pod.Spec.NodeName]--
}
