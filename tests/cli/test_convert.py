"""``kubedra convert`` and ``kubedra validate`` end to end, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubedra.cli import main
from kubedra.data import seed_dir

SEED = str(seed_dir())


def test_convert_seed_to_yaml_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "-f", SEED]) == 0
    out, err = capsys.readouterr()
    documents = list(yaml.safe_load_all(out))
    assert [(d["kind"], d["metadata"]["name"]) for d in documents[:3]] == [
        ("DeviceClass", "gpu-nvidia-a100"),
        ("ResourceClaim", "my-gpu-claim"),
        ("Pod", documents[2]["metadata"]["name"]),
    ]
    assert [d["kind"] for d in documents] == ["DeviceClass", "ResourceClaim", "Pod", "DeviceClass", "PrometheusRule"]
    assert all("status" not in d for d in documents)
    assert err.count("Warning:") == 12
    assert "legacy" not in out


def test_convert_json_is_a_v1_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    beta = tmp_path / "claim.yaml"
    beta.write_text(
        "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c, namespace: n}\n"
        "spec: {devices: {requests: [{name: gpu, deviceClassName: gpu.nvidia.com, count: 2}]}}\n"
    )
    assert main(["convert", "-f", str(beta), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert body["kind"] == "List" and body["apiVersion"] == "v1"
    (claim,) = body["items"]
    assert claim["apiVersion"] == "resource.k8s.io/v1"
    assert claim["spec"]["devices"]["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    ]
    assert "resource.k8s.io/v1beta1 ResourceClaim" in err


def test_convert_invalid_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: Bad}\n")
    assert main(["convert", "-f", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f'error: {bad}[0]: DeviceClass/Bad: metadata.name: Invalid value: "Bad"' in err


def test_help_texts_have_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("convert", "validate"):
        assert main([command, "--help"]) == 0
        out, _ = capsys.readouterr()
        assert "Examples" in out and f"kubedra {command} -f" in out


def test_quiet_silences_conversion_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "-f", SEED, "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "DeviceClass" in out
