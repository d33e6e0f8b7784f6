"""The focused generator profiles of the differential suite, one per test function."""

from __future__ import annotations

from .strategies import Profile

ALL_LOCALITIES = ("node", "node", "all", "selector", "perdevice")

POOLS = Profile(
    generations=True, incomplete=True, invalid=True, localities=ALL_LOCALITIES, unguarded_selectors=True,
    missing_class=True, versions=("1.36", "1.37"),
)
"""Pools: generations, incomplete and invalid pools, node selection, selectors, ExactCount and All."""

REQUESTS = Profile(
    max_pools=2, max_devices=4, first_available=True, constraints=True, config=True, max_requests=3,
    localities=("node", "node", "all", "selector"), allocatable=True,
)
"""Requests: firstAvailable, matchAttribute constraints scoped to (sub)requests, config, several claims (biased
toward allocating: without it three in four inputs were unschedulable, and constraints are checked on a result)."""

COUNTERS_CAPACITY = Profile(
    counters=True, consumable=True, allocated=True, constraints=True, invalid=True, max_requests=2,
    localities=("node", "node", "all", "perdevice"), all_mode=True, versions=("1.36", "1.37"),
)
"""Partitionable devices and consumable capacity, with allocated (dedicated and shared) claims."""

TAINTS_ADMIN = Profile(
    max_devices=4, taints=True, admin=True, allocated=True, binding=True,
    localities=("node", "node", "all", "selector"), allocatable=True, frequent_marks=True, versions=("1.36", "1.37"),
)
"""Taints, tolerations, DeviceTaintRules, admin access, binding conditions, allocated state. Biased toward
allocating (without it four in five inputs were unschedulable, so few answers allocated a tolerated, admin or
binding device), with taints, binding conditions and admin access kept as frequent (the bias alone had cut binding
conditions from 76% of the inputs to 36%)."""

EVERYTHING = Profile(
    generations=True, incomplete=True, invalid=True, localities=ALL_LOCALITIES, unguarded_selectors=True,
    first_available=True, constraints=True, config=True, counters=True, consumable=True, taints=True,
    admin=True, allocated=True, binding=True, missing_class=True, versions=("1.36", "1.37"), switch_gates=True,
)
"""Everything at once, with random feature gates switched away from the release's defaults."""

STABLE = Profile(
    max_pools=3, max_devices=4, generations=True, incomplete=True, invalid=True, localities=ALL_LOCALITIES,
    first_available=True, constraints=True, config=True, counters=True, consumable=True, taints=True, admin=True,
    allocated=True, binding=True, max_requests=3, versions=("1.36", "1.37"), stable=True,
)
"""Gates that select upstream's stable variant: permutations (step counts), matchAttribute only, no capacity."""

COMBINED = Profile(
    max_pools=5, max_devices=5, max_slices=3, localities=ALL_LOCALITIES, first_available=True, constraints=True,
    config=True, counters=True, consumable=True, taints=True, admin=True, allocated=True, binding=True,
    max_claims=4, max_requests=3, max_count=5, list_attributes=True, extended_resource=True, allocatable=True,
    versions=("1.36", "1.37"),
)
"""Features combined (counters + capacity + constraints + firstAvailable + admin access + taints, list-type
attributes and the experimental variant, extended-resource classes), larger inputs, biased toward allocating."""
