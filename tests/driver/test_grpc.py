"""The wire contract with a kubelet emulator over real gRPC on unix sockets."""

from __future__ import annotations

import stat
import time

import grpc
import pytest
from tests.driver.conftest import Dirs, Served
from tests.driver.helpers import DRIVER, claim
from tests.driver.kubelet import Kubelet

from kubedra.driver import grpcservice
from kubedra.driver.protos import grpc_health_pb2 as ghealth

OLD_UID = "00000000-0000-4000-8000-00000000cccc"  # the UID a replaced claim had


def test_registration_advertises_the_services_and_the_endpoint(served: Served, dirs: Dirs) -> None:
    info = served.kubelet.plugins[DRIVER].info
    assert info.type == "DRAPlugin"
    assert info.name == DRIVER
    assert info.endpoint == str(dirs.plugin / "dra.sock")
    assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"]
    assert served.kubelet.plugins[DRIVER].service == "v1.DRAPlugin"
    assert served.registration.registered is True


def test_sockets_are_0600(served: Served, dirs: Dirs) -> None:
    for path in (dirs.plugin / "dra.sock", dirs.registry / f"{DRIVER}-reg.sock"):
        mode = path.stat().st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600


def test_a_stale_socket_is_replaced(dirs: Dirs) -> None:
    path = dirs.registry / "x-reg.sock"
    path.parent.mkdir(parents=True)
    path.write_text("left by a killed run")
    server = grpcservice.unix_server(
        path, [grpcservice.registration_handler("x", "/nowhere", grpcservice.RegistrationState())]
    )
    try:
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert Kubelet(dirs.registry).register_all()["x"].info.name == "x"
    finally:
        server.stop(grace=None)


def test_a_refused_registration_is_recorded(dirs: Dirs) -> None:
    state = grpcservice.RegistrationState()
    path = dirs.registry / "x-reg.sock"
    server = grpcservice.unix_server(path, [grpcservice.registration_handler("x", "/nowhere", state)])
    try:
        with pytest.raises(grpc.RpcError) as info:
            Kubelet(dirs.registry).register_all(accept=False)
        assert "plugin registration failed: refused by test" in info.value.details()
    finally:
        server.stop(grace=None)
    assert state.registered is False
    assert state.error == "refused by test"


def test_prepare_and_unprepare_over_v1(served: Served, dirs: Dirs) -> None:
    ref = served.claims.add(claim("a", ["gpu-1"]))
    response = served.kubelet.prepare(DRIVER, [ref])
    entry = response.claims[ref[1]]
    assert entry.error == ""
    [device] = entry.devices
    assert (list(device.request_names), device.pool_name, device.device_name) == (["gpu"], "node-1", "gpu-1")
    assert list(device.cdi_device_ids) == [f"k8s.gpu.nvidia.com/claim={ref[1]}-gpu-1"]
    assert not device.HasField("share_id")
    assert (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{ref[1]}.yaml").exists()
    assert served.kubelet.unprepare(DRIVER, [ref]).claims[ref[1]].error == ""
    assert not (dirs.cdi / f"k8s.gpu.nvidia.com-claim_{ref[1]}.yaml").exists()


def test_share_id_travels_over_v1(served: Served) -> None:
    ref = served.claims.add(claim("a", ["gpu-0"], share_ids={"gpu-0": "2f6a4c1e-aaaa-4000-8000-000000000001"}))
    [device] = served.kubelet.prepare(DRIVER, [ref]).claims[ref[1]].devices
    assert device.share_id == "2f6a4c1e-aaaa-4000-8000-000000000001"


def test_a_v1beta1_kubelet_is_served_on_the_same_socket(served: Served, dirs: Dirs) -> None:
    old = Kubelet(dirs.registry, prefer=("v1beta1.DRAPlugin",))
    old.register_all()
    try:
        ref = served.claims.add(claim("a", ["gpu-0"]))
        response = old.prepare(DRIVER, [ref])
        assert old.plugins[DRIVER].service == "v1beta1.DRAPlugin"
        assert [d.device_name for d in response.claims[ref[1]].devices] == ["gpu-0"]
        assert old.unprepare(DRIVER, [ref]).claims[ref[1]].error == ""
    finally:
        old.close()


def test_one_bad_claim_is_an_error_in_the_map_not_a_failed_call(served: Served) -> None:
    good = served.claims.add(claim("good", ["gpu-0"]))
    unallocated = served.claims.add(claim("pending", allocated=False))
    elsewhere = served.claims.add(claim("elsewhere", ["gpu-1"], node="node-2"))
    missing = ("default", "00000000-0000-4000-8000-00000000aaaa", "missing")
    replaced = served.claims.add(claim("replaced", ["gpu-1"]))
    response = served.kubelet.prepare(
        DRIVER, [good, unallocated, elsewhere, missing, (replaced[0], OLD_UID, replaced[2])]
    )
    errors = {uid: e.error for uid, e in response.claims.items()}
    assert errors == {
        good[1]: "",
        unallocated[1]: "claim default/pending not allocated",
        elsewhere[1]: "claim default/elsewhere: no device is allocated by driver gpu.nvidia.com on node node-1",
        missing[1]: 'retrieve claim default/missing: resourceclaims.resource.k8s.io "missing" not found',
        OLD_UID: "claim default/replaced got replaced",
    }


def test_unprepare_has_an_entry_for_every_claim_and_is_idempotent(served: Served) -> None:
    ref = served.claims.add(claim("a", ["gpu-0"]))
    served.kubelet.prepare(DRIVER, [ref])
    never = ("default", "00000000-0000-4000-8000-00000000bbbb", "b")
    for _ in range(2):
        response = served.kubelet.unprepare(DRIVER, [ref, never])
        assert {uid: e.error for uid, e in response.claims.items()} == {ref[1]: "", never[1]: ""}


def test_health_stream_sends_the_full_list_then_changes(served: Served) -> None:
    thread, reports = served.kubelet.watch_health_async(DRIVER, 2)
    deadline = time.monotonic() + 10
    while not reports and time.monotonic() < deadline:
        time.sleep(0.01)
    served.driver.set_health("gpu-1", False, "XID 79: GPU has fallen off the bus")
    thread.join(timeout=10)
    first, second = reports
    assert [(d.device.pool_name, d.device.device_name, d.health) for d in first.devices] == [
        ("node-1", "gpu-0", 1),
        ("node-1", "gpu-1", 1),
    ]
    assert [(d.device.device_name, d.health, d.message) for d in second.devices] == [
        ("gpu-0", 1, ""),
        ("gpu-1", 2, "XID 79: GPU has fallen off the bus"),
    ]


def test_grpc_health_service(served: Served, dirs: Dirs) -> None:
    target = f"unix://{dirs.plugin / 'dra.sock'}"
    assert served.kubelet.health_check(target).status == ghealth.HealthCheckResponse.SERVING
    assert (
        served.kubelet.health_check(target, "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin").status
        == ghealth.HealthCheckResponse.SERVING
    )
    with pytest.raises(grpc.RpcError) as info:
        served.kubelet.health_check(target, "no.such.Service")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_is_not_serving_when_the_registration_socket_is_gone(served: Served, dirs: Dirs) -> None:
    served.servers[1].stop(grace=None)  # type: ignore[attr-defined]
    target = f"unix://{dirs.plugin / 'dra.sock'}"
    assert served.kubelet.health_check(target).status == ghealth.HealthCheckResponse.NOT_SERVING


def test_a_rediscovered_unhealthy_gpu_is_one_health_report(served: Served) -> None:
    from tests.driver.helpers import inventory

    from kubedra.driver.inventory import parse_inventory

    thread, reports = served.kubelet.watch_health_async(DRIVER, 2)
    deadline = time.monotonic() + 10
    while not reports and time.monotonic() < deadline:
        time.sleep(0.01)
    data = inventory(3)
    data["gpus"][1]["healthy"] = False
    served.driver.update_inventory(parse_inventory(data, "inv.yaml"))
    thread.join(timeout=10)
    assert [(d.device.device_name, d.health) for d in reports[1].devices] == [("gpu-0", 1), ("gpu-1", 2), ("gpu-2", 1)]


@pytest.mark.parametrize("uid", ["../x", "/", "", "a" * 300])
def test_a_path_like_claim_uid_is_an_invalid_argument(served: Served, dirs: Dirs, uid: str) -> None:
    """A kubelet (or anything on the socket) sending a UID that is not one gets INVALID_ARGUMENT naming the claim;
    nothing is prepared or removed."""
    victim = dirs.root / "x.yaml"
    victim.write_text("not the driver's")
    good = served.claims.add(claim("good", ["gpu-0"]))
    bad = served.claims.add(claim("bad", ["gpu-1"], uid=uid))
    for call in (served.kubelet.prepare, served.kubelet.unprepare):
        with pytest.raises(grpc.RpcError) as refused:
            call(DRIVER, [good, bad])
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details().startswith("claim default/bad: UID ")
        assert "is not a UID" in refused.value.details() and len(refused.value.details()) < 400
    assert served.driver.prepared_devices() == {}
    assert victim.read_text() == "not the driver's"
    assert list(dirs.cdi.iterdir()) == []


def test_health_watch_streams_are_capped_and_end_by_themselves() -> None:
    """One slot: the second Watch is refused at once (RESOURCE_EXHAUSTED), the first ends after its time limit
    (a health client re-watches), and its slot is free again."""
    handler = grpcservice.health_handler(lambda: True, max_watchers=1, watch_limit=0.5)
    server, port = grpcservice.tcp_server(0, [handler], host="127.0.0.1")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            watch = channel.unary_stream(
                "/grpc.health.v1.Health/Watch",
                request_serializer=ghealth.HealthCheckRequest.SerializeToString,
                response_deserializer=ghealth.HealthCheckResponse.FromString,
            )
            first = watch(ghealth.HealthCheckRequest(), timeout=10)
            assert next(first).status == ghealth.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as refused:
                next(watch(ghealth.HealthCheckRequest(), timeout=10))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "at most 1 health Watch streams at once" in refused.value.details()
            assert list(first) == []  # ended by the server, status OK (its 10 s deadline would raise instead)
            again = watch(ghealth.HealthCheckRequest(), timeout=10)
            assert next(again).status == ghealth.HealthCheckResponse.SERVING
            again.cancel()
    finally:
        server.stop(grace=None)


def test_bytes_that_are_no_message_are_refused_in_one_line(
    served: Served, dirs: Dirs, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by tests/driver/test_fuzz_driver.py: grpc logged a traceback for the caller's corrupt message."""
    with grpc.insecure_channel(f"unix://{dirs.plugin / 'dra.sock'}") as channel:
        call = channel.unary_unary(
            f"/{grpcservice.DRA_V1_SERVICE}/NodePrepareResources",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.RpcError) as refused:
            call(b"\x0a\xff\xff", timeout=10)
    assert refused.value.code() == grpc.StatusCode.INTERNAL
    assert [r.exc_info for r in caplog.records if r.exc_info] == []
    assert any("refused a request that is not a k8s.io.kubelet.pkg.apis.dra.v1.NodePrepareResourcesRequest" in r.message
               for r in caplog.records)
    assert served.kubelet.prepare(DRIVER, []).claims == {}  # still serving
