"""A checkpoint the driver cannot trust — corrupt, truncated, empty, of another version, or from another boot while
the node shows it did not reboot — never costs a running claim its MIG device (in the NVML stub) or its CDI spec:
the driver refuses to start and changes nothing, until the operator removes the file or restarts it with
--recover-checkpoint, which adopts what the CDI specs and NVML prove to be in use. A missing checkpoint is weighed
the same way: CDI specs of this boot or MIG devices of this driver refuse it; only a node with neither is fresh."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.driver.conftest import Dirs, StubLibrary
from tests.driver.helpers import StaticClaims, claim
from tests.driver.nvmlstub import Instance, NvmlStub, a100, h100

from kubedra.driver import checkpoint
from kubedra.driver.node import NodeDriver
from kubedra.driver.nvml import NvmlBackend
from kubedra.driver.recovery import CheckpointRefusedError
from kubedra.driver.sharing import RecordingRunner
from kubedra.driver.types import ClaimRef, PrepareResult

ROOT = Path(__file__).resolve().parents[2]
MPS = {
    "source": "FromClaim",
    "requests": [],
    "opaque": {
        "driver": "gpu.nvidia.com",
        "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "GpuConfig",
            "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}},
        },
    },
}
CLAIMS = {  # running claims: a whole GPU, two MIG devices, an MPS-shared GPU
    "whole": (["gpu-1"], []),
    "mig": (["gpu-0-mig-3g20gb-9-4"], []),
    "small": (["gpu-0-mig-1g5gb-19-0"], []),
    "mps": (["gpu-2"], [MPS]),
}


@dataclass
class Node:
    dirs: Dirs
    nvml: NvmlStub
    claims: StaticClaims
    refs: dict[str, ClaimRef]
    prepared: dict[str, PrepareResult]
    checkpoint: bytes
    instances: list[Instance]
    runner: RecordingRunner

    @property
    def path(self) -> Path:
        return self.dirs.plugin / "checkpoint.json"

    def driver(self, *, recover: bool = False) -> NodeDriver:
        backend = NvmlBackend(proc_caps=self.nvml.caps)
        self.runner = RecordingRunner()
        config = self.dirs.config(recover=recover)
        return NodeDriver(config, backend.discover(), self.claims, self.runner, mig=backend)

    def snapshot(self) -> tuple[dict[str, bytes | None], list[Instance], list[str]]:
        """Every file and directory the driver owns, every MIG device, every MIG create and destroy so far."""
        owned: dict[str, bytes | None] = {}
        for base in (self.dirs.plugin, self.dirs.cdi):
            for p in sorted(base.rglob("*")):
                owned[str(p.relative_to(self.dirs.root))] = p.read_bytes() if p.is_file() else None
        return owned, self.nvml.instances(), self.nvml.calls()

    def specs(self) -> set[str]:
        return {p.name.removeprefix("k8s.gpu.nvidia.com-claim_").removesuffix(".yaml") for p in self.dirs.cdi.iterdir()}


@pytest.fixture
def node(dirs: Dirs, nvml: NvmlStub) -> Node:
    """Four claims prepared over the real bindings, their MIG devices created in the stub."""
    nvml.gpus = [a100(0), h100(1), h100(2)]
    nvml.write()
    n = Node(dirs, nvml, StaticClaims(), {}, {}, b"", [], RecordingRunner())
    driver = n.driver()
    for name, (devices, config) in CLAIMS.items():
        n.refs[name] = ClaimRef(*n.claims.add(claim(name, devices, config=config)))
    n.prepared = driver.prepare(list(n.refs.values()))
    assert {k: v.error for k, v in n.prepared.items()} == {r.uid: "" for r in n.refs.values()}
    n.checkpoint, n.instances = n.path.read_bytes(), nvml.instances()
    assert len(n.instances) == 2 and n.specs() == {r.uid for r in n.refs.values()}
    return n


def _edited(raw: bytes) -> bytes:
    document = json.loads(raw)
    next(iter(document["data"]["preparedClaims"].values()))["devices"][0]["device"] = "gpu-7"  # checksum breaks
    return json.dumps(document).encode()


def _newer(raw: bytes) -> bytes:
    document = json.loads(raw)
    document["version"] = 2
    return json.dumps(document).encode()


DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "corrupt": (_edited, "checksum mismatch"),
    "truncated": (lambda raw: raw[: len(raw) // 2], "not JSON"),
    "empty": (lambda raw: b"", "not JSON"),
    "garbage": (lambda raw: b"\xff\xfe\x00checkpoint", "not JSON"),
    "newer-version": (_newer, "unsupported checkpoint version 2"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_an_unreadable_checkpoint_stops_the_driver_and_changes_nothing(node: Node, damage: str) -> None:
    mangle, reason = DAMAGE[damage]
    node.path.write_bytes(mangle(node.checkpoint))
    before = node.snapshot()
    with pytest.raises(CheckpointRefusedError) as refused:
        node.driver()
    message = str(refused.value)
    assert message.startswith(f"checkpoint {node.path} cannot be trusted ({reason}")
    assert "--recover-checkpoint" in message and f"remove {node.path}" in message and "Nothing was changed" in message
    assert node.snapshot() == before  # no MIG device destroyed, no spec deleted, the file left as it was
    assert node.nvml.instances() == node.instances
    assert node.specs() == {r.uid for r in node.refs.values()}


def test_a_checkpoint_of_another_boot_written_during_this_one_stops_the_driver(node: Node) -> None:
    """The boot ID differs, but the file was written after this boot began: it is not the previous boot's."""
    node.dirs.boot("boot-2", at=1_000_000_000)
    before = node.snapshot()
    with pytest.raises(CheckpointRefusedError) as refused:
        node.driver()
    message = str(refused.value)
    assert f"checkpoint {node.path} was written under boot ID 'boot-1' but this node's boot ID is 'boot-2'" in message
    assert "after this boot began at 2001-09-09T01:46:40Z" in message
    assert node.snapshot() == before


def _age(node: Node, seconds: float) -> float:
    """Every file the driver wrote made ``seconds`` old; returns when that was."""
    then = time.time() - seconds
    for p in [node.path, *node.dirs.cdi.iterdir()]:
        os.utime(p, (then, then))
    return then


def test_a_mig_device_it_records_proves_there_was_no_reboot(node: Node) -> None:
    """The files all look older than this boot, but a MIG device the checkpoint records still exists (a reboot
    destroys GPU instances): not a reboot."""
    written = _age(node, 3600)
    node.dirs.boot("boot-2", at=written + 60)
    before = node.snapshot()
    with pytest.raises(CheckpointRefusedError, match=r"2 MIG device\(s\) it records still exist"):
        node.driver()
    assert node.snapshot() == before


def test_a_cdi_spec_written_during_this_boot_proves_there_was_no_reboot(node: Node) -> None:
    written = _age(node, 3600)
    node.dirs.boot("boot-2", at=written + 60)
    fresh = node.dirs.cdi / f"k8s.gpu.nvidia.com-claim_{node.refs['whole'].uid}.yaml"
    os.utime(fresh, None)  # touched now
    with pytest.raises(CheckpointRefusedError, match=r"the CDI specs of 1 claim\(s\) were written during this boot"):
        node.driver()


def test_a_real_reboot_voids_the_claims(node: Node) -> None:
    """Everything agrees with a reboot: the files predate this boot and the MIG devices are gone (the GPU was
    reset). The claims are void; their leftover specs go."""
    written = _age(node, 3600)
    node.nvml.write()  # no GPU instance survives a reboot
    node.dirs.boot("boot-2", at=written + 60)
    driver = node.driver()
    assert driver.startup.rebooted
    assert driver.prepared_devices() == {}
    assert sorted(driver.startup.stale_specs) == sorted(r.uid for r in node.refs.values())
    assert list(node.dirs.cdi.iterdir()) == []


def test_a_missing_checkpoint_beside_claims_in_use_stops_the_driver_and_changes_nothing(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    """checkpoint.json deleted under four prepared claims (two on MIG devices): starting as on a fresh node would
    destroy both GPU instances and delete all four specs; the specs written during this boot prove otherwise."""
    node.path.unlink()
    before = node.snapshot()
    with caplog.at_level(logging.WARNING, "kubedra.driver"), pytest.raises(CheckpointRefusedError) as refused:
        node.driver()
    message = str(refused.value)
    assert message.startswith(
        f"checkpoint {node.path} does not exist, but this is not a fresh node: "
        "the CDI specs of 4 claim(s) were written during this boot"
    )
    assert "--recover-checkpoint" in message and "Nothing was changed" in message
    assert node.snapshot() == before  # no MIG device destroyed (no NVML call), no spec deleted, no file written
    assert node.nvml.instances() == node.instances and len(node.instances) == 2
    assert node.specs() == {r.uid for r in node.refs.values()}
    assert any(r.levelno == logging.ERROR and r.getMessage() == message for r in caplog.records)  # the decision


def test_a_missing_checkpoint_and_specs_beside_live_mig_devices_stops_the_driver(node: Node) -> None:
    """Checkpoint and specs both gone: the MIG devices this driver creates still exist, and may be in use."""
    node.path.unlink()
    for p in node.dirs.cdi.iterdir():
        p.unlink()
    before = node.snapshot()
    with pytest.raises(CheckpointRefusedError, match=r"not a fresh node: 2 MIG device\(s\) this driver creates exist"):
        node.driver()
    assert node.snapshot() == before and node.nvml.instances() == node.instances


def test_a_fresh_node_starts_clean_and_says_so(dirs: Dirs, nvml: NvmlStub, caplog: pytest.LogCaptureFixture) -> None:
    nvml.gpus = [a100(0), h100(1)]
    nvml.write()
    with caplog.at_level(logging.WARNING, "kubedra.driver"):
        driver = Node(dirs, nvml, StaticClaims(), {}, {}, b"", [], RecordingRunner()).driver()
    assert driver.startup.fresh and driver.startup.missing is None
    assert checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes()).claims == {}
    assert "a fresh node" in caplog.text


def test_without_a_checkpoint_a_previous_boots_leftovers_start_clean(node: Node) -> None:
    """Checkpoint gone, specs older than this boot, no MIG device left: nothing is in use, so the node is fresh
    and the leftover specs go, as after a reboot."""
    written = _age(node, 3600)
    node.path.unlink()
    node.nvml.write()  # no GPU instance survives a reboot
    node.dirs.boot("boot-2", at=written + 60)
    driver = node.driver()
    assert driver.startup.fresh and driver.prepared_devices() == {}
    assert sorted(driver.startup.stale_specs) == sorted(r.uid for r in node.refs.values())
    assert list(node.dirs.cdi.iterdir()) == []


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "foreign-boot", "missing"])
def test_recovery_adopts_what_the_node_proves_and_releases_it_later(node: Node, damage: str) -> None:
    if damage == "foreign-boot":
        node.dirs.boot("boot-2", at=1_000_000_000)
    elif damage == "missing":
        node.path.unlink()
    else:
        node.path.write_bytes(DAMAGE[damage][0](node.checkpoint))
    damaged = node.path.read_bytes() if node.path.exists() else None
    specs_before = {p.name: p.read_bytes() for p in node.dirs.cdi.iterdir()}
    calls_before = node.nvml.calls()

    driver = node.driver(recover=True)
    assert driver.startup.recovered == sorted(r.uid for r in node.refs.values())
    assert node.nvml.instances() == node.instances and node.nvml.calls() == calls_before  # nothing destroyed
    assert {p.name: p.read_bytes() for p in node.dirs.cdi.iterdir()} == specs_before  # nothing deleted
    asides = [p.read_bytes() for p in node.dirs.plugin.iterdir() if p.name.startswith("checkpoint.json.")]
    assert asides == ([] if damaged is None else [damaged])  # an untrusted file is kept for whoever investigates
    if damaged is not None:
        kind = "foreign-boot" if damage == "foreign-boot" else "corrupt"
        assert driver.startup.set_aside and driver.startup.set_aside.startswith(f"checkpoint.json.{kind}-")
    assert driver.prepared_devices() == {r.uid: CLAIMS[name][0] for name, r in node.refs.items()}
    assert checkpoint.decode(node.path.read_bytes()).boot_id == node.dirs.boot_id.read_text().strip()

    other = ClaimRef(*node.claims.add(claim("other", ["gpu-0-mig-3g20gb-9-4"])))
    assert "already prepared for claim" in driver.prepare([other])[other.uid].error  # still held
    again = driver.prepare([node.refs["mig"], node.refs["whole"]])  # the kubelet asks again (it restarted)
    assert again == {r.uid: node.prepared[r.uid] for r in (node.refs["mig"], node.refs["whole"])}

    restarted = node.driver()  # the new checkpoint is trusted: a plain start keeps everything
    assert restarted.startup.recovered is None and restarted.startup.destroyed_mig == []
    assert node.nvml.instances() == node.instances
    assert restarted.unprepare(list(node.refs.values())) == {r.uid: "" for r in node.refs.values()}
    assert node.nvml.instances() == [] and list(node.dirs.cdi.iterdir()) == []  # released, as prepared
    pipe = str(node.dirs.plugin / "mps" / node.refs["mps"].uid / "pipe")
    quits = [r for r in node.runner.runs if r.argv == ["nvidia-cuda-mps-control"] and r.stdin == "quit\n"]
    assert [r.env["CUDA_MPS_PIPE_DIRECTORY"] for r in quits] == [pipe]  # the MPS claim's control daemon is stopped


def test_recovery_rebuilds_a_claim_from_its_spec_and_keeps_unproven_mig_devices(node: Node) -> None:
    """A corrupt checkpoint and one spec gone: that claim cannot be proven in use, so it is not adopted, but its
    MIG device is not destroyed either (left for the next start to judge)."""
    node.path.write_bytes(b"{")
    (node.dirs.cdi / f"k8s.gpu.nvidia.com-claim_{node.refs['small'].uid}.yaml").unlink()
    driver = node.driver(recover=True)
    assert driver.startup.recovered == sorted(r.uid for n, r in node.refs.items() if n != "small")
    assert node.nvml.instances() == node.instances
    record = driver.state.claims[node.refs["mig"].uid]
    [device] = record.devices
    three_g = next(i for i in node.instances if i.profile == 9)
    assert (device.device, device.mig and device.mig["uuid"]) == ("gpu-0-mig-3g20gb-9-4", three_g.cis[0][2])
    spec = yaml.safe_load((node.dirs.cdi / f"k8s.gpu.nvidia.com-claim_{node.refs['mig'].uid}.yaml").read_text())
    assert record.cdi_spec == spec


def _kubeconfig(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {}}],
            }
        )
    )
    return path


@pytest.mark.parametrize("damage", ["corrupt", "foreign-boot", "missing"])
def test_the_driver_process_exits_2_with_the_message(
    node: Node, nvml_library: StubLibrary, damage: str, tmp_path: Path
) -> None:
    """``kubedra driver --backend nvml`` on the node (the stub through LD_LIBRARY_PATH; this machine's real boot
    ID differs from the test's "boot-1", and the checkpoint was written after this machine booted)."""
    if damage == "corrupt":
        node.path.write_bytes(node.checkpoint[:-10])
    elif damage == "missing":
        node.path.unlink()
    before = node.snapshot()
    args = [
        *("driver", "--node", "node-1", "--backend", "nvml", "--kubeconfig", str(_kubeconfig(tmp_path / "kc"))),
        *("--plugin-dir", str(node.dirs.plugin), "--registry-dir", str(node.dirs.registry)),
        *("--cdi-root", str(node.dirs.cdi)),
    ]
    env: dict[str, Any] = {**os.environ, **node.nvml.env(nvml_library.path)}
    done = subprocess.run(
        [sys.executable, "-m", "kubedra", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    expected = {
        "corrupt": "cannot be trusted",
        "foreign-boot": "was written under boot ID 'boot-1'",
        "missing": "does not exist, but this is not a fresh node: the CDI specs of 4 claim(s)",
    }[damage]
    assert f"error: checkpoint {node.path} {expected}" in " ".join(done.stderr.split()), done.stderr
    assert node.snapshot() == before
    assert not (node.dirs.registry / "gpu.nvidia.com-reg.sock").exists()  # never served the kubelet
