"""Prepare and unprepare on the node: exactly the allocated devices, CDI specs, checkpoint, sharing, recovery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.driver.conftest import Dirs, make_driver
from tests.driver.helpers import StaticClaims, claim

from kubedra.driver import checkpoint
from kubedra.driver.sharing import RecordingRunner, Run
from kubedra.driver.types import ClaimRef


def _ref(t: tuple[str, str, str]) -> ClaimRef:
    return ClaimRef(*t)


def _spec(dirs: Dirs, uid: str) -> dict:
    return yaml.safe_load((dirs.cdi / f"k8s.gpu.nvidia.com-claim_{uid}.yaml").read_text())


def _gpuconfig(sharing: dict, requests: list[str] | None = None, source: str = "FromClaim") -> dict:
    return {
        "source": source,
        "requests": requests or [],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing},
        },
    }


def test_the_cdi_spec_has_one_device_per_prepared_gpu(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    ref = _ref(claims.add(claim("two", ["gpu-0", "gpu-1"])))
    result = driver.prepare([ref])[ref.uid]
    assert result.error == ""
    assert [d.device_name for d in result.devices] == ["gpu-0", "gpu-1"]
    spec = _spec(dirs, ref.uid)
    assert spec["kind"] == "k8s.gpu.nvidia.com/claim"
    assert [d["name"] for d in spec["devices"]] == [f"{ref.uid}-gpu-0", f"{ref.uid}-gpu-1"]
    both = "NVIDIA_VISIBLE_DEVICES=GPU-2f6a4c1e-0000-4000-8000-000000000000,GPU-2f6a4c1e-0000-4000-8000-000000000001"
    assert spec["devices"][0]["containerEdits"] == {"env": [both], "deviceNodes": [{"path": "/dev/nvidia0"}]}
    assert spec["devices"][1]["containerEdits"]["deviceNodes"] == [{"path": "/dev/nvidia1"}]
    assert spec["containerEdits"]["deviceNodes"][0] == {"path": "/dev/nvidiactl"}


def test_subrequest_names_are_stripped(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    doc = claim("fa", ["gpu-1"])
    doc["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu/big"
    ref = _ref(claims.add(doc))
    [device] = driver.prepare([ref])[ref.uid].devices
    assert device.request_names == ("gpu",)


def test_prepare_is_idempotent_and_reads_the_checkpoint_not_the_node(dirs: Dirs) -> None:
    claims, runner = StaticClaims(), RecordingRunner()
    driver = make_driver(dirs, claims, runner)
    ref = _ref(claims.add(claim("a", ["gpu-0"], config=[_gpuconfig({"strategy": "TimeSlicing"})])))
    first = driver.prepare([ref])
    commands = list(runner.commands)
    assert driver.prepare([ref]) == first
    assert runner.commands == commands  # nothing done twice


def test_only_results_of_this_driver_and_pool_are_prepared(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    doc = claim("mixed", ["gpu-0"])
    doc["status"]["allocation"]["devices"]["results"] += [
        {"request": "gpu", "driver": "other.example.com", "pool": "node-1", "device": "gpu-1"},
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-2", "device": "gpu-1"},
    ]
    ref = _ref(claims.add(doc))
    assert [d.device_name for d in driver.prepare([ref])[ref.uid].devices] == ["gpu-0"]


def test_a_device_held_by_another_claim_is_refused(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    a = _ref(claims.add(claim("a", ["gpu-0"])))
    b = _ref(claims.add(claim("b", ["gpu-0"])))
    driver.prepare([a])
    assert driver.prepare([b])[b.uid].error == "claim default/b: device gpu-0 is already prepared for claim default/a"
    assert not (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{b.uid}.yaml").exists()


def test_shares_of_one_device_are_prepared_for_several_claims(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    a = _ref(claims.add(claim("a", ["gpu-0"], share_ids={"gpu-0": "s-1"})))
    b = _ref(claims.add(claim("b", ["gpu-0"], share_ids={"gpu-0": "s-2"})))
    results = driver.prepare([a, b])
    assert [d.share_id for r in results.values() for d in r.devices] == ["s-1", "s-2"]
    driver.unprepare([a])
    assert driver.prepared_devices() == {b.uid: ["gpu-0"]}


def test_an_unknown_device_is_refused(dirs: Dirs) -> None:
    """Also a MIG device of a GPU that publishes no MIG profiles (MIG off); MIG prepare is in test_mig.py."""
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    gone = _ref(claims.add(claim("gone", ["gpu-7"])))
    mig = _ref(claims.add(claim("mig", ["gpu-0-mig-1g5gb-19-0"])))
    results = driver.prepare([gone, mig])
    assert results[gone.uid].error == "claim default/gone: device gpu-7: unknown"
    assert results[mig.uid].error == "claim default/mig: device gpu-0-mig-1g5gb-19-0: unknown"


def test_time_slicing_is_set_per_gpu_and_reset_on_the_last_unprepare(dirs: Dirs) -> None:
    claims, runner = StaticClaims(), RecordingRunner()
    driver = make_driver(dirs, claims, runner)
    long = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[long], share_ids={"gpu-0": "s1"})))
    b = _ref(claims.add(claim("b", ["gpu-0"], config=[long], share_ids={"gpu-0": "s2"})))
    uuid = "GPU-2f6a4c1e-0000-4000-8000-000000000000"
    driver.prepare([a, b])
    set_long = [
        ["nvidia-smi", "-i", uuid, "-c", "DEFAULT"],
        ["nvidia-smi", "compute-policy", "-i", uuid, "--set-timeslice", "3"],
    ]
    assert runner.commands == set_long * 2
    runner.commands.clear()
    driver.unprepare([a])
    assert runner.commands == []  # b still uses it
    driver.unprepare([b])
    assert runner.commands == [["nvidia-smi", "compute-policy", "-i", uuid, "--set-timeslice", "0"]]


def test_two_claims_cannot_set_different_time_slices_on_one_gpu(dirs: Dirs) -> None:
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    short = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}})
    long = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[short], share_ids={"gpu-0": "s1"})))
    b = _ref(claims.add(claim("b", ["gpu-0"], config=[long], share_ids={"gpu-0": "s2"})))
    results = driver.prepare([a, b])
    assert results[a.uid].error == ""
    assert "another claim set time-slice level 1 on GPU" in results[b.uid].error


def test_claim_config_wins_over_class_config_and_a_bad_config_is_refused(dirs: Dirs) -> None:
    claims, runner = StaticClaims(), RecordingRunner()
    driver = make_driver(dirs, claims, runner)
    from_class = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}, source="FromClass")
    from_claim = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}})
    # listed claim-first: precedence is by source, not by position
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[from_claim, from_class])))
    driver.prepare([a])
    assert runner.commands[-1][-1] == "2"
    bad = _ref(claims.add(claim("bad", ["gpu-1"], config=[_gpuconfig({"strategy": "Sometimes"})])))
    assert driver.prepare([bad])[bad.uid].error == (
        "claim default/bad: GpuConfig: sharing.strategy: unknown GPU sharing strategy: Sometimes, supported GPU sharing "
        "strategies: TimeSlicing, MPS"
    )


def test_mps_is_cdi_env_and_mounts(dirs: Dirs) -> None:
    claims, runner = StaticClaims(), RecordingRunner()
    driver = make_driver(dirs, claims, runner)
    mps = _gpuconfig(
        {
            "strategy": "MPS",
            "mpsConfig": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"},
        }
    )
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[mps])))
    assert driver.prepare([a])[a.uid].error == ""
    edits = _spec(dirs, a.uid)["devices"][0]["containerEdits"]
    assert edits["env"][1:] == [
        "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M",
    ]
    root = dirs.plugin / "mps" / a.uid
    assert edits["mounts"] == [
        {"hostPath": str(root / "shm"), "containerPath": "/dev/shm", "options": ["rw", "nosuid", "nodev", "bind"]},
        {
            "hostPath": str(root / "pipe"),
            "containerPath": "/tmp/nvidia-mps",
            "options": ["rw", "nosuid", "nodev", "bind"],
        },
    ]
    uuid = "GPU-2f6a4c1e-0000-4000-8000-000000000000"
    env = {
        "CUDA_MPS_PIPE_DIRECTORY": str(root / "pipe"),
        "CUDA_MPS_LOG_DIRECTORY": str(root / "log"),
        "CUDA_VISIBLE_DEVICES": uuid,
    }
    assert runner.runs == [
        Run(["nvidia-smi", "-i", uuid, "-c", "EXCLUSIVE_PROCESS"], {}, None),
        Run(["nvidia-cuda-mps-control", "-d"], env, None),  # the claim's control daemon
        Run(["nvidia-cuda-mps-control"], env, "set_default_active_thread_percentage 50\n"),
        Run(["nvidia-cuda-mps-control"], env, f"set_default_device_pinned_mem_limit {uuid} 10240M\n"),
    ]
    assert sorted(p.name for p in root.iterdir()) == ["log", "pipe", "shm"]
    record = checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes()).claims[a.uid]
    assert record.mps == {"gpus": [uuid], "settings": [r.stdin.strip() for r in runner.runs[2:] if r.stdin]}
    runner.runs.clear()
    assert driver.prepare([a])[a.uid].error == ""  # idempotent: no second daemon
    assert runner.runs == []
    assert driver.unprepare([a]) == {a.uid: ""}
    assert runner.runs == [Run(["nvidia-cuda-mps-control"], env, "quit\n")]
    assert not root.exists()


def test_a_crash_after_the_mps_daemon_started_stops_it_at_start(dirs: Dirs) -> None:
    class DiesAfterDaemon(RecordingRunner):
        def run(self, argv: Any, *, env: Any = None, stdin: Any = None) -> None:
            super().run(argv, env=env, stdin=stdin)
            if stdin and stdin.startswith("set_default_active_thread_percentage"):
                raise KeyboardInterrupt  # stands for SIGKILL: no rollback in this process

    claims, runner = StaticClaims(), DiesAfterDaemon()
    driver = make_driver(dirs, claims, runner)
    mps = _gpuconfig({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 20}})
    a = _ref(claims.add(claim("a", ["gpu-1"], config=[mps])))
    with pytest.raises(KeyboardInterrupt):
        driver.prepare([a])
    assert (dirs.plugin / "mps" / a.uid / "pipe").is_dir()
    after = RecordingRunner()
    restarted = make_driver(dirs, claims, after)
    assert restarted.startup.rolled_back == [a.uid]
    assert [(r.argv, r.stdin) for r in after.runs] == [(["nvidia-cuda-mps-control"], "quit\n")]
    assert not (dirs.plugin / "mps" / a.uid).exists()


def test_a_failing_command_fails_the_claim_and_leaves_nothing(dirs: Dirs) -> None:
    class Failing(RecordingRunner):
        def run(self, argv: list[str]) -> None:  # type: ignore[override]
            super().run(argv)
            if "--set-timeslice" in argv and argv[-1] != "0":
                raise RuntimeError("nvidia-smi: Insufficient Permissions")

    claims, runner = StaticClaims(), Failing()
    driver = make_driver(dirs, claims, runner)
    long = _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[long])))
    assert "Insufficient Permissions" in driver.prepare([a])[a.uid].error
    assert list(dirs.cdi.iterdir()) == []
    assert checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes()).claims == {}
    assert runner.commands[-1] == [
        "nvidia-smi",
        "compute-policy",
        "-i",
        "GPU-2f6a4c1e-0000-4000-8000-000000000000",
        "--set-timeslice",
        "0",
    ]


# ---------------------------------------------------------------------------------------------- restarts


def test_a_restart_keeps_prepared_claims(dirs: Dirs) -> None:
    claims = StaticClaims()
    a = _ref(claims.add(claim("a", ["gpu-0"])))
    first = make_driver(dirs, claims).prepare([a])
    again = make_driver(dirs, claims)
    assert again.prepare([a]) == first
    assert again.prepared_devices() == {a.uid: ["gpu-0"]}


def test_a_missing_spec_of_a_prepared_claim_is_written_again(dirs: Dirs) -> None:
    claims = StaticClaims()
    a = _ref(claims.add(claim("a", ["gpu-1"])))
    make_driver(dirs, claims).prepare([a])
    before = _spec(dirs, a.uid)
    (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{a.uid}.yaml").unlink()
    assert make_driver(dirs, claims).startup.regenerated_specs == [a.uid]
    assert _spec(dirs, a.uid) == before


def test_prepare_started_is_rolled_back_at_start(dirs: Dirs) -> None:
    """What a kill between PrepareStarted and PrepareCompleted leaves: the spec (maybe) and the started entry."""
    claims, runner = StaticClaims(), RecordingRunner()
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[_gpuconfig({"strategy": "TimeSlicing"})])))
    make_driver(dirs, claims).prepare([a])
    path = dirs.plugin / "checkpoint.json"
    state = checkpoint.decode(path.read_bytes())
    state.claims[a.uid].state = checkpoint.PREPARE_STARTED
    path.write_bytes(checkpoint.encode(state))
    restarted = make_driver(dirs, claims, runner)
    assert restarted.startup.rolled_back == [a.uid]
    assert list(dirs.cdi.iterdir()) == []
    assert runner.commands == [
        ["nvidia-smi", "compute-policy", "-i", "GPU-2f6a4c1e-0000-4000-8000-000000000000", "--set-timeslice", "0"]
    ]
    assert restarted.prepare([a])[a.uid].error == ""  # the kubelet's retry prepares it afresh


def test_stale_specs_and_temp_files_are_cleaned_at_start(dirs: Dirs) -> None:
    """A spec no claim of the checkpoint records goes (beside no checkpoint it would refuse the start:
    test_checkpoint_trust.py)."""
    claims = StaticClaims()
    make_driver(dirs, claims)  # the checkpoint, of no claim
    (dirs.cdi / "k8s.gpu.nvidia.com-claim_0b7c0000-0000-4000-8000-000000000000.yaml").write_text("{}")
    (dirs.cdi / ".kubedra-tmp-k8s.gpu.nvidia.com-claim_x.yaml.123").write_text("half")
    (dirs.cdi / "nvidia.yaml").write_text("{}")  # someone else's spec stays
    driver = make_driver(dirs, claims)
    assert driver.startup.stale_specs == ["0b7c0000-0000-4000-8000-000000000000"]
    assert sorted(p.name for p in dirs.cdi.iterdir()) == ["nvidia.yaml"]


def test_the_checkpoint_format(dirs: Dirs) -> None:
    claims = StaticClaims()
    a = _ref(claims.add(claim("a", ["gpu-0"])))
    make_driver(dirs, claims).prepare([a])
    document = json.loads((dirs.plugin / "checkpoint.json").read_text())
    assert document["version"] == 1
    assert len(document["checksum"]) == 64
    assert document["data"]["nodeBootID"] == "boot-1"
    entry = document["data"]["preparedClaims"][a.uid]
    assert entry["state"] == "PrepareCompleted"
    assert entry["devices"] == [
        {
            "requestNames": ["gpu"],
            "pool": "node-1",
            "device": "gpu-0",
            "cdiDeviceIDs": [f"k8s.gpu.nvidia.com/claim={a.uid}-gpu-0"],
            "shareID": None,
            "adminAccess": False,
        }
    ]
    assert (dirs.plugin / "checkpoint.json").stat().st_mode & 0o777 == 0o600


def test_decode_refuses_other_versions_and_garbage() -> None:
    import pytest

    for raw, message in (
        (b"{", "not JSON"),
        (b'{"version": 2}', "unsupported checkpoint version 2"),
        (b"[]", "version None"),
    ):
        with pytest.raises(checkpoint.CorruptCheckpointError, match=message):
            checkpoint.decode(raw)


def test_file_lock_serializes_two_drivers(dirs: Dirs) -> None:
    """Two driver instances on one plugin dir (a rolling update) never prepare at the same time."""
    import threading
    import time

    from kubedra.driver import files

    order: list[str] = []
    lock_path = dirs.root / "pu.lock"

    def hold(name: str) -> None:
        with files.file_lock(lock_path):
            order.append(f"{name}-in")
            time.sleep(0.1)
            order.append(f"{name}-out")

    threads = [threading.Thread(target=hold, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order in (["a-in", "a-out", "b-in", "b-out"], ["b-in", "b-out", "a-in", "a-out"])


def test_concurrent_prepares_of_one_device_give_it_to_one_claim(dirs: Dirs) -> None:
    import threading

    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    refs = [_ref(claims.add(claim(f"c{i}", ["gpu-0"]))) for i in range(8)]
    results: dict[str, str] = {}

    def go(ref: ClaimRef) -> None:
        results.update({k: v.error for k, v in driver.prepare([ref]).items()})

    threads = [threading.Thread(target=go, args=(r,)) for r in refs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for e in results.values() if e == "") == 1
    assert len(driver.prepared_devices()) == 1
    assert len(list(Path(dirs.cdi).iterdir())) == 1


def test_a_lost_spec_comes_back_with_its_mps_edits(dirs: Dirs) -> None:
    claims = StaticClaims()
    mps = _gpuconfig({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[mps])))
    make_driver(dirs, claims).prepare([a])
    before = _spec(dirs, a.uid)
    assert "mounts" in before["devices"][0]["containerEdits"]
    (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{a.uid}.yaml").unlink()
    make_driver(dirs, claims)
    assert _spec(dirs, a.uid) == before


def test_mps_with_consumable_shares_is_refused(dirs: Dirs) -> None:
    claims = StaticClaims()
    mps = _gpuconfig({"strategy": "MPS"})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[mps], share_ids={"gpu-0": "s1"})))
    assert make_driver(dirs, claims).prepare([a])[a.uid].error == (
        "claim default/a: device gpu-0: MPS cannot be combined with consumable shares"
    )


def test_a_prepare_makes_one_durable_write(dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    """PrepareStarted and the CDI spec are renamed into place without fsync; PrepareCompleted is the one durable
    write (the file's fsync and its directory's): what the p99 of prepare on a disk is made of."""
    import os

    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    ref = _ref(claims.add(claim("a", ["gpu-0"])))
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert driver.prepare([ref])[ref.uid].error == ""
    assert len(synced) == 2
    assert synced[0].startswith(str(dirs.plugin / ".kubedra-tmp-checkpoint.json"))
    assert synced[1] == str(dirs.plugin)
    state = checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes())
    assert state.claims[ref.uid].state == checkpoint.PREPARE_COMPLETED


# ---------------------------------------------------------------------------------------------- MPS directories


def test_mps_directories_are_writable_by_a_non_root_container(dirs: Dirs) -> None:
    """The pipe directory and /dev/shm are bind-mounted into containers that may run as any user, and the MPS
    server (started as the client's user) writes its log: all three are 1777, as /dev/shm and /tmp are, whatever
    the driver's umask; their parent stays root's 0755."""
    import os
    import stat

    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    mps = _gpuconfig({"strategy": "MPS"})
    a = _ref(claims.add(claim("a", ["gpu-0"], config=[mps])))
    old = os.umask(0o077)
    try:
        assert driver.prepare([a])[a.uid].error == ""
    finally:
        os.umask(old)
    root = dirs.plugin / "mps" / a.uid
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in root.iterdir()} == {
        "log": 0o1777,
        "pipe": 0o1777,
        "shm": 0o1777,
    }
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    if os.geteuid() != 0:
        return
    # what the container sees: the directory itself (its mount), as an unprivileged user
    for name in ("pipe", "shm"):
        fd = os.open(root / name, os.O_RDONLY | os.O_DIRECTORY)
        child = os.fork()
        if child == 0:  # pragma: no cover - the child's exit status is the assertion
            try:
                os.setgid(65534)
                os.setuid(65534)
                os.close(os.open("client", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
                os._exit(0)
            except OSError:
                os._exit(1)
        _, status = os.waitpid(child, 0)
        os.close(fd)
        assert os.waitstatus_to_exitcode(status) == 0, f"uid 65534 cannot create a file in {name}"


# ---------------------------------------------------------------------------------------------- claim UIDs

BAD_UIDS = ["../x", "/", "", "a" * 300, "../../../etc/cron.d/x", "0b7c0000-0000-4000-8000-000000000000/.."]


def test_a_claim_uid_that_is_not_a_uid_names_no_file(dirs: Dirs) -> None:
    """Claim UIDs become file names (CDI specs, MPS directories): anything but an API-server UID is refused
    per claim, before any file is written or removed."""
    claims = StaticClaims()
    driver = make_driver(dirs, claims)
    mps = _gpuconfig({"strategy": "MPS"})
    good = _ref(claims.add(claim("good", ["gpu-1"])))
    before = sorted(p.relative_to(dirs.root) for p in dirs.root.rglob("*"))
    refs = [_ref(claims.add(claim(f"bad{i}", ["gpu-0"], uid=uid, config=[mps]))) for i, uid in enumerate(BAD_UIDS)]
    results = driver.prepare([*refs, good])
    for i, ref in enumerate(refs):
        assert results[ref.uid].error.startswith(f"claim default/bad{i}: UID "), results[ref.uid]
        assert "is not a UID" in results[ref.uid].error
    assert len(results[refs[3].uid].error) < 300  # an overlong one is not echoed whole
    assert results[good.uid].error == ""
    after = sorted(p.relative_to(dirs.root) for p in dirs.root.rglob("*"))
    assert [p for p in after if p not in before] == [Path("cdi") / f"k8s.gpu.nvidia.com-claim_{good.uid}.yaml"]
    assert all("is not a UID" in e for e in list(driver.unprepare(refs).values()))
