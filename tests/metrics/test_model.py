"""The metric families of a simulated cluster: semantics, incremental upkeep, and the exposition."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from pathlib import Path

import msgspec
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.sim.fixtures.scenarios import nodepool, text_of

from kubedra.allocator import Features
from kubedra.metrics.embedded import StateSource
from kubedra.metrics.model import DraMetrics
from kubedra.metrics.serve import MetricsServer, parse_listen, registry_for
from kubedra.objects.load import load_paths, load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare, simulate

ROOT = Path(__file__).resolve().parents[2]
EXHAUSTED = ROOT / "examples" / "monitoring" / "exhausted.yaml"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def _of(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> list[float]:
    return [v for (n, lv), v in samples.items() if n == name and all((k, x) in lv for k, x in labels.items())]


def _final(paths: list[str]) -> tuple[DraMetrics, object]:
    result = simulate(build_scenario(load_paths(paths)), Options())
    model = DraMetrics(Features.for_release())
    model.update(result.state)
    return model, result


def test_pending_and_allocated_claims_of_the_exhausted_example() -> None:
    model, _ = _final([str(EXHAUSTED)])
    samples = _samples(model.render())
    pending = _of(samples, "kube_resourceclaim_pending", resource_class="gpu.nvidia.com")
    allocated = _of(samples, "kube_resourceclaim_allocated", resource_class="gpu.nvidia.com")
    assert (len(pending), sum(pending)) == (13, 11)
    assert (len(allocated), sum(allocated)) == (13, 2)
    assert _of(samples, "node_dra_resource_available", node="small-0", resource_class="gpu.nvidia.com",
               attribute="devices") == [0.0]
    assert samples[("dynamic_resource_allocation_resource_claims",
                    (("admin_access", "false"), ("allocated", "false"), ("source", "resource_claim_template")))] == 11
    assert len(_of(samples, "kube_resourceclaim_allocation_device_info", namespace="training")) == 2
    assert len(_of(samples, "kube_pod_resourceclaim_info", namespace="training", pod_claim="gpu")) == 13


def test_available_devices_and_shares_follow_the_allocator() -> None:
    """The demo: the shared node has 4 GPUs of 4 shares, 5 inference claims hold a share each (4 on gpu-0)."""
    model, _ = _final([str(ROOT / "src/kubedra/data/seed"), str(ROOT / "src/kubedra/data/demo")])
    samples = _samples(model.render())
    node = {"node": "a100-shared-0", "resource_class": "shared-gpu-config"}
    assert _of(samples, "node_dra_resource_available", attribute="devices", **node) == [3.0]  # gpu-0's shares all used
    assert _of(samples, "node_dra_resource_available", attribute="shares", **node) == [11.0]  # 3 on gpu-1, 4 + 4
    assert _of(samples, "node_dra_resource_available", attribute="memory", **node) == [3 * 40 * 2**30]
    assert _of(samples, "node_dra_resource_capacity", attribute="devices", **node) == [4.0]
    assert _of(samples, "node_dra_resource_capacity", attribute="shares", **node) == [16.0]
    # The trainer holds one H100 GPU: 7 left there for the default class.
    trainer = [lv for (n, lv), v in samples.items() if n == "kube_resourceclaim_allocation_device_info"
               and ("resourceclaim", "my-gpu-claim") in lv]
    pool = dict(trainer[0])["pool"]
    assert _of(samples, "node_dra_resource_available", node=pool, resource_class="gpu.nvidia.com",
               attribute="devices") == [7.0]


TAINTED = text_of(nodepool("n", gpus=4, model="H100-80GB", mig=True)) + """---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: broken}
spec:
  deviceSelector: {driver: gpu.nvidia.com, pool: n-0, device: gpu-3}
  taint: {key: broken, effect: NoSchedule}
"""


def test_taints_and_counters_are_respected() -> None:
    """A tainted GPU is not free; a GPU whose counter set is taken by a MIG device is not free either."""
    scenario = build_scenario(load_text(TAINTED, source="t.yaml"))
    sim = prepare(scenario, Options())
    model = DraMetrics(Features.for_release())
    model.update(sim.state)
    samples = _samples(model.render())
    assert _of(samples, "node_dra_resource_available", resource_class="gpu.nvidia.com", attribute="devices") == [3.0]
    mig_before = _of(samples, "node_dra_resource_available", resource_class="mig.nvidia.com", attribute="devices")
    assert mig_before and mig_before[0] > 0


ENDING = text_of(nodepool("e", count=2, gpus=2, model="A100-80GB", shares=2)) + """---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {kubedra.io/run-for: 30m}}
spec:
  replicas: 7
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {kubedra.io/run-for: 30m}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one}]
      containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: late, annotations: {kubedra.io/start-after: 10m, kubedra.io/run-for: 1h}}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: shared}]
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}
"""


@pytest.mark.parametrize("inputs", ["demo", "paced", "ending"])
def test_incremental_update_equals_a_fresh_computation(inputs: str) -> None:
    """Stepping the simulation and updating one model gives what a new model computes on each state: pods that
    arrive, run, succeed or are deleted, claims made, allocated, released and deleted."""
    if inputs == "demo":
        loaded = load_paths([str(ROOT / "src/kubedra/data/seed"), str(ROOT / "src/kubedra/data/demo")])
    else:
        loaded = load_text(PACED if inputs == "paced" else ENDING, source=f"{inputs}.yaml")
    sim = prepare(build_scenario(loaded), Options())
    model = DraMetrics(Features.for_release())
    seen: list[str] = []

    def check(_done: int, _total: int) -> None:
        model.update(sim.state)
        fresh = DraMetrics(Features.for_release())
        fresh.update(sim.state)
        assert model.render() == fresh.render()
        seen.append(model.render())

    sim.run(check)
    assert len(set(seen)) > 1  # the state did change between instants


def test_a_claim_released_frees_its_device_again() -> None:
    model, result = _final([str(EXHAUSTED)])
    state = result.state  # type: ignore[attr-defined]
    key = next(k for k, c in state.claims.items() if c.status.allocation is not None)
    claim = state.claims[key]
    status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=[])
    state.put_claim(msgspec.structs.replace(claim, status=status))
    model.update(state)
    samples = _samples(model.render())
    assert _of(samples, "node_dra_resource_available", node="small-0", resource_class="gpu.nvidia.com",
               attribute="devices") == [1.0]


def test_fast_text_is_what_the_registry_exposes() -> None:
    """The per-object text cache and prometheus-client's own exposition of the same families agree exactly."""
    import threading

    result = simulate(build_scenario(load_paths([str(ROOT / "src/kubedra/data/seed"),
                                                 str(ROOT / "src/kubedra/data/demo")])), Options())
    source = StateSource(result.state, Features.for_release(), threading.Lock(), clock=lambda: 12.5)
    assert source.text() == generate_latest(registry_for(source)).decode()


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_check_metrics_accepts_the_exposition() -> None:
    model, _ = _final([str(ROOT / "src/kubedra/data/seed"), str(ROOT / "src/kubedra/data/demo"), str(EXHAUSTED)])
    checked = subprocess.run(["promtool", "check", "metrics"], input=model.render(), capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_server_serves_metrics_and_404s_the_rest() -> None:
    import threading

    result = simulate(build_scenario(load_paths([str(EXHAUSTED)])), Options())
    source = StateSource(result.state, Features.for_release(), threading.Lock())
    server = MetricsServer(source, "127.0.0.1", 0).start()
    try:
        host, port = server.address
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
            body = response.read().decode()
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "kubedra_simulation_time_seconds 0.0" in body
        assert sum(_of(_samples(body), "kube_resourceclaim_pending")) == 11
        with pytest.raises(urllib.error.HTTPError, match="404") as missing:
            urllib.request.urlopen(f"http://{host}:{port}/nothing", timeout=10)
        missing.value.close()
    finally:
        server.stop()


@pytest.mark.parametrize(("text", "expected"), [("127.0.0.1:9400", ("127.0.0.1", 9400)), (":80", ("0.0.0.0", 80)),
                                                ("[::1]:9", ("::1", 9))])
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["9400", "host:", "h:99999", "h:x"])
def test_bad_listen_addresses_say_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_listen(text)


PACED = text_of(nodepool("p", model="A100-80GB")) + """---
apiVersion: batch/v1
kind: Job
metadata: {name: steps, annotations: {kubedra.io/run-for: 1h}}
spec:
  completions: 3
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one}]
      containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
"""


def test_a_paced_run_lets_scrapes_see_time_advance() -> None:
    """With --speed the run waits for the wall clock without the lock: scrapes in between see each instant."""
    import threading

    from kubedra.metrics.embedded import run_paced

    sim = prepare(build_scenario(load_text(PACED, source="paced.yaml")), Options())
    lock = threading.Lock()
    source = StateSource(sim.state, Features.for_release(), lock, clock=lambda: sim.now)
    clock = [0.0]
    seen: list[tuple[float, float]] = []

    def sleep(seconds: float) -> None:
        assert seconds > 0
        samples = _samples(source.text())  # would deadlock if the run kept the lock while waiting
        seen.append((samples[("kubedra_simulation_time_seconds", ())], sum(_of(samples, "kube_resourceclaim_pending"))))
        clock[0] += seconds

    run_paced(sim, lock, speed=3600.0, sleep=sleep, monotonic=lambda: clock[0])
    assert seen == [(0.0, 2.0), (3600.0, 1.0), (7200.0, 0.0)]
    assert clock[0] == pytest.approx(3.0)  # three simulated hours at an hour per second


def test_simulate_serve_on_a_busy_port_exits_2_before_running(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from kubedra.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["simulate", "-q", "-f", str(EXHAUSTED), "--serve", "--listen", f"127.0.0.1:{port}"])
    out, err = capsys.readouterr()
    assert code == 2
    assert f"error: --listen 127.0.0.1:{port}:" in err
    assert out == ""


def test_fragmentation_is_served_per_pool_and_model_and_moves_with_the_run() -> None:
    """Seven 2-GPU nodes each with one GPU held, then three 2-GPU pods: seven GPUs free and all stranded once they
    wait (the report's known answer), served as gauges; before the waiting pods arrive nothing is stranded."""
    import threading

    from tests.sim.fixtures.scenarios import claim_template, pod

    from kubedra.metrics.embedded import run_paced

    docs = [nodepool("t4", count=7, gpus=2, model="T4"), claim_template("one", count=1),
            claim_template("two", count=2)]
    docs += [pod(f"one-{i}", template="one", nodeName=f"t4-{i}") for i in range(7)]
    docs += [pod(f"two-{i}", template="two", start_after="1h") for i in range(3)]
    sim = prepare(build_scenario(load_text(text_of(*docs), source="frag.yaml")), Options())
    lock = threading.Lock()
    source = StateSource(sim.state, Features.for_release(), lock, clock=lambda: sim.now,
                         fragmentation=sim.fragmentation_now)
    seen: list[tuple[float, ...]] = []
    labels = {"pool": "t4", "model": "Tesla T4"}

    def sleep(_seconds: float) -> None:
        samples = _samples(source.text())
        seen.append(tuple(_of(samples, name, **labels)[0] for name in (
            "kubedra_simulation_gpus_free", "kubedra_simulation_gpus_usable", "kubedra_simulation_gpus_stranded")))

    run_paced(sim, lock, speed=3600.0, sleep=sleep, monotonic=lambda: 0.0)
    samples = _samples(source.text())
    assert seen == [(7.0, 0.0, 0.0)]  # at 0 s: the seven single GPUs free, nothing waiting
    assert _of(samples, "kubedra_simulation_gpus_stranded", **labels) == [7.0]
    assert _of(samples, "kubedra_simulation_pods_pending") == [3.0]
    assert _of(samples, "kubedra_simulation_fragmentation_gpus", **labels)[0] > 0
