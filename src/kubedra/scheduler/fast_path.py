"""The scheduler's node-set fast path: the walk of ``Scheduler._walk`` over node sets (``candidates.NodeSets``).

Feasible nodes, the walk's length, scores, tie-breaking draws and allocator calls are exactly those of the node-by-node
walk; a pod that fits nowhere gets its reasons from what the sets decided, or goes that way too.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Literal

import msgspec

from kubedra.cluster.state import ClusterState
from kubedra.objects.model import AllocationResult, Node, ResourceClaim
from kubedra.scheduler.attempt import Attempt, Feasible
from kubedra.scheduler.candidates import NodeSets
from kubedra.scheduler.claims import key_of
from kubedra.scheduler.device_index import DeviceIndex
from kubedra.scheduler.dra import NodeAllocator
from kubedra.scheduler.dynamicresources import CLAIM_NOT_ON_NODE, UNSCHEDULABLE_CLAIMS, allocate
from kubedra.scheduler.extended import ExtendedResourceMap, dra_served_resources
from kubedra.scheduler.fgd import TraceScorer
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.kube_scorer import Candidate, KubeScorer
from kubedra.scheduler.nodefit import claim_rejecting
from kubedra.scheduler.outcome import Failed, Outcome, Placement, Unschedulable, summarize
from kubedra.scheduler.podtopologyspread_state import SpreadIndex
from kubedra.scheduler.scoring import Policy, devices_asked
from kubedra.scheduler.verdicts import Verdicts


class FastPath:
    """``Scheduler``'s fast-path methods; what they read of the scheduler is declared here, set by ``Scheduler``."""

    state: ClusterState
    policy: Policy
    rng: random.Random
    index: DeviceIndex | None
    kube: KubeScorer | None
    trace: TraceScorer | None
    extended_map: ExtendedResourceMap
    topology_spread: SpreadIndex
    pod_affinity: BoundAffinity
    _next_start: int
    _nodes_to_find: Callable[[int], int]
    _placement: Callable[[Attempt, Feasible, list[AllocationResult] | None], Placement]

    def _schedule_fast(self, attempt: Attempt, sets: NodeSets) -> Outcome | None:
        """The same walk as ``schedule`` over node sets (see ``candidates``); None: take the node-by-node path.

        Feasible nodes, the walk's length, scores, tie-breaking draws and allocator calls are exactly those of the
        node-by-node walk; pods that fit nowhere go that way too, so their reasons are its reasons.
        """
        prepared = self._fast_candidates(attempt, sets)
        if prepared is None:
            return None
        mask, undecided, verdicts, served = prepared
        first_fit = self.policy is Policy.FIRST_FIT
        wanted = 1 if first_fit else self._nodes_to_find(sets.count)
        start = 0 if first_fit else self._next_start % max(1, sets.count)
        batch, special = attempt.batch_for(served, self.extended_map)
        while True:
            # First-fit walks from node 0 and wants one node: the window is the lowest feasible one. Otherwise the
            # window reaches one feasible node beyond those wanted, where kube-scheduler's Filter cancels (see
            # ``_walk``): the failed nodes before it count as processed, it is dropped below.
            window, processed, count = (mask & -mask, 0, 1) if first_fit else sets.window(mask, start, wanted + 1)
            # (``a ^ (a & b)`` is ``a & ~b`` without a full-width complement: sets are as wide as the cluster)
            unknown = (window & undecided) ^ (window & undecided & verdicts.ok) if verdicts is not None else 0
            if not unknown:
                break
            assert attempt.allocator is not None
            assert verdicts is not None
            if first_fit:  # the lowest feasible node is undecided: its allocation is the verdict (one call)
                i = window.bit_length() - 1
                name = sets.names[i]
                results = allocate(attempt.allocator, self.state.nodes[name], batch)
                if isinstance(results, Failed):
                    return results
                if isinstance(results, list):
                    verdicts.ok |= window
                    chosen = Feasible(name, None, special, served, batch, deferred=True)
                    return self._placement(attempt, chosen, results)
                verdicts.bad |= window
                verdicts.reasons[i] = results
                mask ^= window
                continue
            for i in sets.rotated(unknown, start):
                answer = self._node_verdict(attempt.allocator, sets, verdicts, i, batch)
                if isinstance(answer, Failed):
                    return answer
                if _keep(verdicts, i, answer):
                    mask ^= 1 << i
        if not window:
            return self._fast_refusal(attempt, sets, verdicts, served, 0 if first_fit else start)
        if not first_fit:
            window, processed, count = _cancelled(sets, (window, processed, count), start, wanted)
            self._next_start = (start + processed) % sets.count
        return self._fast_choose(attempt, sets, window, start, Feasible("", None, special, served, batch), count=count)

    def _fast_refusal(
        self, attempt: Attempt, sets: NodeSets, verdicts: Verdicts | None, served: frozenset[str], start: int
    ) -> Unschedulable | None:
        """The walk's outcome for a pod that fits nowhere, from what the sets already decided: each node's reason is
        the first check it fails in Filter's order, the allocator's answers those the verdicts hold (the walk would
        ask the allocator again on every node). None where some node's reason is not known here."""
        record = attempt.record
        pod, requests = record.pod, record.requests
        static_reasons = sets.static_reasons(pod)
        fit_reasons = sets.fit_reasons(requests, served, record.requests_key)
        passing = sets.static_mask(pod) & sets.fit_mask(requests, served, record.requests_key)
        batch, _ = attempt.batch_for(served, self.extended_map)
        demand = self.index.demand(batch) if self.index is not None and batch and attempt.allocator else None
        free = sets.free_mask(demand.signature, demand.count) if demand is not None else -1
        reasons: dict[str, list[str]] = {}
        state = self.state
        nodes, names, count = state.nodes, sets.names, sets.count
        spread, inter_pod = attempt.spread, attempt.inter_pod
        # claim_rejecting only ever refuses for a claim allocated with a node selector
        pinned = attempt.claims if any(
            c.status.allocation is not None and c.status.allocation.node_selector is not None for c in attempt.claims
        ) else ()
        passes, frees = _flags(passing, count), _flags(free, count)
        bads = _flags(verdicts.bad, count) if verdicts is not None else None
        for i in itertools.chain(range(start, count), range(start)):
            name = names[i]
            if not passes[i]:  # Filter's order: the node-level checks, then NodeResourcesFit
                reason = static_reasons.get(i) or fit_reasons.get(i)
            elif spread is not None and (refused := spread.reason(nodes[name])) is not None:
                reason = refused  # PodTopologySpread, then InterPodAffinity, before DynamicResources
            elif inter_pod is not None and (refused := inter_pod.reason(nodes[name])) is not None:
                reason = refused
            elif pinned and claim_rejecting(pinned, nodes[name]) is not None:
                reason = CLAIM_NOT_ON_NODE
            elif not frees[i]:
                reason = UNSCHEDULABLE_CLAIMS
            elif bads is not None and bads[i]:
                assert verdicts is not None
                reason = verdicts.reasons.get(i)
                if reason is None and verdicts.unworded >> i & 1:
                    reason = self._worded(attempt, verdicts, i, batch, nodes[name])
            else:
                return None
            if reason is None:
                return None
            found = reasons.get(reason)
            if found is None:
                reasons[reason] = [name]
            else:
                found.append(name)
        return Unschedulable(summarize(reasons, len(state.nodes)), reasons)

    def _worded(
        self, attempt: Attempt, verdicts: Verdicts, i: int, batch: list[ResourceClaim], node: Node
    ) -> str | None:
        """The allocator's reason on an ``unworded`` node (its devices unchanged since), kept; None if it does not
        give one (then the node-by-node walk decides)."""
        assert attempt.allocator is not None
        answer = allocate(attempt.allocator, node, batch)
        if not isinstance(answer, str):
            return None
        verdicts.reasons[i] = answer
        verdicts.unworded &= ~(1 << i)
        return answer

    def _node_verdict(
        self, allocator: NodeAllocator, sets: NodeSets, verdicts: Verdicts, i: int, batch: list[ResourceClaim]
    ) -> str | Literal[False] | Failed | None:
        """The allocator's answer on node ``i`` (None: fits), or a node alike's remembered answer; False: it does
        not fit, as the share counts tell (the allocator's words for it are asked only where a refusal reads them)."""
        state_key = sets.state_key(i)
        if state_key is not None and state_key in verdicts.by_state:
            return verdicts.by_state[state_key]
        if self.index is not None:
            shares = self.index.share_demand(batch)
            if shares is not None:
                fits = self.index.shares_fit(shares, sets.names[i])
                if fits is True:
                    return None  # the matching devices have room for the shares: the allocator would find them
                if fits is False and state_key is None:
                    return False  # too few have room for one share each: the allocator would find no N of them
        answer = allocate(allocator, self.state.nodes[sets.names[i]], batch)
        if isinstance(answer, Failed):
            return answer
        if isinstance(answer, str):
            verdict: str | None = answer
        else:
            verdict = None
            sets.remember_witness(verdicts, i, answer)
        if state_key is not None:
            if len(verdicts.by_state) >= MAX_STATES:
                verdicts.by_state.clear()
            verdicts.by_state[state_key] = verdict
        return verdict

    def _fast_candidates(
        self, attempt: Attempt, sets: NodeSets
    ) -> tuple[int, int, Verdicts | None, frozenset[str]] | None:
        """Nodes passing every check the index can decide, those only the allocator can, its cached answers."""
        record = attempt.record
        sets.refresh()
        served: frozenset[str] = frozenset()
        if attempt.extended:
            if any(r.resource in sets.advertised for r in attempt.extended) or not sets.names:
                return None  # device plugins serve some of it on some nodes: per-node batches
            served = dra_served_resources(attempt.extended, self.state.nodes[sets.names[0]], self.extended_map)
        mask = sets.static_mask(record.pod) & sets.fit_mask(record.requests, served, record.requests_key)
        if attempt.spread is not None:
            mask &= self.topology_spread.feasible_mask(attempt.spread, sets.names)
        if attempt.inter_pod is not None:
            mask &= self.pod_affinity.feasible_mask(attempt.inter_pod, sets.names)
        for claim in attempt.claims:
            allocation = claim.status.allocation
            if allocation is not None and allocation.node_selector is not None:
                mask &= sets.selector_mask(key_of(claim.metadata.namespace, claim.metadata.name), allocation)
        batch, _ = attempt.batch_for(served, self.extended_map)
        if not batch or attempt.allocator is None:
            return mask, 0, None, served
        demand = self.index.demand(batch) if self.index is not None else None  # remembered per claims' specs
        if demand is not None:
            mask &= sets.free_mask(demand.signature, demand.count)
        undecided = mask ^ (mask & sets.exact) if demand is not None else mask
        if not undecided:
            return mask, 0, None, served
        verdicts = sets.verdicts(batch)
        if verdicts is None:
            return None
        return mask ^ (mask & verdicts.bad), undecided, verdicts, served

    def _fast_choose(
        self, attempt: Attempt, sets: NodeSets, window: int, start: int, template: Feasible, *, count: int
    ) -> Outcome:
        """Score the window's nodes (``count`` of them) by class, draw among ties as ``pick`` does, allocate on the
        chosen node."""
        record = attempt.record
        batch = template.batch
        added = -1  # devices the batch asks for, counted when a score needs them
        reasons: dict[str, list[str]] = {}
        while window:
            if count == 1:
                i = window.bit_length() - 1
            elif self.policy is Policy.FIRST_FIT:
                i = sets.kth_rotated(window, start, 0)
            elif self.kube is not None and self.kube.by_groups(attempt.claims):
                i = self.kube.choose_window(record, window, start, count)
            elif self.kube is not None:
                order = list(sets.rotated(window, start))
                i = order[self.kube.choose(record, [Candidate(sets.names[j]) for j in order], attempt.claims)]
            elif self.trace is not None:
                order = list(sets.rotated(window, start))
                i = order[self.trace.choose(record, [sets.names[j] for j in order], self.rng)]
            else:
                if added < 0:
                    added = sum(devices_asked(claim) for claim in batch)
                tied = sets.best(window, self.policy, record.requests, record.requests_key, added)
                ties = tied.bit_count()
                i = sets.kth_rotated(tied, start, 0 if ties == 1 else self.rng.choice(range(ties)))
            name = sets.names[i]
            chosen = msgspec.structs.replace(template, node=name, deferred=bool(batch))
            if not batch or attempt.allocator is None:
                return self._placement(attempt, chosen, None)
            prefer = self.trace.prefer(record, name) if self.trace is not None else []
            results = allocate(attempt.allocator, self.state.nodes[name], batch, prefer)
            if isinstance(results, Failed):
                return results
            if isinstance(results, list):
                return self._placement(attempt, chosen, results)
            reasons.setdefault(results, []).append(name)
            window ^= 1 << i
            count -= 1
        return Unschedulable(summarize(reasons, sets.count), reasons)


def _keep(verdicts: Verdicts, i: int, answer: str | Literal[False] | None) -> bool:
    """Keep the allocator's answer on node ``i`` (``_node_verdict``'s); True where the node is out."""
    if answer is None:
        verdicts.ok |= 1 << i
        return False
    verdicts.bad |= 1 << i
    if answer is False:
        verdicts.unworded |= 1 << i
    else:
        verdicts.reasons[i] = answer
    return True


def _flags(mask: int, count: int) -> list[bool]:
    """Bit i of ``mask`` as item i, for the first ``count`` bits (a negative mask: all set)."""
    if mask < 0:
        return [True] * count
    text = format(mask & ((1 << count) - 1), "b")[::-1]
    return [c == "1" for c in text] + [False] * (count - len(text))


MAX_STATES = 4096  # remembered allocator answers per demand, by node state


def _cancelled(sets: NodeSets, found: tuple[int, int, int], start: int, wanted: int) -> tuple[int, int, int]:
    """A window (``found``: it, the nodes processed, its count) reaching one feasible node beyond ``wanted`` without
    it (Filter cancels there), the nodes processed before it, and the nodes left."""
    window, processed, count = found
    if count <= wanted:
        return found
    return window ^ (1 << sets.kth_rotated(window, start, wanted)), processed - 1, wanted
