"""One scheduling attempt for one pod, the way kube-scheduler's framework runs it with the DynamicResources plugin.

PreFilter resolves the pod's claims (they must exist; an allocated claim must still accept the pod) and its extended
resources; Filter checks each node — node rules first, then the nodeSelector of claims already allocated, then the
allocator for the claims still to allocate, plus the special claim of KEP-5004 last; Score picks among feasible nodes.
As kube-scheduler does, Filter stops after ``numFeasibleNodesToFind`` feasible nodes and the next attempt starts
where this one stopped. A ``DeviceIndex`` answers plain GPU demands without the allocator; the allocator then runs on
the chosen node only, and node sets walk the nodes as this walk does (``fast_path.py``).
The outcome is data (``outcome.py``); applying it is the caller's business.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import AllocationResult, Node, ResourceClaim, ResourceClaimSpec
from kubedra.objects.quantity import Quantity
from kubedra.scheduler.attempt import Attempt, Feasible
from kubedra.scheduler.candidates import NodeSets
from kubedra.scheduler.claims import key_of
from kubedra.scheduler.device_index import DeviceIndex
from kubedra.scheduler.dra import DraBackend
from kubedra.scheduler.dynamicresources import CLAIM_NOT_ON_NODE, UNSCHEDULABLE_CLAIMS, allocate
from kubedra.scheduler.extended import (
    ExtendedRequest,
    ExtendedResourceMap,
    dra_served_resources,
    extended_requests,
    request_mappings,
)
from kubedra.scheduler.fast_path import FastPath
from kubedra.scheduler.fgd import TraceScorer
from kubedra.scheduler.interpodaffinity_state import BoundAffinity
from kubedra.scheduler.kube_scorer import Candidate, KubeScorer
from kubedra.scheduler.nodefit import NOT_PINNED, claim_rejecting, is_extended_resource, node_fit_reason, pinned_nodes
from kubedra.scheduler.nominated import Nominator, added
from kubedra.scheduler.outcome import NO_NODES, Failed, Outcome, Placement, Unschedulable, summarize
from kubedra.scheduler.podtopologyspread_state import SpreadIndex
from kubedra.scheduler.prefilter import PreFilter
from kubedra.scheduler.scoring import TRACE_POLICIES, DeviceUse, Policy, devices_asked, node_score, pick

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_PERCENTAGE = 5
MAX_REFUSALS = 1024  # remembered "fits nowhere" outcomes, by pod shape


class Scheduler(FastPath):
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
        kube = policy is Policy.KUBE_SCHEDULER  # ties: a cross-check's diagnostic, ``KubeScorer.keep_ties``
        self.kube = KubeScorer(state, self.topology_spread, keep_ties=False) if kube else None
        self.trace = TraceScorer(state, policy.value) if policy in TRACE_POLICIES else None
        self.extended_map = ExtendedResourceMap(list(state.classes.values()) if extended_resources else [])
        self._serves_extended = bool(self.extended_map)  # some class has an extendedResourceName
        self._next_start = 0
        self.prefilter = PreFilter(state)
        self.pod_affinity = BoundAffinity(state)
        self.nominator = Nominator()  # preemptors waiting for their victims (``scheduler.nominated``)
        # Pods that fit nowhere, by what Filter reads of them: the outcome holds until the cluster changes. A full
        # cluster refuses every later replica of a Deployment with the same walk over every node.
        self._version = 0
        self._refusals: dict[tuple[object, ...], tuple[int, Unschedulable]] = {}
        self._refused_at = -1  # the version the last refusal was remembered at (none remembered since: no lookup)
        # Whether a requests map names an extended resource, by its identity (held: the id stays unique)
        self._names_extended: dict[int, tuple[Mapping[str, Quantity], bool]] = {}
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
        attempt = Attempt(
            record=record,
            claims=claims,
            to_allocate=to_allocate,
            extended=extended,
            allocator=self.backend.begin() if (to_allocate or extended) else None,
            inter_pod=self.pod_affinity.prefilter(record.pod),
            spread=self.topology_spread.prefilter(record.pod),
        )
        nominated = record.pod.status.nominated_node_name
        if nominated and nominated in self.state.nodes:  # evaluateNominatedNode: there first, taken unscored
            placed = self._place(attempt, self.state.nodes[nominated])
            if not isinstance(placed, str):
                return placed
        # The key is worked out only where it is read: a lookup, where a refusal was remembered at this version (a
        # bind or a change of devices makes every one stale), and a pod refused (a failed attempt changes nothing
        # the key reads).
        refusal_key = self._refusal_key(attempt) if self._refused_at == self._version else None
        if refusal_key is not None:
            known = self._refusals.get(refusal_key)
            if known is not None and known[0] == self._version:
                return known[1]
        draws, start = attempt.allocator.draws if attempt.allocator is not None else 0, self._next_start
        outcome = self._attempt(attempt)
        if (
            isinstance(outcome, Unschedulable)
            and start == self._next_start
            and (attempt.allocator is None or attempt.allocator.draws == draws)
            and (refusal_key is not None or (refusal_key := self._refusal_key(attempt)) is not None)
        ):  # nothing the attempt changed (the walk's start, the shareID stream) is skipped by replaying it
            if len(self._refusals) >= MAX_REFUSALS:
                self._refusals.clear()
            self._refusals[refusal_key] = (self._version, outcome)
            self._refused_at = self._version
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
        attempt = Attempt(
            record=record,
            claims=resolved,
            to_allocate=to_allocate,
            extended=extended,
            allocator=self.backend.begin() if (to_allocate or extended) else None,
            inter_pod=self.pod_affinity.prefilter(record.pod),
            spread=self.topology_spread.prefilter(record.pod),
        )
        placed = self._place(attempt, self.state.nodes[node_name])
        return placed.message if isinstance(placed, Failed) else placed

    def nominate(self, record: PodRecord, node: str) -> None:
        """PostFilter nominated the pod on ``node`` (``""``: cleared): lower-priority pods leave room for it."""
        self.nominator.nominate(record, node)
        self._version += 1

    def _place(self, attempt: Attempt, node: Node) -> Placement | Failed | str:
        """Filter on one node and, where the pod fits, its allocations there; else the node's reason."""
        verdict = self._filter_node(attempt, node)
        if isinstance(verdict, Failed | str):
            return verdict
        if not verdict.deferred or attempt.allocator is None:
            return self._placement(attempt, verdict, verdict.results)
        results = allocate(attempt.allocator, node, verdict.batch)
        if isinstance(results, Failed | str):
            return results
        return self._placement(attempt, verdict, results)

    def _attempt(self, attempt: Attempt) -> Outcome:
        # DynamicResources scores firstAvailable choices from every node's allocation: only the walk has them all.
        ranked = self.kube is not None and any(
            r.exactly is None for c in attempt.to_allocate for r in c.spec.devices.requests
        )
        # Rare: host ports, pins (the fast path filters DoNotSchedule constraints and required inter-pod affinity as
        # bitsets, and scores ScheduleAnyway constraints and inter-pod affinity by domains).
        pod = attempt.record.pod
        walked = attempt.record.host_ports or pinned_nodes(pod) is not None or (
            self.nominator and self.nominator.any_waiting(attempt.record))  # Filter runs twice where they wait
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

    def _refusal_key(self, attempt: Attempt) -> tuple[object, ...] | None:
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
        requests = record.requests
        named = self._names_extended.get(id(requests))  # a template's pods share one requests map
        if named is None or named[0] is not requests:
            if len(self._names_extended) >= MAX_REFUSALS:
                self._names_extended.clear()
            named = self._names_extended[id(requests)] = (requests, any(is_extended_resource(n) for n in requests))
        return extended_requests(record.pod) if named[1] else []

    def _walk(self, attempt: Attempt) -> Outcome:
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
        feasible: list[Feasible] = []
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
            results = allocate(attempt.allocator, self.state.nodes[chosen.node], chosen.batch, prefer)
            if isinstance(results, Failed):
                return results
            if isinstance(results, list):
                return self._placement(attempt, chosen, results)
            reasons.setdefault(results, []).append(chosen.node)
            feasible.remove(chosen)
        return Unschedulable(summarize(reasons, len(self.state.nodes)), reasons)

    def _placement(self, attempt: Attempt, chosen: Feasible, results: list[AllocationResult] | None) -> Placement:
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

    def _filter_node(self, attempt: Attempt, node: Node) -> str | Failed | Feasible:
        name = node.metadata.name
        record = attempt.record
        served = (
            dra_served_resources(attempt.extended, node, self.extended_map) if attempt.extended else frozenset()
        )
        if self.nominator:
            waiting = self.nominator.waiting_on(name, record)
            if waiting:  # the first pass: the node with the nominated pods of equal or higher priority on it
                with added(self.state, waiting, name):
                    reason = node_fit_reason(record.pod, record.requests, node, self.state.usage[name], served,
                                             ports=record.host_ports, inter_pod=self.pod_affinity.prefilter(record.pod),
                                             spread=self.topology_spread.prefilter(record.pod))
                if reason:
                    return reason
        reason = node_fit_reason(record.pod, record.requests, node, self.state.usage[name], served,
                                 ports=record.host_ports, inter_pod=attempt.inter_pod, spread=attempt.spread)
        if reason:
            return reason
        if claim_rejecting(attempt.claims, node) is not None:
            return CLAIM_NOT_ON_NODE
        batch, special = attempt.batch_for(served, self.extended_map)
        if not batch or attempt.allocator is None:
            return Feasible(name, None, None, served, batch)
        if self.index is not None:
            demand = self.index.demand(batch)
            if demand is not None:
                if self.index.free(demand.signature, name) < demand.count:
                    return UNSCHEDULABLE_CLAIMS
                if self.index.exact(name):
                    return Feasible(name, None, special, served, batch, deferred=True)
        results = allocate(attempt.allocator, node, batch)
        if isinstance(results, Failed | str):
            return results
        return Feasible(name, results, special, served, batch)

    def _choose(self, record: PodRecord, feasible: list[Feasible], claims: Sequence[ResourceClaim] = ()) -> Feasible:
        if self.policy is Policy.FIRST_FIT or len(feasible) == 1:
            return feasible[0]
        if self.kube is not None:
            return feasible[self.kube.choose(record, [Candidate(e.node, e.results) for e in feasible], claims)]
        if self.trace is not None:
            return feasible[self.trace.choose(record, [e.node for e in feasible], self.rng)]
        scored: list[tuple[float, str]] = []
        by_name = {entry.node: entry for entry in feasible}
        for entry in feasible:
            added = sum(devices_asked(claim) for claim in entry.batch)
            total = self.state.devices.total.get(entry.node, 0)
            devices = DeviceUse(total, self.state.devices.device_use(entry.node) + added) if total else None
            score = node_score(self.policy, self.state.nodes[entry.node], self.state.usage[entry.node],
                               record.requests, devices)
            scored.append((score, entry.node))
        return by_name[pick(scored, self.rng)]


def feasible_nodes_to_find(node_count: int) -> int:
    """kube-scheduler's adaptive ``numFeasibleNodesToFind`` (percentageOfNodesToScore unset)."""
    if node_count < MIN_FEASIBLE_NODES_TO_FIND:
        return node_count
    percentage = max(MIN_FEASIBLE_PERCENTAGE, 50 - node_count // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, node_count * percentage // 100)


