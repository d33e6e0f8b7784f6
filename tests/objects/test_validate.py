"""API-limit validation: Kubernetes' limits and wording, every problem at once."""

from __future__ import annotations

import copy

import pytest
import yaml
from _samples import V1_DOCUMENTS, gpu_device, v1_slice

from kubedra.objects import limits
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text


def _problems(document: dict) -> list[str]:
    with pytest.raises(InvalidInputError) as error:
        load_text(yaml.safe_dump(document), source="v.yaml")
    return [f"{p.location.field}: {p.message}" for p in error.value.problems]


def test_limits_have_upstream_values() -> None:
    assert (limits.ResourceSliceMaxDevices, limits.ResourceSliceMaxDevicesWithTaintsOrConsumesCounters) == (128, 64)
    assert limits.ResourceSliceMaxAttributesAndCapacitiesPerDevice == 32
    assert (limits.DeviceRequestsMaxSize, limits.FirstAvailableDeviceRequestMaxSize) == (32, 8)
    assert limits.CELSelectorExpressionMaxLength == limits.OpaqueParametersMaxLength == 10 * 1024
    assert limits.ResourceClaimReservedForMaxSize == 256
    assert (limits.ResourceSliceMaxCounterSets, limits.ResourceSliceMaxDeviceCounterConsumptionsPerDevice) == (8, 2)


def test_too_many_devices() -> None:
    doc = v1_slice(devices=129)
    for i, d in enumerate(doc["spec"]["devices"]):
        d["attributes"]["resource.kubernetes.io/pciBusID"] = {"string": f"{i}"}
    assert _problems(doc) == ["spec.devices: Too many: 129: must have at most 128 items"]
    doc = v1_slice(devices=65)
    doc["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert _problems(doc) == ["spec.devices: Too many: 65: must have at most 64 items"]


def test_device_problems() -> None:
    doc = v1_slice(devices=2)
    dev = doc["spec"]["devices"][0]
    dev["name"] = "GPU_0"
    dev["attributes"]["model"] = {"string": "x" * 65}
    dev["attributes"]["two"] = {"string": "a", "int": 1}
    dev["attributes"]["cudaComputeCapability"] = {"version": "8.0"}
    dev["attributes"]["bad name"] = {"int": 1}
    dev["attributes"]["a" * 64 + ".com/x"] = {"bool": True}
    dev["capacity"]["memory"] = {"value": "lots"}
    doc["spec"]["devices"][1]["name"] = "gpu-1"
    doc["spec"]["devices"].append(gpu_device(1))
    joined = "\n".join(_problems(doc))
    assert 'spec.devices[0].name: Invalid value: "GPU_0": a lowercase RFC 1123 label must consist' in joined
    assert "spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes" in joined
    assert (
        'spec.devices[0].attributes[two]: Invalid value: "<value omitted>": exactly one value must be specified'
        in joined
    )
    assert 'spec.devices[0].attributes[cudaComputeCapability].version: Invalid value: "8.0"' in joined
    assert 'spec.devices[0].attributes[bad name]: Invalid value: "bad name": a valid C identifier' in joined
    assert f"spec.devices[0].attributes[{'a' * 64}.com/x]: Too long: may not be more than 63 bytes" in joined
    assert 'spec.devices[0].capacity[memory].value: Invalid value: "lots": must be a quantity' in joined
    assert 'spec.devices[2].name: Duplicate value: "gpu-1"' in joined


def test_attributes_and_capacities_per_device() -> None:
    doc = v1_slice(devices=1)
    doc["spec"]["devices"][0]["attributes"] = {f"a{i}": {"int": i} for i in range(30)}
    doc["spec"]["devices"][0]["capacity"] = {f"c{i}": {"value": "1"} for i in range(3)}
    assert _problems(doc) == ["spec.devices[0]: Too many: 33: must have at most 32 items"]


def test_exactly_one_node_selection() -> None:
    doc = v1_slice(devices=1)
    doc["spec"]["allNodes"] = True
    assert _problems(doc) == ['spec: Invalid value: "<value omitted>": {`nodeName`, `allNodes`} are mutually exclusive']
    del doc["spec"]["allNodes"], doc["spec"]["nodeName"]
    assert _problems(doc) == [
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    ]


def test_driver_and_pool() -> None:
    doc = v1_slice(devices=1)
    doc["spec"]["driver"] = "d" * 64
    doc["spec"]["pool"]["resourceSliceCount"] = 0
    assert _problems(doc) == [
        "spec.driver: Too long: may not be more than 63 bytes",
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
    ]


def test_counters_and_consumption() -> None:
    doc = v1_slice(devices=1)
    doc["spec"]["devices"][0]["consumesCounters"] = [
        {"counterSet": f"s{i}", "counters": {"m": {"value": "1"}}} for i in range(3)
    ]
    assert _problems(doc) == ["spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"]
    doc = v1_slice(devices=0)
    doc["spec"]["sharedCounters"] = [{"name": f"set-{i}", "counters": {"memory": {"value": "1Gi"}}} for i in range(9)]
    assert _problems(doc) == ["spec.sharedCounters: Too many: 9: must have at most 8 items"]


def test_claim_rules() -> None:
    doc = V1_DOCUMENTS["ResourceClaim"]()
    requests = doc["spec"]["devices"]["requests"]
    requests[0]["exactly"]["count"] = 0
    requests[1]["exactly"] = {"deviceClassName": "x"}
    requests.append({"name": "empty"})
    requests.append({"name": "all", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}})
    doc["spec"]["devices"]["constraints"].append({"requests": ["nope"], "matchAttribute": "model"})
    doc["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "x" * 10241}}]
    problems = _problems(doc)
    assert problems == [
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes",
        "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero",
        'spec.devices.requests[1]: Invalid value: "<value omitted>": exactly one of `exactly` or `firstAvailable` is '
        "required, but multiple fields are set",
        "spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        "spec.devices.requests[3].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
        'spec.devices.constraints[1].requests[0]: Invalid value: "nope": must be the name of a request in the claim or '
        "the name of a request and a subrequest separated by '/'",
        "spec.devices.constraints[1].matchAttribute: Required value: a fully qualified name must be the domain and the "
        "name separated by a slash",
    ]


def test_claim_list_limits() -> None:
    doc = V1_DOCUMENTS["ResourceClaim"]()
    base = doc["spec"]["devices"]["requests"][0]
    doc["spec"]["devices"] = {"requests": [{**copy.deepcopy(base), "name": f"r{i}"} for i in range(33)]}
    doc["status"]["reservedFor"] = [{"resource": "pods", "name": f"p{i}", "uid": f"{i}"} for i in range(257)]
    doc["status"]["allocation"]["devices"]["results"] = []
    assert _problems(doc) == [
        "spec.devices.requests: Too many: 33: must have at most 32 items",
        "status.reservedFor: Too many: 257: must have at most 256 items",
    ]
    doc = V1_DOCUMENTS["ResourceClaim"]()
    doc["spec"]["devices"]["requests"][1]["firstAvailable"] *= 5
    problems = _problems(doc)
    assert problems[0] == "spec.devices.requests[1].firstAvailable: Too many: 10: must have at most 8 items"


def test_opaque_parameters() -> None:
    doc = V1_DOCUMENTS["DeviceClass"]()
    doc["spec"]["config"][0]["opaque"]["parameters"] = {"blob": "x" * 10240}
    doc["spec"]["config"].append({"opaque": {"driver": "gpu.nvidia.com", "parameters": [1, 2]}})
    assert _problems(doc) == [
        "spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes",
        'spec.config[1].opaque.parameters: Invalid value: "<value omitted>": parameters must be a valid JSON object',
    ]


def test_pod_claim_references() -> None:
    doc = V1_DOCUMENTS["Pod"]()
    doc["spec"]["containers"][0]["resources"]["claims"].append({"name": "other"})
    doc["spec"]["resourceClaims"].append({"name": "both", "resourceClaimName": "a", "resourceClaimTemplateName": "b"})
    assert _problems(doc) == [
        'spec.resourceClaims[1]: Invalid value: "<value omitted>": must specify one of: `resourceClaimName`, '
        "`resourceClaimTemplateName`",
        'spec.containers[0].resources.claims[1].name: Not found: "other": must be the name of an entry in '
        "pod.spec.resourceClaims",
    ]


def test_taint_rule_effect() -> None:
    doc = V1_DOCUMENTS["DeviceTaintRule"]()
    doc["spec"]["taint"]["effect"] = "Evict"
    assert _problems(doc) == [
        'spec.taint.effect: Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"'
    ]


def test_metadata_names() -> None:
    doc = V1_DOCUMENTS["DeviceClass"]()
    doc["metadata"] = {"name": "x" * 254}
    assert _problems(doc)[0] == f'metadata.name: Invalid value: "{"x" * 254}": must be no more than 253 characters'
    doc["metadata"] = {}
    assert _problems(doc) == ["metadata.name: Required value: name or generateName is required"]
