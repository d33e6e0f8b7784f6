"""kube-scheduler v1.37.2's back-off for a pod group (``AddAttemptedPodGroupIfNeeded``, ``backoff_queue.go``).

A failed pod-group cycle puts the group, as one queue entity, straight back into the backoff queue: never into the
unschedulable pool, so no cluster event moves it (events only move the pool's entities) and no pool flush either.
The entity keeps its own counts across cycles (``QueueingParams`` carried to the rebuilt root): a rejected cycle
(``Unschedulable``) adds one to its ``UnschedulableCount`` and clears the errors, a ``SchedulerError`` adds one to
``ConsecutiveErrorsCount`` (which, while over 0, is the count the back-off uses); a cycle that succeeds resets both.
Its timestamp is the failed cycle's end. Its back-off is a pod's (1 s doubled per count after the first) with the cap,
10 s, multiplied by the square root of its size where over 1: the member pods queued in it when it fails (the ones
that failed and any that arrived meanwhile), not the PodGroup's ``minCount``. The end is truncated to the second.

The group carries no rejecting plugin of its own (those are its pods'), so it waits in the error backoff queue,
which SchedulerPopFromBackoffQ does not pop early: it returns to the active queue only at the backoff queue's flush,
each whole second, the first one after its back-off's end (``retry_at``); it is then tried again whatever changed,
failing again (and backing off longer) where nothing did. A member pod created meanwhile joins it and waits with it.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from kubedra.sim.queue import backoff_until


@dataclass
class GroupBackoff:
    failures: int = 0  # UnschedulableCount
    errors: int = 0  # ConsecutiveErrorsCount
    failed_at: float = 0.0  # the entity's Timestamp: its last failed cycle
    size: int = 1  # members queued in it when it failed (Size())
    version: int = -1  # the cluster state's version its last cycle was tried against
    backing_off: bool = False  # in the backoff queue

    @property
    def count(self) -> int:
        return self.errors if self.errors > 0 else self.failures

    @property
    def retry_at(self) -> float:
        """The backoff queue's flush that moves it to the active queue: the first whole second after its end."""
        return backoff_until(self.failed_at, self.count, self.size) + 1.0


@dataclass
class GangBackoff:
    """Each pod group's back-off, and the flushes to come (a heap; entries made stale by a later failure skipped)."""

    groups: dict[str, GroupBackoff] = field(default_factory=dict)
    _due: list[tuple[float, int, str]] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def failed(self, key: str, now: float, size: int, version: int, *, error: bool = False) -> None:
        """The group's cycle at ``now`` failed (``error``: a SchedulerError) with ``size`` members left queued."""
        entry = self.groups.setdefault(key, GroupBackoff())
        if error:
            entry.errors += 1
        else:
            entry.failures += 1
            entry.errors = 0
        entry.failed_at, entry.size, entry.version, entry.backing_off = now, max(size, 1), version, True
        heapq.heappush(self._due, (entry.retry_at, next(self._seq), key))

    def succeeded(self, key: str) -> None:
        """A cycle that bound the group: its counts reset, any members left go straight to the active queue."""
        self.groups.pop(key, None)

    def backing_off(self, key: str) -> bool:
        entry = self.groups.get(key)
        return entry is not None and entry.backing_off

    def _prune(self) -> None:
        while self._due:
            at, _, key = self._due[0]
            entry = self.groups.get(key)
            if entry is not None and entry.backing_off and entry.retry_at == at:
                return
            heapq.heappop(self._due)

    def next_retry(self) -> float | None:
        """The next flush that moves a group to the active queue; None: no group is backing off."""
        self._prune()
        return self._due[0][0] if self._due else None

    def stale(self, version: int) -> bool:
        """Whether a group backing off was tried against another state than ``version``'s (its retry may bind it)."""
        return any(e.backing_off and e.version != version for e in self.groups.values())

    def retry(self, tick: float, version: int | None) -> list[str]:
        """The backoff queue's flush at ``tick``: the groups whose back-off is over, to the active queue (returned).
        One tried last against the state as it still is (``version``; None: it may have changed) would fail as it
        did: its cycle is not made, it fails again at ``tick`` and backs off longer."""
        moved = []
        self._prune()
        while self._due and self._due[0][0] <= tick:
            _, _, key = heapq.heappop(self._due)
            entry = self.groups[key]
            if version is not None and entry.version == version:
                self.failed(key, tick, entry.size, version, error=entry.errors > 0)
            else:
                entry.backing_off = False
                moved.append(key)
            self._prune()
        return moved
