"""A pod group's back-off (``sim.gang_backoff``), as kube-scheduler v1.37.2 keeps it: 1 s doubled per failed cycle,
at most 10 s times the square root of the members queued; the group waits in the backoff queue, moved by no event,
until the flush after its end. ``tests/kube/test_gang_backoff_vs_kube_scheduler.py`` holds a timeline of it against
the real kube-scheduler."""

from __future__ import annotations

import math

import pytest
from fixtures.scenarios import nodepool, pod
from tests.sim.test_gangs import pod_group, run

from kubedra.sim.gang_backoff import GangBackoff
from kubedra.sim.queue import backoff_duration, backoff_until

ONE_CPU = {"cpu": "1"}


def test_a_pods_back_off_doubles_up_to_10_s() -> None:
    assert [backoff_duration(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    assert backoff_duration(0) == 0.0
    assert backoff_duration(200) == 10.0  # no overflow: the cap, as Go's shift gives


@pytest.mark.parametrize("size", [2, 3, 4, 9, 16])
def test_a_groups_back_off_is_capped_at_10_s_times_the_root_of_its_size(size: int) -> None:
    cap = math.trunc(10e9 * math.sqrt(size)) / 1e9  # Go's Duration: whole nanoseconds
    assert [backoff_duration(n, size) for n in range(1, 6)] == [min(d, cap) for d in (1.0, 2.0, 4.0, 8.0, 16.0)]
    assert backoff_duration(6, size) == min(32.0, cap)
    assert backoff_duration(60, size) == cap


def test_a_group_of_one_backs_off_as_a_pod() -> None:
    assert [backoff_duration(n, 1) for n in range(1, 7)] == [backoff_duration(n) for n in range(1, 7)]
    assert backoff_until(5.5, 5, 1) == 15.0
    assert backoff_until(5.5, 5, 4) == 21.0  # 16 s: under 4 members' 20 s cap


def test_a_failed_group_is_flushed_the_second_after_its_back_off_ends() -> None:
    backoff = GangBackoff()
    backoff.failed("ns/g", 5.3, size=4, version=1)
    assert backoff.backing_off("ns/g")
    assert backoff.next_retry() == 7.0  # floor(6.3) = 6 is still backing off at 6.x
    assert backoff.retry(6.0, None) == []
    assert backoff.retry(7.0, 2) == ["ns/g"]  # the cluster changed: tried again
    assert not backoff.backing_off("ns/g")
    assert backoff.next_retry() is None


def test_a_group_retried_against_an_unchanged_cluster_fails_again_and_backs_off_longer() -> None:
    backoff = GangBackoff()
    backoff.failed("ns/g", 5.0, size=4, version=1)
    retries = []
    while (at := backoff.next_retry()) is not None and at < 120:
        assert backoff.retry(at, 1) == []
        retries.append(at)
    assert retries == [7.0, 10.0, 15.0, 24.0, 41.0, 62.0, 83.0, 104.0]  # then every 21 s: 20 s to the second
    assert backoff.groups["ns/g"].failures == 9


def test_a_scheduler_error_counts_apart_and_success_resets() -> None:
    backoff = GangBackoff()
    for at in (0.0, 10.0, 30.0):
        backoff.failed("ns/g", at, size=2, version=1)
    backoff.failed("ns/g", 60.0, size=2, version=1, error=True)
    assert backoff.groups["ns/g"].count == 1  # the errors' count, while there are errors
    assert backoff.next_retry() == 62.0
    backoff.failed("ns/g", 70.0, size=2, version=1)
    assert backoff.groups["ns/g"].count == 4
    backoff.succeeded("ns/g")
    assert not backoff.backing_off("ns/g")


def _timeline(solo_at: str) -> list[dict[str, object]]:
    """A node with 4 CPUs; ``holder`` takes one until 36 s; a gang of 4 one-CPU pods arrives at 5 s and fails at 5,
    7, 10, 15 and 24 s, backing off 16 s after the last (to 41 s); ``solo`` (one CPU) arrives at ``solo_at``."""
    return [
        nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "16Gi"}),
        pod_group("train", 4),
        pod("holder", run_for="36s", requests=ONE_CPU),
        *(pod(f"w{i}", start_after="5s", requests=ONE_CPU, schedulingGroup={"podGroupName": "train"})
          for i in range(4)),
        pod("solo", start_after=solo_at, requests=ONE_CPU),
    ]


def test_a_pod_arriving_while_the_gang_backs_off_takes_the_room_it_freed() -> None:
    sim = run(*_timeline("37s"))
    assert sim.node_of("solo") == "n-0"
    assert {sim.phase(f"w{i}") for i in range(4)} == {"Pending"}


def test_the_gang_retried_after_its_back_off_takes_the_room_first() -> None:
    sim = run(*_timeline("43s"))
    assert {sim.times("Pod", "Scheduled")[f"w{i}"] for i in range(4)} == {41.0}
    assert sim.phase("solo") == "Pending"


def test_a_member_made_while_the_group_backs_off_waits_with_it() -> None:
    """minCount 2 of 3 members: w0 and w1 fail at 0 s (no room), w2 arrives at 1.5 s: it joins the group in the
    backoff queue instead of starting a cycle; the holder leaves at 1.5 s too, and the group is tried at 2 s."""
    documents = [
        nodepool("n", gpus=None, allocatable={"cpu": "3", "memory": "16Gi"}),
        pod_group("train", 2),
        pod("holder", run_for="1.5s", requests={"cpu": "2"}),
        *(pod(f"w{i}", requests=ONE_CPU, schedulingGroup={"podGroupName": "train"}) for i in range(2)),
        pod("w2", start_after="1.5s", requests=ONE_CPU, schedulingGroup={"podGroupName": "train"}),
    ]
    sim = run(*documents)
    assert {sim.times("Pod", "Scheduled")[f"w{i}"] for i in range(3)} == {2.0}
