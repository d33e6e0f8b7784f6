"""Beta (and v1alpha3) documents → v1: every kind in every served version, checked by the v1.37 schema."""

from __future__ import annotations

import copy

import msgspec
import pytest
import yaml
from _samples import V1_DOCUMENTS, to_v1beta1, with_version
from _schema import schema_errors

from kubedra.objects import model
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.objects.model import to_dict

DRA = ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"]


def _load_one(document: dict) -> tuple[dict, list]:
    loaded = load_text(yaml.safe_dump(document), source="beta.yaml")
    assert len(loaded.objects) == 1
    return to_dict(loaded.objects[0]), loaded.warnings


def _strip_status(document: dict) -> dict:
    return {k: v for k, v in document.items() if not (k == "status" and v == {})}


@pytest.mark.parametrize("kind", DRA)
def test_v1beta1_document_is_valid_against_its_own_schema(kind: str) -> None:
    beta = to_v1beta1(V1_DOCUMENTS[kind]())
    assert schema_errors(beta) == []


@pytest.mark.parametrize("kind", DRA)
def test_v1beta1_converts_to_the_v1_object(kind: str) -> None:
    v1 = V1_DOCUMENTS[kind]()
    converted, warnings = _load_one(to_v1beta1(v1))
    assert converted["apiVersion"] == "resource.k8s.io/v1"
    assert _strip_status(converted) == _strip_status(to_dict(msgspec.convert(v1, getattr(model, kind))))
    assert schema_errors(_strip_status(converted)) == []
    assert [w.code for w in warnings] == ["beta-version"]
    assert warnings[0].written == f"resource.k8s.io/v1beta1 {kind}"
    assert warnings[0].location.object.startswith(f"{kind}/")


@pytest.mark.parametrize("kind", [*DRA, "DeviceTaintRule"])
def test_v1beta2_is_the_v1_shape(kind: str) -> None:
    v1 = V1_DOCUMENTS[kind]()
    beta2 = with_version(v1, "v1beta2")
    assert schema_errors(beta2) == []
    converted, warnings = _load_one(beta2)
    assert _strip_status(converted) == _strip_status(_load_one(v1)[0])
    assert schema_errors(_strip_status(converted)) == []
    assert "deprecated since Kubernetes 1.34" in warnings[0].today


def test_v1alpha3_device_taint_rule() -> None:
    alpha = with_version(V1_DOCUMENTS["DeviceTaintRule"](), "v1alpha3")
    assert schema_errors(alpha) == []
    converted, warnings = _load_one(alpha)
    assert converted["spec"]["taint"] == {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}
    assert warnings[0].written == "resource.k8s.io/v1alpha3 DeviceTaintRule"


def test_v1beta1_device_taint_rule_does_not_exist() -> None:
    with pytest.raises(InvalidInputError) as error:
        load_text(yaml.safe_dump(with_version(V1_DOCUMENTS["DeviceTaintRule"](), "v1beta1")))
    (problem,) = error.value.problems
    assert problem.location.field == "apiVersion"
    assert 'Unsupported value: "resource.k8s.io/v1beta1"' in problem.message


def test_v1beta1_flat_request_moves_under_exactly() -> None:
    text = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.nvidia.com
      allocationMode: All
      adminAccess: true
      capacity: {requests: {memory: 10Gi}}
"""
    (claim,) = load_text(text).objects
    exactly = to_dict(claim)["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "All",
        "adminAccess": True,
        "capacity": {"requests": {"memory": "10Gi"}},
    }


def test_v1beta1_first_available_with_flat_fields_is_refused() -> None:
    text = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: x
      firstAvailable: [{name: a, deviceClassName: x}]
"""
    with pytest.raises(InvalidInputError) as error:
        load_text(text, source="c.yaml")
    (problem,) = error.value.problems
    assert str(problem).startswith("c.yaml[0]: ResourceClaim/c: spec.devices.requests[0].deviceClassName: Forbidden")


def test_old_plain_quantity_capacity_is_read() -> None:
    beta = to_v1beta1(V1_DOCUMENTS["ResourceSlice"]())
    for device in beta["spec"]["devices"]:
        device["basic"]["capacity"] = {"memory": "80Gi"}
    converted, warnings = _load_one(beta)
    assert converted["spec"]["devices"][0]["capacity"] == {"memory": {"value": "80Gi"}}
    assert "plain quantities" in warnings[0].today


def test_v1_request_shape_inside_a_v1beta1_document_is_an_unknown_field() -> None:
    doc = copy.deepcopy(V1_DOCUMENTS["ResourceClaim"]())
    doc["apiVersion"] = "resource.k8s.io/v1beta1"
    with pytest.raises(InvalidInputError) as error:
        load_text(yaml.safe_dump(doc))
    messages = [str(p) for p in error.value.problems]
    assert any(
        'spec.devices.requests[0].exactly: unknown field "spec.devices.requests[0].exactly"' in m for m in messages
    )
