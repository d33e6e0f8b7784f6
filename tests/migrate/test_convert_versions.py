"""``kubedra convert --to v1beta2|v1beta1``: the output validates strictly (kubernetes-validate) on 1.34-1.37, reads
back to the same v1 objects, and a kind the target version does not have is refused with exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]
INPUTS = [*sorted((ROOT / "examples" / "allocate").glob("*.yaml")), ROOT / "src" / "kubedra" / "data" / "seed",
          ROOT / "src" / "kubedra" / "data" / "demo"]
VERSIONS = ["1.34.0", "1.35.0", "1.36.0", "1.37.0"]


def convert(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    capsys.readouterr()
    code = main(["convert", *argv])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None], err


@pytest.mark.parametrize("target", ["v1beta2", "v1beta1"])
@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_older_versions_validate_strictly_and_read_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path, target: str
) -> None:
    code, v1, _ = convert(capsys, "-f", str(path), "-q")
    assert code == 0
    code, older, err = convert(capsys, "-f", str(path), "--to", target)
    assert code == 0, err
    dra = [d for d in older if d["apiVersion"].startswith("resource.k8s.io/")]
    assert dra
    assert {d["apiVersion"] for d in dra} == {f"resource.k8s.io/{target}"}
    for document in dra:
        for version in VERSIONS:
            if document["kind"] == "DeviceTaintRule" and version < "1.36":
                continue  # v1beta2 DeviceTaintRule arrived in 1.36
            kubernetes_validate.validate(document, version, strict=True)
    (tmp_path / "older.yaml").write_text(yaml.safe_dump_all(older))
    code, back, _ = convert(capsys, "-f", str(tmp_path / "older.yaml"), "-q")
    assert code == 0
    assert [d for d in back if d.get("kind") != "Pod"] == [d for d in v1 if d.get("kind") != "Pod"]


def test_v1beta1_request_and_device_shapes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: n}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: d.example.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1},\n"
        "  devices: [{name: gpu-0, attributes: {model: {string: A}}, capacity: {memory: {value: 1Gi}}}]}\n"
    )
    code, (claim, slice_), err = convert(capsys, "-f", str(source), "--to", "v1beta1")
    assert code == 0
    assert claim["spec"]["devices"]["requests"] == [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}]
    assert slice_["spec"]["devices"] == [
        {"name": "gpu-0", "basic": {"attributes": {"model": {"string": "A"}}, "capacity": {"memory": {"value": "1Gi"}}}}
    ]
    assert "requests[].exactly fields moved onto the request" in err


def test_device_taint_rule_has_no_v1beta1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "rule.yaml"
    source.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata: {name: r}\n"
        "spec: {deviceSelector: {driver: d.example.com}, taint: {key: k, value: v, effect: NoSchedule}}\n"
    )
    capsys.readouterr()
    assert main(["convert", "-f", str(source), "--to", "v1beta1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "DeviceTaintRule/r: apiVersion: Unsupported value: resource.k8s.io/v1beta1 has no DeviceTaintRule" in err
    code, (rule,), _ = convert(capsys, "-f", str(source), "--to", "v1beta2")
    assert code == 0
    assert rule["apiVersion"] == "resource.k8s.io/v1beta2"
