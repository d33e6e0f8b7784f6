"""NVIDIA's default DeviceClasses, exactly as the chart renders them for resource.k8s.io/v1, and overriding them."""

from __future__ import annotations

import json
import os

import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

from kubedra.cluster.deviceclasses import default_device_classes, merge_device_classes
from kubedra.objects.model import CELDeviceSelector, DeviceClass, DeviceClassSpec, DeviceSelector, ObjectMeta, to_dict


def _schema_errors(obj: dict[str, object]) -> list[str]:
    base = f"{os.path.dirname(kubernetes_validate.__file__)}/kubernetes-json-schema/v1.37.0-local-strict"
    with open(f"{base}/_definitions.json") as f:
        defs = Resource.from_contents(json.load(f))
    with open(f"{base}/deviceclass-resource-v1.json") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema, registry=defs @ (Resource.from_contents(schema) @ Registry()))
    return [e.message for e in validator.iter_errors(obj)]


EXPR = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{}'"


def test_defaults_are_the_charts_classes() -> None:
    assert [to_dict(c) for c in default_device_classes()] == [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {
                "selectors": [{"cel": {"expression": EXPR.format("gpu")}}],
                "extendedResourceName": "nvidia.com/gpu",
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "mig.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": EXPR.format("mig")}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "vfio.gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": EXPR.format("vfio")}}]},
        },
    ]


def test_defaults_pass_the_strict_schema() -> None:
    for cls in default_device_classes():
        assert _schema_errors(to_dict(cls)) == []


def test_defaults_are_fresh_copies() -> None:
    first = default_device_classes()
    first[0].spec.selectors.clear()
    assert default_device_classes()[0].spec.selectors


def _user(name: str, expression: str) -> DeviceClass:
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(selectors=[DeviceSelector(cel=CELDeviceSelector(expression=expression))]),
    )


def test_user_class_with_same_name_replaces_default_whole() -> None:
    mine = _user("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'")
    merged = merge_device_classes(default_device_classes(), [mine])
    assert [c.metadata.name for c in merged] == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    assert merged[0] is mine
    assert merged[0].spec.extended_resource_name is None


def test_other_user_classes_follow_in_their_order_and_later_wins() -> None:
    a, b, b2 = _user("gpu-a100", "true"), _user("gpu-big", "true"), _user("gpu-big", "false")
    merged = merge_device_classes(default_device_classes(), [a, b, b2])
    assert [c.metadata.name for c in merged] == [
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
        "gpu-a100",
        "gpu-big",
    ]
    assert merged[-1] is b2


def test_no_user_classes() -> None:
    assert [to_dict(c) for c in merge_device_classes(default_device_classes(), [])] == [
        to_dict(c) for c in default_device_classes()
    ]
