"""The unschedulable pool's flush against the real kube-scheduler v1.37.2: a pod the flush retries in vain takes the
retry's time as its queue timestamp, so when a pod leaves, a pod that failed after it but was not flushed goes first.

kube-scheduler flushes every 30 s (``wait.Until`` in ``PriorityQueue.Run``) the pods whose last attempt is older than
``--pod-max-in-unschedulable-pods-duration`` (5 minutes; deprecated but served). The real scheduler runs with 10 s here,
kubedra with the same, so a case takes about a minute. The flush ticks are read off the scheduler's own counter
(``scheduler_queue_incoming_pods_total{event="UnschedulableTimeout"}``), and each case is laid out on them:

* ``a`` fails; the tick that retries it is T1; ``b`` is created at T1 + ``b_after`` and fails;
* at the next tick T2 = T1 + 30 s, ``a`` is retried again, and ``b`` too where it has been waiting over 10 s;
* ``settle`` s later the pod holding the node's only CPU is deleted: one of them gets the node.

kubedra simulates the same timeline (its ticks at multiples of 30 s: ``a`` at 5 s, T1 = 30 s) and must pick the same
pod. With ``b_after`` 25 s only ``a`` is flushed at T2 and ``b`` wins; with 1 s both are, in order, and ``a`` wins
once every back-off is over (``settle`` 12 s). With ``settle`` 3 s ``a``, retried three times, is still backing off
(4 s, to the second) while ``b``'s 2 s are over: ``a`` waits in the backoff queue and ``b`` wins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane

from kubedra.objects.load import load_text
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane

MAX_IN_UNSCHEDULABLE = 10.0
PERIOD = 30.0
SETTLED = 12.0  # after T2: every back-off is over (at most 10 s)
FLUSHED = 'scheduler_queue_incoming_pods_total{event="UnschedulableTimeout"'


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(
        tmp_path_factory.mktemp("queue-flush"),
        only=("etcd", "kube-apiserver", "kube-scheduler"),
        scheduler_args=[f"--pod-max-in-unschedulable-pods-duration={int(MAX_IN_UNSCHEDULABLE)}s"],
    ) as started:
        yield started


def _flushed(plane: ControlPlane) -> float:
    """How many pods the scheduler's flush has moved so far (its metric, over every queue)."""
    return plane.scheduler_metrics(FLUSHED)


def _next_tick(plane: ControlPlane) -> float:
    """Wait for the next flush that moves a pod; its (monotonic) time."""
    before = _flushed(plane)
    plane.wait_for(lambda: _flushed(plane) > before, timeout=3 * PERIOD, interval=0.05, what="a flush")
    return time.monotonic()


def _pod(name: str, node: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                 "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
    }


def _failed(plane: ControlPlane, name: str, namespace: str) -> None:
    def attempted() -> bool:
        conditions = plane.get(f"/api/v1/namespaces/{namespace}/pods/{name}").get("status", {}).get("conditions")
        return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions or [])

    plane.wait_for(attempted, what=f"pod {name} to fail its attempt")


def _bound(plane: ControlPlane, names: tuple[str, ...], namespace: str) -> list[str]:
    return [n for n in names if plane.get(f"/api/v1/namespaces/{namespace}/pods/{n}")["spec"].get("nodeName")]


def real_winner(plane: ControlPlane, b_after: float, settle: float) -> str:
    namespace = plane.create_namespace("flush")
    node = f"{namespace}-n"
    plane.create_node(node, cpu="1", memory="4Gi", pods="10")
    plane.create(_pod("holder", node, namespace))
    plane.wait_for(lambda: _bound(plane, ("holder",), namespace), what="the holder to be bound")
    plane.create(_pod("a", node, namespace))
    _failed(plane, "a", namespace)
    t1 = _next_tick(plane)
    time.sleep(max(0.0, t1 + b_after - time.monotonic()))
    plane.create(_pod("b", node, namespace))
    _failed(plane, "b", namespace)
    t2 = _next_tick(plane)
    assert PERIOD - 3 < t2 - t1 < PERIOD + 3, f"the flush ticks came {t2 - t1:.1f} s apart, not every {PERIOD} s"
    time.sleep(max(0.0, t2 + settle - time.monotonic()))
    plane.delete_pod("holder", namespace)
    winners = plane.wait_for(lambda: _bound(plane, ("a", "b"), namespace), what="a pod to take the node")
    time.sleep(1.0)
    assert _bound(plane, ("a", "b"), namespace) == winners
    for name in ("a", "b"):
        plane.delete_pod(name, namespace)
    assert len(winners) == 1
    return winners[0]


def kubedra_winner(b_after: float, settle: float) -> str:
    t1 = PERIOD  # a fails at 5 s; its first flush is the tick at 30 s (25 s > 10 s)
    documents = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}},
         "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "10"},
                    "capacity": {"cpu": "1", "memory": "4Gi", "pods": "10"}}},
        _timed(_pod("holder", "n", "default"), run_for=2 * PERIOD + settle),
        _timed(_pod("a", "n", "default"), start_after=5.0),
        _timed(_pod("b", "n", "default"), start_after=t1 + b_after),
    ]
    scenario = build_scenario(load_text(yaml.safe_dump_all(documents)))
    result = simulate(scenario, Options(max_in_unschedulable=MAX_IN_UNSCHEDULABLE))
    bound = [name for p in build_report(result).pods if p.node and (name := p.pod.split("/", 1)[1]) in ("a", "b")]
    assert len(bound) == 1, bound
    return bound[0]


def _timed(pod: dict[str, Any], *, start_after: float | None = None, run_for: float | None = None) -> dict[str, Any]:
    notes = {}
    if start_after is not None:
        notes["kubedra.io/start-after"] = f"{start_after:g}s"
    if run_for is not None:
        notes["kubedra.io/run-for"] = f"{run_for:g}s"
    pod["metadata"]["annotations"] = notes
    return pod


@pytest.mark.parametrize(
    ("b_after", "settle", "winner"),
    [(25.0, SETTLED, "b"), (1.0, SETTLED, "a"), (1.0, 3.0, "b")],
    ids=["b-not-flushed", "both-flushed", "a-backing-off"],
)
def test_the_flush_and_back_off_order_pods_as_kube_scheduler_does(
    plane: ControlPlane, b_after: float, settle: float, winner: str
) -> None:
    simulated = kubedra_winner(b_after, settle)
    assert simulated == winner  # each case is laid out to tell two orders apart
    assert real_winner(plane, b_after, settle) == simulated
