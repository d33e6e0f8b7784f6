"""kube-scheduler's flush of the unschedulable pool (every 30 s, the pods there over 5 minutes) as the run keeps it:
a pod retried in vain takes the retry's time as its queue timestamp, so it can lose its place to a pod that failed
after it but was not flushed yet. ``tests/kube/test_queue_flush_vs_kube_scheduler.py`` holds the same timeline
against the real kube-scheduler (with its deprecated flag shortening the 5 minutes)."""

from __future__ import annotations

from fixtures.scenarios import nodepool, pod, run

from kubedra.objects.model import ObjectMeta, Pod
from kubedra.sim.queue import SchedulingQueue, backoff_until, flush_tick

ONE_CPU = {"cpu": "1"}


def _cluster(b_after: str) -> list[dict[str, object]]:
    """One node with room for one pod; ``holder`` runs 700 s; ``a`` arrives at 5 s, ``b`` after ``b_after``."""
    return [
        nodepool("n", gpus=None, allocatable={"cpu": "1", "memory": "4Gi"}),
        pod("holder", run_for="700s", requests=ONE_CPU),
        pod("a", start_after="5s", requests=ONE_CPU),
        pod("b", start_after=b_after, requests=ONE_CPU),
    ]


def test_the_flush_tick_is_the_first_30_s_tick_past_five_minutes() -> None:
    assert flush_tick(0.0) == 330.0  # at 300 s the pod has been there exactly 5 minutes, not longer
    assert flush_tick(5.0) == 330.0
    assert flush_tick(330.0) == 660.0
    assert flush_tick(29.5, max_in_unschedulable=10.0) == 60.0
    assert flush_tick(30.0, max_in_unschedulable=10.0) == 60.0


def test_a_pod_flushed_in_vain_comes_after_one_that_failed_later() -> None:
    # a fails at 5 s; the flush retries it at 330 s and at 660 s. b fails at 540 s and is not due until 870 s.
    # When holder leaves at 700 s both are moved back: b (540 s) before a (660 s).
    sim = run(*_cluster("540s"))
    assert sim.node_of("b") == "n-0"
    assert sim.node_of("a") == ""
    assert sim.times("Pod", "Scheduled")["b"] == 700.0


def test_pods_flushed_together_keep_their_order() -> None:
    # b fails at 340 s: at 660 s both are flushed, a retried first; both take 660 s, a still first.
    sim = run(*_cluster("340s"))
    assert sim.node_of("a") == "n-0"
    assert sim.node_of("b") == ""


def test_a_flushed_pod_that_saw_the_cluster_as_it_is_stays_in_the_pool_in_attempt_order() -> None:
    queue = SchedulingQueue()
    queue.failed("x", 0.0, version=3)
    queue.failed("y", 10.0, version=3)
    queue.failed("z", 100.0, version=3)
    assert queue.next_flush() == 330.0
    assert queue.flush(330.0, 3) is False  # x and y: nothing changed since, no attempt made
    assert list(queue.unschedulable) == ["z", "x", "y"]
    assert queue.queued["x"][0] == queue.queued["y"][0] == 330.0
    assert queue.queued["x"][1] < queue.queued["y"][1]
    assert queue.next_flush() == 420.0  # z's
    assert queue.flush(420.0, 4) is True  # the cluster changed since z's attempt: z is tried
    assert queue.active == ["z"]
    assert list(queue.unschedulable) == ["x", "y"]


def test_the_back_off_doubles_per_failure_up_to_ten_seconds_truncated_to_the_second() -> None:
    assert backoff_until(5.5, 1) == 6.0
    assert backoff_until(5.5, 2) == 7.0
    assert backoff_until(5.5, 3) == 9.0
    assert backoff_until(5.5, 4) == 13.0
    assert backoff_until(5.5, 5) == 15.0  # 16 s capped at 10
    assert backoff_until(5.5, 40) == 15.0


def test_a_pod_moved_back_while_backing_off_waits_for_the_active_queue_to_empty() -> None:
    queue = SchedulingQueue()
    queue.failed("old", 0.0)  # back-off over by 2 s
    queue.failed("recent", 1.5)  # backing off until 2 s
    queue.failed("twice", 1.2)
    queue.failed("twice", 1.6)  # 2 s of back-off: until 3 s
    pods = {key: Pod(metadata=ObjectMeta(name=key)) for key in ("old", "recent", "twice")}
    queue.pod_left([], False, pods.__getitem__, 2.4)
    assert queue.active == ["old"]
    assert queue.take_requeued(lambda key: (0, queue.queued[key][0], queue.queued[key][1]), 2.4) == ["recent", "twice"]


def test_a_pod_added_under_a_deleted_pods_key_starts_with_no_back_off() -> None:
    # A StatefulSet's replacement takes the victim's key; kube-scheduler makes it a new QueuedPodInfo (counts at 0).
    queue = SchedulingQueue()
    for at in (1.0, 2.0, 3.0):
        queue.failed("web-0", at)
    assert queue.backing_off("web-0", 4.0)
    queue.unschedulable.pop("web-0")
    queue.enqueue("web-0", 4.0)
    assert not queue.backing_off("web-0", 4.0)
