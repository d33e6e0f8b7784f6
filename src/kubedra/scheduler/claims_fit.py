"""Whether a pending pod's claims could be allocated on a node now (``ClaimsFit``), for the report's stranded
capacity."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from typing import Any

import msgspec

from kubedra.allocator import AllocationError, Allocator
from kubedra.cluster.devices import DeviceRecord
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import Node, ResourceClaim, to_dict
from kubedra.scheduler.device_index import DeviceIndex
from kubedra.scheduler.explain_checks import Attempt, Explainer
from kubedra.scheduler.extended import dra_served_resources, extended_requests, node_batch
from kubedra.scheduler.nodefit import claim_rejecting
from kubedra.scheduler.prefilter import prefilter_claims
from kubedra.scheduler.verdicts import device_shapes, pools_are_node_local


class ClaimsFit:
    """Whether a pending pod's claims could be allocated on a node now: the claims' existing allocations, then the
    allocator, as ``explain`` runs them — node rules and cpu/memory left out, and no diagnosis of a node that does not
    fit. For the report's stranded capacity (free devices no waiting request can use), which asks it of many pods
    and nodes, again at every sample of a run: answers are kept per pod shape (``key``) and node state, so nodes
    alike in devices and use, and nodes unchanged since the last sample, are decided once."""

    def __init__(self, state: ClusterState, allocator: Allocator, index: DeviceIndex | None = None) -> None:
        self._explainer = Explainer(state, allocator)
        self._state = state
        self._index = index  # the run's free-device counts, where it keeps them: plain demands decided by count
        self._answers: dict[tuple[str, frozenset[str], Hashable], bool] = {}
        self._shape_of: dict[str, int | None] | None = None  # node -> its device shape (None: not comparable)
        self._devices_of: dict[str, list[DeviceRecord]] = {}

    def key(self, record: PodRecord) -> str:
        """Pods alike for ``fits``: the same device requests (claim specs, their claims' allocations, extended
        resources). The pod's node rules and cpu/memory do not count: ``fits`` does not read them."""
        state = self._state
        pod = record.pod
        namespace = pod.metadata.namespace
        generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
        claims: list[Any] = []
        for source in pod.spec.resource_claims:
            name = source.resource_claim_name or generated.get(source.name)
            claim = state.claims.get(f"{namespace}/{name}") if name else None
            if claim is not None:
                allocation = claim.status.allocation
                claims.append([to_dict(claim.spec), to_dict(allocation) if allocation is not None else None])
            elif source.resource_claim_template_name and not source.resource_claim_name:
                template = state.templates.get(f"{namespace}/{source.resource_claim_template_name}")
                claims.append([to_dict(template.spec.spec), None] if template is not None else None)
            else:
                claims.append(None)
        extended = [dataclasses.astuple(r)[2:] for r in extended_requests(pod)] if self._explainer.mapping else []
        return msgspec.json.encode([claims, extended]).decode()

    def attempt(self, record: PodRecord) -> Attempt | None:
        """What checking the pod needs on every node; None when its claims cannot exist (no node fits)."""
        resolved = prefilter_claims(self._state, record)
        return None if isinstance(resolved, str) else self._explainer.attempt(record, resolved)

    def fits(self, attempt: Attempt, node: Node, key: str | None = None) -> bool:
        """``key``: the pod's ``key`` — the answer is then kept for this node's state."""
        explainer = self._explainer
        if claim_rejecting(attempt.claims, node) is not None:
            return False
        served = dra_served_resources(attempt.extended, node, explainer.mapping) if attempt.extended else frozenset()
        node_state = self._node_state(node.metadata.name) if key is not None else None
        if node_state is not None and key is not None:
            known = self._answers.get((key, served, node_state))
            if known is not None:
                return known
        batch, _ = node_batch(attempt.record.pod, attempt.to_allocate, attempt.extended, served, explainer.mapping)
        if not batch:
            return False  # nothing to allocate: the pod asks no device of this node
        answer = self._counted(batch, node.metadata.name)
        if answer is None:
            try:
                results = explainer.allocator.allocate(node, batch)
            except AllocationError:  # NodeAllocationFailed and SearchBudgetExceeded included: no fit found here
                answer = False
            else:
                answer = results is not None and len(results) == len(batch)
        if node_state is not None and key is not None:
            if len(self._answers) >= MAX_KEPT_ANSWERS:
                self._answers.clear()
            self._answers[key, served, node_state] = answer
        return answer

    def _counted(self, batch: list[ResourceClaim], name: str) -> bool | None:
        """The answer the free-device counts give, as the scheduler takes it: too few matching devices free never
        fit, enough on a node whose devices are plain always do; shares as ``DeviceIndex.shares_fit`` counts them
        (None: the allocator must say)."""
        index = self._index
        if index is None:
            return None
        demand = index.demand(batch)
        if demand is None:
            shares = index.share_demand(batch)
            return index.shares_fit(shares, name) if shares is not None else None
        if index.free(demand.signature, name) < demand.count:
            return False
        return True if index.exact(name) else None

    def _node_state(self, name: str) -> Hashable | None:
        """What the allocator's answer on a node depends on, when that is only its own devices and their use:
        pools node-local and no taint rules (as the scheduler's ``NodeSets.state_key``), and here shares and
        consumed capacity too. Nodes whose slices carry the same devices in the same order, with the same ones
        in use and the same consumed, get the same answer: CEL sees neither pool nor node."""
        state = self._state
        if state.taint_rules:
            return None
        if self._shape_of is None:
            names = list(state.nodes)
            local = pools_are_node_local(state)
            self._shape_of = dict(zip(names, device_shapes(state, names) if local else [None] * len(names),
                                      strict=True))
            for record in state.devices.by_key.values():
                if record.node is not None:
                    self._devices_of.setdefault(record.node, []).append(record)
        shape = self._shape_of.get(name)
        if shape is None:
            return None
        shares, capacity = state.devices.allocated.shares, state.devices.allocated.aggregated_capacity
        used = []
        for record in self._devices_of.get(name, ()):
            consumed = capacity.get(record.id)
            if consumed or record.id in shares:
                amounts = tuple(sorted((c, q.nanos) for c, q in consumed.items())) if consumed else ()
                used.append((record.local, shares.get(record.id, 0), amounts))
        return shape, state.devices.in_use_on(name), tuple(used)


MAX_KEPT_ANSWERS = 200_000
