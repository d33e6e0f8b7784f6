"""The checked-in generated modules are what scripts/gen-protos makes of our .proto files, and the .proto files
carry upstream's package lines (they name the gRPC services the kubelet calls)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubedra.driver.protos import (
    dra_health_v1alpha1_pb2,
    dra_v1_pb2,
    dra_v1beta1_pb2,
    grpc_health_pb2,
    registration_pb2,
)

SRC = Path(__file__).resolve().parents[2] / "src"
PROTOS = SRC / "kubedra" / "driver" / "protos"


def test_generated_modules_are_current(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    target = tmp_path / "kubedra" / "driver" / "protos"
    target.mkdir(parents=True)
    for proto in PROTOS.glob("*.proto"):
        shutil.copy(proto, target)
    protos = sorted(str(p.relative_to(tmp_path)) for p in target.glob("*.proto"))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.", *protos],
        cwd=tmp_path,
        check=True,
    )
    generated = sorted(p.name for p in target.glob("*_pb2.py*"))
    assert generated == sorted(p.name for p in PROTOS.glob("*_pb2.py*"))
    for name in generated:
        assert (target / name).read_text() == (PROTOS / name).read_text(), f"{name}: run scripts/gen-protos"


@pytest.mark.parametrize(
    ("module", "service", "methods"),
    [
        (dra_v1_pb2, "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", ["NodePrepareResources", "NodeUnprepareResources"]),
        (
            dra_v1beta1_pb2,
            "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin",
            ["NodePrepareResources", "NodeUnprepareResources"],
        ),
        (registration_pb2, "pluginregistration.Registration", ["GetInfo", "NotifyRegistrationStatus"]),
        (dra_health_v1alpha1_pb2, "v1alpha1.DRAResourceHealth", ["NodeWatchResources"]),
        (grpc_health_pb2, "grpc.health.v1.Health", ["Check", "Watch"]),
    ],
)
def test_service_names_are_upstreams(module: object, service: str, methods: list[str]) -> None:
    descriptor = module.DESCRIPTOR  # type: ignore[attr-defined]
    [found] = list(descriptor.services_by_name.values())
    assert found.full_name == service
    assert [m.name for m in found.methods] == methods


def test_field_numbers_match_upstream() -> None:
    device = dra_v1_pb2.Device.DESCRIPTOR
    assert {f.name: f.number for f in device.fields} == {
        "request_names": 1,
        "pool_name": 2,
        "device_name": 3,
        "cdi_device_ids": 4,
        "share_id": 5,
    }
    assert "share_id" not in dra_v1beta1_pb2.Device.DESCRIPTOR.fields_by_name
    claim = dra_v1_pb2.Claim.DESCRIPTOR
    assert {f.name: f.number for f in claim.fields} == {"namespace": 1, "uid": 2, "name": 3}
    info = registration_pb2.PluginInfo.DESCRIPTOR
    assert {f.name: f.number for f in info.fields} == {"type": 1, "name": 2, "endpoint": 3, "supported_versions": 4}
    health = dra_health_v1alpha1_pb2.DeviceHealth.DESCRIPTOR
    assert {f.name: f.number for f in health.fields} == {
        "device": 1,
        "health": 2,
        "last_updated_time": 3,
        "health_check_timeout_seconds": 4,
        "message": 5,
    }
