"""A pod group's back-off (``sim.gang_backoff``), as kube-scheduler v1.37.2 keeps it: 1 s doubled per failed cycle,
at most 10 s times the square root of the members queued; the group waits in the backoff queue, moved by no event,
until the flush after its end. ``tests/kube/test_gang_backoff_vs_kube_scheduler.py`` holds a timeline of it against
the real kube-scheduler."""

from __future__ import annotations

import math

import pytest

from kubedra.sim.queue import backoff_duration, backoff_until


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
