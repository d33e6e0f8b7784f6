package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/cel"
)

// gates holds the Kubernetes feature gates of the emulated release: their
// defaults (releaseDefaults in release_*.go) with overrides applied.
// Gates that are locked to their default upstream can still be switched
// here: the oracle shows what the allocator does in that configuration.
type gates map[string]bool

func defaultGates() gates {
	g := gates{}
	for name, on := range releaseDefaults {
		g[name] = on
	}
	return g
}

func (g gates) set(name string, on bool) error {
	if _, ok := g[name]; !ok {
		known := make([]string, 0, len(g))
		for k := range g {
			known = append(known, k)
		}
		sort.Strings(known)
		return fmt.Errorf("unknown feature gate %q for Kubernetes %s (known: %s)", name, release, strings.Join(known, ", "))
	}
	g[name] = on
	return nil
}

// parse applies "A=true,B=false" as accepted by --feature-gates.
func (g gates) parse(spec string) error {
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%q: expected Gate=true|false", item)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%q: %w", item, err)
		}
		if err := g.set(strings.TrimSpace(name), on); err != nil {
			return err
		}
	}
	return nil
}

func (g gates) enabled(name string) bool { return g[name] }

// celFeatures mirrors the CEL cache kube-scheduler creates in the
// DynamicResources plugin (the same in 1.36 and 1.37).
func (g gates) celFeatures() cel.Features {
	return cel.Features{
		EnableConsumableCapacity: g.enabled("DRAConsumableCapacity"),
		EnableListTypeAttributes: g.enabled("DRAListTypeAttributes"),
	}
}
