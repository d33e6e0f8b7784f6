"""kube-scheduler's scheduling queue as the run loop keeps it: the active queue, the unschedulable pool and the pods
a binding moved back (popped once the active queue is empty, as the backoff queue is), each pod's queue timestamp.

A pod that fails goes to the pool; it comes back when a pod leaves its node (a victim deleted, a pod finished:
``pod_left``) or a pod is bound (``bound``), where its rejecting plugins' queueing hints say the event may help it
(``scheduler.queueing_hints``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from kubedra.objects.model import Pod
from kubedra.scheduler.queueing_hints import ON_ANY_DELETE, requeue_after_bind, requeue_after_delete

QueueOrder = tuple[int, float, int]


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
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def enqueue(self, key: str, now: float) -> None:
        self.active.append(key)
        self.queued[key] = (now, next(self._seq))

    def failed(
        self, key: str, now: float, hinted_plugins: frozenset[str] = frozenset(),
        on_delete: frozenset[str] = ON_ANY_DELETE,
    ) -> None:
        """The pod failed at ``now``: to the pool, keeping the time of its failed attempt; ``hinted_plugins``: its
        rejecting plugins with a hint for a pod being bound; ``on_delete``: those with one for a pod leaving
        (``delete_hinted_plugins``)."""
        self.queued[key] = (now, next(self._seq))
        self.unschedulable[key] = None
        if hinted_plugins:
            self.hinted[key] = hinted_plugins
        if on_delete != ON_ANY_DELETE:
            self.on_delete[key] = on_delete
        else:
            self.on_delete.pop(key, None)

    def pod_left(self, gone: list[Pod], deallocated: bool, pending: Callable[[str], Pod]) -> None:
        """The assigned pods ``gone`` left their nodes (``deallocated``: claims of theirs were deallocated): the
        pool's pods whose rejecting plugins may be helped back to the active queue, in the order they entered the
        pool."""
        staying: dict[str, None] = {}
        for key in self.unschedulable:
            plugins = self.on_delete.get(key, ON_ANY_DELETE)
            if plugins is ON_ANY_DELETE or requeue_after_delete(pending(key), plugins, gone, deallocated):
                self.active.append(key)
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

    def take_requeued(self, order: Callable[[str], QueueOrder]) -> list[str]:
        """The pods bindings moved back, in queue order, emptied."""
        again, self.requeued = sorted(self.requeued, key=order), []
        return again
