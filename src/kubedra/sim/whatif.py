"""What would make a pending pod fit: the few smallest changes, each proven on a modified copy of the run's end state.

``explain`` says why a pod waits; this says what would end the wait. Every suggestion is checked, never guessed: the
change is applied to a copy of the cluster state the run ended in (the objects rebuilt into a fresh ``ClusterState``,
the bound pods bound again) and the scheduler's own Filter (``Scheduler.place_on``: node rules, the claims' existing
allocations, the allocator) is run for the pod on that copy. A suggestion is offered only where the pod then fits.

The kinds of change, and their cost (the ranking: kind first, in this order, then the amount):

0. ``resources``: a node pool publishes a resource the pod asks for and none of its nodes has (a NodePool written
   without ``allocatable.cpu``, nodes without ``ephemeral-storage``: an omission, usually); cost the resources named
   (``sim.whatif_resources``).
1. ``selector``: a numeric comparison in a request's CEL selector (``>=``, ``>``, ``<=``, ``<``, directly or through
   ``compareTo``/``isGreaterThan``/``isLessThan`` on a quantity) relaxed to the nearest value some device offers;
   cost how far the threshold moves, in percent of the original. The workload asks for less than it said it needs
   (``sim.whatif_selectors``).
2. ``toleration``: a node taint (the pod's ``tolerations``) or a device taint (the request's ``tolerations``)
   tolerated; cost 1 for a NoSchedule taint, 2 for NoExecute, one more for a device taint (which usually marks an
   unhealthy GPU: a DeviceTaintRule or the driver's health check put it there; ``sim.whatif_taints``).
3. ``release``: pods holding the devices on a node end, so their claims release them; cost the pods ended. (A run
   ends when every known completion has happened: a pod still running then has no ``kubedra.io/run-for``.)
4. ``fallback``: a request asking more devices than fit falls back, with ``firstAvailable``, to the largest count
   that fits; cost the devices given up (``sim.whatif_requests``).
5. ``count``: the request's ``exactly.count`` lowered to that count; cost the devices given up, plus one. A
   workload made smaller ranks after waiting for a pod to end.
6. ``preemption``: lower-priority pods on a node deleted where kube-scheduler would not preempt them (the pod's
   ``preemptionPolicy: Never``; devices, which preemption does not free in 1.37); cost the pods
   (``sim.whatif_preemption``).
7. ``nodes``: one more node like those of a node pool (the ``kubedra.io/nodepool`` label a NodePool gives, or a
   cloud provider's pool label), empty, with copies of its ResourceSlices; cost the nodes added. One pod lands on
   one node, so one more node fits it or no number does.

Bounded: at most ``Limits`` candidates of each kind are tried (nodes, holders, comparisons, values, taints, pools),
and each try is one Filter per node it can affect (the nodes carrying the taint, publishing a value the relaxed
selector lets in, holding the released devices, added), at most ``nodes_checked``; each try rebuilds the state once.
The pod alone is proven: other pending pods may compete for what a change frees. Pure: the run's result in, data out.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubedra.allocator import Features
from kubedra.cel import CompileCache
from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import (
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from kubedra.scheduler.claims import generated_name, key_of, release
from kubedra.scheduler.dra import AllocatorBackend
from kubedra.scheduler.outcome import Placement
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy

KIND_ORDER = ("resources", "selector", "toleration", "release", "fallback", "count", "preemption", "nodes")
POOL_LABELS = ("kubedra.io/nodepool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
               "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool")
EFFECT_RISK = {"NoSchedule": 1, "NoExecute": 2}


@dataclass(frozen=True)
class Limits:
    """How much is tried, so that explaining one pod stays bounded on a large cluster."""

    suggestions: int = 5  # shown, best first
    release_nodes: int = 4  # nodes whose holders are released
    preemption_nodes: int = 4  # nodes whose lower-priority pods are removed (the fewest such pods first)
    victims: int = 8  # lower-priority pods per node considered
    holders: int = 4  # holders released per node (one by one, then together)
    comparisons: int = 4  # numeric comparisons relaxed
    values: int = 3  # offered values tried per comparison, nearest first
    counts: int = 4  # counts tried per request asking several devices (bisected: 4 finds any below 16)
    taints: int = 4  # distinct taints tolerated
    pools: int = 4  # node pools grown
    gang_nodes: int = 8  # nodes added to a pool for a waiting gang, at most
    gang_runs: int = 8  # whole runs repeated to prove a gang's changes, at most
    nodes_checked: int = 500  # nodes a change is proven on (the ones it can affect first)


@dataclass(frozen=True)
class Cost:
    kind: str
    amount: float
    unit: str
    text: str

    def rank(self) -> tuple[int, float]:
        return KIND_ORDER.index(self.kind), self.amount


@dataclass(frozen=True)
class Suggestion:
    """One proven change: ``text`` for people, ``change`` for scripts, ``nodes`` where the pod then fits."""

    text: str
    cost: Cost
    change: dict[str, Any]
    nodes: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.cost.kind, "text": self.text, "change": self.change, "fitsOn": self.nodes,
                "cost": {"amount": self.cost.amount, "unit": self.cost.unit, "text": self.cost.text}}


@dataclass
class Inputs:
    """What the proof needs from the run: its end state and the scheduler's settings."""

    state: ClusterState
    features: Features
    policy: Policy
    blocked_nodes: list[str] = field(default_factory=list)  # nodes where devices held by others are in the way


# ---------------------------------------------------------------------------------------------- the proof


def _copy(
    inputs: Inputs,
    *,
    nodes: Iterable[Node] = (),
    slices: Iterable[ResourceSlice] = (),
    claims: dict[str, ResourceClaim | None] | None = None,
    ended: frozenset[str] = frozenset(),
    replaced: dict[str, Node] | None = None,
) -> ClusterState:
    """The end state rebuilt with ``nodes``/``slices`` added, ``claims`` replaced (None: deleted), nodes ``replaced``
    by name and the pods ``ended`` unbound; the run's own state is not touched."""
    state = inputs.state
    changed = claims or {}
    kept = [c for k, c in state.claims.items() if k not in changed]
    kept += [c for c in changed.values() if c is not None]
    swap = replaced or {}
    copy = ClusterState.build(
        nodes=[*(swap.get(name, node) for name, node in state.nodes.items()), *nodes], slices=[*state.slices, *slices],
        classes=state.classes.values(),
        taint_rules=state.taint_rules, claims=kept, templates=state.templates.values(),
        consumable_capacity=inputs.features.consumable_capacity,
    )
    copy.spread_sources = state.spread_sources
    for key, record in state.pods.items():
        if key not in ended:
            copy.add_pod(record)
    for node, bound in state.bound.items():
        for key, record in bound.items():
            if key not in ended:
                copy.bind(record, node)
    return copy


def _scheduler(inputs: Inputs, state: ClusterState) -> Scheduler:
    """The run's scheduler, its settings and a fresh allocator, over ``state``."""
    features = inputs.features
    backend = AllocatorBackend(features, state, CompileCache(features.cel_options()), reuse_answers=False)
    return Scheduler(state, backend, inputs.policy, random.Random(0), None,
                     extended_resources=features.extended_resource)


def _fits(
    inputs: Inputs, state: ClusterState, record: PodRecord, only: Iterable[str] | None = None, cap: int = 500
) -> list[str]:
    """The nodes (of ``only``, else all; the first ``cap``) where the scheduler's Filter places ``record`` on
    ``state``."""
    scheduler = _scheduler(inputs, state)
    names = (list(only) if only is not None else list(state.nodes))[:cap]
    return [n for n in names if n in state.nodes and isinstance(scheduler.place_on(record, n), Placement)]


def _pod_claim_keys(record: PodRecord) -> list[str]:
    pod = record.pod
    keys = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated_name(pod.status.resource_claim_statuses, pod_claim.name)
        if name:
            keys.append(key_of(pod.metadata.namespace, name))
    return keys


def _template_of(record: PodRecord, claim_key: str) -> str:
    """The ResourceClaimTemplate the pod's claim ``claim_key`` was made from, or ""."""
    pod = record.pod
    for pod_claim in pod.spec.resource_claims:
        name = generated_name(pod.status.resource_claim_statuses, pod_claim.name)
        if pod_claim.resource_claim_template_name and name and key_of(pod.metadata.namespace, name) == claim_key:
            return key_of(pod.metadata.namespace, pod_claim.resource_claim_template_name)
    return ""


def _on(nodes: list[str], shown: int = 3) -> str:
    """"3 nodes (a, b, c)", "12 nodes (a, b, c and 9 more)"."""
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return f"{len(nodes)} node{'s' * (len(nodes) != 1)} ({', '.join(nodes[:shown])}{more})"


def _pending_claims(state: ClusterState, record: PodRecord) -> list[tuple[str, ResourceClaim]]:
    return [(k, c) for k in _pod_claim_keys(record) if (c := state.claims.get(k)) is not None
            and c.status.allocation is None]


# ---------------------------------------------------------------------------------------------- releases


def _holders(state: ClusterState, node: str, record: PodRecord) -> list[PodRecord]:
    """Pods bound to ``node`` that hold allocated claims (other than the pod's own)."""
    own = set(_pod_claim_keys(record))
    out = []
    for other in state.bound.get(node, {}).values():
        keys = [k for k in other.claim_keys if k not in own]
        if any((c := state.claims.get(k)) is not None and c.status.allocation is not None for k in keys):
            out.append(other)
    return out


Released = tuple[dict[str, ResourceClaim | None], dict[str, list[str]]]


def _release(state: ClusterState, holders: list[PodRecord]) -> Released:
    """The claims once ``holders`` end (as the run releases them) and the devices freed, by claim."""
    claims: dict[str, ResourceClaim | None] = {}
    freed: dict[str, list[str]] = {}
    for holder in holders:
        for key in holder.claim_keys:
            claim = claims.get(key, state.claims.get(key))
            if claim is None:
                continue
            outcome = release(claim, holder.pod)
            claims[key] = outcome.claim
            if outcome.deallocated is not None:
                freed[key] = [r.device for r in outcome.deallocated.devices.results]
    return claims, freed


def _releases(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    for node in inputs.blocked_nodes[: limits.release_nodes]:
        holders = _holders(state, node, record)[: limits.holders]
        tries = [[h] for h in holders] + [holders[:n] for n in range(2, len(holders) + 1)]
        for group in tries:
            claims, freed = _release(state, group)
            if not freed or not _fits(inputs, _copy(inputs, claims=claims, ended=frozenset(h.key for h in group)),
                                      record, [node]):
                continue
            pods = [h.key for h in group]
            devices = ", ".join(f"{claim} releases {', '.join(names)}" for claim, names in freed.items())
            ends = f"{', '.join(pods)} end{'s' * (len(group) == 1)}"
            releases = [{"claim": c, "devices": d} for c, d in freed.items()]
            running = f"end {len(group)} running pod{'s' * (len(group) > 1)}"
            yield Suggestion(f"fits on {node} once {devices} (when {ends}, not within the run)",
                             Cost("release", len(group), "pods", running),
                             {"node": node, "endPods": pods, "releases": releases}, [node])
            break  # the smallest set for this node


# ---------------------------------------------------------------------------------------------- more nodes


def pool_of(node: Node) -> tuple[str, str] | None:
    """(label, pool) naming the node's pool, or None."""
    labels = node.metadata.labels
    for label in POOL_LABELS:
        if labels.get(label):
            return label, labels[label]
    return None


def clone_node(slices: list[ResourceSlice], template: Node, name: str) -> tuple[Node, list[ResourceSlice]]:
    """A new empty node like ``template``, named ``name``, with copies of the ``slices`` published for it."""
    old = template.metadata.name
    labels = {**template.metadata.labels, "kubernetes.io/hostname": name}
    meta = msgspec.structs.replace(template.metadata, name=name, uid=f"whatif-{name}", labels=labels)
    node = msgspec.structs.replace(template, metadata=meta)
    copies = []
    for slice_ in slices:
        if slice_.spec.node_name != old:
            continue
        pool = slice_.spec.pool
        pool_name = name if pool.name == old else f"{pool.name}-{name}"
        spec = msgspec.structs.replace(slice_.spec, node_name=name,
                                       pool=msgspec.structs.replace(pool, name=pool_name))
        slice_meta = ObjectMeta(name=slice_.metadata.name.replace(old, name) if old in slice_.metadata.name
                                else f"{slice_.metadata.name}-{name}")
        copies.append(msgspec.structs.replace(slice_, metadata=slice_meta, spec=spec))
    return node, copies


def new_names(taken: Container[str], pool: str, count: int) -> list[str]:
    """The pool's next ``count`` node names (``<pool>-<i>``) not ``taken``."""
    names: list[str] = []
    index = 0
    while len(names) < count:
        candidate = f"{pool}-{index}"
        if candidate not in taken:
            names.append(candidate)
        index += 1
    return names


def _more_nodes(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    pools: dict[tuple[str, str], Node] = {}
    for node in state.nodes.values():
        found = pool_of(node)
        if found is not None and found not in pools:
            pools[found] = node
    for (label, pool), template in list(pools.items())[: limits.pools]:
        # One pod lands on one node: one more node is enough or no number is.
        names = new_names(state.nodes, pool, 1)
        added = [clone_node(state.slices, template, n) for n in names]
        copy = _copy(inputs, nodes=[n for n, _ in added], slices=[s for _, ss in added for s in ss])
        fitting = _fits(inputs, copy, record, names)
        if fitting:
            from kubedra.sim.whatif_patches import nodepool

            count = sum(1 for n in state.nodes.values() if n.metadata.labels.get(label) == pool)
            patch = nodepool(label, pool, [{"op": "replace", "path": "/spec/count", "value": count + 1}])
            yield Suggestion(f"fits if 1 more node of pool {pool} were added (like {template.metadata.name})",
                             Cost("nodes", 1, "nodes", "add 1 node"),
                             {"pool": pool, "label": label, "nodes": 1, "like": template.metadata.name,
                              "patches": [patch] if patch is not None else []}, fitting)


# ---------------------------------------------------------------------------------------------- all together


def _kinds() -> tuple[Callable[[Inputs, PodRecord, Limits], Iterator[Suggestion]], ...]:
    """Every kind's generator; those in their own modules build on this module's proof, so they are imported here."""
    from kubedra.sim.whatif_preemption import preemptions
    from kubedra.sim.whatif_requests import requests
    from kubedra.sim.whatif_resources import published_resources
    from kubedra.sim.whatif_selectors import selectors
    from kubedra.sim.whatif_taints import tolerations

    return published_resources, _releases, selectors, requests, tolerations, preemptions, _more_nodes


def what_would_fit(inputs: Inputs, key: str, limits: Limits = Limits()) -> list[Suggestion]:
    """The smallest proven changes that let the pending pod ``key`` fit, cheapest first (see the module docstring);
    empty when none of the tried changes helps or the pod is not pending."""
    record = inputs.state.pods.get(key)
    if record is None or record.phase != "Pending":
        return []
    kinds = _kinds()
    found = _once([s for kind in kinds for s in kind(inputs, record, limits)])
    if not found:  # two omissions at once: a pool's missing resource published, then each other change
        from kubedra.sim.whatif_resources import then_publishing

        found = _once(list(then_publishing(inputs, record, limits, kinds[1:])))
    return sorted(found, key=lambda s: s.cost.rank())[: limits.suggestions]


def _once(found: list[Suggestion]) -> list[Suggestion]:
    """Ending pods that never end within the run is deleting them: where a release and a preemption end as many pods
    on the same node, only the preemption is kept (it says why kube-scheduler will not, and what to scale down; it
    picks its pods as kube-scheduler orders victims, which the release need not)."""
    deleted = {(s.change["node"], len(s.change["victims"]))
               for s in found if s.cost.kind == "preemption" and "victims" in s.change}
    return [s for s in found if s.cost.kind != "release" or "endPods" not in s.change
            or (s.change["node"], len(s.change["endPods"])) not in deleted]
