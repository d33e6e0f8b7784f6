"""Node sets as bitsets (bit i = the i-th node in the state's NodeTree order), kept up to date as pods and devices move.

The scheduler's Filter walks nodes from a rotating start until it has ``numFeasibleNodesToFind`` feasible ones;
Score then picks the best, ties sampled. Done node by node in Python that is milliseconds per pod. Here each check is
a set, cached by what it depends on and refreshed per node when that node changes:

* static checks (nodeName, nodeSelector/affinity, taints) per pod shape — nodes never change in a simulation;
* NodeResourcesFit per (requests, DRA-served extended resources), refreshed on bind/unbind;
* the selector of an already allocated claim, per claim allocation;
* "≥ N free devices of this signature" for plain demands (``DeviceIndex``), refreshed on allocation/release;
* the allocator's verdict per (claims' specs, node) (``verdicts.py``), for demands the index cannot decide,
  refreshed per node when its devices change — valid only when every pool lives on one node (then nothing else can
  change a node's answer);
* score classes: nodes whose score inputs are equal (allocatable, requested cpu/memory, devices total/in use).

The window of the first N feasible nodes from the start, the best score in it and the k-th tied node are then a few
big-integer operations. The caller reproduces kube-scheduler's walk exactly with these (see ``Scheduler``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from kubedra.allocator.answers import ClaimKeys
from kubedra.cluster.devices import DeviceRecord
from kubedra.cluster.state import ClusterState
from kubedra.cluster.usage import NodeUsage
from kubedra.objects.model import AllocationResult, Node, NodeSelectorTerm, Pod, ResourceClaim
from kubedra.objects.quantity import Quantity, QuantityError
from kubedra.objects.selection import node_selector_matches
from kubedra.scheduler.bitsets import bits, first_bits, nth_bit, reclassify
from kubedra.scheduler.device_index import DeviceIndex, Signature
from kubedra.scheduler.nodefit import NODE_NAME_MISMATCH, affinity_reason, resources_reason, taint_reason
from kubedra.scheduler.resource_scores import LOG_NODES
from kubedra.scheduler.scoring import DeviceUse, Policy, node_score
from kubedra.scheduler.verdicts import Verdicts, Witness, device_shapes, monotone, pools_are_node_local

MONOTONE_DEVICES = 16  # 2**16 subsets: far within the default step budget of 1,000,000
MAX_CACHED = 256  # shapes per cache; beyond that a cache starts over (bounded memory, still correct)

RequestsKey = tuple[tuple[str, Quantity], ...]
ScoreKey = tuple[str | None, str | None, Quantity | None, Quantity | None, int, float]


@dataclass
class _Fit:
    """NodeResourcesFit for one request shape: the nodes that fit, and each other node's reason; current up to
    position ``seen`` of the node sets' usage log (nodes touched later are worked out again when next read)."""

    requests: Mapping[str, Quantity]
    served: frozenset[str]
    seen: int
    mask: int = 0
    reasons: dict[int, str] = field(default_factory=dict)
    # What ``resources_reason`` compares: (resource, nanos) of the requests it counts (more than zero, not served)
    wants: tuple[tuple[str, int], ...] = ()


def _fit(requests: Mapping[str, Quantity], served: frozenset[str], seen: int) -> _Fit:
    wants = tuple((name, want.nanos) for name, want in requests.items() if want.nanos > 0 and name not in served)
    return _Fit(dict(requests), served, seen, wants=wants)


# A node's room as ``resources_reason`` reads it: the node object it was read from, allocatable pods (None: not
# published), and each allocatable resource in nanos
_Room = tuple[Node, int | None, dict[str, int]]


def requests_key(requests: Mapping[str, Quantity]) -> RequestsKey:
    return tuple(sorted(requests.items()))


class NodeSets:
    """See the module docstring. ``touch(node)`` must be called whenever a node's usage or devices change, and
    ``refresh()`` before the sets are read."""

    def __init__(self, state: ClusterState, index: DeviceIndex) -> None:
        self.state = state
        self.index = index
        self.names = list(state.nodes)
        self.pos = {name: i for i, name in enumerate(self.names)}
        self.count = len(self.names)
        self.all = (1 << self.count) - 1
        self.exact = sum(1 << i for i, n in enumerate(self.names) if index.exact(n))
        self.verdicts_valid = pools_are_node_local(state)
        self.advertised = {r for node in state.nodes.values() for r in node.status.allocatable}
        self.shape_of = device_shapes(state, self.names) if self.verdicts_valid else [None] * self.count
        self._static: dict[bytes, tuple[int, dict[int, str]]] = {}
        self._fit: dict[tuple[RequestsKey, frozenset[str]], _Fit] = {}
        # Nodes whose usage changed, in order: a request shape's fit is brought up to date when it is read, for the
        # nodes touched since (a trace asks ~100 shapes, a bind changes one node; most shapes are not read again
        # before the node changes once more). Dropped when it outgrows the nodes; shapes behind it start over.
        self._usage_log: list[int] = []
        self._usage_base = 0
        self._selectors: dict[str, tuple[AllocationResult, int]] = {}
        self._free: dict[tuple[Signature, int], int] = {}
        self._verdicts: dict[tuple[bytes, ...], Verdicts] = {}
        self._claim_keys = ClaimKeys()
        self._scores: dict[tuple[ScoreKey, RequestsKey, int, Policy], float] = {}
        self._class_of: list[ScoreKey] = []
        self._classes: dict[ScoreKey, int] = {}
        self._dirty: set[str] = set()
        self.touch: Callable[[str], None] = self._dirty.add
        """A node's usage changed: its bits are refreshed before the sets are next read (``refresh``), so a bind and
        its allocations, or a batch of pods ending together, refresh the node once. (The set's own ``add``: called
        several times per pod, it costs no Python call.)"""
        self._gained: set[str] = set()  # nodes whose devices were freed since the last refresh
        self._lost: dict[str, set[str]] = {}  # nodes whose devices were taken since the last refresh, and those
        # Nodes whose searches stay far within any step budget (a request's choices are at most the subsets of the
        # node's devices): their monotone answers can be kept across changes (a budget would not be).
        self._small = sum(
            1 << i for i, n in enumerate(self.names) if state.devices.total.get(n, 0) <= MONOTONE_DEVICES
        )
        self._unclassified: set[int] = set()  # nodes whose score class is re-worked out when scores are next read
        self._rooms: list[_Room | None] = [None] * self.count
        for i, name in enumerate(self.names):
            key = self._score_key(name)
            self._class_of.append(key)
            self._classes[key] = self._classes.get(key, 0) | (1 << i)

    # ------------------------------------------------------------------------------------------ upkeep

    def touch_devices(self, name: str, sign: int, devices: Sequence[str]) -> None:
        """``devices`` on ``name`` were allocated (``sign`` > 0) or released: ``touch``, remembering which way."""
        self._dirty.add(name)
        if sign > 0:
            self._lost.setdefault(name, set()).update(devices)
        else:
            self._gained.add(name)

    def refresh(self) -> None:
        """Bring every cached set up to date with the nodes touched since the last refresh."""
        if self._dirty:
            for name in self._dirty:
                self._refresh(name)
            self._dirty.clear()
            self._gained.clear()
            self._lost.clear()

    def _refresh(self, name: str) -> None:
        i = self.pos.get(name)
        if i is None:
            return
        bit = 1 << i
        log = self._usage_log
        if len(log) >= LOG_NODES * self.count + 64:
            self._usage_base += len(log)
            log.clear()
        log.append(i)
        free, counts = self._free, self.state.devices.free
        for free_key, mask in free.items():
            fits = counts[free_key[0]].get(name, 0) >= free_key[1]
            if fits != bool(mask & bit):  # the bit flips: in when it now fits, out when it no longer does
                free[free_key] = mask ^ bit
        self._refresh_verdicts(name, i)
        self._unclassified.add(i)

    def _refresh_verdicts(self, name: str, i: int) -> None:
        """The allocator's answers on a node whose devices changed: only its devices decide them (``verdicts_valid``);
        monotone ones that the change can only confirm are kept."""
        bit = 1 << i
        keep = self.all ^ bit
        gained, taken = name in self._gained, self._lost.get(name)
        if gained or taken is not None:
            lasting = self._small & bit and not (gained and taken is not None)
            for verdicts in self._verdicts.values():
                if lasting and verdicts.monotone:
                    if taken is not None:
                        if verdicts.ok & bit:
                            witness = verdicts.witness.get(i)
                            if witness is None or not witness.still_fits(taken, self.state.devices):
                                verdicts.ok &= keep
                                verdicts.witness.pop(i, None)
                        elif verdicts.unworded & bit:  # its reason is worded on the devices it was decided on
                            verdicts.bad &= keep
                            verdicts.unworded &= keep
                        continue
                    if not verdicts.bad & bit:
                        continue
                verdicts.ok &= keep
                verdicts.bad &= keep
                verdicts.unworded &= keep
                verdicts.reasons.pop(i, None)
                verdicts.witness.pop(i, None)

    def _score_key(self, name: str) -> ScoreKey:
        allocatable = self.state.nodes[name].status.allocatable
        requested = self.state.usage[name].requested
        return (
            allocatable.get("cpu"),
            allocatable.get("memory"),
            requested.get("cpu"),
            requested.get("memory"),
            self.state.devices.total.get(name, 0),
            self.state.devices.device_use(name),
        )

    # ------------------------------------------------------------------------------------------ sets

    def static_mask(self, pod: Pod) -> int:
        """Nodes passing NodeName, NodeAffinity and TaintToleration (never change during a run)."""
        return self._static_of(pod)[0]

    def static_reasons(self, pod: Pod) -> dict[int, str]:
        """The first of those checks each node that ``static_mask`` leaves out fails, in kube-scheduler's words."""
        return self._static_of(pod)[1]

    def _static_of(self, pod: Pod) -> tuple[int, dict[int, str]]:
        spec = pod.spec
        plain = not (spec.node_name or spec.node_selector or spec.affinity or spec.tolerations)
        key = b"" if plain else msgspec.json.encode((spec.node_name, spec.node_selector, spec.affinity,
                                                     spec.tolerations))
        found = self._static.get(key)
        if found is None:
            mask = 0
            reasons: dict[int, str] = {}
            for i, name in enumerate(self.names):
                node = self.state.nodes[name]
                if spec.node_name and spec.node_name != name:
                    reasons[i] = NODE_NAME_MISMATCH
                    continue
                reason = taint_reason(pod, node) or affinity_reason(pod, node)
                if reason is None:
                    mask |= 1 << i
                else:
                    reasons[i] = reason
            self._static = _bounded(self._static)
            found = self._static[key] = (mask, reasons)
        return found

    def fit_mask(
        self, requests: Mapping[str, Quantity], served: frozenset[str], rkey: RequestsKey | None = None
    ) -> int:
        """NodeResourcesFit; resources served through DRA are not counted, so they are left out of the key.
        ``rkey``: ``requests_key(requests)`` when the caller has it."""
        return self._fit_of(requests, served, rkey).mask

    def fit_reasons(
        self, requests: Mapping[str, Quantity], served: frozenset[str], rkey: RequestsKey | None = None
    ) -> dict[int, str]:
        """NodeResourcesFit's reason on each node that ``fit_mask`` leaves out (read only)."""
        return self._fit_of(requests, served, rkey).reasons

    def _fit_of(self, requests: Mapping[str, Quantity], served: frozenset[str], rkey: RequestsKey | None) -> _Fit:
        if served:
            requests = {name: amount for name, amount in requests.items() if name not in served}
            served = frozenset()
            rkey = None
        key = (rkey if rkey is not None else requests_key(requests), served)
        found = self._fit.get(key)
        now = self._usage_base + len(self._usage_log)
        if found is None or found.seen < self._usage_base:
            found = _fit(requests, served, now)
            nodes, usage = self.state.nodes, self.state.usage
            for i, name in enumerate(self.names):
                if self._fits(found.wants, i, nodes[name], usage[name]):
                    found.mask |= 1 << i
                    continue
                reason = resources_reason(requests, nodes[name], usage[name], served)
                if reason is None:
                    found.mask |= 1 << i
                else:
                    found.reasons[i] = reason
            self._fit = _bounded(self._fit)
            self._fit[key] = found
        elif found.seen < now:
            self._update_fit(found, now)
        return found

    def _fits(self, wants: tuple[tuple[str, int], ...], i: int, node: Node, usage: NodeUsage) -> bool:
        """True where ``resources_reason`` finds no reason, by the node's room read once (False: ask it)."""
        room = self._rooms[i]
        if room is None or room[0] is not node:
            room = self._room(i, node)
        pods = room[1]
        if pods is not None and usage.pods >= pods:
            return False
        have, requested = room[2], usage.requested
        for name, want in wants:
            total = have.get(name)
            if total is None:
                return False
            used = requested.get(name)
            if (used.nanos if used is not None else 0) + want > total:
                return False
        return True

    def _room(self, i: int, node: Node) -> _Room:
        allocatable = node.status.allocatable
        have: dict[str, int] = {}
        pods: int | None = None
        try:
            for name, text in allocatable.items():
                have[name] = Quantity.parse(text).nanos
            if "pods" in allocatable:
                pods = Quantity.parse(allocatable["pods"]).value()
        except QuantityError:
            have, pods = {}, 0  # never fits here: ``resources_reason`` reads it
        room = self._rooms[i] = (node, pods, have)
        return room

    def _update_fit(self, fit: _Fit, now: int) -> None:
        """Bring one shape's fit up to date with the nodes touched since it was last read."""
        nodes, usage, names, wants = self.state.nodes, self.state.usage, self.names, fit.wants
        for i in set(self._usage_log[fit.seen - self._usage_base:]):
            name = names[i]
            node, used = nodes[name], usage[name]
            reason = None if self._fits(wants, i, node, used) else resources_reason(
                fit.requests, node, used, fit.served)
            bit = 1 << i
            if reason is None:
                if fit.mask & bit:
                    continue
                fit.mask |= bit
                del fit.reasons[i]
            else:
                if fit.mask & bit:
                    fit.mask ^= bit  # not ``&= ~bit``: a full-width complement
                fit.reasons[i] = reason
        fit.seen = now

    def selector_mask(self, claim_key: str, allocation: AllocationResult) -> int:
        """Nodes an allocated claim's ``nodeSelector`` admits."""
        found = self._selectors.get(claim_key)
        if found is not None and found[0] is allocation:
            return found[1]
        selector = allocation.node_selector
        assert selector is not None
        names = _node_names_only(selector.node_selector_terms)
        if names is not None:
            mask = 0
            for name in names:
                i = self.pos.get(name)
                if i is not None:
                    mask |= 1 << i
        else:
            mask = 0
            for i, name in enumerate(self.names):
                if node_selector_matches(selector, name, self.state.nodes[name].metadata.labels):
                    mask |= 1 << i
        self._selectors = _bounded(self._selectors, 4 * MAX_CACHED)
        self._selectors[claim_key] = (allocation, mask)
        return mask

    def free_mask(self, signature: Signature, wanted: int) -> int:
        """Nodes with at least ``wanted`` free devices of ``signature``."""
        key = (signature, wanted)
        mask = self._free.get(key)
        if mask is None:
            mask = 0
            for i, name in enumerate(self.names):
                if self.index.free(signature, name) >= wanted:
                    mask |= 1 << i
            self._free = _bounded(self._free)
            self._free[key] = mask
        return mask

    def verdicts(self, batch: list[ResourceClaim]) -> Verdicts | None:
        """The allocator's cached answers for these claims, or None when answers cannot be cached."""
        if not self.verdicts_valid:
            return None
        key = self._claim_keys.key(batch)
        found = self._verdicts.get(key)
        if found is None:
            self._verdicts = _bounded(self._verdicts, MAX_CACHED // 4)
            found = self._verdicts[key] = Verdicts(monotone=monotone(batch))
        return found

    def remember_witness(self, verdicts: Verdicts, i: int, results: Sequence[AllocationResult]) -> None:
        """The allocation that proved a monotone answer "fits" on node ``i``, kept while it could still be made
        (devices drawing on a counter set are left out: others taking from the same set may leave them short)."""
        if not verdicts.monotone:
            return
        by_key = self.state.devices.by_key
        dedicated: list[str] = []
        shared: dict[str, tuple[DeviceRecord, dict[str, int]]] = {}
        for allocation in results:
            for result in allocation.devices.results:
                record = by_key.get(f"{result.driver}/{result.pool}/{result.device}")
                if record is None or record.device.consumes_counters:
                    return
                if result.share_id is None:
                    dedicated.append(record.key)
                    continue
                consumed = shared.setdefault(record.key, (record, {}))[1]
                for name, amount in result.consumed_capacity.items():
                    consumed[name] = consumed.get(name, 0) + Quantity.parse(amount).nanos
        verdicts.witness[i] = Witness(frozenset(dedicated), shared)

    def state_key(self, i: int) -> tuple[int, frozenset[str]] | None:
        """What the allocator's answer on node ``i`` depends on, when that is only its plain devices' use.

        Nodes whose slices hold the same devices (names, attributes, capacity; pools complete, devices plain, no
        taint rules) with the same ones in use get the same answer: CEL sees neither pool nor node, and the search
        walks their devices in the same order.
        """
        shape = self.shape_of[i]
        if shape is None or not self.exact >> i & 1:
            return None
        return shape, self.state.devices.in_use_on(self.names[i])

    # ------------------------------------------------------------------------------------------ walking

    def window(self, mask: int, start: int, wanted: int) -> tuple[int, int, int]:
        """The first ``wanted`` nodes of ``mask`` from ``start`` on (wrapping), how many nodes the walk visited, and
        how many nodes it holds."""
        return first_bits(mask, start, wanted, self.count)

    @staticmethod
    def rotated(mask: int, start: int) -> Iterator[int]:
        """Positions of ``mask`` in walk order: from ``start`` up, then from 0."""
        yield from bits(mask & ~((1 << start) - 1))
        yield from bits(mask & ((1 << start) - 1))

    @staticmethod
    def kth_rotated(mask: int, start: int, k: int) -> int:
        hi = mask >> start
        found = hi.bit_count()
        if k < found:
            return start + nth_bit(hi, k)
        return nth_bit(mask & ((1 << start) - 1), k - found)

    def best(
        self, window: int, policy: Policy, requests: Mapping[str, Quantity], rkey: RequestsKey, added: int
    ) -> int:
        """The nodes of ``window`` with the best score (as ``node_score`` computes it for each)."""
        if self._unclassified:  # first-fit never reads score classes: they are kept up to date only when read
            for i in self._unclassified:
                reclassify(self._classes, self._class_of, i, self._score_key(self.names[i]))
            self._unclassified.clear()
        best_score: float | None = None
        tied = 0
        for key, members in self._classes.items():
            inside = members & window
            if not inside:
                continue
            cache_key = (key, rkey, added, policy)
            score = self._scores.get(cache_key)
            if score is None:
                name = self.names[(inside & -inside).bit_length() - 1]
                total = key[4]
                devices = DeviceUse(total, key[5] + added) if total else None
                score = node_score(policy, self.state.nodes[name], self.state.usage[name], requests, devices)
                self._scores = _bounded(self._scores, 16 * MAX_CACHED)
                self._scores[cache_key] = score
            if best_score is None or score > best_score:
                best_score, tied = score, inside
            elif score == best_score:
                tied |= inside
        return tied


K = TypeVar("K")
V = TypeVar("V")


def _bounded(cache: dict[K, V], limit: int = MAX_CACHED) -> dict[K, V]:
    return {} if len(cache) >= limit else cache


def _node_names_only(terms: Sequence[NodeSelectorTerm]) -> set[str] | None:
    """Node names when every term is exactly ``metadata.name In [...]`` (what allocations carry), else None."""
    names: set[str] = set()
    for term in terms:
        if term.match_expressions or len(term.match_fields) != 1:
            return None
        field_ = term.match_fields[0]
        if field_.key != "metadata.name" or field_.operator != "In":
            return None
        names.update(field_.values)
    return names


