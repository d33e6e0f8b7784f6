"""QueueingHints: whether a pod bound elsewhere may make an unschedulable pod schedulable (kube-scheduler v1.37.2).

kube-scheduler keeps a pod that failed in its unschedulable pool and moves it back to the queue when a cluster event
arrives for which one of the plugins that rejected it says ``Queue``. When a pod is bound (``AssignedPod`` Add) two
plugins of the default profile can say so:

* InterPodAffinity (``isSchedulableAfterAssignedPodChange``): the bound pod matches *all* the pending pod's required
  ``podAffinity`` terms. The terms' ``namespaceSelector`` is read against no namespace labels there (only an empty
  selector selects), unlike Filter, which lists the namespaces it selects.
* PodTopologySpread (``isSchedulableAfterAssignedPodChange``): the bound pod is in the pending pod's namespace and
  its labels match one of the pending pod's ``DoNotSchedule`` constraints' selectors.

Other plugins register no hint for a pod being bound (NodeResourcesFit and NodePorts wait for a pod to leave), so a
pod rejected only by them stays where it is.

When an assigned pod leaves (``AssignedPod`` Delete; a pod that finished is removed from the scheduler's cache as
well) a pod of the pool goes back when one of the plugins that rejected it says ``Queue`` for that pod
(``delete_hinted_plugins`` at the failure, ``requeue_after_delete`` at the event):

* NodeResourcesFit (``isSchedulableAfterPodEvent``): for any assigned pod deleted; so does a rejection by a plugin
  kubedra does not name, or a failure with no Filter reasons (a PreFilter message, an error).
* NodePorts (``isSchedulableAfterAssignedPodDeleted``): the deleted pod held a host port the pending pod wants.
* InterPodAffinity (``isSchedulableAfterAssignedPodChange``): the deleted pod matches one of the pending pod's
  required anti-affinity terms, or the pending pod matches one of the deleted pod's (terms read as for a bound pod).
* PodTopologySpread (``isSchedulableAfterAssignedPodChange``): the deleted pod is in the pending pod's namespace and
  its labels match one of the pending pod's ``DoNotSchedule`` constraints' selectors.
* DynamicResources registers no hint for a pod's deletion: its ``isSchedulableAfterClaimChange`` answers ``Queue``
  when a claim is deallocated (the resourceclaim controller's update after a pod with allocated claims is gone). So
  a pod refused devices on every node keeps its message when a preemption victim without claims leaves.
* TaintToleration, NodeAffinity, NodeName and NodeUnschedulable register none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubedra.cluster.usage import host_ports, ports_conflict
from kubedra.objects.model import Pod
from kubedra.scheduler.dynamicresources import CLAIM_NOT_ON_NODE, TIMED_OUT, UNSCHEDULABLE_CLAIMS
from kubedra.scheduler.interpodaffinity import INTER_POD_REASONS, Term, selector_matches, terms_of
from kubedra.scheduler.nodefit import (
    NODE_AFFINITY_REASON,
    NODE_NAME_MISMATCH,
    PORTS_REASON,
    TAINT_REASON,
    UNSCHEDULABLE_REASON,
    reasons_of,
)
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, DO_NOT_SCHEDULE, constraints_of

INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
NODE_PORTS = "NodePorts"
DYNAMIC_RESOURCES = "DynamicResources"
ANY_POD = "*"  # a rejecting plugin that queues the pod whenever any assigned pod leaves (NodeResourcesFit, unknown)
ON_ANY_DELETE = frozenset({ANY_POD})
# Filter reasons of plugins that register no hint for an assigned pod's deletion.
NODE_RULE_REASONS = (TAINT_REASON, UNSCHEDULABLE_REASON, NODE_NAME_MISMATCH, NODE_AFFINITY_REASON)
CLAIM_REASONS = (UNSCHEDULABLE_CLAIMS, CLAIM_NOT_ON_NODE, TIMED_OUT)  # DynamicResources' Filter


def bind_hinted_plugins(reasons: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """Of the plugins whose Filter reasons rejected the pod on some node, those with a hint for a pod being bound."""
    plugins = set()
    for status in reasons:
        for reason in reasons_of(status):
            if reason in INTER_POD_REASONS:
                plugins.add(INTER_POD_AFFINITY)
            elif reason.startswith(CONSTRAINTS_REASON):
                plugins.add(POD_TOPOLOGY_SPREAD)
    return frozenset(plugins)


def _hint_matches(term: Term, pod: Pod) -> bool:
    """``AffinityTerm.Matches(pod, nil)``: the term's namespaces, or its selector read against no labels."""
    if pod.metadata.namespace in term.namespaces or selector_matches(term.namespace_selector, {}):
        return selector_matches(term.selector, pod.metadata.labels)
    return False


def requeue_after_bind(pending: Pod, plugins: frozenset[str], bound: Pod) -> bool:
    """Whether ``bound`` being bound moves ``pending`` (rejected by ``plugins``) back to the scheduling queue."""
    if INTER_POD_AFFINITY in plugins:
        terms = terms_of(pending).affinity
        if terms and all(_hint_matches(term, bound) for term in terms):
            return True
    if POD_TOPOLOGY_SPREAD in plugins and bound.metadata.namespace == pending.metadata.namespace:
        return any(c.matches(bound) for c in constraints_of(pending, DO_NOT_SCHEDULE))
    return False


def delete_hinted_plugins(reasons: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """Of the plugins whose Filter reasons rejected the pod on some node, those with a hint for an assigned pod
    leaving (``ON_ANY_DELETE`` where one of them queues it for any)."""
    if not reasons:
        return ON_ANY_DELETE
    plugins = set()
    for status in reasons:
        for reason in reasons_of(status):
            if reason in CLAIM_REASONS:
                plugins.add(DYNAMIC_RESOURCES)
            elif reason in INTER_POD_REASONS:
                plugins.add(INTER_POD_AFFINITY)
            elif reason.startswith(CONSTRAINTS_REASON):
                plugins.add(POD_TOPOLOGY_SPREAD)
            elif reason == PORTS_REASON:
                plugins.add(NODE_PORTS)
            elif reason not in NODE_RULE_REASONS:
                return ON_ANY_DELETE
    return frozenset(plugins)


def requeue_after_delete(pending: Pod, plugins: frozenset[str], gone: Iterable[Pod], deallocated: bool) -> bool:
    """Whether the assigned pods ``gone`` leaving (``deallocated``: claims of theirs were deallocated) move
    ``pending``, rejected by ``plugins`` (``delete_hinted_plugins``), back to the scheduling queue."""
    if ANY_POD in plugins or (deallocated and DYNAMIC_RESOURCES in plugins):
        return True
    ports = host_ports(pending) if NODE_PORTS in plugins else ()
    anti = terms_of(pending).anti_affinity if INTER_POD_AFFINITY in plugins else ()
    spread = constraints_of(pending, DO_NOT_SCHEDULE) if POD_TOPOLOGY_SPREAD in plugins else ()
    for pod in gone:
        if ports and ports_conflict(ports, dict.fromkeys(host_ports(pod), 1)):
            return True
        if INTER_POD_AFFINITY in plugins and (
                any(_hint_matches(term, pod) for term in anti)
                or any(_hint_matches(term, pending) for term in terms_of(pod).anti_affinity)):
            return True
        if spread and pod.metadata.namespace == pending.metadata.namespace and any(c.matches(pod) for c in spread):
            return True
    return False
