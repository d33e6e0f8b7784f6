"""XID health: NVML's XID events (a watcher thread on an event set) make a device Unhealthy in the kubelet's health
stream and, with ``--xid-taints``, taint it in the ResourceSlice as NVIDIA's driver does (gpu.nvidia.com/xid)."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import pytest
from tests.controlplane.fixture import ControlPlane
from tests.driver.conftest import Dirs, make_driver
from tests.driver.helpers import StaticClaims, claim, write_inventory
from tests.driver.kubelet import Kubelet
from tests.driver.nvmlstub import XID_CRITICAL_ERROR, NvmlStub
from tests.driver.test_mig import PARENT, _backend, _driver

from kubedra.driver.inventory import NO_INSTANCE, XidEvent
from kubedra.driver.nvml import NvmlBackend
from kubedra.driver.types import ClaimRef
from kubedra.objects.model import DeviceTaint

GPU1 = "GPU-2f6a4c1e-0000-4000-8000-000000000001"


def test_nvml_xid_events_reach_the_callback_until_stopped(nvml: NvmlStub) -> None:
    """Through the real nvidia-ml-py: one event set, XIDs registered on every GPU, waits that time out until an
    XID arrives; the event set and the session are closed when stopped."""
    nvml.set_gpu(1, events=False)  # its registration answers NOT_SUPPORTED: logged, the other GPU still watched
    seen: list[XidEvent] = []
    stop = threading.Event()
    thread = threading.Thread(target=NvmlBackend(wait_ms=50).watch_xids, args=(seen.append, stop))
    thread.start()
    deadline = time.monotonic() + 5
    while not nvml.registered(PARENT):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert (nvml.registered(PARENT), nvml.registered(GPU1)) == (XID_CRITICAL_ERROR, 0)
    while nvml.waits < 3:  # timeouts are waited through
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert nvml.inject_xid(PARENT, 79) == 1
    assert nvml.inject_xid(PARENT, 94, gi=1, ci=0) == 1
    while len(seen) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert seen == [XidEvent(PARENT, 79), XidEvent(PARENT, 94, 1, 0)]
    assert nvml.event_sets == 0 and nvml.inits == nvml.shutdowns == 1


def test_nvml_without_a_driver_leaves_devices_unmonitored(nvml: NvmlStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEDRA_NVML_STUB", str(nvml.root / "no-such-node"))
    seen: list[XidEvent] = []
    NvmlBackend(wait_ms=50).watch_xids(seen.append, threading.Event())  # returns at once, logged
    assert seen == [] and nvml.sessions == 0


def test_critical_xids_make_the_device_unhealthy_and_ignored_ones_only_mark_it(dirs: Dirs) -> None:
    driver = make_driver(dirs, StaticClaims())
    assert driver.record_xid(XidEvent("GPU-2f6a4c1e-0000-4000-8000-000000000000", 13)) == "gpu-0"  # ignored
    assert driver.record_xid(XidEvent(GPU1, 48)) == "gpu-1"  # double-bit ECC error
    assert driver.record_xid(XidEvent(GPU1, 31)) == "gpu-1"  # ignored: does not soften the critical taint
    assert driver.record_xid(XidEvent("GPU-unknown", 79)) is None
    assert driver.device_taints() == {
        "gpu-0": [DeviceTaint(key="gpu.nvidia.com/xid", value="13", effect="None")],
        "gpu-1": [DeviceTaint(key="gpu.nvidia.com/xid", value="48", effect="NoSchedule")],
    }
    [report] = list(_first_report(driver))
    health = {d.device_name: (d.healthy, d.message) for d in report.devices}
    assert health == {"gpu-0": (True, ""), "gpu-1": (False, "XID 48")}


def _first_report(driver: Any) -> Any:
    for report in driver.watch_health(lambda: True):
        yield report
        return


def test_an_xid_of_a_mig_device_marks_the_prepared_mig_device(dirs: Dirs) -> None:
    claims, backend = StaticClaims(), _backend(dirs)
    driver = _driver(dirs, claims, backend)
    ref = ClaimRef(*claims.add(claim("m", ["gpu-0-mig-1g5gb-19-2"])))
    assert driver.prepare([ref])[ref.uid].error == ""
    [mig] = backend.mig_devices(PARENT)
    assert driver.record_xid(XidEvent(PARENT, 94, mig.gi, mig.ci)) == "gpu-0-mig-1g5gb-19-2"
    assert driver.record_xid(XidEvent(PARENT, 94, mig.gi + 1, 0)) == "gpu-0"  # no such MIG device: the GPU
    assert driver.record_xid(XidEvent(PARENT, 79, NO_INSTANCE, NO_INSTANCE)) == "gpu-0"


@pytest.mark.controlplane
@pytest.mark.slow
def test_an_xid_reaches_the_health_stream_and_taints_the_slice(control_plane: ControlPlane, dirs: Dirs) -> None:
    from kubedra.driver.plugin import DriverOptions, RunningDriver

    driver_name, node = f"gpu-{secrets.token_hex(3)}.nvidia.com", f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    options = DriverOptions(
        node=node,
        backend="fake",
        inventory=write_inventory(dirs.root / "inventory.yaml", 2),
        driver_name=driver_name,
        plugin_dir=dirs.plugin,
        registry_dir=dirs.registry,
        cdi_root=dirs.cdi,
        kubeconfig=str(control_plane.kubeconfig),
        xid_taints=True,
        resync=600,  # only the XID wakes the publisher
    )
    running = RunningDriver(options)
    kubelet = Kubelet(dirs.registry)

    def devices() -> dict[str, dict[str, Any]]:
        selector = f"spec.driver={driver_name},spec.nodeName={node}"
        items = control_plane.get(f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector={selector}")["items"]
        return {d["name"]: d for s in items for d in s["spec"].get("devices", [])}

    try:
        control_plane.wait_for(devices, timeout=30, what="slices")
        kubelet.register_all()
        thread, reports = kubelet.watch_health_async(driver_name, 2)
        control_plane.wait_for(lambda: reports, timeout=10, what="the first health report")
        running.backend.emit_xid(XidEvent(GPU1, 79))  # type: ignore[attr-defined]  # fallen off the bus
        thread.join(timeout=10)
        assert [(d.device.device_name, d.health) for d in reports[1].devices] == [("gpu-0", 1), ("gpu-1", 2)]
        tainted = control_plane.wait_for(
            lambda: (d := devices())["gpu-1"].get("taints") and d, timeout=30, what="the taint"
        )
        [taint] = tainted["gpu-1"]["taints"]
        assert (taint["key"], taint["value"], taint["effect"]) == ("gpu.nvidia.com/xid", "79", "NoSchedule")
        assert taint["timeAdded"]  # set by the API server
        assert "taints" not in tainted["gpu-0"]
        running.backend.emit_xid(XidEvent("GPU-2f6a4c1e-0000-4000-8000-000000000000", 13))  # type: ignore[attr-defined]
        marked = control_plane.wait_for(
            lambda: (d := devices())["gpu-0"].get("taints") and d, timeout=30, what="the ignored XID's taint"
        )
        assert [(t["value"], t["effect"]) for t in marked["gpu-0"]["taints"]] == [("13", "None")]
    finally:
        kubelet.close()
        running.stop()
