"""Builders for conformance-case inputs, in upstream's fixture conventions.

The generator (generate.py) turns these Python values into each case's
input.yaml; the helpers keep the case definitions short. Conventions follow
upstream's allocator test table (dra-upstream.md §3): nodes node-1 (region-1)
and node-2 (region-2), both labelled planet=earth; class-a selects driver-a and
class-b driver-b; slices use pool-N, generation 1, resourceSliceCount 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]
V1 = "resource.k8s.io/v1"


@dataclass
class Version:
    """A semver attribute value (typed as `version` in a device's attributes)."""

    value: str


@dataclass
class Case:
    """One conformance case before it is written to disk."""

    name: str
    docs: list[Doc]
    node: str = "node-1"
    gates: dict[str, bool] = field(default_factory=dict)
    version: str | None = None
    note: str = ""


def node(name: str, **labels: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


NODE1 = node("node-1", region="region-1", planet="earth")
NODE2 = node("node-2", region="region-2", planet="earth")
NODES = [NODE1, NODE2]


def device_class(name: str = "class-a", driver: str | None = "driver-a", *exprs: str,
                 config: list[Doc] | None = None) -> Doc:
    selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}] if driver else []
    selectors += [{"cel": {"expression": e}} for e in exprs]
    spec: Doc = {"selectors": selectors} if selectors else {}
    if config:
        spec["config"] = config
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


CLASS_A = device_class("class-a", "driver-a")
CLASS_B = device_class("class-b", "driver-b")


def opaque(driver: str = "driver-a", **params: Any) -> Doc:
    return {"opaque": {"driver": driver, "parameters": {"apiVersion": f"{driver}/v1", "kind": "Config", **params}}}


def attrs(values: dict[str, Any]) -> Doc:
    out: Doc = {}
    for key, v in values.items():
        if isinstance(v, Version):
            out[key] = {"version": v.value}
        elif isinstance(v, bool):
            out[key] = {"bool": v}
        elif isinstance(v, int):
            out[key] = {"int": v}
        elif isinstance(v, list):
            kind = "bools" if isinstance(v[0], bool) else "ints" if isinstance(v[0], int) else "strings"
            out[key] = {kind: v}
        else:
            out[key] = {"string": v}
    return out


def device(name: str = "device-1", attributes: dict[str, Any] | None = None,
           capacity: dict[str, Any] | None = None, **extra: Any) -> Doc:
    """A device; capacity values are quantities, or dicts with value/requestPolicy."""
    d: Doc = {"name": name}
    if attributes:
        d["attributes"] = attrs(attributes)
    if capacity:
        d["capacity"] = {k: v if isinstance(v, dict) else {"value": str(v)} for k, v in capacity.items()}
    d.update(extra)
    return d


def slice_(name: str, pool: str, devices: list[Doc] | None = None, *, driver: str = "driver-a",
           node_name: str | None = "node-1", generation: int = 1, count: int = 1, **spec: Any) -> Doc:
    """A ResourceSlice; node_name=None with all_nodes/nodeSelector/perDeviceNodeSelection in spec."""
    s: Doc = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}
    if node_name is not None:
        s["nodeName"] = node_name
    s.update(spec)
    if devices is not None:
        s["devices"] = devices
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": s}


def counter_set(name: str, **counters: str) -> Doc:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(counter_set_name: str, **counters: str) -> Doc:
    return {"counterSet": counter_set_name, "counters": {k: {"value": v} for k, v in counters.items()}}


def req(name: str = "req-0", cls: str = "class-a", *selectors: str, count: int | None = None,
        mode: str | None = None, admin: bool | None = None, tolerations: list[Doc] | None = None,
        capacity: dict[str, str] | None = None) -> Doc:
    """An `exactly` request."""
    ex: Doc = {"deviceClassName": cls}
    if selectors:
        ex["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if mode:
        ex["allocationMode"] = mode
    if count is not None:
        ex["count"] = count
    if admin is not None:
        ex["adminAccess"] = admin
    if tolerations:
        ex["tolerations"] = tolerations
    if capacity:
        ex["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": ex}


def sub(name: str, cls: str = "class-a", *selectors: str, count: int | None = None, mode: str | None = None,
        tolerations: list[Doc] | None = None, capacity: dict[str, str] | None = None) -> Doc:
    """A firstAvailable subrequest."""
    body = req(name, cls, *selectors, count=count, mode=mode, tolerations=tolerations, capacity=capacity)["exactly"]
    return {"name": name, **body}


def first_available(name: str, *subs: Doc) -> Doc:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str = "claim-0", *requests: Doc, constraints: list[Doc] | None = None,
          config: list[Doc] | None = None, namespace: str = "default", allocation: Doc | None = None) -> Doc:
    devices: Doc = {"requests": list(requests) or [req()]}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    c: Doc = {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
              "spec": {"devices": devices}}
    if allocation is not None:
        c["status"] = {"allocation": allocation}
    return c


def result(request: str, device: str, pool: str = "pool-1", driver: str = "driver-a", **extra: Any) -> Doc:
    return {"request": request, "driver": driver, "pool": pool, "device": device, **extra}


def allocated(name: str, *results: Doc, requests: list[Doc] | None = None, node_name: str = "node-1") -> Doc:
    """A claim that already has status.allocation (part of the allocated state)."""
    alloc: Doc = {"devices": {"results": list(results)},
                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                      {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}
    return claim(name, *(requests or [req(r["request"].split("/")[0]) for r in results[:1]]), allocation=alloc)


def taint_rule(name: str, key: str, effect: str, value: str | None = None, *, version: str = "v1",
               **selector: str) -> Doc:
    taint: Doc = {"key": key, "effect": effect}
    if value is not None:
        taint["value"] = value
    spec: Doc = {"taint": taint}
    if selector:
        spec["deviceSelector"] = selector
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": spec}


def toleration(key: str | None = None, effect: str | None = None, operator: str | None = None,
               value: str | None = None) -> Doc:
    t: Doc = {}
    for k, v in (("key", key), ("operator", operator), ("value", value), ("effect", effect)):
        if v is not None:
            t[k] = v
    return t


def match(attribute: str, *requests: str) -> Doc:
    return {"matchAttribute": attribute, **({"requests": list(requests)} if requests else {})}


def distinct(attribute: str, *requests: str) -> Doc:
    return {"distinctAttribute": attribute, **({"requests": list(requests)} if requests else {})}
