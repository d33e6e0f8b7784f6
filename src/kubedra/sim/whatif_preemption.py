"""What would make it fit, kind ``preemption``: lower-priority pods on one node whose removal lets the pod fit, offered
only where kube-scheduler's own preemption would not remove them (kubedra's models it: ``scheduler.preemption``).

kube-scheduler v1.37.2 preempts for a pod only where its Filter failure is ``Unschedulable``; every DynamicResources
failure is ``UnschedulableAndUnresolvable`` (``statusUnschedulable`` in ``dynamicresources.go``) and the plugin has no
``PreFilterExtensions``, so the dry run never releases a victim's devices either: **DRA devices are not freed by
preemption in 1.37** (KEP-5690 plans it for 1.38). A pod that waits for devices held by lower-priority pods waits,
though deleting those pods would release their claims. Nor does a pod with ``preemptionPolicy: Never`` preempt. Those
two are the cases offered; any other removal the run's preemption would already have made.

Proven as every suggestion is (``sim.whatif``): the victims are unbound on a copy of the end state and their claims
released as the run releases them (a claim from a template is deleted with its pod; one the pod names is deallocated
once nothing reserves it), and the scheduler's Filter places the pod on the node. The victims are the fewest found as
DefaultPreemption finds them: every lower-priority pod removed, then each reprieved, most important first (higher
priority, then the earlier start), where the pod still fits without it. Nodes with the fewest lower-priority pods are
tried first; cost the pods deleted.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubedra.cluster.state import PodRecord
from kubedra.scheduler.preemption import DRA_NOT_FREED, priority_of
from kubedra.scheduler.victims import start_key
from kubedra.sim.whatif import Cost, Inputs, Limits, Suggestion, _copy, _fits, _release

NEVER = "the pod's preemptionPolicy is Never"
UNRESOLVABLE = "the DynamicResources failure is UnschedulableAndUnresolvable, so DefaultPreemption skips the node"


def _fits_without(inputs: Inputs, record: PodRecord, node: str, victims: list[PodRecord], *, release: bool) -> bool:
    """Whether the pod fits on ``node`` once ``victims`` are gone: their claims released, or (``release`` False)
    still holding their devices, as kube-scheduler's dry run leaves them."""
    claims = _release(inputs.state, victims)[0] if release else {}
    return bool(_fits(inputs, _copy(inputs, claims=claims, ended=frozenset(v.key for v in victims)), record, [node]))


def _fewest(inputs: Inputs, record: PodRecord, node: str, lower: list[PodRecord]) -> list[PodRecord] | None:
    """The victims on ``node``: all of ``lower`` (most important first), less each whose return still lets the pod
    fit; None where removing them all does not."""
    if not _fits_without(inputs, record, node, lower, release=True):
        return None
    victims = list(lower)
    for candidate in lower:
        rest = [v for v in victims if v is not candidate]
        if _fits_without(inputs, record, node, rest, release=True):
            victims = rest
    return victims


def preemptions(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    """For the first ``limits.preemption_nodes`` nodes with pods of lower priority than the pod's (the fewest first):
    the fewest of them whose deletion lets it fit, where kube-scheduler would not preempt them."""
    state = inputs.state
    priority = priority_of(record)
    never = record.pod.spec.preemption_policy == "Never"
    candidates = []
    for node, bound in state.bound.items():
        lower = [p for p in bound.values() if priority_of(p) < priority and p.key != record.key]
        if lower:
            candidates.append((len(lower), node, lower))
    for _, node, lower in sorted(candidates, key=lambda c: (c[0], c[1]))[: limits.preemption_nodes]:
        ordered = sorted(lower, key=lambda p: (-priority_of(p), start_key(p), p.key))[: limits.victims]
        victims = _fewest(inputs, record, node, ordered)
        if victims is None:
            continue
        # kube-scheduler's dry run keeps the victims' devices held: where the pod fits so, it preempts (unless Never)
        held = _fits_without(inputs, record, node, victims, release=False)
        if held and not never:
            continue
        why = [NEVER] if never else []
        freed = _release(state, victims)[1]
        if not held:
            why.append(f"{DRA_NOT_FREED}: {UNRESOLVABLE}")
        yield _suggestion(node, victims, freed, why)


def _owner(victim: PodRecord) -> str:
    """The controller that makes a new pod for a deleted one (``Deployment/ns/name``), or ""."""
    return "" if victim.owner.startswith("Pod/") else victim.owner


def _suggestion(node: str, victims: list[PodRecord], freed: dict[str, list[str]], why: list[str]) -> Suggestion:
    many = len(victims) > 1
    listed = ", ".join(f"{v.key} (priority {priority_of(v)})" for v in victims)
    owners = sorted({_owner(v) for v in victims} - {""})
    named = ", ".join(o.replace("/", " ", 1) for o in owners)
    returns = f"; {named} would make a new pod for a deleted one: scale it down instead" if owners else ""
    text = (f"fits on {node} if {len(victims)} lower-priority pod{'s' * many} {'were' if many else 'was'} deleted: "
            f"{listed}; kube-scheduler does not preempt {'them' if many else 'it'}: {'; '.join(why)}{returns}")
    return Suggestion(
        text,
        Cost("preemption", len(victims), "pods", f"delete {len(victims)} lower-priority pod{'s' * many}"),
        {"node": node, "victims": [{"pod": v.key, "priority": priority_of(v), "owner": _owner(v) or None}
                                   for v in victims],
         "releases": [{"claim": c, "devices": d} for c, d in freed.items()], "why": why,
         "delete": [{"kind": "Pod", "name": v.key} for v in victims]},
        [node])
