"""A pod group's back-off against the real kube-scheduler v1.37.2 (GenericWorkload on): a failed group waits in the
backoff queue, where no event moves it, for 1 s doubled per failed cycle, at most 10 s times the square root of its
size (``calculateBackoffDuration``), so a gang of 4 backs off up to 20 s where a pod backs off 10 s at most.

On a node with 4 CPUs a ``holder`` pod takes one; a gang of 4 one-CPU pods (minCount 4) fails, and is retried in vain
at the end of each back-off. The cases are laid out on the scheduler's own counter of the group's failed cycles
(``scheduler_podgroup_schedule_attempts_total{result="unschedulable"}``): once its 5th cycle fails (T5) it backs off
16 s (to the second) where a pod would back off 10 s. The holder is deleted at T5 + 12 s, and a single one-CPU pod
``solo`` is created ``solo_after`` s after T5: whichever of it and the gang is tried first once the holder has gone
takes the room, the other stays pending.

kubedra simulates the same timeline: the members arrive at 5 s and its T5 follows from its own back-off
(``gang_backoff``); it must bind the same pods as the real scheduler.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane

from kubedra.allocator import Features
from kubedra.objects.load import load_text
from kubedra.sim.queue import backoff_until
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane

GATES = "GenericWorkload=true"
SIZE = 4
FAILURES = 5  # the gang's failed cycles before T5's back-off: 16 s, over a pod's 10 s cap
HOLDER_GONE = 12.0  # after T5
FAILED_CYCLES = 'scheduler_podgroup_schedule_attempts_total{'
MEMBERS = tuple(f"w{i}" for i in range(SIZE))


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(
        tmp_path_factory.mktemp("gang-backoff"),
        only=("etcd", "kube-apiserver", "kube-scheduler"),
        apiserver_args=["--runtime-config", "scheduling.k8s.io/v1beta1=true"],
        feature_gates=GATES,
    ) as started:
        yield started


def _failed_cycles(plane: ControlPlane) -> float:
    """The pod-group cycles the scheduler found unschedulable so far (its metric, over every profile)."""
    return plane.scheduler_metrics(FAILED_CYCLES, 'result="unschedulable"')


def _pod(name: str, node: str, namespace: str, group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _pod_group(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": SIZE}}}}


def _bound(plane: ControlPlane, names: tuple[str, ...], namespace: str) -> list[str]:
    return [n for n in names if plane.get(f"/api/v1/namespaces/{namespace}/pods/{n}")["spec"].get("nodeName")]


def real_bound(plane: ControlPlane, solo_after: float) -> list[str]:
    namespace = plane.create_namespace("gang-backoff")
    node = f"{namespace}-n"
    plane.create_node(node, cpu=str(SIZE), memory="16Gi", pods="20")
    plane.create(_pod("holder", node, namespace))
    plane.wait_for(lambda: _bound(plane, ("holder",), namespace), what="the holder to be bound")
    before = _failed_cycles(plane)
    plane.request("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups",
                  _pod_group("train", namespace))
    for name in MEMBERS:
        plane.create(_pod(name, node, namespace, group="train"))
    plane.wait_for(lambda: _failed_cycles(plane) >= before + FAILURES, timeout=60.0, interval=0.05,
                   what=f"the gang's {FAILURES}th failed cycle")
    t5 = time.monotonic()
    assert _failed_cycles(plane) == before + FAILURES
    time.sleep(max(0.0, t5 + HOLDER_GONE - time.monotonic()))
    plane.delete_pod("holder", namespace)
    time.sleep(max(0.0, t5 + solo_after - time.monotonic()))
    plane.create(_pod("solo", node, namespace))
    everyone = (*MEMBERS, "solo")
    plane.wait_for(lambda: _bound(plane, everyone, namespace), timeout=60.0, what="pods to take the room")
    time.sleep(3.0)  # the other side's next try, failing
    bound = _bound(plane, everyone, namespace)
    for name in everyone:
        plane.delete_pod(name, namespace)
    return bound


def t5_in_kubedra(arrive: float) -> float:
    """When the gang arriving at ``arrive`` fails its 5th cycle in kubedra: each retry at the first second after the
    end of the back-off before it."""
    at = arrive
    for failures in range(1, FAILURES):
        at = backoff_until(at, failures, SIZE) + 1.0
    return at


def kubedra_bound(solo_after: float) -> list[str]:
    arrive = 5.0
    t5 = t5_in_kubedra(arrive)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}},
            "status": {"allocatable": {"cpu": str(SIZE), "memory": "16Gi", "pods": "20"},
                       "capacity": {"cpu": str(SIZE), "memory": "16Gi", "pods": "20"}}}
    documents = [
        node, _pod_group("train", "default"),
        _timed(_pod("holder", "n", "default"), run_for=t5 + HOLDER_GONE),
        *(_timed(_pod(name, "n", "default", group="train"), start_after=arrive) for name in MEMBERS),
        _timed(_pod("solo", "n", "default"), start_after=t5 + solo_after),
    ]
    features = Features.for_release().with_gates({"GenericWorkload": True})
    scenario = build_scenario(load_text(yaml.safe_dump_all(documents)), generic_workload=True)
    result = simulate(scenario, Options(features=features))
    return [name for p in build_report(result).pods if p.node and (name := p.pod.split("/", 1)[1]) != "holder"]


def _timed(pod: dict[str, Any], *, start_after: float | None = None, run_for: float | None = None) -> dict[str, Any]:
    notes = {}
    if start_after is not None:
        notes["kubedra.io/start-after"] = f"{start_after:g}s"
    if run_for is not None:
        notes["kubedra.io/run-for"] = f"{run_for:g}s"
    pod["metadata"]["annotations"] = notes
    return pod


@pytest.mark.parametrize("solo_after", [13.0, 19.0], ids=["gang-still-backing-off", "gang-retried-first"])
def test_a_gang_backs_off_as_kube_scheduler_backs_it_off(plane: ControlPlane, solo_after: float) -> None:
    assert sorted(kubedra_bound(solo_after)) == sorted(real_bound(plane, solo_after))
