"""``kubedra driver`` as a process: flags, bad input (exit 2), an unreachable API server retried, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import yaml
from tests.controlplane.fixture import free_port
from tests.driver.conftest import Dirs
from tests.driver.helpers import DRIVER, write_inventory
from tests.driver.kubelet import Kubelet

from kubedra.cli import main
from kubedra.driver.protos import grpc_health_pb2 as ghealth


def _flags(dirs: Dirs, *extra: str) -> list[str]:
    return [
        "driver",
        "--node",
        "node-1",
        "--backend",
        "fake",
        "--plugin-dir",
        str(dirs.plugin),
        "--registry-dir",
        str(dirs.registry),
        "--cdi-root",
        str(dirs.cdi),
        *extra,
    ]


def test_a_bad_inventory_exits_2_naming_file_and_field(dirs: Dirs, capsys: pytest.CaptureFixture[str]) -> None:
    bad = dirs.root / "bad.yaml"
    bad.write_text(yaml.safe_dump({"driverVersion": "550.54.15", "cudaDriverVersion": "12.4", "gpus": [{"minor": 0}]}))
    assert main(_flags(dirs, "--inventory", str(bad))) == 2
    assert f"error: {bad}: gpus[0].uuid: required, a string" in capsys.readouterr().err
    assert not dirs.plugin.exists()  # nothing created before the input was known good


def test_an_inventory_that_is_not_utf8_exits_2(dirs: Dirs, capsys: pytest.CaptureFixture[str]) -> None:
    bad = dirs.root / "bad.yaml"
    bad.write_bytes(b"\xff\xfe gpus: []")
    assert main(_flags(dirs, "--inventory", str(bad))) == 2
    assert f"error: {bad}: not UTF-8 text: invalid start byte at byte 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--consumable-shares", "lots"], "--consumable-shares: 'lots' is neither a positive integer nor 'memory'"),
        (["--driver-name", "Not_A_Driver"], "--driver-name 'Not_A_Driver'"),
        (["--inventory", "/nonexistent.yaml"], "/nonexistent.yaml: cannot read the inventory"),
        (
            ["--resource-api-version", "v1alpha3"],
            "--resource-api-version: 'v1alpha3' is not one of v1, v1beta2, v1beta1",
        ),
    ],
)
def test_bad_flags_exit_2(dirs: Dirs, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    inventory = write_inventory(dirs.root / "inv.yaml")
    args = _flags(dirs, "--inventory", str(inventory), *extra) if "--inventory" not in extra else _flags(dirs, *extra)
    assert main(args) == 2
    assert message in capsys.readouterr().err


def _dead_kubeconfig(dirs: Dirs) -> Path:
    """``server: http://127.0.0.1:PORT`` and no credentials; nothing listens there."""
    port = free_port()
    kubeconfig = dirs.root / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {}}],
            }
        )
    )
    return kubeconfig


@pytest.mark.slow
def test_runs_without_an_api_server_and_stops_on_sigterm(dirs: Dirs) -> None:
    """A kubeconfig whose API server does not answer: the driver serves the kubelet anyway, retries publishing with
    backoff, and exits 0 on SIGTERM with its sockets gone."""
    kubeconfig = _dead_kubeconfig(dirs)
    health_port = free_port()
    inventory = write_inventory(dirs.root / "inv.yaml")
    log = dirs.root / "driver.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubedra",
                *_flags(
                    dirs,
                    "--inventory",
                    str(inventory),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--health-port",
                    str(health_port),
                ),
            ],
            stdout=out,
            stderr=out,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + 20
        while not (dirs.registry / f"{DRIVER}-reg.sock").exists():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        kubelet = Kubelet(dirs.registry)
        assert kubelet.register_all()[DRIVER].info.endpoint == str(dirs.plugin / "dra.sock")
        assert kubelet.health_check(f"127.0.0.1:{health_port}").status == ghealth.HealthCheckResponse.SERVING
        kubelet.close()
        while log.read_text().count("publishing ResourceSlices failed") < 2:
            assert time.monotonic() < deadline + 10, log.read_text()
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert "retrying in 0.5s" in text
    assert "retrying in 1.0s" in text
    assert "stopped; sockets removed" in text
    assert not (dirs.plugin / "dra.sock").exists()
    assert not (dirs.registry / f"{DRIVER}-reg.sock").exists()
    assert (dirs.plugin / "checkpoint.json").exists()


def test_the_advertised_endpoint_is_absolute(monkeypatch: pytest.MonkeyPatch, dirs: Dirs) -> None:
    from kubedra.driver.plugin import DriverOptions

    monkeypatch.chdir(dirs.root)
    options = DriverOptions(node="n", plugin_dir=Path("plugins/x"), registry_dir=Path("registry"))
    assert options.dra_socket == dirs.root / "plugins" / "x" / "dra.sock"
    assert options.registration_socket == dirs.root / "registry" / "gpu.nvidia.com-reg.sock"
    assert DriverOptions(node="n").dra_socket == Path("/var/lib/kubelet/plugins/gpu.nvidia.com/dra.sock")


def test_pod_uid_names_the_sockets_as_the_kubelet_plugin_helper_does(dirs: Dirs) -> None:
    """RollingUpdate(uid): ``<driver>-<uid>-reg.sock`` and ``dra-<uid>.sock``; too long for AF_UNIX, the helper's
    hashed fallbacks (values computed as RollingUpdateRegistrarSocketFile computes them: base64url, no padding)."""
    import base64
    import hashlib

    from kubedra.driver.plugin import DriverOptions, rolling_update_registration_socket

    uid = "0f4b2a6c-1111-4222-8333-444455556666"
    options = DriverOptions(node="n", plugin_dir=dirs.plugin, registry_dir=dirs.registry, pod_uid=uid)
    assert options.registration_socket == dirs.registry / f"{DRIVER}-{uid}-reg.sock"
    assert options.dra_socket == dirs.plugin / f"dra-{uid}.sock"
    short = base64.urlsafe_b64encode(hashlib.sha256(uid.encode()).digest()[:8]).decode().rstrip("=")
    deep = Path("/" + "r" * 50)
    assert rolling_update_registration_socket(deep, DRIVER, uid) == deep / f"{DRIVER}-{short}-reg.sock"
    deeper = Path("/" + "r" * 80)
    hashed = hashlib.sha256(f"{DRIVER}\0{uid}".encode()).digest()[:16]
    assert rolling_update_registration_socket(deeper, DRIVER, uid) == deeper / (
        "dra-" + base64.urlsafe_b64encode(hashed).decode().rstrip("=") + "-reg.sock"
    )


def test_a_bad_pod_uid_exits_2(dirs: Dirs, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = write_inventory(dirs.root / "inv.yaml")
    assert main(_flags(dirs, "--inventory", str(inventory), "--pod-uid", "../x")) == 2
    assert "--pod-uid '../x': not a pod UID" in capsys.readouterr().err


@pytest.mark.slow
def test_streaming_health_watchers_do_not_starve_the_liveness_probe(dirs: Dirs) -> None:
    """A burst of idle connections and health Watch streams on --health-port: the liveness probe's Check still
    answers at once (extra Watch streams are refused with RESOURCE_EXHAUSTED, never queued behind the others)."""
    health_port = free_port()
    flags = _flags(dirs, "--inventory", str(write_inventory(dirs.root / "inv.yaml")))
    flags += ["--kubeconfig", str(_dead_kubeconfig(dirs)), "--health-port", str(health_port)]
    log = dirs.root / "driver.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "kubedra", *flags], stdout=out, stderr=out)
    channels: list[grpc.Channel] = []
    try:
        deadline = time.monotonic() + 20
        while not (dirs.registry / f"{DRIVER}-reg.sock").exists():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        target = f"127.0.0.1:{health_port}"
        for _ in range(20):  # idle: connected, no call
            channel = grpc.insecure_channel(target)
            grpc.channel_ready_future(channel).result(timeout=10)
            channels.append(channel)
        streams = []
        for _ in range(10):
            channel = grpc.insecure_channel(target)
            channels.append(channel)
            watch = channel.unary_stream(
                "/grpc.health.v1.Health/Watch",
                request_serializer=ghealth.HealthCheckRequest.SerializeToString,
                response_deserializer=ghealth.HealthCheckResponse.FromString,
            )
            streams.append(watch(ghealth.HealthCheckRequest(), timeout=60))
        time.sleep(1.0)  # every stream reached the server
        # A Check while every worker holds a stream: answered (its own 10 s deadline fails the test otherwise).
        assert Kubelet(dirs.registry).health_check(target).status == ghealth.HealthCheckResponse.SERVING
        outcomes = []
        for stream in streams:
            try:
                outcomes.append(ghealth.HealthCheckResponse.ServingStatus.Name(next(stream).status))
            except grpc.RpcError as exc:
                outcomes.append(exc.code().name)
        assert set(outcomes) == {"SERVING", "RESOURCE_EXHAUSTED"}, outcomes
        for stream in streams:
            stream.cancel()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0, log.read_text()
    finally:
        for channel in channels:
            channel.close()
        if process.poll() is None:
            process.kill()
