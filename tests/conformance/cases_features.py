"""Cases for counters, consumable capacity, taints, binding conditions, allocated state and gates switched off."""

from __future__ import annotations

from .fixtures import (
    CLASS_A,
    NODES,
    Case,
    allocated,
    claim,
    consumes,
    counter_set,
    device,
    distinct,
    first_available,
    req,
    result,
    slice_,
    sub,
    taint_rule,
    toleration,
)

D = device
SHARE = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
BINDING = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["AttachFailed"]}


def base(*docs: dict) -> list[dict]:
    return [*NODES, CLASS_A, *docs]


def partitioned(*devices: dict, memory: str = "8Gi") -> list[dict]:
    """A pool of two slices: the devices, and one counter set `counter-set-1` with `memory`."""
    return [slice_("slice-1", "pool-1", list(devices), count=2),
            slice_("slice-2", "pool-1", None, count=2, sharedCounters=[counter_set("counter-set-1", memory=memory)])]


def part(name: str, memory: str) -> dict:
    return D(name, consumesCounters=[consumes("counter-set-1", memory=memory)])


def shared(name: str = "device-1", memory: object = "40Gi") -> dict:
    return D(name, capacity={"memory": memory}, allowMultipleAllocations=True)


def taint(effect: str, key: str = "example.com/taint", value: str = "tainted") -> dict:
    return {"key": key, "value": value, "effect": effect}


COUNTERS = [
    Case("counters-two-partitions-fit", base(*partitioned(part("device-1", "4Gi"), part("device-2", "4Gi")),
                                             claim("claim-0", req(count=2)))),
    Case("partitionable-devices-no-capacity-available", base(
        *partitioned(part("device-1", "6Gi"), part("device-2", "4Gi")), claim("claim-0", req(count=2))),
        note="resourceSliceCount 2 (unlike upstream's fixture) so the counter check, not pool completeness, decides"),
    Case("counters-consumed-by-allocated-claim", base(
        *partitioned(part("device-1", "6Gi"), part("device-2", "4Gi")),
        allocated("claim-x", result("req-0", "device-1")), claim())),
    Case("counters-backtrack-to-smaller-partition", base(
        *partitioned(part("device-1", "8Gi"), part("device-2", "4Gi"), part("device-3", "4Gi")),
        claim("claim-0", req(count=2))), note="device-1 uses the whole set; devices 2 and 3 fit together"),
    Case("counters-disabled", base(
        *partitioned(part("device-1", "4Gi")), slice_("slice-3", "pool-2", [D("device-2")]), claim()),
        gates={"DRAPartitionableDevices": False},
        note="with the gate off the counter slice is ignored and a device consuming counters is not allocatable"),
]

CONSUMABLE = [
    Case("consumable-two-claims-share-device", base(
        slice_("slice-1", "pool-1", [shared()]),
        claim("claim-0", req(capacity={"memory": "10Gi"})), claim("claim-1", req(capacity={"memory": "20Gi"})))),
    Case("consumable-default-policy", base(
        slice_("slice-1", "pool-1", [shared(memory={"value": "40Gi", "requestPolicy": {"default": "10Gi"}})]),
        claim())),
    Case("consumable-no-policy-no-request-takes-all", base(
        slice_("slice-1", "pool-1", [shared(), shared("device-2")]), claim("claim-0"), claim("claim-1"))),
    Case("consumable-valid-values-round-up", base(
        slice_("slice-1", "pool-1", [shared(memory={"value": "40Gi", "requestPolicy": {
            "default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}})]),
        claim("claim-0", req(capacity={"memory": "15Gi"})))),
    Case("consumable-valid-range-round-up", base(
        slice_("slice-1", "pool-1", [shared(memory={"value": "40Gi", "requestPolicy": {
            "default": "10Gi", "validRange": {"min": "10Gi", "max": "40Gi", "step": "5Gi"}}})]),
        claim("claim-0", req(capacity={"memory": "12Gi"})), claim("claim-1", req(capacity={"memory": "1Gi"})))),
    Case("consumable-request-above-max", base(
        slice_("slice-1", "pool-1", [shared(memory={"value": "80Gi", "requestPolicy": {
            "default": "10Gi", "validRange": {"min": "10Gi", "max": "40Gi"}}})]),
        claim("claim-0", req(capacity={"memory": "50Gi"})))),
    Case("consumable-allocated-share-next-device", base(
        slice_("slice-1", "pool-1", [shared(), shared("device-2")]),
        allocated("claim-x", result("req-0", "device-1", shareID=SHARE, consumedCapacity={"memory": "30Gi"})),
        claim("claim-0", req(capacity={"memory": "20Gi"})))),
    Case("consumable-allocated-share-fits", base(
        slice_("slice-1", "pool-1", [shared(), shared("device-2")]),
        allocated("claim-x", result("req-0", "device-1", shareID=SHARE, consumedCapacity={"memory": "30Gi"})),
        claim("claim-0", req(capacity={"memory": "10Gi"})))),
    Case("consumable-dedicated-device-capacity-filter", base(
        slice_("slice-1", "pool-1", [D("device-1", capacity={"memory": "8Gi"}),
                                     D("device-2", capacity={"memory": "32Gi"})]),
        claim("claim-0", req(capacity={"memory": "16Gi"}))),
        note="a dedicated device only filters on capacity: no consumedCapacity, no shareID"),
    Case("consumable-request-unknown-capacity", base(
        slice_("slice-1", "pool-1", [shared()]), claim("claim-0", req(capacity={"cores": "1"})))),
    Case("consumable-capacity-disabled", base(
        slice_("slice-1", "pool-1", [shared()]), claim("claim-0", req(capacity={"memory": "10Gi"}))),
        gates={"DRAConsumableCapacity": False}),
    Case("consumable-disabled-share-counts-as-dedicated", base(
        slice_("slice-1", "pool-1", [shared()]),
        allocated("claim-x", result("req-0", "device-1", shareID=SHARE, consumedCapacity={"memory": "10Gi"})),
        claim()), gates={"DRAConsumableCapacity": False},
        note="with the gate off the scheduler treats a shared result as a dedicated, in-use device"),
    Case("consumable-subrequest", base(
        slice_("slice-1", "pool-1", [shared(memory="10Gi")]),
        claim("claim-0", first_available("req-0", sub("subReq-0", capacity={"memory": "20Gi"}),
                                         sub("subReq-1", capacity={"memory": "5Gi"}))))),
    Case("distinct-attribute-multi-allocatable-device", base(
        slice_("slice-1", "pool-1", [D("device-1", {"pf": 1}, capacity={"memory": "40Gi"},
                                       allowMultipleAllocations=True)]),
        claim("claim-0", req("req-0", capacity={"memory": "1Gi"}), req("req-1", capacity={"memory": "1Gi"}),
              constraints=[distinct("driver-a/pf")]))),
]

TAINTS = [
    Case("taint-tolerated-exists", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoSchedule")])]),
        claim("claim-0", req(tolerations=[toleration("example.com/taint", operator="Exists")])))),
    Case("taint-tolerated-equal", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoExecute")])]),
        claim("claim-0", req(tolerations=[toleration("example.com/taint", "NoExecute", value="tainted")])))),
    Case("taint-toleration-wrong-value", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoSchedule")])]),
        claim("claim-0", req(tolerations=[toleration("example.com/taint", value="other")])))),
    Case("taint-toleration-wrong-effect", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoExecute")])]),
        claim("claim-0", req(tolerations=[toleration("example.com/taint", "NoSchedule", "Exists")])))),
    Case("taint-toleration-exists-everything", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoSchedule"), taint("NoExecute", "other")])]),
        claim("claim-0", req(tolerations=[toleration(operator="Exists")])))),
    Case("taint-one-of-two-tolerated", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoSchedule"), taint("NoSchedule", "other")])]),
        claim("claim-0", req(tolerations=[toleration("example.com/taint", operator="Exists")])))),
    Case("tainted-admin-access", base(
        slice_("slice-1", "pool-1", [D("device-1", taints=[taint("NoSchedule")])]), claim("claim-0", req(admin=True)))),
    Case("taint-rule-no-schedule", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        taint_rule("rule-1", "example.com/maintenance", "NoSchedule", driver="driver-a", pool="pool-1",
                   device="device-1"),
        claim()), note="DRADeviceTaintRules is on by default in 1.37"),
    Case("taint-rule-disabled", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        taint_rule("rule-1", "example.com/maintenance", "NoSchedule", device="device-1"), claim()),
        gates={"DRADeviceTaintRules": False}),
    Case("taint-rule-1.36-default-off", base(
        slice_("slice-1", "pool-1", [D("device-1")]),
        taint_rule("rule-1", "example.com/maintenance", "NoSchedule", version="v1beta2", device="device-1"), claim()),
        version="1.36", note="DRADeviceTaintRules is beta but off by default in 1.36"),
    Case("taint-rule-1.36-no-selector-taints-all", base(
        slice_("slice-1", "pool-1", [D("device-1")]),
        taint_rule("rule-1", "example.com/maintenance", "NoSchedule", version="v1beta2"), claim()),
        version="1.36", gates={"DRADeviceTaintRules": True},
        note="in 1.36 a rule without deviceSelector taints every device"),
    Case("taint-rule-no-selector-matches-nothing", base(
        slice_("slice-1", "pool-1", [D("device-1")]),
        taint_rule("rule-1", "example.com/maintenance", "NoSchedule"), claim()),
        note="since 1.37 a rule without deviceSelector matches no device"),
    Case("taint-rule-tolerated", base(
        slice_("slice-1", "pool-1", [D("device-1")]),
        taint_rule("rule-1", "example.com/maintenance", "NoExecute", "soon", pool="pool-1"),
        claim("claim-0", req(tolerations=[toleration("example.com/maintenance", value="soon")])))),
]

BINDING_CASES = [
    Case("binding-conditions-pool-tried-last", base(
        slice_("slice-1", "pool-1", [D("device-1", **BINDING)]), slice_("slice-2", "pool-2", [D("device-1")]),
        claim()), note="pool-1 sorts first but has binding conditions, so pool-2 is tried first"),
    Case("binding-conditions-used-when-nothing-else", base(
        slice_("slice-1", "pool-1", [D("device-1", **BINDING)]), slice_("slice-2", "pool-2", [D("device-1")]),
        claim("claim-0", req(count=2)))),
    Case("binding-conditions-device-status-disabled", base(
        slice_("slice-1", "pool-1", [D("device-1", **BINDING)]), claim()),
        gates={"DRAResourceClaimDeviceStatus": False},
        note=("the allocator's DeviceBindingAndStatus needs both DRADeviceBindingConditions and "
              "DRAResourceClaimDeviceStatus")),
]

STATE = [
    Case("allocated-dedicated-other-device-free", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        allocated("claim-x", result("req-0", "device-1")), claim())),
    Case("allocated-in-other-claims-mixed", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2"), D("device-3")]),
        allocated("claim-x", result("req-0", "device-1", adminAccess=True), result("req-0", "device-2")),
        claim("claim-0", req(count=2)))),
    Case("two-claims-one-attempt", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2"), D("device-3")]),
        claim("claim-0", req(count=2)), claim("claim-1"))),
    Case("claims-in-namespaces", base(
        slice_("slice-1", "pool-1", [D("device-1"), D("device-2")]),
        claim("claim-0", namespace="ml"), claim("claim-0", namespace="default"))),
]

LIST_ATTRIBUTES = [
    Case("list-attributes-match-common-element", base(
        slice_("slice-1", "pool-1", [D("device-1", {"numa": [0, 1]}), D("device-2", {"numa": [1, 2]})]),
        claim("claim-0", req(count=2), constraints=[{"matchAttribute": "driver-a/numa"}])),
        gates={"DRAListTypeAttributes": True}),
    Case("list-attributes-disabled", base(
        slice_("slice-1", "pool-1", [D("device-1", {"numa": [0, 1]}), D("device-2", {"numa": [1, 2]})]),
        claim("claim-0", req(count=2), constraints=[{"matchAttribute": "driver-a/numa"}]))),
]


def grouped(name: str, *groups: str, memory: str = "2Gi") -> dict:
    """A partition of `counter-set-1` declaring compatibility groups (DRADeviceCompatibilityGroups)."""
    use = consumes("counter-set-1", memory=memory)
    if groups:
        use["compatibilityGroups"] = list(groups)
    return D(name, consumesCounters=[use])


COMPAT = {"DRADeviceCompatibilityGroups": True}

COMPATIBILITY_GROUPS = [
    Case("compatibility-groups-intersect", base(
        *partitioned(grouped("device-1", "a", "b"), grouped("device-2", "b", "c")), claim("claim-0", req(count=2))),
        gates=COMPAT),
    Case("compatibility-groups-disjoint-skipped", base(
        *partitioned(grouped("device-1", "a"), grouped("device-2", "b"), grouped("device-3", "a")),
        claim("claim-0", req(count=2))), gates=COMPAT, note="device-2 shares no group with device-1"),
    Case("compatibility-groups-intersection-narrows", base(
        *partitioned(grouped("device-1", "a", "b"), grouped("device-2", "b", "c"), grouped("device-3", "a", "c"),
                     grouped("device-4", "b")), claim("claim-0", req(count=3))), gates=COMPAT,
        note="after devices 1 and 2 only group b is left, which device-3 does not name"),
    Case("compatibility-groups-none-and-grouped", base(
        *partitioned(grouped("device-1"), grouped("device-2", "a"), grouped("device-3")),
        claim("claim-0", req(count=2))), gates=COMPAT,
        note="a device without groups only shares its counter set with devices without groups"),
    Case("compatibility-groups-allocated-peer", base(
        *partitioned(grouped("device-1", "a"), grouped("device-2", "b"), grouped("device-3", "a", "b")),
        allocated("claim-x", result("req-0", "device-1")), claim("claim-0", req(count=1))), gates=COMPAT,
        note="the already-allocated device-1 seeds the counter set's groups"),
    Case("compatibility-groups-other-claims-in-one-call", base(
        *partitioned(grouped("device-1", "a"), grouped("device-2", "b"), grouped("device-3", "a")),
        claim("claim-0", req(count=1)), claim("claim-1", req(count=1))), gates=COMPAT),
    Case("compatibility-groups-gate-off", base(
        *partitioned(grouped("device-1", "a"), grouped("device-2", "a")),
        slice_("slice-3", "pool-2", [D("device-3")]), claim("claim-0", req(count=1))),
        note="with the gate off the slice naming groups is ignored, its pool incomplete"),
]

FRACTIONAL_POLICY = {"value": "4", "requestPolicy": {"default": "500m",
                                                      "validRange": {"min": "500m", "max": "4", "step": "250m"}}}


def cores(policy: dict) -> dict:
    return D("device-1", capacity={"cores": policy}, allowMultipleAllocations=True)


FRACTIONAL = [
    Case("fractional-range-rounds-to-step", base(
        slice_("slice-1", "pool-1", [cores(FRACTIONAL_POLICY)]),
        claim("claim-0", req(capacity={"cores": "1100m"})), claim("claim-1", req(capacity={"cores": "2"}))),
        gates={"DRAFractionalCapacityRange": True}),
    Case("fractional-range-gate-off", base(
        slice_("slice-1", "pool-1", [cores(FRACTIONAL_POLICY)]),
        claim("claim-0", req(capacity={"cores": "1100m"})))),
    Case("fractional-range-full", base(
        slice_("slice-1", "pool-1", [cores(FRACTIONAL_POLICY)]),
        claim("claim-0", req(capacity={"cores": "3600m"})), claim("claim-1", req(capacity={"cores": "300m"}))),
        gates={"DRAFractionalCapacityRange": True}, note="3600m rounds up to 3750m and 300m to min 500m: 4250m together, over the 4 cores"),
]

CASES = [*COUNTERS, *CONSUMABLE, *TAINTS, *BINDING_CASES, *STATE, *LIST_ATTRIBUTES, *COMPATIBILITY_GROUPS,
         *FRACTIONAL]
