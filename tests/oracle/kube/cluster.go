package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// ClusterOptions are the feature gates that decide how kube-scheduler keeps
// its view of the DRA objects.
type ClusterOptions struct {
	DeviceTaintRules   bool // DRADeviceTaintRules: the slice tracker applies DeviceTaintRules
	ConsumableCapacity bool // DRAConsumableCapacity: shared allocations and consumed capacity are tracked
}

// Cluster is what kube-scheduler's DynamicResources plugin reads the cluster
// from, built from upstream's own code rather than ours: informers over a
// fake clientset holding the objects, the ResourceSlice tracker of
// k8s.io/dynamic-resource-allocation (which applies DeviceTaintRules), and
// the scheduler's DRA manager (k8s.io/kubernetes), which tracks allocated
// devices from the claims in its assume cache and serves DeviceClasses.
//
// Claims reach the assume cache the way the claim informer's events do
// (assumecache's Add/Update/DeleteTestObject call the cache's own event
// functions), but synchronously: a claim changed through AddClaim,
// UpdateClaim or DeleteClaim counts in the very next AllocatedState.
type Cluster struct {
	opts     ClusterOptions
	claims   *assumecache.AssumeCache
	tracker  *resourceslicetracker.Tracker
	manager  *dynamicresources.DefaultDRAManager
	cancel   context.CancelFunc
	version  int64
	claimKey sets.Set[string]
	// sliceOrder is each slice's position in NewCluster's argument.
	sliceOrder map[string]int
}

// NewCluster starts the informers, the slice tracker and the DRA manager on
// the given objects and waits until they have seen all of them. The claims
// are copied (a caller may go on changing its own objects). Close stops it.
func NewCluster(ctx context.Context, opts ClusterOptions, classes []*resourceapi.DeviceClass,
	slices []*resourceapi.ResourceSlice, rules []*TaintRule, claims []*resourceapi.ResourceClaim) (*Cluster, error) {
	// The DRA manager reads DRAConsumableCapacity from the process's gates,
	// as kube-scheduler's does.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.DRAConsumableCapacity): opts.ConsumableCapacity,
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Cluster{opts: opts, cancel: cancel, claimKey: sets.New[string](), sliceOrder: make(map[string]int, len(slices))}
	for i, slice := range slices {
		c.sliceOrder[slice.Name] = i
	}
	client := fake.NewSimpleClientset() // NewClientset builds a field manager from the OpenAPI models: 4x the oracle's start-up
	objects := make([]runtime.Object, 0, len(classes)+len(slices)+len(rules))
	for _, class := range classes {
		objects = append(objects, class)
	}
	for _, slice := range slices {
		objects = append(objects, slice)
	}
	for _, rule := range rules {
		objects = append(objects, rule)
	}
	for _, obj := range objects {
		if err := client.Tracker().Add(obj); err != nil {
			cancel()
			return nil, err
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	classInformer := factory.Resource().V1().DeviceClasses().Informer()
	tracker, err := startTracker(ctx, factory, client, opts)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start the ResourceSlice tracker: %w", err)
	}
	c.tracker = tracker
	// Like kube-scheduler's assume cache, minus the informer (see Cluster).
	c.claims = assumecache.NewAssumeCache(klog.FromContext(ctx), nil, "ResourceClaim", "", nil)
	c.manager = dynamicresources.NewDRAManager(ctx, c.claims, tracker, factory)
	factory.Start(ctx.Done())
	// WaitFor reacts at once (WaitForCacheSync polls every 100 ms, which
	// would triple the oracle's run time); quiet below verbosity 2.
	quiet := klog.NewContext(ctx, klog.FromContext(ctx).V(2))
	if !cache.WaitFor(quiet, "", classInformer.HasSyncedChecker(), tracker.HasSyncedChecker()) {
		c.Close()
		return nil, errors.New("the informers did not sync")
	}
	for _, claim := range claims {
		if err := c.AddClaim(claim); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close stops the tracker and the informers.
func (c *Cluster) Close() {
	c.tracker.Stop()
	c.cancel()
}

// Classes is the DeviceClass lister the plugin hands the allocator.
func (c *Cluster) Classes() structured.DeviceClassLister {
	return c.manager.DeviceClasses()
}

// Slices are the ResourceSlices with DeviceTaintRules applied
// (ListWithDeviceTaintRules), in the order NewCluster got them. The
// informer's own order is Go map order, random in kube-scheduler too;
// upstream's incubating and experimental allocators sort slices by name,
// the stable one takes them as listed, so the caller's order (one of the
// orders the scheduler may list) keeps a comparison reproducible.
func (c *Cluster) Slices() ([]*resourceapi.ResourceSlice, error) {
	slices, err := c.manager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, err
	}
	sort.SliceStable(slices, func(i, j int) bool { return c.sliceOrder[slices[i].Name] < c.sliceOrder[slices[j].Name] })
	return slices, nil
}

// AllocatedState is what PreFilter hands NewAllocator: GatherAllocatedState
// with DRAConsumableCapacity, else only ListAllAllocatedDevices.
func (c *Cluster) AllocatedState() (structured.AllocatedState, error) {
	tracker := c.manager.ResourceClaims()
	if c.opts.ConsumableCapacity {
		state, err := tracker.GatherAllocatedState()
		if err != nil {
			return structured.AllocatedState{}, err
		}
		return *state, nil
	}
	devices, err := tracker.ListAllAllocatedDevices()
	if err != nil {
		return structured.AllocatedState{}, err
	}
	return structured.AllocatedState{
		AllocatedDevices:         devices,
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}, nil
}

// AddClaim is the claim informer's add event; a claim of that name must not exist yet.
func (c *Cluster) AddClaim(claim *resourceapi.ResourceClaim) error {
	key := claim.Namespace + "/" + claim.Name
	if c.claimKey.Has(key) {
		return fmt.Errorf("duplicate ResourceClaim %s", key)
	}
	c.claimKey.Insert(key)
	assumecache.AddTestObject(c.claims, c.nextVersion(claim))
	return nil
}

// UpdateClaim is the claim informer's update event (the claim got allocated,
// deallocated, or changed otherwise).
func (c *Cluster) UpdateClaim(claim *resourceapi.ResourceClaim) {
	assumecache.UpdateTestObject(c.claims, c.nextVersion(claim))
}

// DeleteClaim is the claim informer's delete event.
func (c *Cluster) DeleteClaim(claim *resourceapi.ResourceClaim) {
	c.claimKey.Delete(claim.Namespace + "/" + claim.Name)
	assumecache.DeleteTestObject(c.claims, claim.DeepCopy())
}

// nextVersion copies the claim with the next resourceVersion, as the API
// server would store it: the assume cache only takes newer versions.
func (c *Cluster) nextVersion(claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	c.version++
	stored := claim.DeepCopy()
	stored.ResourceVersion = strconv.FormatInt(c.version, 10)
	return stored
}
