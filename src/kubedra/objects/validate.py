"""Validation of what allocation relies on, with the API server's limits and wording.

A port of the checks in Kubernetes' ``pkg/apis/resource/validation`` that matter to kubedra (names,
one-of rules, list sizes, attribute values, quantities, CEL length, opaque parameters) — not the
update/immutability rules, which need a server. ``validate(obj)`` returns (field path, message) pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from kubedra.objects import formats as f
from kubedra.objects import limits as lim
from kubedra.objects import model as m
from kubedra.objects import validate_scheduling
from kubedra.objects.nvidia_params import check_opaque
from kubedra.objects.quantity import Quantity

FieldProblem = tuple[str, str]

TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
TOLERATION_EFFECTS = ("NoExecute", "NoSchedule")
TOLERATION_OPERATORS = ("Equal", "Exists")
ALLOCATION_MODES = ("All", "ExactCount")


SelectorCheck = Callable[[str], Iterable[str]]
"""Compiles a CEL selector and returns the API server's messages for it (``cel`` has the environment)."""


class _Errors:
    def __init__(self, cel: SelectorCheck | None = None) -> None:
        self.items: list[FieldProblem] = []
        self.notes: list[FieldProblem] = []  # what holds only if the deployment allows it (NVIDIA's feature gates)
        self.cel = cel

    def add(self, path: str, messages: str | Iterable[str]) -> None:
        if not messages:
            return
        for message in [messages] if isinstance(messages, str) else messages:
            self.items.append((path, message))

    def max_items(self, path: str, items: Sequence[object], max_items: int) -> None:
        if len(items) > max_items:
            self.add(path, f.too_many(len(items), max_items))

    def unique(self, path: str, names: Sequence[str], field_name: str = "name") -> None:
        seen: set[str] = set()
        for i, name in enumerate(names):
            if name in seen:
                self.add(f"{path}[{i}].{field_name}", f"Duplicate value: {f.show(name)}")
            seen.add(name)


def _metadata(e: _Errors, meta: m.ObjectMeta, *, namespaced: bool, name_check: Callable[[str], Iterable[str]]) -> None:
    if not meta.name and not meta.generate_name:
        e.add("metadata.name", f.required("name or generateName is required"))
    elif meta.name:
        e.add("metadata.name", name_check(meta.name))
    if meta.generate_name:
        # ValidateObjectMeta checks generateName as a prefix: a trailing '-' is allowed (masked before the check).
        prefix = meta.generate_name[:-1] + "a" if meta.generate_name.endswith("-") else meta.generate_name
        shown, written = f.show(prefix), f.show(meta.generate_name)
        e.add("metadata.generateName", [x.replace(shown, written, 1) for x in name_check(prefix)])
    if namespaced and meta.namespace:
        e.add("metadata.namespace", f.dns_label(meta.namespace))
    if not namespaced and meta.namespace:
        e.add("metadata.namespace", "Forbidden: not allowed on this type")


def validate_metadata(meta: m.ObjectMeta, *, namespaced: bool = True, label: bool = False) -> list[FieldProblem]:
    """ValidateObjectMeta's name, generateName and namespace rules; ``label``: the name is a DNS-1123 label
    (StatefulSet) rather than a subdomain (every other kind kubedra reads)."""
    e = _Errors()
    _metadata(e, meta, namespaced=namespaced, name_check=f.dns_label if label else f.dns_subdomain)
    return e.items


def _selectors(e: _Errors, path: str, selectors: Sequence[m.DeviceSelector]) -> None:
    e.max_items(path, selectors, lim.DeviceSelectorsMaxSize)
    for i, selector in enumerate(selectors):
        where = f"{path}[{i}]"
        if selector.cel is None:
            e.add(f"{where}.cel", f.required())
            continue
        expression = selector.cel.expression
        if not expression.strip():
            e.add(f"{where}.cel.expression", f.required())
        elif len(expression.encode()) > lim.CELSelectorExpressionMaxLength:
            e.add(f"{where}.cel.expression", f.too_long(lim.CELSelectorExpressionMaxLength))
        elif e.cel is not None:
            e.add(f"{where}.cel.expression", list(e.cel(expression)))


def _opaque(e: _Errors, path: str, opaque: m.OpaqueDeviceConfiguration | None) -> None:
    if opaque is None:
        e.add(path, f.required("exactly one of `opaque` is required"))
        return
    e.add(f"{path}.driver", f.driver_name(opaque.driver))
    if opaque.parameters is None:
        e.add(f"{path}.parameters", f.required())
    elif not isinstance(opaque.parameters, dict):
        e.add(f"{path}.parameters", f.invalid("<value omitted>", "parameters must be a valid JSON object"))
    elif len(msgspec.json.encode(opaque.parameters)) > lim.OpaqueParametersMaxLength:
        e.add(f"{path}.parameters", f.too_long(lim.OpaqueParametersMaxLength))
    else:  # NVIDIA's drivers decode their own parameters strictly and refuse what they cannot use
        checked = check_opaque(opaque.driver, opaque.parameters, f"{path}.parameters")
        for where, message in checked.problems:
            e.add(where, message)
        e.notes.extend(checked.notes)


def _node_selector(e: _Errors, path: str, selector: m.NodeSelector) -> None:
    if len(selector.node_selector_terms) != 1:
        e.add(
            f"{path}.nodeSelectorTerms",
            f.invalid(len(selector.node_selector_terms), "must have exactly one node selector term"),
        )


# --------------------------------------------------------------------------------------------------
# DeviceClass


def _device_class(e: _Errors, obj: m.DeviceClass) -> None:
    _metadata(e, obj.metadata, namespaced=False, name_check=f.dns_subdomain)
    _selectors(e, "spec.selectors", obj.spec.selectors)
    e.max_items("spec.config", obj.spec.config, lim.DeviceConfigMaxSize)
    for i, config in enumerate(obj.spec.config):
        _opaque(e, f"spec.config[{i}].opaque", config.opaque)
    name = obj.spec.extended_resource_name
    if name is not None:
        if "/" not in name or name.startswith(("kubernetes.io/", "requests.")):
            e.add("spec.extendedResourceName", f.invalid(name, "must be a fully-qualified extended resource name"))
        else:
            e.add("spec.extendedResourceName", f.label_key(name))


# --------------------------------------------------------------------------------------------------
# ResourceSlice


def _attribute(e: _Errors, path: str, attribute: m.DeviceAttribute) -> None:
    values = (
        attribute.int,
        attribute.bool,
        attribute.string,
        attribute.version,
        attribute.ints,
        attribute.bools,
        attribute.strings,
        attribute.versions,
    )
    count = len(values) - values.count(None)
    if count == 0:
        e.add(path, f.required("exactly one value must be specified"))
    elif count > 1:
        e.add(path, f.invalid("<value omitted>", "exactly one value must be specified"))
    if attribute.string is not None and len(attribute.string) > lim.DeviceAttributeMaxValueLength:
        e.add(f"{path}.string", f.too_long(lim.DeviceAttributeMaxValueLength))
    if attribute.version is not None:
        e.add(f"{path}.version", f.version(attribute.version))
    for i, text in enumerate(attribute.strings or []):
        if len(text) > lim.DeviceAttributeMaxValueLength:
            e.add(f"{path}.strings[{i}]", f.too_long(lim.DeviceAttributeMaxValueLength))
    for i, text in enumerate(attribute.versions or []):
        e.add(f"{path}.versions[{i}]", f.version(text))


def _capacity(e: _Errors, path: str, capacity: m.DeviceCapacity, shared: bool) -> None:
    e.add(f"{path}.value", f.quantity(capacity.value))
    policy = capacity.request_policy
    if policy is None:
        return
    if not shared:
        e.add(f"{path}.requestPolicy", "Forbidden: allowMultipleAllocations must be true")
    if policy.default is not None:
        e.add(f"{path}.requestPolicy.default", f.quantity(policy.default))
    if policy.valid_values and policy.valid_range is not None:
        e.add(f"{path}.requestPolicy", f.invalid("<value omitted>", "exactly one of validValues or validRange"))
    e.max_items(f"{path}.requestPolicy.validValues", policy.valid_values, lim.CapacityRequestPolicyDiscreteMaxOptions)
    for i, value in enumerate(policy.valid_values):
        e.add(f"{path}.requestPolicy.validValues[{i}]", f.quantity(value))
    if policy.valid_range is not None:
        r = policy.valid_range
        for key, bound in (("min", r.min), ("max", r.max), ("step", r.step)):
            if bound is not None:
                e.add(f"{path}.requestPolicy.validRange.{key}", f.quantity(bound))


def _counters(e: _Errors, path: str, counters: dict[str, m.Counter], max_items: int) -> None:
    if len(counters) > max_items:
        e.add(path, f.too_many(len(counters), max_items))
    for name, counter in counters.items():
        e.add(f"{path}[{name}]", f.dns_label(name))
        e.add(f"{path}[{name}].value", f.quantity(counter.value))


def _taints(e: _Errors, path: str, taints: Sequence[m.DeviceTaint]) -> None:
    e.max_items(path, taints, lim.DeviceTaintsMaxLength)
    for i, taint in enumerate(taints):
        _taint(e, f"{path}[{i}]", taint)


def _taint(e: _Errors, path: str, taint: m.DeviceTaint) -> None:
    e.add(f"{path}.key", f.label_key(taint.key) if taint.key else [f.required()])
    if not taint.effect:
        e.add(f"{path}.effect", f.required())
    elif taint.effect not in TAINT_EFFECTS:
        e.add(f"{path}.effect", f.unsupported(taint.effect, TAINT_EFFECTS))


def _device(e: _Errors, path: str, device: m.Device, per_device: bool) -> None:
    e.add(f"{path}.name", f.dns_label(device.name) if device.name else [f.required()])
    combined = len(device.attributes) + len(device.capacity)
    if combined > lim.ResourceSliceMaxAttributesAndCapacitiesPerDevice:
        e.add(path, f.too_many(combined, lim.ResourceSliceMaxAttributesAndCapacitiesPerDevice))
    for name, attribute in device.attributes.items():
        e.add(f"{path}.attributes[{name}]", f.qualified_device_name(name))
        _attribute(e, f"{path}.attributes[{name}]", attribute)
    for name, capacity in device.capacity.items():
        e.add(f"{path}.capacity[{name}]", f.qualified_device_name(name))
        _capacity(e, f"{path}.capacity[{name}]", capacity, bool(device.allow_multiple_allocations))
    e.max_items(
        f"{path}.consumesCounters", device.consumes_counters, lim.ResourceSliceMaxDeviceCounterConsumptionsPerDevice
    )
    for i, consumption in enumerate(device.consumes_counters):
        where = f"{path}.consumesCounters[{i}]"
        e.add(
            f"{where}.counterSet", f.dns_label(consumption.counter_set) if consumption.counter_set else [f.required()]
        )
        _counters(e, f"{where}.counters", consumption.counters, lim.ResourceSliceMaxCountersPerDeviceCounterConsumption)
    _taints(e, f"{path}.taints", device.taints)
    e.max_items(f"{path}.bindingConditions", device.binding_conditions, lim.BindingConditionsMaxSize)
    e.max_items(
        f"{path}.bindingFailureConditions", device.binding_failure_conditions, lim.BindingFailureConditionsMaxSize
    )
    if device.binds_to_node and not device.binding_conditions:
        e.add(f"{path}.bindingConditions", f.required("bindsToNode requires bindingConditions"))
    node_fields = [device.node_name is not None, device.node_selector is not None, bool(device.all_nodes)]
    if per_device and sum(node_fields) != 1:
        e.add(
            path,
            f.required(
                "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required, "
                "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
            ),
        )
    elif not per_device and any(node_fields):
        e.add(
            path,
            "Forbidden: `nodeName`, `nodeSelector` and `allNodes` can only be set when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        )
    if device.node_selector is not None:
        _node_selector(e, f"{path}.nodeSelector", device.node_selector)


def _pool(e: _Errors, pool: m.ResourcePool) -> None:
    if not pool.name:
        e.add("spec.pool.name", f.required())
    else:
        if len(pool.name) > lim.PoolNameMaxLength:
            e.add("spec.pool.name", f.too_long(lim.PoolNameMaxLength))
        for segment in pool.name.split("/"):
            e.add("spec.pool.name", [x for x in f.dns_subdomain(segment) if "no more than" not in x])
    if pool.generation < 0:
        e.add("spec.pool.generation", f.invalid(pool.generation, "must be greater than or equal to 0"))
    if pool.resource_slice_count <= 0:
        e.add("spec.pool.resourceSliceCount", f.invalid(pool.resource_slice_count, "must be greater than zero"))


def _resource_slice(e: _Errors, obj: m.ResourceSlice) -> None:
    _metadata(e, obj.metadata, namespaced=False, name_check=f.dns_subdomain)
    spec = obj.spec
    e.add("spec.driver", f.driver_name(spec.driver))
    _pool(e, spec.pool)
    chosen = [
        n
        for n, on in (
            ("`nodeName`", spec.node_name is not None),
            ("`nodeSelector`", spec.node_selector is not None),
            ("`allNodes`", bool(spec.all_nodes)),
            ("`perDeviceNodeSelection`", bool(spec.per_device_node_selection)),
        )
        if on
    ]
    if not chosen:
        e.add(
            "spec",
            f.required("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"),
        )
    elif len(chosen) > 1:
        e.add("spec", f.invalid("<value omitted>", f"{{{', '.join(chosen)}}} are mutually exclusive"))
    if spec.node_name is not None:
        e.add("spec.nodeName", f.dns_subdomain(spec.node_name) if spec.node_name else [f.required()])
    if spec.node_selector is not None:
        _node_selector(e, "spec.nodeSelector", spec.node_selector)
    advanced = any(d.taints or d.consumes_counters for d in spec.devices)
    max_devices = lim.ResourceSliceMaxDevicesWithTaintsOrConsumesCounters if advanced else lim.ResourceSliceMaxDevices
    e.max_items("spec.devices", spec.devices, max_devices)
    e.unique("spec.devices", [d.name for d in spec.devices])
    for i, device in enumerate(spec.devices):
        _device(e, f"spec.devices[{i}]", device, bool(spec.per_device_node_selection))
    if spec.devices and spec.shared_counters:
        e.add("spec", f.invalid("<value omitted>", "only one of `devices` or `sharedCounters` can be set"))
    e.max_items("spec.sharedCounters", spec.shared_counters, lim.ResourceSliceMaxCounterSets)
    e.unique("spec.sharedCounters", [s.name for s in spec.shared_counters])
    for i, counter_set in enumerate(spec.shared_counters):
        e.add(f"spec.sharedCounters[{i}].name", f.dns_label(counter_set.name) if counter_set.name else [f.required()])
        if not counter_set.counters:
            e.add(f"spec.sharedCounters[{i}].counters", f.required())
        _counters(
            e, f"spec.sharedCounters[{i}].counters", counter_set.counters, lim.ResourceSliceMaxCountersPerCounterSet
        )


# --------------------------------------------------------------------------------------------------
# ResourceClaim and ResourceClaimTemplate


def _tolerations(e: _Errors, path: str, tolerations: Sequence[m.DeviceToleration]) -> None:
    e.max_items(path, tolerations, lim.DeviceTolerationsMaxLength)
    for i, t in enumerate(tolerations):
        where = f"{path}[{i}]"
        if t.key:
            e.add(f"{where}.key", f.label_key(t.key))
        if t.operator not in TOLERATION_OPERATORS:
            e.add(f"{where}.operator", f.unsupported(t.operator, TOLERATION_OPERATORS))
        elif t.operator == "Exists" and t.value:
            e.add(f"{where}.operator", f.invalid(t.value, "value must be empty when `operator` is 'Exists'"))
        elif t.operator == "Equal" and not t.key:
            e.add(f"{where}.key", f.required("key must be set when `operator` is 'Equal'"))
        if t.effect and t.effect not in TOLERATION_EFFECTS:
            e.add(f"{where}.effect", f.unsupported(t.effect, TOLERATION_EFFECTS))


def _request_fields(e: _Errors, path: str, r: m.ExactDeviceRequest | m.DeviceSubRequest) -> None:
    if not r.device_class_name:
        e.add(f"{path}.deviceClassName", f.required())
    else:
        e.add(f"{path}.deviceClassName", f.dns_subdomain(r.device_class_name))
    _selectors(e, f"{path}.selectors", r.selectors)
    mode = r.allocation_mode or "ExactCount"
    if mode not in ALLOCATION_MODES:
        e.add(f"{path}.allocationMode", f.unsupported(mode, ALLOCATION_MODES))
    elif mode == "ExactCount" and r.count is not None and r.count <= 0:
        e.add(f"{path}.count", f.invalid(r.count, "must be greater than zero"))
    elif mode == "All" and r.count is not None:
        e.add(f"{path}.count", f.invalid(r.count, "must not be specified when allocationMode is 'All'"))
    _tolerations(e, f"{path}.tolerations", r.tolerations)
    if r.capacity is not None:
        for name, value in r.capacity.requests.items():
            e.add(f"{path}.capacity.requests[{name}]", f.qualified_device_name(name))
            e.add(f"{path}.capacity.requests[{name}]", f.quantity(value))


def _claim_spec(e: _Errors, path: str, spec: m.ResourceClaimSpec) -> None:
    devices = spec.devices
    requests = devices.requests
    e.max_items(f"{path}.devices.requests", requests, lim.DeviceRequestsMaxSize)
    e.unique(f"{path}.devices.requests", [r.name for r in requests])
    known: set[str] = set()
    for i, request in enumerate(requests):
        where = f"{path}.devices.requests[{i}]"
        e.add(f"{where}.name", f.dns_label(request.name) if request.name else [f.required()])
        known.add(request.name)
        if (request.exactly is None) == (not request.first_available):
            e.add(
                where,
                f.required("exactly one of `exactly` or `firstAvailable` is required")
                if request.exactly is None
                else f.invalid(
                    "<value omitted>",
                    "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
                ),
            )
        if request.exactly is not None:
            _request_fields(e, f"{where}.exactly", request.exactly)
        e.max_items(f"{where}.firstAvailable", request.first_available, lim.FirstAvailableDeviceRequestMaxSize)
        e.unique(f"{where}.firstAvailable", [s.name for s in request.first_available])
        for j, sub in enumerate(request.first_available):
            e.add(f"{where}.firstAvailable[{j}].name", f.dns_label(sub.name) if sub.name else [f.required()])
            known.add(f"{request.name}/{sub.name}")
            _request_fields(e, f"{where}.firstAvailable[{j}]", sub)
    e.max_items(f"{path}.devices.constraints", devices.constraints, lim.DeviceConstraintsMaxSize)
    for i, constraint in enumerate(devices.constraints):
        where = f"{path}.devices.constraints[{i}]"
        _request_refs(e, f"{where}.requests", constraint.requests, known)
        chosen = [a for a in (constraint.match_attribute, constraint.distinct_attribute) if a is not None]
        if len(chosen) != 1:
            e.add(where, f.required("exactly one of `matchAttribute` or `distinctAttribute` is required"))
        if constraint.match_attribute is not None:
            e.add(f"{where}.matchAttribute", f.qualified_device_name(constraint.match_attribute, fully_qualified=True))
        if constraint.distinct_attribute is not None:
            e.add(
                f"{where}.distinctAttribute",
                f.qualified_device_name(constraint.distinct_attribute, fully_qualified=True),
            )
    e.max_items(f"{path}.devices.config", devices.config, lim.DeviceConfigMaxSize)
    for i, config in enumerate(devices.config):
        _request_refs(e, f"{path}.devices.config[{i}].requests", config.requests, known)
        _opaque(e, f"{path}.devices.config[{i}].opaque", config.opaque)


def _request_refs(e: _Errors, path: str, refs: Sequence[str], known: set[str]) -> None:
    for i, ref in enumerate(refs):
        if ref not in known and ref.split("/")[0] not in known:
            e.add(
                f"{path}[{i}]",
                f.invalid(
                    ref,
                    "must be the name of a request in the claim or the name of a "
                    "request and a subrequest separated by '/'",
                ),
            )


def _claim_status(e: _Errors, status: m.ResourceClaimStatus) -> None:
    e.max_items("status.reservedFor", status.reserved_for, lim.ResourceClaimReservedForMaxSize)
    if status.allocation is not None:
        results = status.allocation.devices.results
        e.max_items("status.allocation.devices.results", results, lim.AllocationResultsMaxSize)
        e.max_items("status.allocation.devices.config", status.allocation.devices.config, lim.AllocationConfigMaxSize)
        for i, result in enumerate(results):
            where = f"status.allocation.devices.results[{i}]"
            e.add(f"{where}.driver", f.driver_name(result.driver))
            e.add(f"{where}.device", f.dns_label(result.device) if result.device else [f.required()])
            if not result.pool:
                e.add(f"{where}.pool", f.required())
            for name, value in result.consumed_capacity.items():
                e.add(f"{where}.consumedCapacity[{name}]", f.quantity(value))


def _resource_claim(e: _Errors, obj: m.ResourceClaim) -> None:
    _metadata(e, obj.metadata, namespaced=True, name_check=f.dns_subdomain)
    _claim_spec(e, "spec", obj.spec)
    _claim_status(e, obj.status)


def _resource_claim_template(e: _Errors, obj: m.ResourceClaimTemplate) -> None:
    _metadata(e, obj.metadata, namespaced=True, name_check=f.dns_subdomain)
    _claim_spec(e, "spec.spec", obj.spec.spec)


def _device_taint_rule(e: _Errors, obj: m.DeviceTaintRule) -> None:
    _metadata(e, obj.metadata, namespaced=False, name_check=f.dns_subdomain)
    _taint(e, "spec.taint", obj.spec.taint)
    selector = obj.spec.device_selector
    if selector is not None:
        if selector.driver is not None:
            e.add("spec.deviceSelector.driver", f.driver_name(selector.driver))
        if selector.device is not None:
            e.add("spec.deviceSelector.device", f.dns_label(selector.device))
        if selector.device_class_name is not None:
            e.add("spec.deviceSelector.deviceClassName", f.dns_subdomain(selector.device_class_name))
        _selectors(e, "spec.deviceSelector.selectors", selector.selectors)


# --------------------------------------------------------------------------------------------------
# core/v1


def _resources(e: _Errors, path: str, resources: m.ResourceRequirements) -> None:
    """validateResourceRequirements: quantities valid for their resource, requests within limits; and kubedra's
    ``device_count`` refusal of extended-resource amounts kube-scheduler cannot read."""
    for name, value in resources.limits.items():
        e.add(f"{path}.limits[{name}]", f.resource_quantity(name, value) or f.device_count(name, value))
    for name, value in resources.requests.items():
        messages = f.resource_quantity(name, value)
        e.add(f"{path}.requests[{name}]", messages or f.device_count(name, value))
        limit = resources.limits.get(name)
        if messages or (limit is not None and f.resource_quantity(name, limit)):
            continue
        overcommit = f.is_overcommit_allowed(name)
        if limit is None:
            if not overcommit:
                e.add(f"{path}.limits", f.required("Limit must be set for non overcommitable resources"))
            continue
        request_q, limit_q = Quantity.parse(value), Quantity.parse(limit)
        if request_q != limit_q and not overcommit:
            e.add(f"{path}.requests", f.invalid(str(request_q), f"must be equal to {name} limit of {limit_q}"))
        elif request_q > limit_q:
            detail = f"must be less than or equal to {name} limit of {limit_q}"
            e.add(f"{path}.requests", f.invalid(str(request_q), detail))


def _pod_spec(e: _Errors, path: str, spec: m.PodSpec, labels: Mapping[str, str] | None) -> None:
    claims = spec.resource_claims
    e.unique(f"{path}.resourceClaims", [c.name for c in claims])
    for i, claim in enumerate(claims):
        where = f"{path}.resourceClaims[{i}]"
        e.add(f"{where}.name", f.dns_label(claim.name) if claim.name else [f.required()])
        sources = [s for s in (claim.resource_claim_name, claim.resource_claim_template_name) if s is not None]
        if len(sources) != 1:
            e.add(
                where,
                f.invalid("<value omitted>", "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"),
            )
        for source in sources:
            e.add(where, f.dns_subdomain(source))
    names = {c.name for c in claims}
    for section, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        for i, container in enumerate(containers):
            for j, ref in enumerate(container.resources.claims):
                if ref.name not in names:
                    e.add(
                        f"{path}.{section}[{i}].resources.claims[{j}].name",
                        f"Not found: {f.show(ref.name)}: must be the name of an entry in pod.spec.resourceClaims",
                    )
            _resources(e, f"{path}.{section}[{i}].resources", container.resources)
    found: list[tuple[str, str]] = []

    def add(at: str, messages: str | Iterable[str]) -> None:
        found.extend((at, message) for message in ([messages] if isinstance(messages, str) else messages))

    validate_scheduling.affinity(add, f"{path}.affinity", spec.affinity, labels)
    validate_scheduling.spread_constraints(add, f"{path}.topologySpreadConstraints", spec.topology_spread_constraints,
                                           labels)
    for at, message in dict.fromkeys(found):  # the API server answers a repeated (field, message) once
        e.add(at, message)


def validate_pod_spec(spec: m.PodSpec, path: str, labels: Mapping[str, str] | None = None) -> list[FieldProblem]:
    """The pod spec checks kubedra makes, at ``path`` (``spec`` of a Pod, ``spec.template.spec`` of a workload);
    ``labels``: the pod's (a template's), which some checks read."""
    e = _Errors()
    _pod_spec(e, path, spec, labels)
    return e.items


def _pod(e: _Errors, obj: m.Pod) -> None:
    _metadata(e, obj.metadata, namespaced=True, name_check=f.dns_subdomain)
    _pod_spec(e, "spec", obj.spec, obj.metadata.labels)


def _node(e: _Errors, obj: m.Node) -> None:
    _metadata(e, obj.metadata, namespaced=False, name_check=f.dns_subdomain)
    for part, values in (("capacity", obj.status.capacity), ("allocatable", obj.status.allocatable)):
        for name, value in values.items():
            e.add(f"status.{part}[{name}]", f.resource_quantity(name, value))


_CHECKS: dict[type, Callable[[_Errors, object], None]] = {
    m.DeviceClass: _device_class,  # type: ignore[dict-item]
    m.ResourceSlice: _resource_slice,  # type: ignore[dict-item]
    m.ResourceClaim: _resource_claim,  # type: ignore[dict-item]
    m.ResourceClaimTemplate: _resource_claim_template,  # type: ignore[dict-item]
    m.DeviceTaintRule: _device_taint_rule,  # type: ignore[dict-item]
    m.Pod: _pod,  # type: ignore[dict-item]
    m.Node: _node,  # type: ignore[dict-item]
}


def validate(obj: m.KubeObject, *, cel: SelectorCheck | None = None) -> list[FieldProblem]:
    """Every problem in ``obj`` as (field path, message), in field order; empty when valid. With ``cel``, every
    selector expression is also compiled, as the API server does (this package knows no CEL environment)."""
    return validate_with_notes(obj, cel=cel)[0]


def validate_with_notes(
    obj: m.KubeObject, *, cel: SelectorCheck | None = None
) -> tuple[list[FieldProblem], list[FieldProblem]]:
    """:func:`validate`'s problems, and notes on what only the deployment decides: NVIDIA's driver refuses
    TimeSlicing and MPS sharing unless its own feature gates are on (:mod:`kubedra.objects.nvidia_params`)."""
    e = _Errors(cel)
    check = _CHECKS.get(type(obj))
    if check is not None:
        check(e, obj)
    return e.items, e.notes
