"""One scheduling attempt for one pod, the way kube-scheduler's framework runs it with the DynamicResources plugin.

PreFilter resolves the pod's claims (they must exist; an allocated claim must still accept the pod) and its extended
resources; Filter checks each node — node rules first, then the nodeSelector of claims already allocated, then the
allocator for the claims still to allocate, plus the special claim of KEP-5004 last; Score picks among feasible nodes.
As kube-scheduler does, Filter stops after ``numFeasibleNodesToFind`` feasible nodes and the next attempt starts
where this one stopped. A ``DeviceIndex`` answers plain GPU demands without the allocator; the allocator then runs on
the chosen node only.
The outcome is data (``Placement``, ``Unschedulable`` or ``Failed``); applying it is the caller's business.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

import msgspec

from kubedra.allocator import AllocationError, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.state import DeviceID
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import (
    AllocationResult,
    ContainerExtendedResourceRequest,
    Node,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubedra.scheduler.candidates import NodeSets, Verdicts
from kubedra.scheduler.claims import key_of
from kubedra.scheduler.device_index import DeviceIndex
from kubedra.scheduler.extended import (
    ExtendedRequest,
    ExtendedResourceMap,
    dra_served_resources,
    extended_requests,
    node_batch,
    request_mappings,
)
from kubedra.scheduler.fgd import TraceScorer
from kubedra.scheduler.interpodaffinity import AffinityFilter
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.kube_scorer import Candidate, KubeScorer
from kubedra.scheduler.nodefit import (
    NOT_PINNED,
    claim_rejecting,
    is_extended_resource,
    node_fit_reason,
    pinned_nodes,
    reasons_of,
)
from kubedra.scheduler.podtopologyspread import SpreadFilter
from kubedra.scheduler.podtopologyspread_state import SpreadIndex
from kubedra.scheduler.prefilter import PreFilter
from kubedra.scheduler.scoring import TRACE_POLICIES, DeviceUse, Policy, node_score, pick

UNSCHEDULABLE_CLAIMS = "cannot allocate all claims"
CLAIM_NOT_ON_NODE = "resourceclaim not available on the node"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_PERCENTAGE = 5
MAX_STATES = 4096  # remembered allocator answers per demand, by node state
MAX_REFUSALS = 1024  # remembered "fits nowhere" outcomes, by pod shape


TIMED_OUT = "timed out trying to allocate devices"


class NodeAllocator(Protocol):
    """One allocator per attempt (upstream builds one in PreFilter), asked once per node."""

    @property
    def draws(self) -> int:
        """ShareIDs drawn so far (a stream an attempt may advance even where it finds no fit)."""
        ...

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], *, prefer: Sequence[DeviceID] = ()
    ) -> list[AllocationResult] | None:
        """Allocations for ``claims`` on ``node``; None if they do not fit. Raises the allocator's errors:
        ``AllocationError`` for bad input (scheduling of the pod is aborted), ``NodeAllocationFailed`` and
        ``SearchBudgetExceeded`` when only this node cannot take the claims (invalid pools, a search timeout).
        ``prefer``: devices to try first (a trace policy's choice within the node; kube-scheduler has none)."""
        ...


class DraBackend(Protocol):
    """The device side of the cluster: hands out allocators over the current allocated state."""

    def begin(self) -> NodeAllocator: ...


class Placement(msgspec.Struct, frozen=True):
    node: str
    allocations: dict[str, AllocationResult]  # claim key -> new allocation (claims allocated by this attempt)
    special_claim: ResourceClaim | None = None
    special_allocation: AllocationResult | None = None
    mappings: list[ContainerExtendedResourceRequest] = msgspec.field(default_factory=list)


NO_NODES = "no nodes available to schedule pods"  # ErrNoNodesAvailable: an empty cluster, as the pod's message


class Unschedulable(msgspec.Struct, frozen=True):
    message: str  # "0/3 nodes are available: ..." or the PreFilter reason
    reasons: dict[str, list[str]] = msgspec.field(default_factory=dict)  # reason -> nodes


class Failed(msgspec.Struct, frozen=True):
    message: str


Outcome = Placement | Unschedulable | Failed


def summarize(reasons: dict[str, list[str]], node_count: int) -> str:
    """kube-scheduler's FitError text: ``0/N nodes are available: <count> <reason>, ...`` sorted."""
    counts: dict[str, int] = {}
    for status, nodes in reasons.items():
        for reason in reasons_of(status):
            counts[reason] = counts.get(reason, 0) + len(nodes)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


class Scheduler:
    """Schedules pods against a ``ClusterState``; pure apart from the seeded tie-breaking."""

    def __init__(
        self,
        state: ClusterState,
        backend: DraBackend,
        policy: Policy,
        rng: random.Random,
        index: DeviceIndex | None = None,
        *,
        extended_resources: bool = True,
    ) -> None:
        """``extended_resources``: the DRAExtendedResource gate (off: no class serves ``nvidia.com/gpu``, the pod
        needs a device plugin's allocatable, as kube-scheduler's NodeResourcesFit checks without the gate)."""
        self.state = state
        self.backend = backend
        self.policy = policy
        self.rng = rng
        self.index = index
        self.topology_spread = SpreadIndex(state)
        self.kube = KubeScorer(state, self.topology_spread) if policy is Policy.KUBE_SCHEDULER else None
        self.trace = TraceScorer(state, policy.value) if policy in TRACE_POLICIES else None
        self.extended_map = ExtendedResourceMap(list(state.classes.values()) if extended_resources else [])
        self._serves_extended = bool(self.extended_map)  # some class has an extendedResourceName
        self._next_start = 0
        self.prefilter = PreFilter(state)
        self.pod_affinity = BoundAffinity(state)
        # Pods that fit nowhere, by what Filter reads of them: the outcome holds until the cluster changes. A full
        # cluster refuses every later replica of a Deployment with the same walk over every node.
        self._version = 0
        self._refusals: dict[tuple[object, ...], tuple[int, Unschedulable]] = {}
        self._spec_keys: dict[int, tuple[ResourceClaimSpec, bytes]] = {}
        state.watchers.append(self._changed)
        state.devices.watchers.append(self._devices_changed)
        self.sets: NodeSets | None = None
        if index is not None:
            specs = [t.spec.spec for t in state.templates.values()]
            specs += [c.spec for c in state.claims.values() if c.status.allocation is None]
            index.warm(specs, state.classes.values())
            self.sets = NodeSets(state, index)
            state.watchers.append(self.sets.touch)
            state.devices.watchers.append(self.sets.touch_devices)

    # ------------------------------------------------------------------------------------------ the attempt

    def schedule(self, record: PodRecord) -> Outcome:
        """Try to place one pod: PreFilter, then Filter over nodes, then Score among the feasible ones."""
        if not self.state.nodes:  # schedulePod's first check, before PreFilter; no PostFilter follows it
            return Unschedulable(NO_NODES)
        resolved = self.prefilter.claims(record)
        if isinstance(resolved, str):
            return Unschedulable(resolved)
        claims = resolved
        extended = self._extended_requests(record) if self._serves_extended and record.requests else []
        # (A pod's one claim, most pods: the list itself, no comprehension; nothing changes these lists.)
        to_allocate = [c for c in claims if c.status.allocation is None] if len(claims) != 1 else (
            claims if claims[0].status.allocation is None else [])
        attempt = _Attempt(
            record=record,
            claims=claims,
            to_allocate=to_allocate,
            extended=extended,
            allocator=self.backend.begin() if (to_allocate or extended) else None,
            inter_pod=self.pod_affinity.prefilter(record.pod),
            spread=self.topology_spread.prefilter(record.pod),
        )
        refusal_key = self._refusal_key(attempt)
        if refusal_key is not None:
            known = self._refusals.get(refusal_key)
            if known is not None and known[0] == self._version:
                return known[1]
        draws, start = attempt.allocator.draws if attempt.allocator is not None else 0, self._next_start
        outcome = self._attempt(attempt)
        if (
            refusal_key is not None
            and isinstance(outcome, Unschedulable)
            and start == self._next_start
            and (attempt.allocator is None or attempt.allocator.draws == draws)
        ):  # nothing the attempt changed (the walk's start, the shareID stream) is skipped by replaying it
            if len(self._refusals) >= MAX_REFUSALS:
                self._refusals.clear()
            self._refusals[refusal_key] = (self._version, outcome)
        return outcome

    def fits_on(self, record: PodRecord, node_name: str) -> str | None:
        """Filter on one node, as PostFilter's dry run calls it (``SelectVictimsOnNode``): None where the pod fits,
        else the node's reason; nothing is remembered."""
        placed = self.place_on(record, node_name)
        return placed if isinstance(placed, str) else None

    def place_on(self, record: PodRecord, node_name: str) -> Placement | str:
        """Filter and, where the pod fits, its allocations on one given node (a preemptor's proposed node);
        else the node's reason."""
        resolved = self.prefilter.claims(record)
        if isinstance(resolved, str):
            return resolved
        to_allocate = [c for c in resolved if c.status.allocation is None]
        extended = self._extended_requests(record) if self._serves_extended and record.requests else []
        attempt = _Attempt(
            record=record,
            claims=resolved,
            to_allocate=to_allocate,
            extended=extended,
            allocator=self.backend.begin() if (to_allocate or extended) else None,
            inter_pod=self.pod_affinity.prefilter(record.pod),
            spread=self.topology_spread.prefilter(record.pod),
        )
        node = self.state.nodes[node_name]
        verdict = self._filter_node(attempt, node)
        if isinstance(verdict, Failed):
            return verdict.message
        if isinstance(verdict, str):
            return verdict
        if not verdict.deferred or attempt.allocator is None:
            return self._placement(attempt, verdict, verdict.results)
        results = self._allocate(attempt.allocator, node, verdict.batch)
        if isinstance(results, Failed):
            return results.message
        if isinstance(results, str):
            return results
        return self._placement(attempt, verdict, results)

    def _attempt(self, attempt: _Attempt) -> Outcome:
        # DynamicResources scores firstAvailable choices from every node's allocation: only the walk has them all.
        ranked = self.kube is not None and any(
            r.exactly is None for c in attempt.to_allocate for r in c.spec.devices.requests
        )
        # Rare: host ports, pins (the fast path filters DoNotSchedule constraints and required inter-pod affinity as
        # bitsets, and scores ScheduleAnyway constraints and inter-pod affinity by domains).
        pod = attempt.record.pod
        walked = attempt.record.host_ports or pinned_nodes(pod) is not None
        if self.sets is not None and not ranked and not walked:
            fast = self._schedule_fast(attempt, self.sets)
            if fast is not None:
                return fast
        return self._walk(attempt)

    def _changed(self, _node: str) -> None:
        """A pod bound or left, or devices were allocated or freed: remembered refusals no longer hold."""
        self._version += 1

    def _devices_changed(self, _node: str, _sign: int, _devices: tuple[str, ...]) -> None:
        self._version += 1

    def _refusal_key(self, attempt: _Attempt) -> tuple[object, ...] | None:
        """What Filter reads of the pod: its requests, host ports, node name, selector, required affinity, tolerations
        and the specs of its claims (all still to allocate: an allocated claim's own state is not in the key)."""
        if len(attempt.to_allocate) != len(attempt.claims):
            return None
        pod = attempt.record.pod
        spec = pod.spec
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity is not None else None
        # KEP-5004's special claim is built container by container: with extended resources, their split counts.
        # (An init container's restartPolicy too: a sidecar's devices are its own, a plain init container's reused.)
        containers = [(c.name, c.resources, c.restart_policy) for c in (*spec.init_containers, *spec.containers)] if (
            attempt.extended) else []
        # InterPodAffinity reads the pod's labels, namespace and terms (all else it reads changes the version).
        inter_pod = msgspec.json.encode((pod.metadata.namespace, pod.metadata.labels, spec.affinity)) if (
            self.pod_affinity.active(pod)) else b""
        # PodTopologySpread reads the explicit constraints with the pod's labels and namespace (and node rules).
        spread = msgspec.json.encode((pod.metadata.namespace, pod.metadata.labels, spec.topology_spread_constraints,
                                      spec.affinity)) if spec.topology_spread_constraints else b""
        return (
            attempt.record.requests_key,
            attempt.record.host_ports,  # NodePorts
            inter_pod,
            spread,
            msgspec.json.encode((spec.node_name, spec.node_selector, required, spec.tolerations, containers)),
            tuple([self._spec_key(claim.spec) for claim in attempt.claims]),
        )

    def _spec_key(self, spec: ResourceClaimSpec) -> bytes:
        found = self._spec_keys.get(id(spec))
        if found is None or found[0] is not spec:
            if len(self._spec_keys) >= MAX_REFUSALS:
                self._spec_keys.clear()
            found = self._spec_keys[id(spec)] = (spec, msgspec.json.encode(spec))  # held: the id stays unique
        return found[1]

    def _nodes_to_find(self, node_count: int) -> int:
        """Feasible nodes to score: kube-scheduler's adaptive sample, or every node for the FGD artifact's policies
        (its experiments set ``percentageOfNodesToScore: 100``)."""
        return node_count if self.trace is not None else feasible_nodes_to_find(node_count)

    def _extended_requests(self, record: PodRecord) -> list[ExtendedRequest]:
        """The pod's extended-resource requests. Every resource a container asks for with a positive amount is a key
        of the pod's total requests, so a pod whose totals name none (most) has none: no walk of its containers."""
        if not any(is_extended_resource(name) for name in record.requests):
            return []
        return extended_requests(record.pod)

    def _walk(self, attempt: _Attempt) -> Outcome:
        """Filter node by node from the rotating start, then Score (the reference the node sets reproduce)."""
        record = attempt.record
        every = list(self.state.nodes)
        pinned = pinned_nodes(record.pod)  # NodeAffinity's PreFilterResult: Filter sees only these nodes
        names = every if pinned is None else [n for n in every if n in pinned]
        wanted = 1 if self.policy is Policy.FIRST_FIT else self._nodes_to_find(len(names))
        start = 0 if self.policy is Policy.FIRST_FIT else self._next_start % max(1, len(names))
        reasons: dict[str, list[str]] = {}
        if len(names) < len(every):
            reasons[NOT_PINNED] = [n for n in every if n not in names]
        feasible: list[_Feasible] = []
        processed = 0
        # kube-scheduler's Filter cancels at the feasible node after the ``wanted``-th, which it does not count: the
        # nodes that failed before it are processed, and the start moves past them (``findNodesThatPassFilters``).
        for offset in range(len(names)):
            node_name = names[(start + offset) % len(names)]
            verdict = self._filter_node(attempt, self.state.nodes[node_name])
            if isinstance(verdict, Failed):
                return verdict
            if isinstance(verdict, str):
                processed += 1
                reasons.setdefault(verdict, []).append(node_name)
                continue
            if len(feasible) >= wanted:
                break
            processed += 1
            feasible.append(verdict)
            if self.policy is Policy.FIRST_FIT:
                break
        if self.policy is not Policy.FIRST_FIT and names:  # the start moves over all nodes, by those processed
            self._next_start = (self._next_start + processed) % len(every)
        while feasible:
            chosen = self._choose(record, feasible, attempt.claims)
            prefer = self.trace.prefer(record, chosen.node) if self.trace is not None and chosen.batch else []
            if not chosen.deferred and not prefer:
                return self._placement(attempt, chosen, chosen.results)
            assert attempt.allocator is not None
            results = self._allocate(attempt.allocator, self.state.nodes[chosen.node], chosen.batch, prefer)
            if isinstance(results, Failed):
                return results
            if isinstance(results, list):
                return self._placement(attempt, chosen, results)
            reasons.setdefault(results, []).append(chosen.node)
            feasible.remove(chosen)
        return Unschedulable(summarize(reasons, len(self.state.nodes)), reasons)

    def _schedule_fast(self, attempt: _Attempt, sets: NodeSets) -> Outcome | None:
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
            window, processed = (mask & -mask, 0) if first_fit else sets.window(mask, start, wanted + 1)
            unknown = window & undecided & ~verdicts.ok if verdicts is not None else 0
            if not unknown:
                break
            assert attempt.allocator is not None
            assert verdicts is not None
            if first_fit:  # the lowest feasible node is undecided: its allocation is the verdict (one call)
                i = window.bit_length() - 1
                name = sets.names[i]
                results = self._allocate(attempt.allocator, self.state.nodes[name], batch)
                if isinstance(results, Failed):
                    return results
                if isinstance(results, list):
                    verdicts.ok |= window
                    chosen = _Feasible(name, None, special, served, batch, deferred=True)
                    return self._placement(attempt, chosen, results)
                verdicts.bad |= window
                verdicts.reasons[i] = results
                mask &= ~window
                continue
            for i in sets.rotated(unknown, start):
                answer = self._node_verdict(attempt.allocator, sets, verdicts, i, batch)
                if isinstance(answer, Failed):
                    return answer
                if isinstance(answer, str):
                    verdicts.bad |= 1 << i
                    verdicts.reasons[i] = answer
                    mask &= ~(1 << i)
                else:
                    verdicts.ok |= 1 << i
        if not window:
            return self._fast_refusal(attempt, sets, verdicts, served, 0 if first_fit else start)
        if not first_fit:
            window, processed = _cancelled(sets, window, start, wanted, processed)
            self._next_start = (start + processed) % sets.count
        return self._fast_choose(attempt, sets, window, start, _Feasible("", None, special, served, batch))

    def _fast_refusal(
        self, attempt: _Attempt, sets: NodeSets, verdicts: Verdicts | None, served: frozenset[str], start: int
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
        for offset in range(sets.count):
            i = (start + offset) % sets.count
            name = sets.names[i]
            node = state.nodes[name]
            if not passing >> i & 1:  # Filter's order: the node-level checks, then NodeResourcesFit
                reason = static_reasons.get(i) or fit_reasons.get(i)
            elif attempt.spread is not None and (refused := attempt.spread.reason(node)) is not None:
                reason = refused  # PodTopologySpread, then InterPodAffinity, before DynamicResources
            elif attempt.inter_pod is not None and (refused := attempt.inter_pod.reason(node)) is not None:
                reason = refused
            elif claim_rejecting(attempt.claims, node) is not None:
                reason = CLAIM_NOT_ON_NODE
            elif not free >> i & 1:
                reason = UNSCHEDULABLE_CLAIMS
            elif verdicts is not None and verdicts.bad >> i & 1:
                reason = verdicts.reasons.get(i)
            else:
                return None
            if reason is None:
                return None
            reasons.setdefault(reason, []).append(name)
        return Unschedulable(summarize(reasons, len(state.nodes)), reasons)

    def _node_verdict(
        self, allocator: NodeAllocator, sets: NodeSets, verdicts: Verdicts, i: int, batch: list[ResourceClaim]
    ) -> str | Failed | None:
        """The allocator's answer on node ``i`` (None: fits), or a node alike's remembered answer."""
        state_key = sets.state_key(i)
        if state_key is not None and state_key in verdicts.by_state:
            return verdicts.by_state[state_key]
        if self.index is not None:
            shares = self.index.share_demand(batch)
            if shares is not None and self.index.shares_fit(shares, sets.names[i]) is True:
                return None  # the matching devices have room for the shares: the allocator would find them
        answer = self._allocate(allocator, self.state.nodes[sets.names[i]], batch)
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
        self, attempt: _Attempt, sets: NodeSets
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
        undecided = mask & ~sets.exact if demand is not None else mask
        if not undecided:
            return mask, 0, None, served
        verdicts = sets.verdicts(batch)
        if verdicts is None:
            return None
        return mask & ~verdicts.bad, undecided, verdicts, served

    def _fast_choose(
        self, attempt: _Attempt, sets: NodeSets, window: int, start: int, template: _Feasible
    ) -> Outcome:
        """Score the window's nodes by class, draw among ties as ``pick`` does, allocate on the chosen node."""
        record = attempt.record
        batch = template.batch
        added = -1  # devices the batch asks for, counted when a score needs them
        reasons: dict[str, list[str]] = {}
        while window:
            if window & (window - 1) == 0:
                i = window.bit_length() - 1
            elif self.policy is Policy.FIRST_FIT:
                i = sets.kth_rotated(window, start, 0)
            elif self.kube is not None and self.kube.by_groups(attempt.claims):
                i = self.kube.choose_window(record, window, start)
            elif self.kube is not None:
                order = list(sets.rotated(window, start))
                i = order[self.kube.choose(record, [Candidate(sets.names[j]) for j in order], attempt.claims)]
            elif self.trace is not None:
                order = list(sets.rotated(window, start))
                i = order[self.trace.choose(record, [sets.names[j] for j in order], self.rng)]
            else:
                if added < 0:
                    added = sum(_devices_asked(claim) for claim in batch)
                tied = sets.best(window, self.policy, record.requests, record.requests_key, added)
                ties = tied.bit_count()
                i = sets.kth_rotated(tied, start, 0 if ties == 1 else self.rng.choice(range(ties)))
            name = sets.names[i]
            chosen = msgspec.structs.replace(template, node=name, deferred=bool(batch))
            if not batch or attempt.allocator is None:
                return self._placement(attempt, chosen, None)
            prefer = self.trace.prefer(record, name) if self.trace is not None else []
            results = self._allocate(attempt.allocator, self.state.nodes[name], batch, prefer)
            if isinstance(results, Failed):
                return results
            if isinstance(results, list):
                return self._placement(attempt, chosen, results)
            reasons.setdefault(results, []).append(name)
            window &= ~(1 << i)
        return Unschedulable(summarize(reasons, sets.count), reasons)

    def _placement(self, attempt: _Attempt, chosen: _Feasible, results: list[AllocationResult] | None) -> Placement:
        allocations: dict[str, AllocationResult] = {}
        special_allocation = None
        if results is not None:
            for claim, allocation in zip(attempt.to_allocate, results, strict=False):
                allocations[key_of(claim.metadata.namespace, claim.metadata.name)] = allocation
            if chosen.special is not None:
                special_allocation = results[-1]
        return Placement(
            node=chosen.node,
            allocations=allocations,
            special_claim=chosen.special,
            special_allocation=special_allocation,
            mappings=request_mappings(attempt.extended, chosen.served) if chosen.special is not None else [],
        )

    @staticmethod
    def _allocate(
        allocator: NodeAllocator, node: Node, batch: Sequence[ResourceClaim], prefer: Sequence[DeviceID] = ()
    ) -> list[AllocationResult] | Failed | str:
        """The allocations, a Failed outcome for fatal input, or the node's reason for refusing."""
        try:
            results = allocator.allocate(node, batch, prefer=prefer)
        except NodeAllocationFailed as exc:
            return str(exc)
        except SearchBudgetExceeded:
            return TIMED_OUT
        except AllocationError as exc:
            return Failed(str(exc))
        if results is None or len(results) != len(batch):
            return UNSCHEDULABLE_CLAIMS
        return results

    def _filter_node(self, attempt: _Attempt, node: Node) -> str | Failed | _Feasible:
        name = node.metadata.name
        record = attempt.record
        served = (
            dra_served_resources(attempt.extended, node, self.extended_map) if attempt.extended else frozenset()
        )
        reason = node_fit_reason(record.pod, record.requests, node, self.state.usage[name], served,
                                 ports=record.host_ports, inter_pod=attempt.inter_pod, spread=attempt.spread)
        if reason:
            return reason
        if claim_rejecting(attempt.claims, node) is not None:
            return CLAIM_NOT_ON_NODE
        batch, special = attempt.batch_for(served, self.extended_map)
        if not batch or attempt.allocator is None:
            return _Feasible(name, None, None, served, batch)
        if self.index is not None:
            demand = self.index.demand(batch)
            if demand is not None:
                if self.index.free(demand.signature, name) < demand.count:
                    return UNSCHEDULABLE_CLAIMS
                if self.index.exact(name):
                    return _Feasible(name, None, special, served, batch, deferred=True)
        results = self._allocate(attempt.allocator, node, batch)
        if isinstance(results, Failed | str):
            return results
        return _Feasible(name, results, special, served, batch)

    def _choose(self, record: PodRecord, feasible: list[_Feasible], claims: Sequence[ResourceClaim] = ()) -> _Feasible:
        if self.policy is Policy.FIRST_FIT or len(feasible) == 1:
            return feasible[0]
        if self.kube is not None:
            return feasible[self.kube.choose(record, [Candidate(e.node, e.results) for e in feasible], claims)]
        if self.trace is not None:
            return feasible[self.trace.choose(record, [e.node for e in feasible], self.rng)]
        scored: list[tuple[float, str]] = []
        by_name = {entry.node: entry for entry in feasible}
        for entry in feasible:
            added = sum(_devices_asked(claim) for claim in entry.batch)
            total = self.state.devices.total.get(entry.node, 0)
            devices = DeviceUse(total, self.state.devices.device_use(entry.node) + added) if total else None
            score = node_score(self.policy, self.state.nodes[entry.node], self.state.usage[entry.node],
                               record.requests, devices)
            scored.append((score, entry.node))
        return by_name[pick(scored, self.rng)]


def _devices_asked(claim: ResourceClaim) -> int:
    """Devices a claim takes for scoring purposes (``All`` and subrequests counted as one). A request for consumable
    capacity adds nothing up front: how much of a device its share is depends on the device, and once allocated it
    counts as the share's use of it (``DeviceTable.device_use``)."""
    return sum(
        ((request.exactly.count or 1) if request.exactly.capacity is None else 0) if request.exactly is not None else 1
        for request in claim.spec.devices.requests
    )


def feasible_nodes_to_find(node_count: int) -> int:
    """kube-scheduler's adaptive ``numFeasibleNodesToFind`` (percentageOfNodesToScore unset)."""
    if node_count < MIN_FEASIBLE_NODES_TO_FIND:
        return node_count
    percentage = max(MIN_FEASIBLE_PERCENTAGE, 50 - node_count // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, node_count * percentage // 100)


def _cancelled(sets: NodeSets, window: int, start: int, wanted: int, processed: int) -> tuple[int, int]:
    """A window reaching one feasible node beyond ``wanted`` without it (Filter cancels there), and the nodes
    processed before it."""
    if window.bit_count() <= wanted:
        return window, processed
    return window & ~(1 << sets.kth_rotated(window, start, wanted)), processed - 1


class _Feasible(msgspec.Struct):
    node: str
    results: list[AllocationResult] | None
    special: ResourceClaim | None
    served: frozenset[str]
    batch: list[ResourceClaim]
    deferred: bool = False


class _Attempt(msgspec.Struct):
    """What PreFilter worked out for one pod, shared by the Filter calls of one attempt."""

    record: PodRecord
    claims: list[ResourceClaim]
    to_allocate: list[ResourceClaim]
    extended: list[ExtendedRequest]
    allocator: NodeAllocator | None
    inter_pod: AffinityFilter | None = None  # InterPodAffinity's PreFilter state (None: it skips)
    spread: SpreadFilter | None = None  # PodTopologySpread's, for explicit DoNotSchedule constraints (None: it skips)
    # Per set of DRA-served extended resources (most pods: only the empty one), made when first asked.
    _batches: dict[frozenset[str], tuple[list[ResourceClaim], ResourceClaim | None]] | None = None

    def batch_for(
        self, served: frozenset[str], mapping: ExtendedResourceMap
    ) -> tuple[list[ResourceClaim], ResourceClaim | None]:
        """The claims to allocate on a node: the pod's own, then its special claim if DRA serves anything there."""
        batches = self._batches
        if batches is None:
            batches = self._batches = {}
        found = batches.get(served)
        if found is None:
            found = batches[served] = node_batch(self.record.pod, self.to_allocate, self.extended, served, mapping)
        return found

