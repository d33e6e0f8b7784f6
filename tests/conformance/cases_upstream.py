"""Cases ported from upstream's allocator test table (dra-upstream.md §3; same names)."""

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
    first_available,
    match,
    opaque,
    req,
    result,
    slice_,
    sub,
)

D = device
TYPE_X = 'device.attributes["driver-a"].type == "X"'
BINDING = {"bindingConditions": ["IsPrepare"], "bindingFailureConditions": ["BindingFailed"]}


def base(*docs: dict, classes: tuple[dict, ...] = (CLASS_A,)) -> list[dict]:
    return [*NODES, *classes, *docs]


def four_devices_count_5(name: str, slices: list[dict]) -> Case:
    return Case(name, base(*slices, claim("claim-0", req("req-0", count=5))),
                note="count 5 over 4 devices: upstream counts 16 allocateOne calls (65 in the stable allocator)")


CASES = [
    Case("simple", base(slice_("slice-1", "pool-1", [D()]), claim())),
    Case("other-node", base(
        slice_("slice-1", "pool-1", [D()], driver="driver-b"),
        slice_("slice-2", "pool-2", [D()], node_name="node-2"),
        claim(), classes=(CLASS_A, CLASS_B)), node="node-2"),
    Case("small-and-large", base(
        slice_("slice-1", "pool-1", [D("device-1", capacity={"memory": "1Gi"}),
                                     D("device-2", capacity={"memory": "2Gi"})]),
        claim("claim-0",
              req("req-0", "class-a", 'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
              req("req-1", "class-a", 'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0')))),
    Case("small-and-large-backtrack-requests", base(
        slice_("slice-1", "pool-1", [D("device-1", capacity={"memory": "1Gi"}),
                                     D("device-2", capacity={"memory": "2Gi"})]),
        claim("claim-0",
              req("req-0", "class-a", 'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'),
              req("req-1", "class-a", 'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'))),
        note="req-0 first takes device-1 (first in slice order); req-1 needs device-2"),
    Case("devices-split-across-different-slices", base(
        slice_("slice-1", "pool-1", [D()]), slice_("slice-2", "pool-2", [D()]),
        claim("claim-0", req(count=2)))),
    Case("obsolete-slice", base(
        slice_("slice-1", "pool-1", [D()]),
        slice_("slice-2", "pool-1", [D("device-2")], generation=2),
        claim()), note="only generation 2 of pool-1 counts: device-2"),
    Case("duplicate-slice", base(
        slice_("slice-1", "pool-1", [D()], count=2), slice_("slice-2", "pool-1", [D()], count=2), claim())),
    Case("no-slices", base(claim())),
    Case("not-enough-suitable-devices", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0"), claim("claim-1"))),
    Case("unknown-class", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req("req-0", "unknown-class")))),
    Case("empty-class", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req("req-0", "")))),
    Case("all-devices-many", base(
        slice_("slice-1", "pool-1", [D()]), slice_("slice-2", "pool-2", [D()]),
        claim("claim-0", req(mode="All")))),
    Case("all-devices-of-the-incomplete-pool", base(
        slice_("slice-1", "pool-1", [D()], count=2), claim("claim-0", req(mode="All")))),
    Case("all-devices-some-allocated", base(
        slice_("slice-1", "pool-1", [D(), D("device-2")]),
        allocated("claim-x", result("req-0", "device-1")),
        claim("claim-0", req(mode="All"))), note="All needs every matching device; device-1 is in use"),
    Case("all-devices-some-allocated-admin-access", base(
        slice_("slice-1", "pool-1", [D(), D("device-2")]),
        allocated("claim-x", result("req-0", "device-1")),
        claim("claim-0", req(mode="All", admin=True)))),
    Case("network-attached-device", base(
        slice_("slice-1", "pool-1", [D()], node_name=None, nodeSelector={"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}]}),
        claim())),
    Case("unsuccessful-allocation-network-attached-device", base(
        slice_("slice-1", "pool-1", [D()], node_name=None, nodeSelector={"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}]}),
        claim()), node="node-2"),
    Case("already-allocated-devices", base(
        slice_("slice-1", "pool-1", [D()]), allocated("claim-x", result("req-0", "device-1")), claim())),
    Case("with-constraint", base(
        slice_("slice-1", "pool-1", [
            D("device-1", {"numa": 1, "driverVersion": Version("1.0.0"), "stringAttribute": "stringAttributeValue",
                           "boolAttribute": True}),
            D("device-2", {"numa": 1, "driverVersion": Version("1.0.0"), "stringAttribute": "stringAttributeValue",
                           "boolAttribute": True})]),
        claim("claim-0", req("req-0"), req("req-1"), constraints=[
            match("driver-a/numa"), match("driver-a/driverVersion"), match("driver-a/stringAttribute"),
            match("driver-a/boolAttribute")]))),
    Case("with-constraint-not-matching-int-attribute", base(
        slice_("slice-1", "pool-1", [D("device-1", {"numa": 1}), D("device-2", {"numa": 2})]),
        claim("claim-0", req(count=2), constraints=[match("driver-a/numa")]))),
    Case("with-constraint-non-existent-attribute", base(
        slice_("slice-1", "pool-1", [D("device-1", {"numa": 1})]),
        claim("claim-0", constraints=[match("driver-a/no-such-attribute")]))),
    Case("with-class-device-config", [*NODES, device_class("class-a", "driver-a", config=[opaque()]),
                                      slice_("slice-1", "pool-1", [D()]), claim()]),
    Case("invalid-CEL-one-device", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req("req-0", "class-a",
                                                                                               "noSuchVar")))),
    Case("unknown-allocation-mode", base(slice_("slice-1", "pool-1", [D()]),
                                         claim("claim-0", req(mode="future-mode")))),
    Case("too-many-devices-single-request", base(slice_("slice-1", "pool-1", [D()]), claim("claim-0", req(count=500)))),
    Case("prioritized-list-first-unavailable", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a"))),
        classes=(CLASS_A, CLASS_B))),
    Case("prioritized-list-too-many-in-first-subrequest", base(
        slice_("slice-1", "pool-1", [D()]),
        claim("claim-0", first_available("req-0", sub("subReq-0", count=500), sub("subReq-1", count=1))))),
    Case("partitionable-devices-single-device", base(
        slice_("slice-1", "pool-1", [D("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")])],
               count=2),
        slice_("slice-2", "pool-1", None, count=2, sharedCounters=[counter_set("counter-set-1", memory="8Gi")]),
        claim())),
    Case("tainted-two-devices", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[{"key": "example.com/taint", "value": "tainted",
                                                             "effect": "NoSchedule"}]),
                                     D("device-2", taints=[{"key": "example.com/taint", "value": "tainted",
                                                             "effect": "NoExecute"}])]),
        claim())),
    Case("tainted-no-effect", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[{"key": "example.com/taint", "value": "tainted",
                                                             "effect": "None"}])]),
        claim())),
    Case("tainted-disabled", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[{"key": "example.com/taint", "value": "tainted",
                                                             "effect": "NoSchedule"}])]),
        claim()), gates={"DRADeviceTaints": False}),
    Case("consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device", base(
        slice_("slice-1", "pool-1", [D("device-1", capacity={"capacity-0": "2"}, allowMultipleAllocations=True),
                                     D("device-2", capacity={"capacity-0": "2"}, allowMultipleAllocations=True)]),
        allocated("claim-x", result("req-0", "device-1", shareID="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                                    consumedCapacity={"capacity-0": "2"})),
        claim("claim-0", req(capacity={"capacity-0": "1"})))),
    Case("no-allocation-from-incomplete-pools", base(slice_("slice-1", "pool-1", [D()], count=2), claim())),
    Case("check-combinations-with-backtracking", base(
        slice_("slice-1", "pool-1", [D("device-1", {"type": "X"}), D("device-2", {"type": "Y"}),
                                     D("device-3", {"type": "Y"})]),
        claim("claim-0", req("req-1", count=2), req("req-2", "class-a", TYPE_X))),
        note="upstream: 12 allocateOne calls (14 in the stable allocator)"),
    four_devices_count_5("check-combinations-within-single-request-single-pool-single-slice", [
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2"), D("device-3"), D("device-4")])]),
    four_devices_count_5("check-combinations-within-single-request-single-pool-multiple-slices", [
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")], count=2),
        slice_("slice-2", "pool-1", [D("device-3"), D("device-4")], count=2)]),
    four_devices_count_5("check-combinations-within-single-request-multiple-pools-multiple-slices", [
        slice_("slice-1", "pool-1", [D("device-1")], count=2), slice_("slice-2", "pool-1", [D("device-2")], count=2),
        slice_("slice-3", "pool-2", [D("device-3"), D("device-4")])]),
    four_devices_count_5("check-combinations-within-single-request-many-pools", [
        slice_(f"slice-{i}", f"pool-{i}", [D(f"device-{i}")]) for i in range(1, 5)]),
    Case("multi-host-resource-pool-incomplete-update-from-node-1-to-node-2", base(
        slice_("slice-1", "pool-1", [D("device-1")], count=2),
        slice_("slice-1b", "pool-1", [D("device-2")], count=2),
        slice_("slice-2", "pool-1", [D("device-1")], node_name="node-2", generation=2, count=2),
        claim()), note="generation 2 lives on node-2 only and is incomplete; node-1 still uses generation 1"),
    Case("multi-host-resource-pool-complete-update-from-node-1-to-node-2", base(
        slice_("slice-1a", "pool-1", [D("device-1")], count=2),
        slice_("slice-1b", "pool-1", [D("device-2")], count=2),
        slice_("slice-2a", "pool-1", [D("device-1")], node_name="node-2", generation=2, count=2),
        slice_("slice-2b", "pool-1", [D("device-2")], node_name="node-2", generation=2, count=2),
        claim()),
        note=("surprising but upstream: node-1's own generation 1 is complete, so the newer generation 2 on node-2 "
              "is never seen and device-1 is still allocated (upstream's test documents this limitation)")),
    Case("device-binding-conditions", base(slice_("slice-1", "pool-1", [D("device-1", **BINDING)]), claim())),
    Case("binding-conditions-with-and-without", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2", **BINDING)]),
        claim("claim-0", req("req-0"), req("req-1")))),
    Case("binding-conditions-without-feature-gate", base(
        slice_("slice-1", "pool-1", [D("device-1", **BINDING)]), claim()),
        gates={"DRADeviceBindingConditions": False}),
    Case("node-restriction", base(
        slice_("slice-1", "pool-1", [D("device-1", bindsToNode=True)], node_name=None, nodeSelector={
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "planet", "operator": "In", "values": ["earth"]}]}]}),
        claim()), note="bindsToNode turns the network-attached selector into the local node selector"),
    Case("invalid-pool-is-ok-if-devices-can-be-allocated-from-other", base(
        slice_("slice-1", "pool-1", [D(), D()]), slice_("slice-2", "pool-2", [D()]), claim())),
    Case("invalid-pool-is-error-if-no-other-device-can-be-allocated", base(
        slice_("slice-1", "pool-1", [D(), D()]), claim())),
]
