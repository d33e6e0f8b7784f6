"""Hypothesis fuzzing of the node driver: random kubelet requests over the real unix socket to one running
``kubedra driver --backend fake`` (a real process, reading claims from a control plane of this module's own), random
flags and inventories.

gRPC: each example creates a few claims in the API server (allocated to random devices of this node or others, with
random opaque configs, GpuConfig or not; whatever the real kube-apiserver accepts), then sends NodePrepareResources
or NodeUnprepareResources, in v1 or v1beta1, naming those claims, the same claims with a wrong UID, claims that do
not exist and random strings, or a random byte string that is no message at all. The driver must answer every
call within the kubelet's timeout (no hang) with an entry per UID (an error or devices), or refuse a call naming a
UID that is not one with INVALID_ARGUMENT and a one-line reason, keep running, write every
CDI spec whole (a prepared claim's spec parses; no temporary file is left), and in the end, with every claim
unprepared, leave no CDI spec and no claim in its checkpoint, and exit 0 on SIGTERM with no traceback in its log.

Flags and inventories: a driver started with random flags (and a random, mutated inventory) either exits 2 with an
``error:`` line and creates nothing, or serves, and then stops on SIGTERM with 0.

Examples: ``KUBEDRA_FUZZ_DRIVER_EXAMPLES``, else tests/depth.py's per-run or deep count.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from tests import depth
from tests.cli.fuzzing import mutate, odd_strings
from tests.controlplane.fixture import ControlPlane, free_port, running_control_plane
from tests.driver.helpers import DRIVER, inventory

from kubedra.driver.checkpoint import decode
from kubedra.driver.protos import dra_v1_pb2 as v1
from kubedra.driver.protos import dra_v1beta1_pb2 as v1beta1
from kubedra.driver.protos import grpc_health_pb2 as ghealth

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

EXAMPLES = depth.examples(per_run=60, deep=1000, override="KUBEDRA_FUZZ_DRIVER_EXAMPLES")
FLAG_EXAMPLES = depth.examples(per_run=8, deep=100, override="KUBEDRA_FUZZ_DRIVER_EXAMPLES")
TIMEOUT = 45.0  # the kubelet's per-call timeout
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],  # each example drives a real process; it reports as drawn
)
UID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""What the API server assigns as metadata.uid; the driver refuses any other UID with INVALID_ARGUMENT."""
NODE = "fz-node"
GPUS = 3
SERVICES = {"v1": ("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", v1),
            "v1beta1": ("k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin", v1beta1)}


def _gpuconfig(sharing: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing}


CONFIG_SEEDS: list[dict[str, Any]] = [
    _gpuconfig({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}),
    _gpuconfig({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
                                                 "defaultPinnedDeviceMemoryLimit": "10Gi"}}),
    _gpuconfig({}),
    {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"},
]


# ---------------------------------------------------------------------------------------------- the driver


@dataclass
class Driver:
    plane: ControlPlane
    root: Path
    process: subprocess.Popen[bytes]
    log: Path
    namespace: str
    prepared: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # uid -> (namespace, uid, name)

    @property
    def plugin(self) -> Path:
        return self.root / "plugins" / DRIVER

    @property
    def cdi(self) -> Path:
        return self.root / "cdi"

    @property
    def socket(self) -> Path:
        return self.plugin / "dra.sock"

    def alive(self) -> None:
        assert self.process.poll() is None, f"the driver exited {self.process.returncode}:\n{self.log.read_text()[-4000:]}"


def _driver_command(root: Path, kubeconfig: Path, inventory_file: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kubedra", "driver", "--node", NODE, "--backend", "fake",
            "--inventory", str(inventory_file), "--plugin-dir", str(root / "plugins" / DRIVER),
            "--registry-dir", str(root / "registry"), "--cdi-root", str(root / "cdi"),
            "--kubeconfig", str(kubeconfig), *extra]


def _wait_for(path: Path, process: subprocess.Popen[bytes], log: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, log.read_text()[-4000:]
        assert time.monotonic() < deadline, f"no {path} after {seconds:g} s:\n{log.read_text()[-4000:]}"
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes], log: Path) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the driver did not stop within 20 s of SIGTERM:\n{log.read_text()[-4000:]}") from None


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """etcd and kube-apiserver only: the claims' allocations are written by the test, as a scheduler would."""
    with running_control_plane(only=("etcd", "kube-apiserver")) as started:
        started.create_node(NODE)
        yield started


@pytest.fixture(scope="module")
def driver(plane: ControlPlane) -> Iterator[Driver]:
    root = Path(tempfile.mkdtemp(prefix="kd-fz-", dir="/tmp"))  # unix socket paths are limited to 107 bytes
    inventory_file = root / "inventory.yaml"
    inventory_file.write_text(yaml.safe_dump(inventory(GPUS)))
    log = root / "driver.log"
    namespace = f"fz-{secrets.token_hex(3)}"
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": namespace}})
    with log.open("w") as out:
        process = subprocess.Popen(_driver_command(root, plane.kubeconfig, inventory_file), stdout=out,
                                   stderr=out, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    running = Driver(plane, root, process, log, namespace)
    try:
        _wait_for(running.socket, process, log)
        yield running
        # Everything still prepared is unprepared; then nothing may be left behind.
        if running.prepared:
            _call(running, "v1", "unprepare", list(running.prepared.values()))
        running.alive()
        leftovers = sorted(p.name for p in running.cdi.glob("*") if p.is_file())
        assert not leftovers, f"CDI specs left after unpreparing every claim: {leftovers}"
        checkpoint = decode((running.plugin / "checkpoint.json").read_bytes())  # whole, checksum and all
        assert not checkpoint.claims, sorted(checkpoint.claims)
        assert _stop(process, log) == 0, log.read_text()[-4000:]
        text = log.read_text()
        assert "Traceback" not in text, text[-6000:]
        assert "stopped; sockets removed" in text
    finally:
        if process.poll() is None:
            process.kill()
        shutil.rmtree(root, ignore_errors=True)


def _call(driver: Driver, version: str, what: str, claims: list[tuple[str, str, str]]) -> Any:
    service, module = SERVICES[version]
    method = "NodePrepareResources" if what == "prepare" else "NodeUnprepareResources"
    request_type = module.NodePrepareResourcesRequest if what == "prepare" else module.NodeUnprepareResourcesRequest
    response_type = module.NodePrepareResourcesResponse if what == "prepare" else module.NodeUnprepareResourcesResponse
    with grpc.insecure_channel(f"unix://{driver.socket}") as channel:
        call = channel.unary_unary(f"/{service}/{method}", request_serializer=request_type.SerializeToString,
                                   response_deserializer=response_type.FromString)
        request = request_type(claims=[module.Claim(namespace=ns, uid=uid, name=name) for ns, uid, name in claims])
        response = call(request, timeout=TIMEOUT)
    if what == "unprepare":
        for _ns, uid, _name in claims:
            if not response.claims[uid].error:
                driver.prepared.pop(uid, None)
    return response


def _raw(driver: Driver, version: str, method: str, payload: bytes) -> grpc.StatusCode:
    """Bytes that may be no message at all; the status the driver answers with."""
    service, _ = SERVICES[version]
    with grpc.insecure_channel(f"unix://{driver.socket}") as channel:
        call = channel.unary_unary(f"/{service}/{method}", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        try:
            call(payload, timeout=TIMEOUT)
        except grpc.RpcError as exc:
            return exc.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _health(driver: Driver) -> Any:
    with grpc.insecure_channel(f"unix://{driver.socket}") as channel:
        call = channel.unary_unary("/grpc.health.v1.Health/Check",
                                   request_serializer=ghealth.HealthCheckRequest.SerializeToString,
                                   response_deserializer=ghealth.HealthCheckResponse.FromString)
        return call(ghealth.HealthCheckRequest(), timeout=10).status


# ---------------------------------------------------------------------------------------------- what is drawn


@st.composite
def claim_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A claim to create: the devices its allocation names (mostly this node's real ones), configs (mostly none or
    valid), sometimes another pool or driver, no allocation, or a shareID."""
    good = [f"gpu-{i}" for i in range(GPUS)]
    devices = draw(st.lists(st.one_of(st.sampled_from(good), st.sampled_from(good),
                                      st.sampled_from([f"gpu-{GPUS}", "gpu-0-mig-1g5gb-0", "x", "gpu-00"])),
                            min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=3, unique=True))
    configs = []
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        parameters = [copy.deepcopy(draw(st.sampled_from(CONFIG_SEEDS)))]
        mutate(draw, parameters, draw(st.sampled_from([0, 0, 1, 2])))
        configs.append({"source": draw(st.sampled_from(["FromClaim", "FromClass"])),
                        "requests": draw(st.sampled_from([[], [], ["gpu"], ["other"]])),
                        "opaque": {"driver": draw(st.sampled_from([DRIVER, DRIVER, DRIVER, "other.example.com"])),
                                   "parameters": parameters[0]}})
    return {
        "devices": devices,
        "pool": draw(st.sampled_from([NODE] * 9 + ["other-node"])),
        "driver": draw(st.sampled_from([DRIVER] * 9 + ["other.example.com"])),
        "configs": configs,
        "allocated": draw(st.integers(0, 9)) > 0,
        "share": draw(st.integers(0, 4)) == 0,
    }


def _create_claim(plane: ControlPlane, namespace: str, spec: dict[str, Any]) -> tuple[str, str, str] | None:
    name = f"c-{secrets.token_hex(4)}"
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    try:
        created = plane.request("POST", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", body)
    except urllib.error.HTTPError:
        return None
    if spec["allocated"] and spec["devices"]:
        results = [{"request": "gpu", "driver": spec["driver"], "pool": spec["pool"], "device": d,
                    **({"shareID": secrets.token_hex(4) + "-0000-4000-8000-" + secrets.token_hex(6)}
                       if spec["share"] else {})}
                   for d in spec["devices"]]
        status = {"status": {"allocation": {"devices": {"results": results, "config": spec["configs"]}}}}
        with contextlib.suppress(urllib.error.HTTPError):  # an allocation the API refuses leaves it unallocated
            plane.request("PATCH", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}/status",
                          status, content_type="application/merge-patch+json")
    return namespace, created["metadata"]["uid"], name


_PLAIN = {"devices": ["gpu-0"], "pool": NODE, "driver": DRIVER, "configs": [], "allocated": True, "share": False}
_NO_REF = ("", "", "")


def _config(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"source": "FromClaim", "requests": [], "opaque": {"driver": DRIVER, "parameters": parameters}}


references = st.tuples(st.sampled_from(["right"] * 6 + ["wrong-uid", "missing", "random"]), st.integers(0, 10**6))


def _reference(driver: Driver, created: list[tuple[str, str, str]], how: str, index: int,
               random: tuple[str, str, str]) -> tuple[str, str, str]:
    if how == "random" or (not created and how in ("right", "wrong-uid")):
        return random
    if how == "missing":
        return driver.namespace, f"{secrets.token_hex(4)}-0000-4000-8000-{secrets.token_hex(6)}", "no-such-claim"
    namespace, uid, name = created[index % len(created)]
    return (namespace, uid, name) if how == "right" else (namespace, str(uuid.uuid4()), name)


# ---------------------------------------------------------------------------------------------- the tests


@FUZZ
@given(
    st.lists(claim_specs(), min_size=1, max_size=3),
    st.lists(st.tuples(references, st.tuples(odd_strings, odd_strings, odd_strings)), min_size=1, max_size=5),
    st.sampled_from(["v1", "v1", "v1beta1"]),
    st.sampled_from(["prepare", "prepare", "prepare", "prepare", "unprepare", "raw"]),
    st.binary(max_size=64),
)
@example([_PLAIN], [(("right", 0), _NO_REF)], "v1", "prepare", b"")  # the paths that succeed, on every run:
@example([{**_PLAIN, "devices": ["gpu-1"], "configs": [_config(CONFIG_SEEDS[0])]}], [(("right", 0), _NO_REF)], "v1",
         "prepare", b"")  # time-slicing
@example([{**_PLAIN, "devices": ["gpu-2"], "configs": [_config(CONFIG_SEEDS[1])]}], [(("right", 0), _NO_REF)],
         "v1beta1", "prepare", b"")  # MPS, through v1beta1
def test_kubelet_requests(driver: Driver, specs: list[dict[str, Any]], refs: list[Any], version: str, what: str,
                          raw: bytes) -> None:
    created = [c for c in (_create_claim(driver.plane, driver.namespace, s) for s in specs) if c is not None]
    claims = [_reference(driver, created, how, index, random) for (how, index), random in refs]
    if what == "raw":
        method = "NodePrepareResources" if raw[:1] < b"\x80" else "NodeUnprepareResources"
        code = _raw(driver, version, method, raw)
        assert code in (grpc.StatusCode.OK, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), code
        event(f"raw bytes: {code.name}")
    else:
        response, refusal = None, None
        try:
            response = _call(driver, version, what, claims)
        except ValueError:  # the client cannot encode a string that is not UTF-8: no request was sent
            refusal = (None, "not sent")
        except grpc.RpcError as exc:
            refusal = (exc.code(), exc.details())
        if refusal == (None, "not sent"):
            assert any("\ud800" <= ch <= "\udfff" for c in claims for s in c for ch in s)
        elif refusal is not None:  # a UID that is not one (it would name files) refuses the whole call
            code, details = refusal
            assert code == grpc.StatusCode.INVALID_ARGUMENT, refusal
            assert "is not a UID" in details and "no claim of this call was touched" in details, details
            assert len(details) < 600, details
            assert not all(UID.fullmatch(uid) for _, uid, _ in claims), "a call of real UIDs was refused"
            event(f"{what}: refused, a UID that is not one")
        if response is not None:
            assert all(UID.fullmatch(uid) for _, uid, _ in claims), "a UID that is not one was answered"
            assert set(response.claims) == {uid for _, uid, _ in claims}, "an entry per UID, no other"
            errors = sum(bool(response.claims[uid].error) for _, uid, _ in claims)
            event(f"{what}: {'some' if len(claims) - errors else 'no'} claim done, {'some' if errors else 'no'} error")
            if what == "prepare":
                for ns, uid, name in claims:
                    entry = response.claims[uid]
                    if refs[0][1] is _NO_REF:  # one of the examples above: it must be prepared
                        assert not entry.error, entry.error
                        assert list(driver.cdi.glob(f"*{uid}*")), f"no CDI spec for {uid}"
                    if not entry.error:
                        assert entry.devices or not any(d["devices"] for d in specs), (ns, name)
                        driver.prepared[uid] = (ns, uid, name)
    driver.alive()
    assert _health(driver) == ghealth.HealthCheckResponse.SERVING
    decode((driver.plugin / "checkpoint.json").read_bytes())  # the checkpoint is whole after every call
    for spec_file in driver.cdi.glob("*"):
        assert not spec_file.name.endswith(".tmp"), spec_file
        yaml.safe_load(spec_file.read_text())  # whole: a half-written spec would not parse
    assert not list(driver.plugin.rglob("*.tmp"))


# ---------------------------------------------------------------------------------------------- flags


flag_values = st.fixed_dictionaries({}, optional={
    "--consumable-shares": st.one_of(st.sampled_from(["4", "memory", "0", "-1", "lots", "1e3"]), odd_strings),
    "--driver-name": st.one_of(st.sampled_from([DRIVER, "Not_A_Driver", "a.b", "x" * 70]), odd_strings),
    "--resource-api-version": st.one_of(st.sampled_from(["v1", "v1beta2", "v1beta1", "v1alpha3"]), odd_strings),
    "--pod-uid": st.one_of(st.sampled_from(["abc-123", "../x", "a/b", ""]), odd_strings),
    "--node": st.one_of(st.sampled_from([NODE, "", "UPPER", "a" * 300]), odd_strings),
    "--health-port": st.sampled_from(["-1", "0", "70000", "x", "free"]),
})


@st.composite
def inventory_files(draw: st.DrawFn) -> bytes | None:
    """The fake backend's inventory: valid, mutated, not YAML, or missing (None)."""
    how = draw(st.sampled_from(["valid", "mutated", "mutated", "not-yaml", "missing"]))
    if how == "missing":
        return None
    if how == "not-yaml":
        return draw(st.sampled_from([b"gpus: [\x00", b"\xff\xfe", b"- - -", b""]))
    document = [inventory(2)]
    if how == "mutated":
        mutate(draw, document, draw(st.integers(1, 3)))
    return yaml.safe_dump(document[0]).encode()


def _log_has_error_line(text: str) -> bool:
    return any(line.startswith(("error: ", "Error: ")) for line in text.splitlines())


@settings(FUZZ, max_examples=FLAG_EXAMPLES)
@given(flag_values, inventory_files())
@example({}, b"\xff\xfe")  # found by this test: an inventory that is not UTF-8 was a traceback
@example({}, yaml.safe_dump(inventory(2)).encode())  # serves
def test_flags_and_inventories(plane: ControlPlane, flags: dict[str, str], inventory_bytes: bytes | None) -> None:
    """Exit 2 with an error line and nothing created; or serve, and stop with 0 on SIGTERM (or exit 2 by itself,
    with an error line and its sockets removed, when the API server refuses what it publishes)."""
    root = Path(tempfile.mkdtemp(prefix="kd-ff-", dir="/tmp"))
    try:
        inventory_file = root / "inventory.yaml"
        if inventory_bytes is not None:
            inventory_file.write_bytes(inventory_bytes)
        extra = [f"{flag}={free_port() if value == 'free' else value}" for flag, value in flags.items()
                 if "\x00" not in value and not any("\ud800" <= ch <= "\udfff" for ch in value)]  # argv-safe only
        command = _driver_command(root, plane.kubeconfig, inventory_file, *extra)
        log = root / "driver.log"
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=out, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            deadline = time.monotonic() + 30
            while process.poll() is None and not list((root / "registry").glob("*-reg.sock")):
                assert time.monotonic() < deadline, f"neither started nor exited in 30 s:\n{log.read_text()[-3000:]}"
                time.sleep(0.05)
            served = process.poll() is None
            if served:
                time.sleep(0.5)  # a publishing error the API server answers at once ends it now
            code = _stop(process, log) if process.poll() is None else process.returncode
            text = log.read_text()
            assert "Traceback" not in text, text[-4000:]
            event(f"{'served' if served else 'did not serve'}, exit {code}")
            raced = code == -signal.SIGTERM and "ERROR kubedra.driver" in text and "stopped; sockets removed" in text
            if raced:
                # A known race, not a hang: the driver was already stopping on an error of its own (the API server
                # refused what it publishes) when the SIGTERM came, after it had put the default handler back; the
                # signal ends it before its final "error:" line, so the logged ERROR line is the message it gave.
                code = 2
            if code != 0:
                assert code == 2, f"exit {code}:\n{text[-3000:]}"
                assert raced or _log_has_error_line(text), text[-3000:]
                if served:
                    assert not list((root / "registry").glob("*.sock")), "exit 2 with its sockets left"
                else:
                    assert not (root / "plugins").exists(), "exit 2 before serving, after creating the plugin dir"
        finally:
            if process.poll() is None:
                process.kill()
    finally:
        shutil.rmtree(root, ignore_errors=True)
