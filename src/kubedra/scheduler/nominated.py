"""Nominated pods: a preemptor waits for its victims on the node PostFilter nominated, and no pod of lower priority
may take what it is waiting for.

kube-scheduler v1.37.2 (``framework/runtime/framework.go``, ``RunFilterPluginsWithNominatedPods``): on a node where
pods of equal or higher priority than the pod being scheduled are nominated, Filter runs twice, first with those
pods added to the node (``addGENominatedPods``: ``NodeInfo.AddPodInfo``, so their requests, ports and pod count, and
``RunPreFilterExtensionAddPod``, so inter-pod affinity and topology spread count them), then as the node is; the pod
must pass both, and the first pass's failure is the node's reason. DynamicResources has no PreFilter extensions: a
nominated pod's claims are not counted there. The same two passes serve PostFilter's dry run
(``SelectVictimsOnNode``). A pod that was nominated tries its nominated node first and takes it, unscored, where it
passes Filter (``evaluateNominatedNode``).

The nominator (``backend/queue/nominator.go``) holds the pods PostFilter nominated until they are bound or deleted,
or a later PostFilter finds no candidates (``NewPostFilterResultWithNominatedNode("")`` clears the nomination); a pod
not eligible to preempt (victims still terminating, ``preemptionPolicy: Never``) keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord


def _priority(record: PodRecord) -> int:
    return record.pod.spec.priority or 0


class Nominator:
    """The pods nominated per node; a record counts while it waits there (not bound, not deleted)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodRecord]] = {}
        self.version = 0  # bumped on every change: what Filter remembered no longer holds

    def __bool__(self) -> bool:
        return bool(self._by_node)

    def nominate(self, record: PodRecord, node: str) -> None:
        """Set (or, with ``""``, clear) the pod's ``status.nominatedNodeName`` and its place in the nominator."""
        old = record.pod.status.nominated_node_name
        if old:
            self._by_node.get(old, {}).pop(record.key, None)
        if old != node:
            pod = record.pod
            record.pod = msgspec.structs.replace(
                pod, status=msgspec.structs.replace(pod.status, nominated_node_name=node))
        if node:
            self._by_node.setdefault(node, {})[record.key] = record
        self.version += 1

    def waiting_on(self, node: str, record: PodRecord) -> list[PodRecord]:
        """Pods nominated on ``node`` with priority at least ``record``'s, other than it (``addGENominatedPods``).
        Pods no longer waiting there (bound, deleted, ended) leave the nominator here, as assume and delete remove
        them from kube-scheduler's: an idle nominator costs later pods nothing."""
        found = self._by_node.get(node)
        if not found:
            return []
        for key in [k for k, other in found.items() if other.pod.spec.node_name or other.deleted
                    or other.finished_at is not None or other.pod.status.nominated_node_name != node]:
            del found[key]
        if not found:
            del self._by_node[node]
            return []
        priority = _priority(record)
        return [other for other in found.values() if other.key != record.key and _priority(other) >= priority]

    def any_waiting(self, record: PodRecord) -> bool:
        """Whether any node has such pods for ``record`` (then Filter runs node by node, twice where they are)."""
        return any(self.waiting_on(node, record) for node in list(self._by_node))


@contextmanager
def added(state: ClusterState, pods: list[PodRecord], node: str) -> Iterator[None]:
    """``pods`` counted on ``node`` for the first pass, as if bound there (their claims untouched), then removed."""
    for pod in pods:
        state.bind(pod, node)
    try:
        yield
    finally:
        for pod in reversed(pods):
            state.unbind(pod, node)
