"""DRAExtendedResource on the real kube-scheduler v1.37.2, for every release and gate the CLI offers: the scheduler
started with ``--emulated-version`` (1.34 to 1.37) and ``--feature-gates DRAExtendedResource=false`` (1.36, where
the gate is beta; 1.37 locks it on) decides the ``kep5004-gate`` scenario as kubedra does with the same
``--kubernetes-version`` and ``--feature-gates``: the pod runs on a special claim, or stays pending with the same
message."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube import vs_kube_scheduler as vs

from kubedra.allocator import Features
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

pytestmark = pytest.mark.controlplane

CASES = {  # name: (scheduler flags, kubedra's features)
    "1.34": (["--emulated-version=1.34", "--min-compatibility-version=1.34"], Features.for_release("1.34")),
    "1.35": (["--emulated-version=1.35", "--min-compatibility-version=1.34"], Features.for_release("1.35")),
    "1.36": (["--emulated-version=1.36", "--min-compatibility-version=1.34"], Features.for_release("1.36")),
    "1.36-gate-off": (["--emulated-version=1.36", "--min-compatibility-version=1.34",
                       "--feature-gates=DRAExtendedResource=false"],
                      Features.for_release("1.36").with_gates({"DRAExtendedResource": False})),
    "1.37": ([], Features.for_release("1.37")),
}


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("extended-gate")) as started:
        yield started


def _real(plane: ControlPlane, flags: list[str], docs: list[dict[str, Any]], namespace: str) -> tuple[bool, str]:
    scheduler = plane.components["kube-scheduler"]
    base = list(scheduler.args)
    vs._stop_scheduler(plane)
    scheduler.args = [*base, *flags]
    try:
        vs._start_scheduler(plane)
        plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": namespace}})
        for doc in sorted(docs, key=lambda d: vs.KIND_ORDER.index(d["kind"])):
            plane.request("POST", vs._path(doc), vs._for_api(doc, {}))
        path = f"/api/v1/namespaces/{namespace}/pods/p"

        def decided() -> dict[str, Any] | None:
            pod: dict[str, Any] = plane.get(path)
            return pod if vs._decided(pod) else None

        pod = plane.wait_for(decided, timeout=60, what="pod p scheduled or unschedulable")
        message = next((c.get("message", "") for c in pod.get("status", {}).get("conditions", [])
                        if c.get("type") == "PodScheduled" and c.get("status") == "False"), "")
        return bool(pod["spec"].get("nodeName")), message
    finally:
        vs._clean_up(plane, namespace, docs)
        vs._stop_scheduler(plane)
        scheduler.args = base
        vs._start_scheduler(plane)


def _kubedra(docs: list[dict[str, Any]], features: Features) -> tuple[bool, str]:
    result = prepare(build_scenario(load_text(yaml.safe_dump_all(docs))), Options(features=features)).run()
    (record,) = result.state.pods.values()
    return bool(record.pod.spec.node_name), record.pending_reason


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_gate_decides_alike_on_the_real_scheduler(plane: ControlPlane, case: str) -> None:
    flags, features = CASES[case]
    scenario = next(s for s in vs.load_scenarios() if s.name == "kep5004-gate")
    tag = secrets.token_hex(3)
    namespace = f"gate-{tag}"
    docs = vs.prepare(scenario.docs, namespace, f"s{tag}.{vs.DRIVER}")
    for doc in docs:  # cluster-scoped names of their own, so runs never meet
        if doc["kind"] in ("DeviceClass", "ResourceSlice"):
            doc["metadata"]["name"] = f"{doc['metadata']['name']}-{tag}"
    placed, message = _real(plane, flags, docs, namespace)
    # The whole message, PostFilter's " preemption: ..." part included (kubedra writes it as DefaultPreemption does).
    assert (placed, message) == _kubedra(docs, features)
    real = (placed, message)
    assert real[0] == features.extended_resource  # the comparison is not empty either way
