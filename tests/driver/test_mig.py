"""MIG at prepare (NVIDIA's DynamicMIG): the published placement device becomes a GPU instance and a compute
instance through the backend, the CDI spec carries its nvidia-caps nodes and MIG UUID, unprepare destroys it, and the
checkpoint repairs a crash between creating it and recording it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.driver.conftest import Dirs
from tests.driver.helpers import DRIVER, StaticClaims, claim, write_inventory
from tests.driver.nvmlstub import NvmlStub

from kubedra.driver import checkpoint
from kubedra.driver.fake import FakeBackend
from kubedra.driver.inventory import DriverError, MigDevice
from kubedra.driver.node import NodeDriver
from kubedra.driver.nvml import NvmlBackend
from kubedra.driver.sharing import RecordingRunner
from kubedra.driver.types import ClaimRef

A100_MIG = [
    {"profile": "1g.5gb", "profileID": 19, "count": 7, "memory": "4864Mi", "multiprocessors": 14,
     "placements": [{"start": i, "size": 1} for i in range(7)]},
    {"profile": "3g.20gb", "profileID": 9, "count": 2, "memory": "19968Mi", "multiprocessors": 42,
     "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}]},
]  # fmt: skip
PARENT = "GPU-2f6a4c1e-0000-4000-8000-000000000000"


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs in this process (no rollback, no checkpoint write)."""


def _backend(dirs: Dirs) -> FakeBackend:
    inventory = dirs.root / "inventory.yaml"
    if not inventory.exists():
        write_inventory(inventory, 2, migProfiles=A100_MIG)
    return FakeBackend(inventory, state=dirs.plugin / "fake-mig.json")


def _driver(dirs: Dirs, claims: StaticClaims, backend: Any) -> NodeDriver:
    dirs.plugin.mkdir(parents=True, exist_ok=True)
    return NodeDriver(dirs.config(), backend.discover(), claims, RecordingRunner(), mig=backend)


def _spec(dirs: Dirs, uid: str) -> dict[str, Any]:
    return yaml.safe_load((dirs.cdi / f"k8s.gpu.nvidia.com-claim_{uid}.yaml").read_text())


def test_a_mig_device_is_created_at_prepare_and_destroyed_at_unprepare(dirs: Dirs) -> None:
    claims, backend = StaticClaims(), _backend(dirs)
    driver = _driver(dirs, claims, backend)
    ref = ClaimRef(*claims.add(claim("m", ["gpu-1-mig-1g5gb-19-3", "gpu-1-mig-3g20gb-9-4"])))
    result = driver.prepare([ref])[ref.uid]
    assert result.error == ""
    assert [d.cdi_device_ids for d in result.devices] == [
        (f"k8s.gpu.nvidia.com/claim={ref.uid}-gpu-1-mig-1g5gb-19-3",),
        (f"k8s.gpu.nvidia.com/claim={ref.uid}-gpu-1-mig-3g20gb-9-4",),
    ]
    parent = "GPU-2f6a4c1e-0000-4000-8000-000000000001"
    assert backend.calls == [("create", parent, 19, 3), ("create", parent, 9, 4)]
    small, large = backend.mig_devices(parent)
    spec = _spec(dirs, ref.uid)
    assert [d["name"] for d in spec["devices"]] == [
        f"{ref.uid}-gpu-1-mig-1g5gb-19-3",
        f"{ref.uid}-gpu-1-mig-3g20gb-9-4",
    ]
    assert spec["devices"][0]["containerEdits"] == {
        "env": [f"NVIDIA_VISIBLE_DEVICES={small.uuid}"],
        "deviceNodes": [
            {"path": "/dev/nvidia1"},
            {"path": f"/dev/nvidia-caps/nvidia-cap{small.gi_cap}"},
            {"path": f"/dev/nvidia-caps/nvidia-cap{small.ci_cap}"},
        ],
    }
    assert small.uuid.startswith("MIG-") and small.uuid != large.uuid
    recorded = checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes()).claims[ref.uid]
    assert [MigDevice.from_json(d.mig or {}) for d in recorded.devices] == [small, large]

    assert driver.prepare([ref])[ref.uid].error == ""  # idempotent: nothing created twice
    assert len(backend.calls) == 2
    assert driver.unprepare([ref]) == {ref.uid: ""}
    assert backend.calls[2:] == [("destroy", parent, 19, 3), ("destroy", parent, 9, 4)]
    assert backend.mig_devices(parent) == []
    assert list(dirs.cdi.iterdir()) == []


def test_a_failed_create_rolls_back_what_was_created(dirs: Dirs) -> None:
    claims, backend = StaticClaims(), _backend(dirs)
    driver = _driver(dirs, claims, backend)
    backend.create_mig(PARENT, 9, 0, 4)  # someone else's GPU instance over slices 0-3 (NVML refuses overlap)
    driver = _driver(dirs, claims, backend)  # ... destroyed at start as unknown: create it again after
    backend.create_mig(PARENT, 9, 0, 4)
    ref = ClaimRef(*claims.add(claim("m", ["gpu-0-mig-1g5gb-19-5", "gpu-0-mig-1g5gb-19-2"])))
    result = driver.prepare([ref])[ref.uid]
    assert "Insufficient Resources" in result.error
    assert [c[0] for c in backend.calls[-2:]] == ["create", "destroy"]  # 19-5 was created, then rolled back
    assert [(m.profile_id, m.start) for m in backend.mig_devices(PARENT)] == [(9, 0)]
    assert ref.uid not in checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes()).claims


def test_a_crash_between_create_and_checkpoint_is_repaired_at_start(dirs: Dirs) -> None:
    claims, backend = StaticClaims(), _backend(dirs)
    kept = ClaimRef(*claims.add(claim("kept", ["gpu-0-mig-1g5gb-19-0"])))
    driver = _driver(dirs, claims, backend)
    assert driver.prepare([kept])[kept.uid].error == ""

    real_create = backend.create_mig

    def create_then_die(*args: Any) -> MigDevice:
        real_create(*args)
        raise Killed

    backend.create_mig = create_then_die  # type: ignore[method-assign]
    lost = ClaimRef(*claims.add(claim("lost", ["gpu-0-mig-3g20gb-9-4"])))
    with pytest.raises(Killed):
        driver.prepare([lost])
    state = checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes())
    assert state.claims[lost.uid].state == checkpoint.PREPARE_STARTED
    assert len(backend.mig_devices(PARENT)) == 2  # created, never recorded

    orphan = _backend(dirs).create_mig(PARENT, 19, 1, 1)  # and one nobody asked this driver for
    restarted_backend = _backend(dirs)  # a new process: MIG devices outlive it, as on a GPU
    restarted = _driver(dirs, claims, restarted_backend)
    assert restarted.startup.rolled_back == [lost.uid]
    assert restarted.startup.destroyed_mig == [f"{PARENT}/gi{orphan.gi}/ci{orphan.ci}"]
    [survivor] = restarted_backend.mig_devices(PARENT)
    assert (survivor.profile_id, survivor.start) == (19, 0)  # the completed claim's device stays
    assert restarted.prepared_devices() == {kept.uid: ["gpu-0-mig-1g5gb-19-0"]}
    assert restarted.prepare([lost])[lost.uid].error == ""  # the kubelet's retry succeeds
    assert restarted.unprepare([kept, lost]) == {kept.uid: "", lost.uid: ""}
    assert restarted_backend.mig_devices(PARENT) == []


def test_mig_is_refused_without_a_mig_backend_and_with_a_gpuconfig(dirs: Dirs) -> None:
    claims, backend = StaticClaims(), _backend(dirs)
    plain = NodeDriver(dirs.config(), backend.discover(), claims, RecordingRunner())
    ref = ClaimRef(*claims.add(claim("m", ["gpu-0-mig-1g5gb-19-0"])))
    assert plain.prepare([ref])[ref.uid].error == (
        "claim default/m: device gpu-0-mig-1g5gb-19-0: this backend cannot create MIG devices"
    )
    time_sliced = {
        "source": "FromClaim",
        "requests": [],
        "opaque": {
            "driver": DRIVER,
            "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": {}},
        },
    }
    configured = ClaimRef(*claims.add(claim("c", ["gpu-0-mig-1g5gb-19-1"], config=[time_sliced])))
    error = _driver(dirs, claims, backend).prepare([configured])[configured.uid].error
    assert error == "claim default/c: device gpu-0-mig-1g5gb-19-1: a GpuConfig cannot be applied to a MIG device"
    assert backend.calls == []


# ------------------------------------------------------------------------------------------ the NVML backend


def test_nvml_creates_a_gpu_instance_at_the_placement_and_a_compute_instance_spanning_it(nvml: NvmlStub) -> None:
    """Through the real nvidia-ml-py: the placement reaches NVML as a pointer (the stub refuses anything else, as a
    structure passed by value is garbage to a C function that wants a pointer)."""
    backend = NvmlBackend(proc_caps=nvml.caps)
    small = backend.create_mig(PARENT, 19, 6, 1)
    large = backend.create_mig(PARENT, 9, 0, 4)
    assert nvml.calls() == [
        f"nvmlDeviceCreateGpuInstanceWithPlacement {PARENT} profile=19 start=6 size=1 gi=1",
        f"nvmlGpuInstanceCreateComputeInstance {PARENT} gi=1 profile=0 ci=0",  # 1-slice CI for a 1-slice GI
        f"nvmlDeviceCreateGpuInstanceWithPlacement {PARENT} profile=9 start=0 size=4 gi=2",
        f"nvmlGpuInstanceCreateComputeInstance {PARENT} gi=2 profile=2 ci=0",  # NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE
    ]
    one, three = nvml.instances()
    # the nvidia-caps minors the kernel's mig-minors table gives GPU 0's GI 1 and 2 and their CI 0
    assert small == MigDevice(PARENT, 19, 6, 1, 1, 0, one.cis[0][2], 12, 13)
    assert large == MigDevice(PARENT, 9, 0, 4, 2, 0, three.cis[0][2], 21, 22)
    assert small.uuid.startswith("MIG-") and small.uuid != large.uuid
    assert backend.mig_devices(PARENT) == [small, large]
    with pytest.raises(DriverError, match=f"NVML: creating MIG profile 19 at 2 on {PARENT}") as refused:
        backend.create_mig(PARENT, 19, 2, 1)  # inside the 3g.20gb instance
    import pynvml

    assert isinstance(refused.value.__cause__, pynvml.NVMLError)
    assert refused.value.__cause__.value == pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
    backend.destroy_mig(small)
    backend.destroy_mig(small)  # gone already: not an error
    assert nvml.calls()[-2:] == [
        f"nvmlComputeInstanceDestroy {PARENT} gi=1 ci=0",
        f"nvmlGpuInstanceDestroy {PARENT} gi=1",
    ]
    assert not (nvml.caps / "gpu0" / "mig" / "gi1").exists()  # the kernel's capability files went with it
    assert backend.mig_devices(PARENT) == [large]
    assert nvml.inits == nvml.shutdowns  # one NVML session per operation


def test_nvml_without_the_caps_file_is_a_clear_error_and_leaves_nothing(nvml: NvmlStub, tmp_path: Path) -> None:
    """The GPU and compute instance were created, but the device cannot be handed out without its nvidia-caps
    minors: they are destroyed again, not leaked."""
    backend = NvmlBackend(proc_caps=tmp_path / "no-caps-here")
    with pytest.raises(DriverError, match=r"gpu0/mig/gi1/access: cannot read the MIG capability"):
        backend.create_mig(PARENT, 19, 0, 1)
    assert nvml.instances() == []
    assert [c.split()[0] for c in nvml.calls()][-2:] == ["nvmlComputeInstanceDestroy", "nvmlGpuInstanceDestroy"]


def test_prepare_and_unprepare_create_and_destroy_mig_devices_through_nvml(nvml: NvmlStub, dirs: Dirs) -> None:
    """The driver proper over the real bindings: the published placement devices become GPU and compute instances
    in NVML, the CDI spec carries their MIG UUIDs and nvidia-caps nodes, unprepare destroys them."""
    claims, backend = StaticClaims(), NvmlBackend(proc_caps=nvml.caps)
    driver = _driver(dirs, claims, backend)
    ref = ClaimRef(*claims.add(claim("m", ["gpu-0-mig-1g5gb-19-3", "gpu-0-mig-3g20gb-9-4"])))
    assert driver.prepare([ref])[ref.uid].error == ""
    one, three = nvml.instances()
    assert [(i.profile, i.start, i.size) for i in (one, three)] == [(19, 3, 1), (9, 4, 4)]
    spec = _spec(dirs, ref.uid)
    assert [d["containerEdits"] for d in spec["devices"]] == [
        {
            "env": [f"NVIDIA_VISIBLE_DEVICES={one.cis[0][2]}"],
            "deviceNodes": [
                {"path": "/dev/nvidia0"},
                {"path": "/dev/nvidia-caps/nvidia-cap12"},
                {"path": "/dev/nvidia-caps/nvidia-cap13"},
            ],
        },
        {
            "env": [f"NVIDIA_VISIBLE_DEVICES={three.cis[0][2]}"],
            "deviceNodes": [
                {"path": "/dev/nvidia0"},
                {"path": "/dev/nvidia-caps/nvidia-cap21"},
                {"path": "/dev/nvidia-caps/nvidia-cap22"},
            ],
        },
    ]
    restarted = _driver(dirs, claims, NvmlBackend(proc_caps=nvml.caps))  # MIG devices outlive the process
    assert restarted.startup.destroyed_mig == []
    assert restarted.unprepare([ref]) == {ref.uid: ""}
    assert nvml.instances() == []
    assert list(dirs.cdi.iterdir()) == []
