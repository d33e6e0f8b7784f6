"""Wire compatibility with the kubelet's own generated gRPC code: a Go client built from k8s.io/kubelet v0.37.2
(pluginregistration/v1, dra/v1, dra/v1beta1) registers the driver and prepares a claim through it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.driver.conftest import Dirs, Served
from tests.driver.helpers import DRIVER, claim

GOCLIENT = Path(__file__).resolve().parent / "goclient"


def _go_build(name: str, package: str, timeout: int) -> Path:
    """``go build`` one of the goclient module's programs into its bin/ (Go's caches make a rebuild quick)."""
    binary = GOCLIENT / "bin" / name
    done = subprocess.run(
        ["go", "build", "-mod=readonly", "-o", str(binary), package],
        cwd=GOCLIENT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return binary


@pytest.fixture(scope="module")
def goclient() -> Path:
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH: the kubelet-side Go client cannot be built")
    return _go_build("goclient", ".", timeout=600)


@pytest.mark.slow
def test_upstreams_generated_client_prepares_through_kubedra(goclient: Path, served: Served, dirs: Dirs) -> None:
    ns, uid, name = served.claims.add(
        claim("go", ["gpu-1"], share_ids={"gpu-1": "5f0c0000-0000-4000-8000-000000000001"})
    )
    done = subprocess.run(
        [str(goclient), str(dirs.registry / f"{DRIVER}-reg.sock"), ns, uid, name],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["info"] == {
        "type": "DRAPlugin",
        "name": DRIVER,
        "endpoint": str(dirs.plugin / "dra.sock"),
        "supported_versions": ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"],
    }
    [v1] = out["v1"]["claims"][uid]["devices"]
    assert v1 == {
        "request_names": ["gpu"],
        "pool_name": "node-1",
        "device_name": "gpu-1",
        "cdi_device_ids": [f"k8s.gpu.nvidia.com/claim={uid}-gpu-1"],
        "share_id": "5f0c0000-0000-4000-8000-000000000001",
    }
    [beta] = out["v1beta1"]["claims"][uid]["devices"]
    assert "share_id" not in beta
    assert beta["device_name"] == "gpu-1"
    assert out["unprepare"]["claims"] == {uid: {}}
    assert served.registration.registered


@pytest.fixture(scope="module")
def kubelet_manager(goclient: Path) -> Path:
    return _go_build("kubelet", "./kubelet", timeout=900)


@pytest.mark.slow
def test_the_kubelets_own_plugin_manager_drives_kubedra(kubelet_manager: Path, served: Served, dirs: Dirs) -> None:
    """k8s.io/kubernetes v1.37.2's DRAPluginManager validates and registers what GetInfo advertises, picks the
    service, prepares and unprepares through its DRAPlugin and opens the device-health stream."""
    ns, uid, name = served.claims.add(claim("kubelet", ["gpu-0"]))
    done = subprocess.run(
        [str(kubelet_manager), str(dirs.registry / f"{DRIVER}-reg.sock"), ns, uid, name],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    [device] = out["prepare"]["claims"][uid]["devices"]
    assert (device["pool_name"], device["device_name"]) == ("node-1", "gpu-0")
    assert device["cdi_device_ids"] == [f"k8s.gpu.nvidia.com/claim={uid}-gpu-0"]
    assert out["unprepare"]["claims"] == {uid: {}}
    health = out["health"]
    assert health is not None, "the kubelet opened no health stream: " + done.stderr[-2000:]
    assert [(d["device"]["device_name"], d["health"]) for d in health["devices"]] == [("gpu-0", 1), ("gpu-1", 1)]
