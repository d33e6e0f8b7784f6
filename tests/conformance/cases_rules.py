"""Cases for the rules of the allocator issue: pools, requests, selectors, constraints, config, nodeSelector."""

from __future__ import annotations

from .fixtures import (
    CLASS_A,
    CLASS_B,
    NODES,
    Case,
    Version,
    allocated,
    claim,
    consumes,
    counter_set,
    device,
    device_class,
    distinct,
    first_available,
    match,
    opaque,
    req,
    result,
    slice_,
    sub,
)

D = device
REGION1 = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}]}
EARTH = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "planet", "operator": "In", "values": ["earth"]}]}]}


def base(*docs: dict, classes: tuple[dict, ...] = (CLASS_A,)) -> list[dict]:
    return [*NODES, *classes, *docs]


def numa_devices(*numas: int) -> list[dict]:
    return [D(f"device-{i}", {"numa": n}) for i, n in enumerate(numas, 1)]


POOLS = [
    Case("pool-newer-generation-incomplete", base(
        slice_("slice-1", "pool-1", [D()]),
        slice_("slice-2", "pool-1", [D("device-2")], generation=2, count=2),
        claim()), note="generation 2 wins but is incomplete: nothing is allocated from pool-1"),
    Case("pool-incomplete-other-pool-used", base(
        slice_("slice-1", "pool-1", [D()], count=2), slice_("slice-2", "pool-2", [D()]), claim())),
    Case("pool-invalid-duplicate-counter-set", base(
        slice_("slice-1", "pool-1", [D("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")])],
               count=3),
        slice_("slice-2", "pool-1", None, count=3, sharedCounters=[counter_set("counter-set-1", memory="8Gi")]),
        slice_("slice-3", "pool-1", None, count=3, sharedCounters=[counter_set("counter-set-1", memory="8Gi")]),
        claim())),
    Case("pool-invalid-unknown-counter-set", base(
        slice_("slice-1", "pool-1", [D("device-1", consumesCounters=[consumes("no-such-set", memory="4Gi")])],
               count=2),
        slice_("slice-2", "pool-1", None, count=2, sharedCounters=[counter_set("counter-set-1", memory="8Gi")]),
        claim())),
    Case("pool-invalid-unknown-counter", base(
        slice_("slice-1", "pool-1", [D("device-1", consumesCounters=[consumes("counter-set-1", cores="4")])],
               count=2),
        slice_("slice-2", "pool-1", None, count=2, sharedCounters=[counter_set("counter-set-1", memory="8Gi")]),
        claim())),
    Case("slice-all-nodes", base(slice_("slice-1", "pool-1", [D()], node_name=None, allNodes=True), claim()),
         note="allNodes everywhere: the allocation has no nodeSelector"),
    Case("slice-node-selectors-merged", base(
        slice_("slice-1", "pool-1", [D()], node_name=None, nodeSelector=REGION1),
        slice_("slice-2", "pool-2", [D()], node_name=None, nodeSelector=EARTH),
        claim("claim-0", req(count=2))), note="network-attached selectors are merged into one term"),
    Case("slice-local-and-network-attached", base(
        slice_("slice-1", "pool-1", [D()], node_name=None, nodeSelector=REGION1),
        slice_("slice-2", "pool-2", [D()]),
        claim("claim-0", req(count=2))), note="one node-local device makes the selector node-local"),
    Case("slice-all-nodes-and-network-attached", base(
        slice_("slice-1", "pool-1", [D()], node_name=None, allNodes=True),
        slice_("slice-2", "pool-2", [D()], node_name=None, nodeSelector=REGION1),
        claim("claim-0", req(count=2)))),
    Case("per-device-node-selection-node-name", base(
        slice_("slice-1", "pool-1", [D("device-1", nodeName="node-2"), D("device-2", nodeName="node-1")],
               node_name=None, perDeviceNodeSelection=True), claim())),
    Case("per-device-node-selection-all-nodes", base(
        slice_("slice-1", "pool-1", [D("device-1", allNodes=True)], node_name=None, perDeviceNodeSelection=True),
        claim())),
    Case("per-device-node-selection-node-selector", base(
        slice_("slice-1", "pool-1", [D("device-1", nodeSelector=REGION1), D("device-2", nodeSelector=EARTH)],
               node_name=None, perDeviceNodeSelection=True), claim("claim-0", req(count=2)))),
    Case("per-device-node-selection-other-node", base(
        slice_("slice-1", "pool-1", [D("device-1", nodeSelector=REGION1)], node_name=None,
               perDeviceNodeSelection=True), claim()), node="node-2"),
    Case("per-device-node-selection-disabled", base(
        slice_("slice-1", "pool-1", [D("device-1", nodeName="node-1")], node_name=None, perDeviceNodeSelection=True),
        claim()), gates={"DRAPartitionableDevices": False}),
    Case("pool-order-driver-then-name", base(
        slice_("slice-9", "pool-b", [D()], driver="driver-b"),
        slice_("slice-8", "pool-z", [D()]),
        slice_("slice-7", "pool-y", [D()]),
        claim("claim-0", req("req-0", "any")), classes=(device_class("any", None),)),
        note="pools are tried by (driver, pool name): driver-a/pool-y first"),
    Case("slice-order-by-name", base(
        slice_("slice-b", "pool-1", [D("device-1")], count=2), slice_("slice-a", "pool-1", [D("device-2")], count=2),
        claim()), note="slices of a pool are tried by name: slice-a's device-2 first"),
    *(Case(f"device-order-pools-and-slices{suffix}", base(
        slice_("slice-c", "pool-2", [D("device-6"), D("device-5")], count=2),
        slice_("slice-b", "pool-1", [D("device-4"), D("device-3")], count=2),
        slice_("slice-a", "pool-2", [D("device-1")], count=2, node_name=None, allNodes=True),
        slice_("slice-d", "pool-1", [D("device-2")], count=2, node_name=None, allNodes=True),
        slice_("slice-e", "pool-0", [D("device-7")], driver="driver-b"),
        claim("claim-0", req("req-0", "any", count=7)), classes=(device_class("any", None),)),
        version=version, note="the 1.36 order: pools by (driver, name), a pool's slices by name, devices as listed")
      for suffix, version in (("", None), ("-1.36", "1.36"))),
]

REQUESTS = [
    Case("exact-count-three", base(
        slice_("slice-1", "pool-1", [D(f"device-{i}") for i in range(1, 5)]), claim("claim-0", req(count=3)))),
    Case("all-devices-with-selector", base(
        slice_("slice-1", "pool-1", [D("device-1", {"type": "X"}), D("device-2", {"type": "Y"}),
                                     D("device-3", {"type": "X"})]),
        claim("claim-0", req("req-0", "class-a", 'device.attributes["driver-a"].type == "X"', mode="All")))),
    Case("all-devices-no-matching-device", base(
        slice_("slice-1", "pool-1", [D("device-1", {"type": "Y"})]),
        claim("claim-0", req("req-0", "class-a", 'device.attributes["driver-a"].type == "X"', mode="All"))),
        note="All needs at least one device"),
    Case("all-devices-plus-another", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", req("req-0", mode="All"), req("req-1")))),
    Case("all-devices-too-many", base(
        slice_("slice-1", "pool-1", [D(f"device-{i}") for i in range(1, 34)]), claim("claim-0", req(mode="All")))),
    Case("too-many-devices-total", base(
        slice_("slice-1", "pool-1", [D()]), claim("claim-0", req("req-0", count=20), req("req-1", count=20)))),
    Case("many-devices-okay", base(
        slice_("slice-1", "pool-1", [D(f"device-{i}") for i in range(1, 33)]), claim("claim-0", req(count=32)))),
    Case("prioritized-list-with-backtracking", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", first_available("req-0", sub("subReq-0", count=2), sub("subReq-1", count=1)), req("req-1"))),
        note="subReq-0 takes both devices, req-1 then fails, so the search backtracks into subReq-1"),
    Case("prioritized-list-none-available", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0", "class-b"), sub("subReq-1", count=2))),
        classes=(CLASS_A, CLASS_B))),
    Case("prioritized-list-disabled", base(
        slice_("slice-1", "pool-1", [D()]), claim("claim-0", first_available("req-0", sub("subReq-0")))),
        gates={"DRAPrioritizedList": False}),
    Case("prioritized-list-all-mode", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", first_available("req-0", sub("subReq-0", "class-b"), sub("subReq-1", mode="All"))),
        classes=(CLASS_A, CLASS_B))),
    Case("prioritized-list-1.36", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0", "class-b"), sub("subReq-1"))),
        classes=(CLASS_A, CLASS_B)), version="1.36", note="1.36 binary (k8s.io/dynamic-resource-allocation v0.36.x)"),
    Case("prioritized-list-unknown-class-in-later-subrequest", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0"), sub("subReq-1", "class-x")))),
        note="every subrequest is validated before the search, even one that would never be tried"),
    Case("admin-access-device-in-use", base(
        slice_("slice-1", "pool-1", [D()]), allocated("claim-x", result("req-0", "device-1")),
        claim("claim-0", req(admin=True))), note="admin access may use an allocated device"),
    Case("admin-access-results-not-in-use", base(
        slice_("slice-1", "pool-1", [D()]), allocated("claim-x", result("req-0", "device-1", adminAccess=True)),
        claim()), note="admin-access results of allocated claims do not count as in use"),
    Case("admin-access-same-device-twice", base(
        slice_("slice-1", "pool-1", [D()]), claim("claim-0", req(admin=True, count=2)))),
    Case("admin-access-disabled", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req(admin=True))),
         gates={"DRAAdminAccess": False}),
    Case("selector-class-before-request", base(
        slice_("slice-1", "pool-1", [D("device-1", {"type": "nic"}), D("device-2", {"type": "gpu", "model": "x"})]),
        claim("claim-0", req("req-0", "gpu", 'device.attributes["driver-a"].model == "x"')),
        classes=(device_class("gpu", "driver-a", 'device.attributes["driver-a"].type == "gpu"'),)),
        note="the class selector rejects device-1 before the request selector (which would fail on it) runs"),
    Case("selector-runtime-error-no-such-key", base(
        slice_("slice-1", "pool-1", [D("device-1", {"type": "nic"})]),
        claim("claim-0", req("req-0", "class-a", 'device.attributes["driver-a"].model == "x"')))),
    Case("selector-unknown-domain-is-empty", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", req("req-0", "class-a", '!("model" in device.attributes["other.example.com"])')))),
    Case("selector-not-bool", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req("req-0", "class-a",
                                                                                          '"yes"')))),
    Case("selector-semver", base(
        slice_("slice-1", "pool-1", [D("device-1", {"driverVersion": Version("1.0.0")}),
                                     D("device-2", {"driverVersion": Version("2.1.0")})]),
        claim("claim-0", req("req-0", "class-a",
                             'device.attributes["driver-a"].driverVersion.isGreaterThan(semver("1.5.0"))')))),
    Case("selector-qualified-attribute", base(
        slice_("slice-1", "pool-1", [D("device-1", {"example.com/model": "a"}),
                                     D("device-2", {"example.com/model": "b"})]),
        claim("claim-0", req("req-0", "class-a", 'device.attributes["example.com"].model == "b"')))),
]

CONSTRAINTS = [
    Case("match-attribute-scoped", base(
        slice_("slice-1", "pool-1", numa_devices(1, 2, 1)),
        claim("claim-0", req("req-0"), req("req-1"), req("req-2"),
              constraints=[match("driver-a/numa", "req-0", "req-2")])),
        note="only req-0 and req-2 must share numa: req-0=device-1, req-1=device-2, req-2=device-3"),
    Case("match-attribute-backtrack", base(
        slice_("slice-1", "pool-1", numa_devices(1, 2, 2)),
        claim("claim-0", req("req-0"), req("req-1"), constraints=[match("driver-a/numa")])),
        note="device-1 (numa 1) has no partner: backtrack to device-2 + device-3"),
    Case("match-attribute-bare-name-fallback", base(
        slice_("slice-1", "pool-1", [D("device-1", {"numa": 1}), D("device-2", {"driver-a/numa": 1})]),
        claim("claim-0", req(count=2), constraints=[match("driver-a/numa")]))),
    Case("match-attribute-subrequest", base(
        slice_("slice-1", "pool-1", numa_devices(1, 2, 2)),
        claim("claim-0", first_available("req-0", sub("subReq-0", count=2), sub("subReq-1")), req("req-1"),
              constraints=[match("driver-a/numa", "req-0/subReq-1", "req-1")]))),
    Case("match-attribute-parent-request-covers-subrequests", base(
        slice_("slice-1", "pool-1", numa_devices(1, 2, 2)),
        claim("claim-0", first_available("req-0", sub("subReq-0", count=2), sub("subReq-1")), req("req-1"),
              constraints=[match("driver-a/numa", "req-0", "req-1")]))),
    Case("distinct-attribute", base(
        slice_("slice-1", "pool-1", [D("device-1", {"pf": 1}), D("device-2", {"pf": 1}), D("device-3", {"pf": 2})]),
        claim("claim-0", req(count=2), constraints=[distinct("driver-a/pf")]))),
    Case("distinct-attribute-not-enough-values", base(
        slice_("slice-1", "pool-1", [D("device-1", {"pf": 1}), D("device-2", {"pf": 1})]),
        claim("claim-0", req("req-0"), req("req-1"), constraints=[distinct("driver-a/pf")]))),
    Case("distinct-attribute-missing", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2", {"pf": 2})]),
        claim("claim-0", req(count=2), constraints=[distinct("driver-a/pf")]))),
]

CONFIG = [
    Case("config-class-then-claim", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", req("req-0"), req("req-1"), config=[{"requests": ["req-1"], **opaque(mode="claim")}]),
        classes=(device_class("class-a", "driver-a", config=[opaque(mode="class")]),)),
        note="class configs (FromClass) come first; a class config used by all requests has requests cleared"),
    Case("config-claim-covering-all-requests-cleared", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", req("req-0"), req("req-1"), config=[{"requests": ["req-0", "req-1"], **opaque()}]))),
    Case("config-claim-without-requests", base(
        slice_("slice-1", "pool-1", [D()]), claim("claim-0", config=[opaque(x="1"), opaque(x="2")]))),
    Case("config-two-classes", base(
        slice_("slice-1", "pool-1", [D()]), slice_("slice-2", "pool-2", [D()], driver="driver-b"),
        claim("claim-0", req("req-0", "class-a"), req("req-1", "class-b")),
        classes=(device_class("class-a", "driver-a", config=[opaque()]),
                 device_class("class-b", "driver-b", config=[opaque("driver-b")])))),
    Case("config-subrequest", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0", "class-b"), sub("subReq-1")), req("req-1", "class-c"),
              config=[{"requests": ["req-0/subReq-0"], **opaque(x="0")},
                      {"requests": ["req-0/subReq-1"], **opaque(x="1")},
                      {"requests": ["req-0"], **opaque(x="parent")}]),
        slice_("slice-2", "pool-2", [D()], driver="driver-c"),
        classes=(device_class("class-a", "driver-a", config=[opaque()]), CLASS_B, device_class("class-c", "driver-c"))),
        note="only configs of the chosen subrequest (and its parent) are copied"),
]

CASES = [*POOLS, *REQUESTS, *CONSTRAINTS, *CONFIG]
