"""kube-scheduler's scheduling queue as the run loop keeps it: the active queue, the unschedulable pool and the pods
a binding moved back (popped once the active queue is empty, as the backoff queue is), each pod's queue timestamp.

A pod that fails goes to the pool; it comes back when a pod leaves its node (a victim deleted, a pod finished:
``pod_left``) or a pod is bound (``bound``), where its rejecting plugins' queueing hints say the event may help it
(``scheduler.queueing_hints``), or when the scheduler's periodic flush finds it there too long (``flush``).

The flush (``flushUnschedulableEntitiesLeftover``, run every 30 s from the scheduler's start) moves every pod whose
last attempt is more than 5 minutes old to the active queue. A pod it retries in vain gets its attempt's time as its
queue timestamp, which decides its place among pods of its priority when an event moves them back together: a pod
waiting since earlier can come after one that failed later but was never flushed.

A pod moved back while its back-off runs (1 s doubled per failed attempt, at most 10 s, its end truncated to the
second: ``backoff_until``) waits in the backoff queue, which kube-scheduler pops only once the active queue is empty
(SchedulerPopFromBackoffQ, on by default): in a drain it comes after every pod moved back with its back-off over.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kubedra.objects.model import Pod
from kubedra.scheduler.queueing_hints import ON_ANY_DELETE, requeue_after_bind, requeue_after_delete

QueueOrder = tuple[int, float, int]

FLUSH_PERIOD = 30.0  # wait.Until's period for flushUnschedulableEntitiesLeftover (PriorityQueue.Run)
MAX_IN_UNSCHEDULABLE = 300.0  # DefaultPodMaxInUnschedulablePodsDuration (--pod-max-in-unschedulable-pods-duration)


INITIAL_BACKOFF = 1.0  # KubeSchedulerConfiguration podInitialBackoffSeconds (default)
MAX_BACKOFF = 10.0  # podMaxBackoffSeconds (default)


def backoff_duration(failures: int, size: int = 1) -> float:
    """The back-off after an entity's ``failures``-th failed attempt, in seconds: 1 s doubled per failure after the
    first, at most 10 s, a group's most multiplied by the square root of its ``size`` (its members queued when it
    failed) where over 1 (``calculateBackoffDuration``, in whole nanoseconds as Go's ``time.Duration``)."""
    if failures <= 0:
        return 0.0
    initial, most = int(INITIAL_BACKOFF * 1e9), int(MAX_BACKOFF * 1e9)
    if size > 1:
        most = int(float(most) * math.sqrt(size))  # Go's Duration(float64(max) * math.Sqrt(...)): truncated
    shift = failures - 1
    return (most if initial > most >> shift else initial << shift) / 1e9


def backoff_until(failed_at: float, failures: int, size: int = 1) -> float:
    """The back-off's end for an entity whose ``failures``-th failed attempt was at ``failed_at``
    (``backoff_duration``), truncated to the second (the backoff queue's ordering window); the entity is backing off
    while that is not before the current second (``getBackoffTime``, ``isEntityBackingoff``)."""
    if failures <= 0:
        return -math.inf
    return float(math.floor(failed_at + backoff_duration(failures, size)))


def flush_tick(failed_at: float, max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE) -> float:
    """The first flush (a multiple of ``FLUSH_PERIOD`` from the start) at which a pod that failed at ``failed_at`` has
    been in the pool longer than ``max_in_unschedulable`` (the comparison is strict: ``now - timestamp > max``)."""
    return (math.floor((failed_at + max_in_unschedulable) / FLUSH_PERIOD) + 1) * FLUSH_PERIOD


@dataclass
class SchedulingQueue:
    active: list[str] = field(default_factory=list)
    unschedulable: dict[str, None] = field(default_factory=dict)  # the pool, in the order pods entered it
    # Of those, the pods a bound pod may help and the plugins that rejected them; and the pods a binding moved back.
    hinted: dict[str, frozenset[str]] = field(default_factory=dict)
    # The pool's pods' rejecting plugins with a hint for an assigned pod leaving, where not ON_ANY_DELETE.
    on_delete: dict[str, frozenset[str]] = field(default_factory=dict)
    requeued: list[str] = field(default_factory=list)
    queued: dict[str, tuple[float, int]] = field(default_factory=dict)  # when a pod (re)entered the queue
    # The pool's pods' view of the cluster: the run's state version at their failed attempt (``flush``).
    seen: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # failed attempts so far (UnschedulableCount)
    max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def enqueue(self, key: str, now: float) -> None:
        """A pod added (or ungated): a new entry with no failed attempt yet, even where a replacement takes the key of
        a deleted pod (a StatefulSet's)."""
        self.active.append(key)
        self.queued[key] = (now, next(self._seq))
        self.failures.pop(key, None)
        self.seen.pop(key, None)

    def failed(
        self, key: str, now: float, hinted_plugins: frozenset[str] = frozenset(),
        on_delete: frozenset[str] = ON_ANY_DELETE, version: int = 0,
    ) -> None:
        """The pod failed at ``now``: to the pool, keeping the time of its failed attempt; ``hinted_plugins``: its
        rejecting plugins with a hint for a pod being bound; ``on_delete``: those with one for a pod leaving
        (``delete_hinted_plugins``); ``version``: the cluster state's version it was tried against."""
        self.queued[key] = (now, next(self._seq))
        self.unschedulable.pop(key, None)  # the pool stays in failure order, the oldest attempt first
        self.unschedulable[key] = None
        self.seen[key] = version
        self.failures[key] = self.failures.get(key, 0) + 1
        if hinted_plugins:
            self.hinted[key] = hinted_plugins
        if on_delete != ON_ANY_DELETE:
            self.on_delete[key] = on_delete
        else:
            self.on_delete.pop(key, None)

    def next_flush(self) -> float | None:
        """The next flush that moves a pod: the oldest attempt's (the pool is in failure order); None: pool empty."""
        for key in self.unschedulable:
            return flush_tick(self.queued[key][0], self.max_in_unschedulable)
        return None

    def flush(self, tick: float, version: int | None) -> bool:
        """The flush at ``tick``: the pool's pods whose last attempt is older than the limit go to the active queue
        (True). Where each of them was tried against the state as it still is (``version``; None: it may have
        changed), the attempts would fail as they did, so they are not made: each pod stays in the pool with the
        tick as its attempt's time, in the order of the attempts (False)."""
        due = []
        for key in self.unschedulable:
            if flush_tick(self.queued[key][0], self.max_in_unschedulable) > tick:
                break
            due.append(key)
        if version is not None and all(self.seen[key] == version for key in due):
            for key in due:
                del self.unschedulable[key]
                self.unschedulable[key] = None
                self.queued[key] = (tick, next(self._seq))
                self.failures[key] += 1
            return False
        for key in due:
            del self.unschedulable[key]
            self.hinted.pop(key, None)
            self.on_delete.pop(key, None)
            self._move(key, tick)
        return bool(due)

    def hold(self, key: str) -> None:
        """Out of the pool, moved by no event nor flush: a failed group's member (its group backs off instead)."""
        self.unschedulable.pop(key, None)
        self.hinted.pop(key, None)
        self.on_delete.pop(key, None)

    def backing_off(self, key: str, now: float) -> bool:
        return backoff_until(self.queued[key][0], self.failures.get(key, 0)) >= math.floor(now)

    def _move(self, key: str, now: float) -> None:
        """Out of the pool: to the backoff queue while its back-off runs, else to the active queue."""
        (self.requeued if self.backing_off(key, now) else self.active).append(key)

    def pod_left(self, gone: list[Pod], deallocated: bool, pending: Callable[[str], Pod], now: float) -> None:
        """The assigned pods ``gone`` left their nodes at ``now`` (``deallocated``: claims of theirs were
        deallocated): the pool's pods whose rejecting plugins may be helped go back (``_move``), in the order they
        entered the pool."""
        staying: dict[str, None] = {}
        for key in self.unschedulable:
            plugins = self.on_delete.get(key, ON_ANY_DELETE)
            if plugins is ON_ANY_DELETE or requeue_after_delete(pending(key), plugins, gone, deallocated):
                self._move(key, now)
                self.hinted.pop(key, None)
                self.on_delete.pop(key, None)
            else:
                staying[key] = None
        self.unschedulable = staying

    def bound(self, pod: Pod, pending: Callable[[str], Pod]) -> None:
        """``pod`` was bound (``AssignedPod`` Add): the pool's pods it may help are moved back."""
        for key, plugins in list(self.hinted.items()):
            if key not in self.unschedulable:  # moved back already (or taken by its group's cycle)
                del self.hinted[key]
            elif requeue_after_bind(pending(key), plugins, pod):
                del self.hinted[key], self.unschedulable[key]
                self.on_delete.pop(key, None)
                self.requeued.append(key)

    def take_active(self, order: Callable[[str], QueueOrder]) -> list[str]:
        """The active queue in kube-scheduler's order, emptied."""
        active, self.active = sorted(self.active, key=order), []
        return active

    def take_requeued(self, order: Callable[[str], QueueOrder], now: float) -> list[str]:
        """The backoff queue as kube-scheduler pops it once the active queue is empty, emptied: pods whose back-off
        is over first (a binding moved them to the active queue), then by the back-off's end, each in queue order."""
        def backoff_order(key: str) -> tuple[float, int, float, int]:
            until = backoff_until(self.queued[key][0], self.failures.get(key, 0))
            return (until if until >= math.floor(now) else -math.inf, *order(key))

        again, self.requeued = sorted(self.requeued, key=backoff_order), []
        return again
