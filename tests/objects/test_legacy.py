"""The seed article's dialect: all six seed files load, every conversion is asserted field by field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from _schema import schema_errors

from kubedra.data import seed_dir
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.gpuconfig import nearest_time_slice
from kubedra.objects.load import load_paths, load_text
from kubedra.objects.model import DeviceClass, Pod, ResourceClaim, to_dict

SEED = seed_dir()


def _clean(document: dict) -> dict:
    return {k: v for k, v in document.items() if not (k == "status" and v == {})}


@pytest.fixture(scope="module")
def seed():
    return load_paths([str(SEED)])


def test_seed_dir_ships_all_files() -> None:
    names = sorted(p.name for p in SEED.iterdir())
    assert names == [
        "01-resourceclass.yaml",
        "02-claim-and-pod.yaml",
        "03-shared-gpu-config.yaml",
        "04-old-device-plugin-request.yaml",
        "05-migration-steps.sh",
        "06-metrics-and-alert.yaml",
        "README.md",
    ]


def test_seed_loads_every_yaml_file_without_error(seed) -> None:
    assert [type(o).__name__ for o in seed.objects] == ["DeviceClass", "ResourceClaim", "Pod", "DeviceClass"]
    assert [r.data.get("kind") for r in seed.raw] == [None, "PrometheusRule"]


def test_seed_objects_are_valid_v1(seed) -> None:
    for obj in seed.objects:
        assert schema_errors(_clean(to_dict(obj))) == [], obj


def test_seed_warnings(seed) -> None:
    codes = [(w.location.file.rsplit("/", 1)[-1], w.location.document, w.code) for w in seed.warnings]
    assert codes == [
        ("01-resourceclass.yaml", 0, "legacy-resourceclass"),
        ("01-resourceclass.yaml", 1, "legacy-memory"),
        ("01-resourceclass.yaml", 1, "legacy-compute-capability"),
        ("01-resourceclass.yaml", 1, "legacy-mig"),
        ("02-claim-and-pod.yaml", 0, "legacy-claim"),
        ("02-claim-and-pod.yaml", 1, "legacy-pod"),
        ("03-shared-gpu-config.yaml", 0, "legacy-mig"),
        ("03-shared-gpu-config.yaml", 0, "legacy-time-slicing"),
        ("03-shared-gpu-config.yaml", 0, "legacy-max-sharable"),
        ("03-shared-gpu-config.yaml", 0, "legacy-standalone-config"),
        ("04-old-device-plugin-request.yaml", 0, "legacy-device-plugin-request"),
        ("06-metrics-and-alert.yaml", 0, "legacy-alert-rules"),
    ]
    by_code = {w.code: w for w in seed.warnings}
    capability = by_code["legacy-compute-capability"]
    assert capability.written == 'computeCapability: "8.0"'
    assert "at least 8.0" in capability.assumed and "not exactly" in capability.assumed
    assert capability.location.object == "NvidiaGPUConfig/a100-config"
    assert capability.location.field == "spec.computeCapability"
    slicing = by_code["legacy-time-slicing"]
    assert "5ms" in slicing.written and slicing.today.endswith("interval: Medium")
    assert "Short~1ms, Medium~4ms, Long~16ms" in slicing.assumed
    sharable = by_code["legacy-max-sharable"]
    assert "kubedra.io/max-pods-per-device" in sharable.assumed and "consumable capacity" in sharable.today
    pod = by_code["legacy-pod"]
    assert "placed in namespace ml-training, the namespace of its claim" in pod.assumed
    claim = by_code["legacy-claim"]
    assert "WaitForFirstConsumer" in claim.written and "first pod" in claim.today


def test_resource_class_becomes_device_class(seed) -> None:
    cls = seed.of_kind(DeviceClass)[0]
    assert cls.metadata.name == "gpu-nvidia-a100"
    assert [s.cel.expression for s in cls.spec.selectors if s.cel] == [
        'device.driver == "gpu.nvidia.com"',
        'device.attributes["gpu.nvidia.com"].type == "gpu"',
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    ]
    assert cls.spec.config == []
    assert seed.location_of(cls).file.endswith("01-resourceclass.yaml")
    assert seed.location_of(cls).document == 0


def test_claim_and_pod(seed) -> None:
    (claim,) = seed.of_kind(ResourceClaim)
    assert (claim.metadata.namespace, claim.metadata.name) == ("ml-training", "my-gpu-claim")
    (request,) = claim.spec.devices.requests
    assert request.name == "gpu"
    assert request.exactly is not None and request.exactly.device_class_name == "gpu-nvidia-a100"
    assert request.exactly.count is None and request.exactly.allocation_mode == ""
    (pod,) = seed.of_kind(Pod)
    assert pod.metadata.namespace == "ml-training"
    assert pod.metadata.name.startswith("trainer-") and len(pod.metadata.name) == len("trainer-") + 5
    assert [(c.name, c.resource_claim_name) for c in pod.spec.resource_claims] == [("gpu-resource", "my-gpu-claim")]
    assert [r.name for r in pod.spec.containers[0].resources.claims] == ["gpu-resource"]
    assert pod.spec.containers[0].image == "pytorch/pytorch:2.3"
    assert load_paths([str(SEED)]).of_kind(Pod)[0].metadata.name == pod.metadata.name  # deterministic


def test_shared_config_becomes_a_device_class_with_gpu_config(seed) -> None:
    cls = seed.of_kind(DeviceClass)[1]
    assert cls.metadata.name == "shared-gpu-config"
    assert cls.metadata.annotations == {"kubedra.io/max-pods-per-device": "4"}
    (config,) = cls.spec.config
    assert config.opaque is not None and config.opaque.driver == "gpu.nvidia.com"
    assert config.opaque.parameters == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}},
    }


def test_alert_rules_become_a_prometheus_rule(seed) -> None:
    rule = seed.raw[1].data
    assert rule["spec"]["groups"][0]["rules"][0]["alert"] == "DRAResourceExhausted"
    assert rule["metadata"]["name"] == "06-metrics-and-alert"


@pytest.mark.parametrize(
    ("ms", "level"),
    [
        (0.5, "Short"),
        (1, "Short"),
        (2, "Short"),
        (3, "Medium"),
        (5, "Medium"),
        (8, "Medium"),
        (9, "Long"),
        (30, "Long"),
    ],
)
def test_time_slice_mapping(ms: float, level: str) -> None:
    assert nearest_time_slice(ms) == level


def test_sharing_class_annotation_is_copied_to_its_claims() -> None:
    text = (
        (SEED / "03-shared-gpu-config.yaml").read_text()
        + """
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: inference, namespace: serving}
spec: {resourceClassName: shared-gpu-config, allocationMode: Immediate}
"""
    )
    loaded = load_text(text)
    (claim,) = loaded.of_kind(ResourceClaim)
    assert claim.metadata.annotations == {"kubedra.io/max-pods-per-device": "4"}
    warning = next(w for w in loaded.warnings if w.code == "legacy-claim")
    assert "Immediate: no longer exists" in warning.today


def test_resource_class_without_its_config_still_converts() -> None:
    text = """
apiVersion: resource.k8s.io/v1alpha2
kind: ResourceClass
metadata: {name: plain}
driverName: gpu.nvidia.com
parametersRef: {apiGroup: gpu.nvidia.com/v1, kind: NvidiaGPUConfig, name: missing}
"""
    loaded = load_text(text)
    (cls,) = loaded.objects
    assert [s.cel.expression for s in cls.spec.selectors if s.cel] == ['device.driver == "gpu.nvidia.com"']
    assert [w.code for w in loaded.warnings] == ["legacy-parameters-missing", "legacy-resourceclass"]


def test_bad_legacy_values_are_problems() -> None:
    text = """
apiVersion: gpu.nvidia.com/v1
kind: NvidiaGPUConfig
metadata: {name: bad}
spec:
  memory: "lots"
  computeCapability: "eight"
  sharing: {strategy: Sometimes}
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClass
metadata: {name: nodriver}
"""
    with pytest.raises(InvalidInputError) as error:
        load_text(text, source="bad.yaml")
    messages = sorted(str(p) for p in error.value.problems)
    assert messages == [
        'bad.yaml[0]: NvidiaGPUConfig/bad: spec.computeCapability: Invalid value: "eight": must be a version such as "8.0"',
        'bad.yaml[0]: NvidiaGPUConfig/bad: spec.memory: Invalid value: "lots": must be a quantity such as 40Gi',
        'bad.yaml[0]: NvidiaGPUConfig/bad: spec.sharing.strategy: Unsupported value: "Sometimes": supported values: "MPS", "TimeSlicing"',
        "bad.yaml[1]: DeviceClass/nodriver: driverName: Required value: a ResourceClass needs driverName",
    ]


def test_pod_without_known_claim_goes_to_default_namespace() -> None:
    text = """
apiVersion: v1
kind: Pod
spec:
  containers: [{name: app, image: x}]
  resourceClaims: [{name: g, source: {resourceClaimTemplateName: tmpl}}]
"""
    loaded = load_text(text)
    (pod,) = loaded.objects
    assert pod.metadata.namespace == "default"
    assert pod.spec.resource_claims[0].resource_claim_template_name == "tmpl"
    assert "namespace default" in loaded.warnings[0].assumed


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"containers": [{"name": "c", "resources": True}]},
            "spec.containers[0].resources: Invalid value: true: must be an object, not boolean",
        ),
        ({"containers": 3}, "spec.containers: Invalid value: 3: must be an array, not integer"),
        ({"resourceClaims": "gpu"}, 'spec.resourceClaims: Invalid value: "gpu": must be an array, not string'),
        (
            {"containers": [{"name": "c", "resources": {"claims": 1}}]},
            "spec.containers[0].resources.claims: Invalid value: 1: must be an array, not integer",
        ),
    ],
)
def test_a_nameless_pod_of_the_wrong_shape_is_reported_not_converted(spec: dict[str, Any], expected: str) -> None:
    """The fuzzer's find: the legacy pod conversion took every field to be of its type and crashed."""
    doc = {"apiVersion": "v1", "kind": "Pod", "spec": spec}
    with pytest.raises(InvalidInputError) as err:
        load_text(yaml.safe_dump(doc), source="p.yaml")
    assert [p.message for p in err.value.problems] == [expected.split(": ", 1)[1]]
    assert [p.location.field for p in err.value.problems] == [expected.split(": ", 1)[0]]


def test_metadata_of_the_wrong_type_is_not_a_nameless_pod() -> None:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": [None], "spec": {}}
    with pytest.raises(InvalidInputError) as err:
        load_text(yaml.safe_dump(doc), source="p.yaml")
    assert [str(p) for p in err.value.problems] == [
        "p.yaml[0]: Pod: metadata: Invalid value: array: must be an object, not array"
    ]
