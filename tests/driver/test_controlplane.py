"""The driver against the real control plane: slices validated by the real kube-apiserver, claims allocated by
the real kube-scheduler, prepared through the kubelet emulator, as the least-privileged ServiceAccount of
deploy/driver-rbac.yaml."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.driver import helpers
from tests.driver.conftest import Dirs
from tests.driver.helpers import write_inventory
from tests.driver.kubelet import Kubelet
from tests.kube import builders

from kubedra.driver.fake import FakeBackend
from kubedra.driver.publish import SlicePublisher
from kubedra.kube.api import connect

pytestmark = pytest.mark.controlplane
ROOT = Path(__file__).resolve().parents[2]


def _driver_name() -> str:
    return f"gpu-{secrets.token_hex(3)}.nvidia.com"


def _slices(plane: ControlPlane, driver: str, node: str) -> list[dict[str, Any]]:
    selector = f"spec.driver={driver},spec.nodeName={node}"
    items = plane.get(f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector={selector}")["items"]
    return sorted(items, key=lambda s: s["metadata"]["name"])


def _ignore_conflict(call: Any) -> None:
    try:
        call()
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise


def driver_kubeconfig(plane: ControlPlane) -> Path:
    """deploy/driver-rbac.yaml applied, and a kubeconfig with a token of its ServiceAccount (TokenRequest)."""
    _ignore_conflict(
        lambda: plane.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubedra"}}
        )
    )
    paths = {
        "ServiceAccount": "/api/v1/namespaces/kubedra/serviceaccounts",
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    }
    for document in yaml.safe_load_all((ROOT / "deploy" / "driver-rbac.yaml").read_text()):
        _ignore_conflict(lambda d=document: plane.request("POST", paths[d["kind"]], d))
    token = plane.request(
        "POST",
        "/api/v1/namespaces/kubedra/serviceaccounts/kubedra-driver/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )["status"]["token"]
    return plane.kubeconfig_for(token, "kubedra-driver")


@pytest.mark.slow
def test_slices_are_published_and_reconciled(control_plane: ControlPlane, dirs: Dirs) -> None:
    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    created = control_plane.create_node(node)
    with connect(str(control_plane.kubeconfig)) as client:
        publisher = SlicePublisher(client, driver, node)
        inventory = FakeBackend(write_inventory(dirs.root / "inv.yaml", 2)).discover()
        first = publisher.publish(inventory)
        assert (first.generation, first.changed) == (1, True)
        [published] = _slices(control_plane, driver, node)
        assert published["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": created["metadata"]["uid"], "controller": True}
        ]
        spec = published["spec"]
        assert spec["pool"] == {"name": node, "generation": 1, "resourceSliceCount": 1}
        assert spec["nodeName"] == node
        gpu0 = spec["devices"][0]
        assert gpu0["name"] == "gpu-0"
        assert gpu0["attributes"] == {
            "architecture": {"string": "Ampere"},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "cudaDriverVersion": {"version": "12.4.0"},
            "driverVersion": {"version": "550.54.15"},
            "productName": {"string": "NVIDIA A100-SXM4-40GB"},
            "resource.kubernetes.io/pciBusID": {"string": "0000:07:00.0"},
            "type": {"string": "gpu"},
            "uuid": {"string": "GPU-2f6a4c1e-0000-4000-8000-000000000000"},
        }
        assert gpu0["capacity"] == {"memory": {"value": "40Gi"}}

        again = publisher.publish(inventory)
        assert (again.generation, again.changed) == (1, False)

        big = FakeBackend(write_inventory(dirs.root / "big.yaml", 130)).discover()
        grown = publisher.publish(big)
        assert grown.generation == 2
        slices = _slices(control_plane, driver, node)
        assert [len(s["spec"]["devices"]) for s in slices] == [128, 2]
        assert {(s["spec"]["pool"]["generation"], s["spec"]["pool"]["resourceSliceCount"]) for s in slices} == {(2, 2)}

        shrunk = publisher.publish(inventory)
        assert shrunk.generation == 3
        assert len(shrunk.deleted) == 1
        assert [len(s["spec"]["devices"]) for s in _slices(control_plane, driver, node)] == [2]


def test_consumable_shares_and_mig_are_accepted_by_the_apiserver(control_plane: ControlPlane, dirs: Dirs) -> None:
    from kubedra.driver.devices import Sharing

    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    mig = [
        {"profile": "1g.5gb", "profileID": 19, "count": 7, "memory": "4864Mi", "multiprocessors": 14},
        {
            "profile": "7g.40gb",
            "profileID": 0,
            "count": 1,
            "memory": "40192Mi",
            "multiprocessors": 98,
            "placements": [{"start": 0, "size": 8}],
        },
    ]
    with connect(str(control_plane.kubeconfig)) as client:
        shared = FakeBackend(write_inventory(dirs.root / "a.yaml", 2)).discover()
        SlicePublisher(client, driver, node, Sharing.parse("4")).publish(shared)
        [s] = _slices(control_plane, driver, node)
        assert s["spec"]["devices"][0]["allowMultipleAllocations"] is True
        assert s["spec"]["devices"][0]["capacity"]["shares"]["value"] == "4"
        migged = FakeBackend(write_inventory(dirs.root / "b.yaml", 2, migProfiles=mig)).discover()
        SlicePublisher(client, driver, node).publish(migged)
        slices = _slices(control_plane, driver, node)
    assert [len(s["spec"].get("sharedCounters", [])) for s in slices] == [2, 0, 0]
    names = [d["name"] for d in slices[1]["spec"]["devices"]]
    assert "gpu-0-mig-1g5gb-19-0" in names
    assert "gpu-0-mig-7g40gb-0-0" in names
    assert "gpu-0" not in names  # an Ampere GPU in MIG mode is not offered whole (NVIDIA's rule)


def start_driver(dirs: Dirs, kubeconfig: Path, driver: str, node: str, *extra: str, log: str = "driver.log") -> Any:
    """``kubedra driver`` as a process (fake backend, 2 GPUs), logging to ``dirs.root / log``."""
    inventory = dirs.root / "inventory.yaml"
    if not inventory.exists():
        write_inventory(inventory, 2)
    args = [
        sys.executable,
        "-m",
        "kubedra",
        "driver",
        "--node",
        node,
        "--backend",
        "fake",
        "--inventory",
        str(inventory),
        "--driver-name",
        driver,
        "--plugin-dir",
        str(dirs.plugin),
        "--registry-dir",
        str(dirs.registry),
        "--cdi-root",
        str(dirs.cdi),
        "--kubeconfig",
        str(kubeconfig),
        *extra,
    ]
    with (dirs.root / log).open("w") as out:
        return subprocess.Popen(args, stderr=out, stdout=out, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture
def driver_process(control_plane: ControlPlane, dirs: Dirs) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    process = start_driver(dirs, driver_kubeconfig(control_plane), driver, node)
    yield process, driver, node
    _stop(process)


def _allocated_claims(
    plane: ControlPlane, namespace: str, driver: str, node: str, names: list[str]
) -> dict[str, dict[str, Any]]:
    """One 1-GPU claim per name, each for a pod on ``node``, allocated by kube-scheduler."""
    class_name = driver.split(".", 1)[0]
    _ignore_conflict(lambda: plane.create(builders.device_class(class_name, driver)))
    for name in names:
        plane.create(builders.claim(name, namespace, class_name))
        plane.create(builders.pod(name, namespace, claim_name=name, node_selector={"kubernetes.io/hostname": node}))
    allocated = {}
    for name in names:
        path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
        allocated[name] = plane.wait_for(
            lambda p=path: (c := plane.get(p)).get("status", {}).get("allocation") and c,
            timeout=60,
            what=f"kube-scheduler to allocate claim {name}",
        )
    return allocated


@pytest.mark.slow
def test_a_claim_allocated_by_kube_scheduler_is_prepared(
    control_plane: ControlPlane, dirs: Dirs, namespace: str, driver_process: tuple[subprocess.Popen[str], str, str]
) -> None:
    process, driver, node = driver_process
    control_plane.wait_for(lambda: _slices(control_plane, driver, node), timeout=30, what="the driver's slices")
    class_name = driver.split(".", 1)[0]
    control_plane.create(builders.device_class(class_name, driver))
    control_plane.create(builders.claim("train", namespace, class_name, count=2))
    control_plane.create(
        builders.pod("trainer", namespace, claim_name="train", node_selector={"kubernetes.io/hostname": node})
    )
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/train"
    allocated = control_plane.wait_for(
        lambda: (c := control_plane.get(path)).get("status", {}).get("allocation") and c,
        timeout=60,
        what="kube-scheduler to allocate the claim",
    )
    results = allocated["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    uid = allocated["metadata"]["uid"]

    kubelet = Kubelet(dirs.registry)
    try:
        control_plane.wait_for(lambda: kubelet.register_all().get(driver), timeout=10, what="registration")
        response = kubelet.prepare(driver, [(namespace, uid, "train")])
        entry = response.claims[uid]
        assert entry.error == ""
        assert sorted(d.device_name for d in entry.devices) == ["gpu-0", "gpu-1"]
        spec = yaml.safe_load((dirs.cdi / f"k8s.gpu.nvidia.com-claim_{uid}.yaml").read_text())
        assert sorted(d["name"] for d in spec["devices"]) == [f"{uid}-gpu-0", f"{uid}-gpu-1"]
        assert kubelet.unprepare(driver, [(namespace, uid, "train")]).claims[uid].error == ""
        assert not (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{uid}.yaml").exists()
    finally:
        kubelet.close()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    assert not (dirs.plugin / "dra.sock").exists()
    assert not (dirs.registry / f"{driver}-reg.sock").exists()


@pytest.mark.slow
def test_two_driver_pods_overlap_during_a_rolling_update(
    control_plane: ControlPlane, dirs: Dirs, namespace: str
) -> None:
    """``--pod-uid``: an old and a new driver pod serve the same plugin dir at once, each on its own sockets (the
    kubelet-plugin helper's names); the kubelet prepares through one and unprepares through the other; calls from
    both, at once, are serialized by the file lock and each sees what the other recorded. Then the old pod stops:
    only its sockets go."""
    import threading

    from kubedra.driver import checkpoint
    from kubedra.driver.plugin import rolling_update_registration_socket

    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    kubeconfig = driver_kubeconfig(control_plane)
    old_uid, new_uid = "3f1c0a52-0000-4000-8000-00000000000a", "3f1c0a52-0000-4000-8000-00000000000b"
    old = start_driver(dirs, kubeconfig, driver, node, "--pod-uid", old_uid, log="old.log")
    new = start_driver(dirs, kubeconfig, driver, node, "--pod-uid", new_uid, log="new.log")
    old_reg = dirs.registry / f"{driver}-{old_uid}-reg.sock"
    new_reg = dirs.registry / f"{driver}-{new_uid}-reg.sock"
    assert rolling_update_registration_socket(dirs.registry, driver, old_uid) == old_reg
    kubelet = Kubelet(dirs.registry)
    try:
        claims = _allocated_claims(control_plane, namespace, driver, node, ["c1", "c2"])
        refs = {n: (namespace, c["metadata"]["uid"], n) for n, c in claims.items()}
        control_plane.wait_for(
            lambda: old_reg.exists() and new_reg.exists() and len(kubelet.register_all() and kubelet.instances) == 2,
            timeout=30,
            what="both driver pods to register",
        )
        assert kubelet.instances[str(old_reg)].info.endpoint == str(dirs.plugin / f"dra-{old_uid}.sock")
        assert kubelet.instances[str(new_reg)].info.endpoint == str(dirs.plugin / f"dra-{new_uid}.sock")

        def state() -> checkpoint.Checkpoint:
            return checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes())

        uid1, uid2 = refs["c1"][1], refs["c2"][1]
        assert kubelet.prepare(driver, [refs["c1"]], via=old_reg).claims[uid1].error == ""
        assert kubelet.prepare(driver, [refs["c2"]], via=new_reg).claims[uid2].error == ""
        assert set(state().claims) == {uid1, uid2}  # the new pod kept what the old one recorded
        assert kubelet.unprepare(driver, [refs["c1"]], via=new_reg).claims[uid1].error == ""  # prepared by the old
        assert not (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{uid1}.yaml").exists()
        assert set(state().claims) == {uid2}
        assert kubelet.unprepare(driver, [refs["c2"]], via=old_reg).claims[uid2].error == ""
        assert state().claims == {}

        errors: list[str] = []

        def hammer(via: Path, seed: int) -> None:
            import random

            rng = random.Random(seed)
            for _ in range(15):
                ref = refs[rng.choice(["c1", "c2"])]
                call = kubelet.prepare if rng.random() < 0.6 else kubelet.unprepare
                entry = call(driver, [ref], via=via).claims[ref[1]]
                if entry.error:
                    errors.append(entry.error)

        threads = [threading.Thread(target=hammer, args=(v, i)) for i, v in enumerate([old_reg, new_reg] * 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        final = state()
        assert all(r.state == checkpoint.PREPARE_COMPLETED for r in final.claims.values())
        specs = {p.name for p in dirs.cdi.iterdir()}
        assert specs == {f"k8s.gpu.nvidia.com-claim_{u}.yaml" for u in final.claims}

        old.send_signal(signal.SIGTERM)
        assert old.wait(timeout=15) == 0
        assert not old_reg.exists() and not (dirs.plugin / f"dra-{old_uid}.sock").exists()
        assert new_reg.exists() and (dirs.plugin / f"dra-{new_uid}.sock").exists()
        kubelet.unprepare(driver, list(refs.values()), via=new_reg)
        assert list(dirs.cdi.iterdir()) == []
    finally:
        kubelet.close()
        _stop(old)
        _stop(new)


def test_the_drivers_role_is_least_privilege(control_plane: ControlPlane) -> None:
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.core_v1 import Pod, Secret

    kubeconfig = driver_kubeconfig(control_plane)
    with connect(str(kubeconfig)) as client:
        for call in (
            lambda: list(client.list(Secret, namespace="kubedra")),
            lambda: list(client.list(Pod, namespace="kubedra")),
        ):
            with pytest.raises(ApiError) as refused:
                call()
            assert refused.value.status.code == 403


def test_an_unreachable_api_is_retried_with_backoff() -> None:
    import threading

    from kubedra.driver.publish import PublishResult, publish_with_retry

    calls: list[float] = []
    waits: list[float] = []

    def publish() -> PublishResult:
        calls.append(time.monotonic())
        if len(calls) < 4:
            raise ConnectionRefusedError("connection refused")
        return PublishResult(1, ["s"], changed=True, deleted=[])

    result = publish_with_retry(
        publish, threading.Event(), initial=0.5, maximum=1.5, sleep=lambda d: waits.append(d) or False
    )
    assert result is not None
    assert waits == [0.5, 1.0, 1.5]


@pytest.mark.slow
def test_a_changed_inventory_is_republished_and_reaches_the_health_stream(
    control_plane: ControlPlane, dirs: Dirs
) -> None:
    from kubedra.driver.plugin import DriverOptions, RunningDriver

    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    inventory = write_inventory(dirs.root / "inventory.yaml", 2)
    options = DriverOptions(
        node=node,
        backend="fake",
        inventory=inventory,
        driver_name=driver,
        plugin_dir=dirs.plugin,
        registry_dir=dirs.registry,
        cdi_root=dirs.cdi,
        kubeconfig=str(control_plane.kubeconfig),
        resync=0.2,
    )
    running = RunningDriver(options)
    kubelet = Kubelet(dirs.registry)
    try:
        control_plane.wait_for(lambda: _slices(control_plane, driver, node), timeout=30, what="slices")
        kubelet.register_all()
        thread, reports = kubelet.watch_health_async(driver, 2)
        control_plane.wait_for(lambda: reports, timeout=10, what="the first health report")
        data = helpers.inventory(3)
        data["gpus"][0]["healthy"] = False
        staged = dirs.root / "staged.yaml"
        staged.write_text(yaml.safe_dump(data))
        staged.replace(inventory)  # one change, as a config-map update lands

        def three() -> list[dict[str, Any]] | None:
            slices = _slices(control_plane, driver, node)
            return slices if slices and len(slices[0]["spec"]["devices"]) == 3 else None

        [published] = control_plane.wait_for(three, timeout=30, what="the third GPU to be published")
        assert published["spec"]["pool"]["generation"] == 2
        thread.join(timeout=10)
        assert [(d.device.device_name, d.health) for d in reports[1].devices][:1] == [("gpu-0", 2)]
    finally:
        kubelet.close()
        running.stop()


@pytest.mark.slow
def test_a_deleted_slice_is_published_again_at_once(control_plane: ControlPlane, dirs: Dirs) -> None:
    """The kubelet deletes every ResourceSlice of its node when it starts (tests/kubelet has it on a real kubelet):
    the driver watches its pool's slices and publishes them again at once, not at the next resync."""
    from kubedra.driver.plugin import DriverOptions, RunningDriver

    driver, node = _driver_name(), f"gpu-node-{secrets.token_hex(3)}"
    control_plane.create_node(node)
    options = DriverOptions(
        node=node,
        backend="fake",
        inventory=write_inventory(dirs.root / "inventory.yaml", 2),
        driver_name=driver,
        plugin_dir=dirs.plugin,
        registry_dir=dirs.registry,
        cdi_root=dirs.cdi,
        kubeconfig=str(control_plane.kubeconfig),
        resync=600,  # only the watch can bring the slice back within the test
    )
    running = RunningDriver(options)
    try:
        [first] = control_plane.wait_for(lambda: _slices(control_plane, driver, node), timeout=30, what="slices")
        for _ in range(2):  # and again: the watch goes on after the first deletion
            control_plane.request(
                "DELETE",
                f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver={driver},spec.nodeName={node}",
            )
            gone = first["metadata"]["uid"]
            again = control_plane.wait_for(
                lambda gone=gone: [s for s in _slices(control_plane, driver, node) if s["metadata"]["uid"] != gone],
                timeout=10,
                what="the deleted slice to be published again",
            )
            assert [len(s["spec"]["devices"]) for s in again] == [2]
            first = again[0]
    finally:
        running.stop()


def test_the_daemonset_is_valid_and_its_command_line_parses(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubedra.cli import main

    driver_kubeconfig(control_plane)  # namespace kubedra and the ServiceAccount
    document = yaml.safe_load((ROOT / "deploy" / "driver-daemonset.yaml").read_text())
    [container] = document["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"] == {"privileged": True}
    # the test kube-apiserver runs without --allow-privileged (real clusters' kube-apiservers allow it)
    del container["securityContext"]
    created = control_plane.request("POST", "/apis/apps/v1/namespaces/kubedra/daemonsets?dryRun=All", document)
    assert created["spec"]["template"]["spec"]["serviceAccountName"] == "kubedra-driver"
    argv = [a.replace("$(NODE_NAME)", "node-1") for a in container["command"][1:]]
    assert main(argv) == 2  # parsed; here it stops at NVML, as on any node without an NVIDIA driver
    assert "NVML cannot be initialised" in capsys.readouterr().err
