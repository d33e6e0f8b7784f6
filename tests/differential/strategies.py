"""Hypothesis strategies for random but valid `kubedra allocate` inputs.

A `Profile` says which parts of the API a test exercises, so that focused tests spend their
examples where they matter (pools, requests and constraints, counters and capacity, taints and
admin access) and one broad test mixes everything with random feature gates. `scenarios(profile)`
draws a `Scenario`: the documents of one input file, the node and the gates. Draws are small
integers, booleans and choices from `vocab`, which keeps shrinking effective.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from . import vocab as v
from .vocab import Doc

Draw = Any  # hypothesis' draw callable


@dataclass(frozen=True)
class Profile:
    """Which API features the generated inputs use (and how many objects at most)."""

    max_pools: int = 3
    max_devices: int = 3
    generations: bool = False
    incomplete: bool = False
    invalid: bool = False
    localities: tuple[str, ...] = ("node",)
    selectors: bool = True
    unguarded_selectors: bool = False
    all_mode: bool = True
    first_available: bool = False
    constraints: bool = False
    config: bool = False
    counters: bool = False
    consumable: bool = False
    taints: bool = False
    admin: bool = False
    allocated: bool = False
    binding: bool = False
    missing_class: bool = False
    max_claims: int = 2
    max_requests: int = 2
    max_count: int = 3
    """The largest ExactCount a request asks for."""
    max_slices: int = 3
    list_attributes: bool = False
    """List-type attributes (DRAListTypeAttributes on: upstream's experimental variant), in selectors and constraints."""
    extended_resource: bool = False
    """DeviceClasses with extendedResourceName, and the DRAExtendedResource gate switched."""
    allocatable: bool = False
    """Bias toward inputs that can be allocated: the target node always has a pool, requests ask for fewer devices,
    fewer devices carry taints or binding conditions (unless `frequent_marks`)."""
    frequent_marks: bool = False
    """Taints and binding conditions on about one device in four whatever `allocatable` says, admin access on one
    request in three (not five): the profile about them biased toward allocating still draws them as often, so that
    more of its answers allocate a tolerated, admin or binding device."""
    versions: tuple[str, ...] = ("1.37",)
    switch_gates: bool = False
    stable: bool = False
    """Gates that make upstream pick its stable variant (no consumable capacity, no binding conditions)."""
    error_paths: bool = True
    """Whether an input may hold what upstream answers with an error (invalid or incomplete pools, a missing class,
    unguarded selectors, a gate switched off for a feature the claims use); `scenarios` allows it in about a third
    of the inputs, so that most inputs reach an allocation or an unschedulable answer."""


@dataclass
class Scenario:
    """One generated input: what `kubedra allocate -f input.yaml --node ... --feature-gates ...` gets."""

    docs: list[Doc]
    node: str = "node-1"
    gates: dict[str, bool] = field(default_factory=dict)
    version: str = "1.37"


def rare(draw: Draw, n: int) -> bool:
    """True about once in `n` draws; shrinks to False.

    Hypothesis favours boundary values of integer ranges, so `integers(0, n - 1) == 0` would be far
    more frequent than 1/n; the middle value is not favoured.
    """
    return bool(draw(st.integers(0, n - 1)) == n // 2)


# --------------------------------------------------------------------------------------------------
# Selectors


def _selector(draw: Draw, profile: Profile) -> str:
    kinds = ["string", "int", "bool", "semver", "quantity", "driver", "qualified"]
    if profile.consumable:
        kinds.append("multi")
    if profile.list_attributes:
        kinds += ["list", "list"]
    kind = draw(st.sampled_from(kinds))
    if kind == "list":
        name = draw(st.sampled_from(sorted(v.LIST_ATTRIBUTES)))
        value = draw(st.sampled_from(v.LIST_ATTRIBUTES[name][1]))
        literal = f'"{value}"' if isinstance(value, str) else str(value)
        return f"{v.attr_guard(name)} && {literal} in {v.attr_cel(name)}"
    if kind == "driver":
        return f'device.driver == "{draw(st.sampled_from(v.DRIVERS))}"'
    if kind == "multi":
        return draw(st.sampled_from(["device.allowMultipleAllocations", "!device.allowMultipleAllocations"]))
    if kind == "quantity":
        name = draw(st.sampled_from(["memory", "cores"]))
        bound = draw(st.sampled_from(v.MEMORY if name == "memory" else v.CORES))
        op = draw(st.sampled_from([".compareTo(q) >= 0", ".compareTo(q) < 0", ".isGreaterThan(q)", ".isLessThan(q)"]))
        expr = v.cap_cel(name) + op.replace("q", f'quantity("{bound}")')
        guard = v.cap_guard(name)
    else:
        name = {
            "string": "model", "int": draw(st.sampled_from(["index", "numa"])), "bool": "nvlink",
            "semver": "driverVersion", "qualified": "example.com/root",
        }[kind]
        path = v.attr_cel(name)
        values = v.ATTRIBUTES[name][1]
        if kind in ("string", "qualified"):
            expr = f'{path} {draw(st.sampled_from(["==", "!="]))} "{draw(st.sampled_from(values))}"'
        elif kind == "int":
            expr = f"{path} {draw(st.sampled_from(['==', '>=', '<', '!=']))} {draw(st.sampled_from(values))}"
        elif kind == "bool":
            expr = draw(st.sampled_from([path, f"!{path}"]))
        else:
            ref = draw(st.sampled_from(values))
            expr = draw(st.sampled_from([
                f'{path}.isGreaterThan(semver("{ref}"))', f'{path}.isLessThan(semver("{ref}"))',
                f'{path}.compareTo(semver("{ref}")) == 0', f"{path}.major() >= 2", f"{path}.minor() == 2",
            ]))
        guard = v.attr_guard(name)
    if profile.unguarded_selectors and rare(draw, 5):
        return expr
    return f"{guard} && {expr}"


# --------------------------------------------------------------------------------------------------
# Devices, slices and pools


def _policy(draw: Draw, name: str, value: str) -> Doc | None:
    ladder = ("512Mi", "1Gi", "2Gi", "4Gi", "8Gi") if name == "memory" else ("1", "2", "4", "8")
    usable = list(ladder[: ladder.index(value) + 1])
    kind = draw(st.sampled_from(["none", "default", "values", "range"]))
    if kind == "none":
        return None
    if kind == "default":
        return {"default": draw(st.sampled_from(usable))}
    if kind == "values":
        picked = sorted(draw(st.sets(st.sampled_from(usable), min_size=1, max_size=3)), key=usable.index)
        return {"default": draw(st.sampled_from(picked)), "validValues": picked}
    low = usable[min(1, len(usable) - 1)]
    if name == "cores" and rare(draw, 3):
        low = "500m"  # fractional bounds: Value() integers, or milli values with DRAFractionalCapacityRange
    rng: Doc = {"min": low}
    if draw(st.booleans()):
        rng["max"] = value
    if draw(st.booleans()):
        rng["step"] = low
    return {"default": low, "validRange": rng}


def _taint(draw: Draw) -> Doc:
    taint: Doc = {"key": draw(st.sampled_from(v.TAINT_KEYS)), "effect": draw(st.sampled_from(v.TAINT_EFFECTS))}
    if draw(st.booleans()):
        taint["value"] = draw(st.sampled_from(v.TAINT_VALUES))
    return taint


def _device(draw: Draw, profile: Profile, name: str, per_device: bool, counter_sets: list[str]) -> Doc:
    dev: Doc = {"name": name}
    attrs = {}
    for attr, (kind, values) in v.ATTRIBUTES.items():
        if not rare(draw, 4):
            attrs[attr] = {kind: draw(st.sampled_from(values))}
    if profile.list_attributes and not rare(draw, 3):
        for attr, (kind, values) in v.LIST_ATTRIBUTES.items():
            if draw(st.booleans()):
                attrs[attr] = {kind: sorted(draw(st.sets(st.sampled_from(values), min_size=1, max_size=3)))}
    if attrs:
        dev["attributes"] = attrs
    capacity: Doc = {}
    if not rare(draw, 4):
        capacity["memory"] = {"value": draw(st.sampled_from(v.MEMORY))}
    if draw(st.booleans()):
        capacity["cores"] = {"value": draw(st.sampled_from(v.CORES))}
    if profile.consumable and rare(draw, 3):
        dev["allowMultipleAllocations"] = True
        for cap_name, cap in capacity.items():
            policy = _policy(draw, cap_name, cap["value"])
            if policy:
                cap["requestPolicy"] = policy
    if capacity:
        dev["capacity"] = capacity
    if counter_sets and draw(st.booleans()):
        sets = draw(st.lists(st.sampled_from(counter_sets), min_size=1, max_size=2, unique=True))
        if profile.invalid and rare(draw, 40):
            sets[0] = "cs-unknown"  # an unknown counter set makes the pool invalid
        dev["consumesCounters"] = [
            {"counterSet": s, "counters": {
                draw(st.sampled_from(["mem", "sm"])): {"value": draw(st.sampled_from(["1", "2", "4", "8"]))}}}
            for s in sets
        ]
    marked = 10 if profile.allocatable and not profile.frequent_marks else 4
    if profile.taints and rare(draw, marked):
        dev["taints"] = [_taint(draw) for _ in range(draw(st.integers(1, 2)))]
    if profile.binding and rare(draw, marked):
        dev["bindingConditions"] = ["attached"]
        if draw(st.booleans()):
            dev["bindingFailureConditions"] = ["failed"]
        if draw(st.booleans()):
            dev["bindsToNode"] = True
    if per_device:
        where = draw(st.sampled_from(["node-1", "node-2", "all", "selector"]))
        if where == "all":
            dev["allNodes"] = True
        elif where == "selector":
            dev["nodeSelector"] = draw(st.sampled_from(v.NODE_SELECTORS))
        else:
            dev["nodeName"] = where
    return dev


def _locality(draw: Draw, profile: Profile, local_to: str | None) -> Doc:
    if local_to is not None:  # the first pool is always for the target node, so most examples can allocate
        return {"allNodes": True} if local_to == "node-3" else {"nodeName": local_to}
    kind = draw(st.sampled_from(profile.localities))
    if kind == "node":
        return {"nodeName": draw(st.sampled_from(["node-1", "node-1", "node-2"]))}
    if kind == "all":
        return {"allNodes": True}
    if kind == "selector":
        return {"nodeSelector": draw(st.sampled_from(v.NODE_SELECTORS))}
    return {"perDeviceNodeSelection": True}


def _slice(name: str, driver: str, pool: str, generation: int, count: int, locality: Doc, **body: Any) -> Doc:
    spec: Doc = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}
    spec.update(locality)
    spec.update(body)
    return {"apiVersion": v.V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def _pool(draw: Draw, profile: Profile, index: int, local_to: str | None) -> list[Doc]:
    driver = "driver-a" if local_to is not None else draw(st.sampled_from(v.DRIVERS))
    pool = f"pool-{index}"
    prefix = f"{driver[-1]}-{pool}"
    locality = _locality(draw, profile, local_to)
    per_device = "perDeviceNodeSelection" in locality
    generation = draw(st.integers(1, 2)) if profile.generations else 1
    n_slices = draw(st.integers(1, profile.max_slices))
    counter_sets: list[str] = []
    extra: list[Doc] = []
    if profile.counters and draw(st.booleans()):
        counter_sets = [f"cs-{i}" for i in range(draw(st.integers(1, 2)))]
        shared = [
            {"name": s, "counters": {"mem": {"value": draw(st.sampled_from(["4", "8"]))},
                                     "sm": {"value": draw(st.sampled_from(["2", "4"]))}}}
            for s in counter_sets
        ]
        extra.append({"name": f"{prefix}-counters", "sharedCounters": shared})
        if profile.invalid and rare(draw, 12):
            extra.append({"name": f"{prefix}-counters-dup", "sharedCounters": shared[:1]})
    device_slices: list[list[Doc]] = []
    serial = 0
    for _ in range(n_slices):
        devices = []
        for _ in range(draw(st.sampled_from([*range(1, profile.max_devices + 1), profile.max_devices, 0]))):
            devices.append(_device(draw, profile, f"dev-{serial}", per_device, counter_sets))
            serial += 1
        device_slices.append(devices)
    if profile.invalid and n_slices > 1 and device_slices[0] and device_slices[1] and rare(draw, 10):
        device_slices[1][0]["name"] = device_slices[0][0]["name"]  # duplicate device name across slices
    count = n_slices + len(extra)
    if profile.incomplete and rare(draw, 8):
        count += 1
    docs = [_slice(f"{prefix}-{j}", driver, pool, generation, count, locality, devices=devs)
            for j, devs in enumerate(device_slices)]
    docs += [_slice(e["name"], driver, pool, generation, count, locality, sharedCounters=e["sharedCounters"])
             for e in extra]
    if generation == 2 and draw(st.booleans()):
        old = [_device(draw, profile, f"dev-{i}", per_device, []) for i in range(draw(st.integers(1, 2)))]
        docs.append(_slice(f"{prefix}-old", driver, pool, 1, draw(st.integers(1, 2)), locality, devices=old))
    return docs


# --------------------------------------------------------------------------------------------------
# Claims


def _tolerations(draw: Draw) -> list[Doc]:
    out = []
    for _ in range(draw(st.integers(1, 2))):
        t: Doc = {}
        if draw(st.booleans()):
            t["operator"] = "Exists"
            if draw(st.booleans()):
                t["key"] = draw(st.sampled_from(v.TAINT_KEYS))
        else:
            t["key"] = draw(st.sampled_from(v.TAINT_KEYS))
            if draw(st.booleans()):
                t["operator"] = "Equal"
            if draw(st.booleans()):
                t["value"] = draw(st.sampled_from(v.TAINT_VALUES))
        if draw(st.booleans()):
            t["effect"] = draw(st.sampled_from(["NoSchedule", "NoExecute"]))
        out.append(t)
    return out


def _request_body(draw: Draw, profile: Profile, *, sub: bool) -> Doc:
    classes = [*v.CLASS_NAMES, "class-a", "class-a", "class-a", "class-any"]
    if profile.extended_resource:
        classes.append(v.EXTENDED_CLASS["metadata"]["name"])
    if profile.missing_class and rare(draw, 40):
        body: Doc = {"deviceClassName": v.MISSING_CLASS}
    else:
        likely = ["class-a", "class-any"] * 4 if profile.allocatable else []
        body = {"deviceClassName": draw(st.sampled_from([*classes, *likely]))}
    if profile.selectors and (rare(draw, 3) if profile.allocatable else draw(st.booleans())):
        body["selectors"] = [{"cel": {"expression": _selector(draw, profile)}}
                             for _ in range(draw(st.sampled_from([1, 1, 2])))]
    if profile.all_mode and rare(draw, 6):
        body["allocationMode"] = "All"
    else:
        small = [None, None, 1, 1, 2] * (3 if profile.allocatable else 1)
        count = draw(st.sampled_from([*small, 3, *range(4, profile.max_count + 1)]))
        if count is not None:
            body["count"] = count
        if rare(draw, 4):
            body["allocationMode"] = "ExactCount"
    if profile.admin and not sub and rare(draw, 3 if profile.frequent_marks else 5):
        body["adminAccess"] = True
    if profile.taints and (not rare(draw, 3) if profile.allocatable else rare(draw, 3)):
        body["tolerations"] = _tolerations(draw)
    if profile.consumable and rare(draw, 3):
        name = draw(st.sampled_from(["memory", "memory", "cores"]))
        body["capacity"] = {"requests": {name: draw(st.sampled_from(v.CAPACITY_REQUESTS[name]))}}
    return body


def _claim(draw: Draw, profile: Profile, name: str) -> Doc:
    requests: list[Doc] = []
    refs: list[str] = []
    most = profile.max_requests if not profile.allocatable or rare(draw, 3) else 1
    for i in range(draw(st.integers(1, most))):
        rname = f"req-{i}"
        refs.append(rname)
        if profile.first_available and rare(draw, 3):
            subs = []
            for j in range(draw(st.integers(1, 3))):
                subs.append({"name": f"sub-{j}", **_request_body(draw, profile, sub=True)})
                refs.append(f"{rname}/sub-{j}")
            requests.append({"name": rname, "firstAvailable": subs})
        else:
            requests.append({"name": rname, "exactly": _request_body(draw, profile, sub=False)})
    devices: Doc = {"requests": requests}
    if profile.constraints and draw(st.booleans()):
        constraints = []
        for _ in range(draw(st.integers(1, 2))):
            attr = draw(st.sampled_from(["driver-a/numa", "driver-a/model", "example.com/root", "driver-b/index",
                                         "driver-a/driverVersion", "driver-a/nvlink",
                                         *(["driver-a/lanes", "driver-a/tags"] * 2 if profile.list_attributes else [])]))
            # the stable variant drops distinctAttribute ("empty constraint"): an error path, kept rare there
            distinct = profile.consumable and (profile.error_paths and rare(draw, 8) if profile.stable
                                               else draw(st.booleans()))
            kind = "distinctAttribute" if distinct else "matchAttribute"
            c: Doc = {kind: attr}
            if draw(st.booleans()):
                c["requests"] = sorted(draw(st.sets(st.sampled_from(refs), min_size=1, max_size=2)))
            constraints.append(c)
        devices["constraints"] = constraints
    if profile.config and draw(st.booleans()):
        config: Doc = opaque_config(draw(st.sampled_from(v.DRIVERS)), name)
        if draw(st.booleans()):
            config["requests"] = sorted(draw(st.sets(st.sampled_from(refs), min_size=1, max_size=2)))
        devices["config"] = [config]
    namespace = draw(st.sampled_from(["default", "default", "ml"]))
    return {"apiVersion": v.V1, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": devices}}


def opaque_config(driver: str, tag: str) -> Doc:
    return v.opaque(driver, tag)


def _allocated_claim(draw: Draw, profile: Profile, index: int, devices: list[tuple[str, str, Doc]]) -> Doc:
    results = []
    for k in range(draw(st.integers(1, 3))):
        driver, pool, dev = draw(st.sampled_from(devices))
        r: Doc = {"request": "req-0", "driver": driver, "pool": pool, "device": dev["name"]}
        kind = draw(st.sampled_from(["plain", "admin", "shared"] if profile.consumable else ["plain", "admin"]))
        if kind == "admin" and profile.admin:
            r["adminAccess"] = True
        elif kind == "shared":
            r["shareID"] = f"00000000-0000-4000-8000-{index:04d}{k:08d}"
            if not rare(draw, 4):
                r["consumedCapacity"] = {"memory": draw(st.sampled_from(["1Gi", "2Gi", "4Gi"]))}
        results.append(r)
    return {"apiVersion": v.V1, "kind": "ResourceClaim", "metadata": {"name": f"used-{index}", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-any",
                                                                              "count": len(results)}}]}},
            "status": {"allocation": {"devices": {"results": results}}}}


def _taint_rule(draw: Draw, name: str, devices: list[tuple[str, str, Doc]]) -> Doc:
    spec: Doc = {"taint": _taint(draw)}
    if devices and not rare(draw, 6):
        driver, pool, dev = draw(st.sampled_from(devices))
        selector = {"driver": driver}
        if draw(st.booleans()):
            selector["pool"] = pool
        if draw(st.booleans()):
            selector["device"] = dev["name"]
        spec["deviceSelector"] = selector
    return {"apiVersion": v.V1, "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


# --------------------------------------------------------------------------------------------------
# The whole input


def _used_gates(claims: list[Doc]) -> set[str]:
    """The gates without which upstream refuses these claims with an error."""
    text = repr(claims)
    used = {gate for gate, key in (("DRAAdminAccess", "'adminAccess'"), ("DRAPrioritizedList", "'firstAvailable'"),
                                   ("DRAConsumableCapacity", "'capacity': {'requests'")) if key in text}
    if "distinctAttribute" in text:
        used.add("DRAConsumableCapacity")
    return used


def _gates(draw: Draw, profile: Profile, version: str, claims: list[Doc]) -> dict[str, bool]:
    gates: dict[str, bool] = {}
    keep = set() if profile.error_paths else _used_gates(claims)
    if profile.switch_gates:
        for gate in v.SWITCHABLE_GATES[version]:
            if rare(draw, 8) and gate not in keep:
                gates[gate] = not v.gate_default(version, gate)
    if profile.stable:
        for gate in v.STABLE_GATES:
            gates[gate] = v.gate_default(version, gate) != (rare(draw, 4) and gate not in keep)
        gates["DRAConsumableCapacity"] = False
        gates[draw(st.sampled_from(["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"]))] = False
        gates = {g: on for g, on in gates.items() if on != v.gate_default(version, g)}
    if profile.list_attributes and not rare(draw, 6):
        gates["DRAListTypeAttributes"] = True
    if profile.extended_resource and version == "1.36" and rare(draw, 3):
        gates["DRAExtendedResource"] = False
    return gates


@st.composite
def scenarios(draw: Draw, profile: Profile) -> Scenario:
    """A random, valid `kubedra allocate` input exercising the features of `profile`."""
    version = draw(st.sampled_from(profile.versions))
    if not rare(draw, 3):
        profile = replace(profile, error_paths=False, invalid=False, incomplete=False, missing_class=False,
                          unguarded_selectors=False)
    node = draw(st.sampled_from(v.TARGET_NODES[:1] * 6 + v.TARGET_NODES[1:]))
    slices: list[Doc] = []
    for i in range(draw(st.integers(1, profile.max_pools))):
        local = i == 0 and (profile.allocatable or not rare(draw, 5))
        slices += _pool(draw, profile, i, node if local else None)
    slices = draw(st.permutations(slices))
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d) for s in slices for d in s["spec"].get("devices", [])]
    docs: list[Doc] = [*v.NODES, *v.CLASSES, *slices]
    if profile.extended_resource:
        docs.insert(len(v.NODES) + len(v.CLASSES), v.EXTENDED_CLASS)
    if profile.taints and devices:
        docs += [_taint_rule(draw, f"rule-{i}", devices) for i in range(draw(st.integers(0, 2)))]
    if profile.allocated and devices:
        docs += [_allocated_claim(draw, profile, i, devices) for i in range(draw(st.integers(0, 2)))]
    claims = [_claim(draw, profile, f"claim-{i}") for i in range(draw(st.integers(1, profile.max_claims)))]
    docs += claims
    return Scenario(docs=docs, node=node, gates=_gates(draw, profile, version, claims), version=version)
