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
well) the pool's pods go back unless no plugin that rejected them registers for that event (``delete_hint``):
TaintToleration, NodeAffinity, NodeName and NodeUnschedulable register none, and neither does DynamicResources, whose
``isSchedulableAfterClaimChange`` answers ``Queue`` only when a claim is deallocated (the resourceclaim controller's
update after a pod with allocated claims is gone). So a pod that DynamicResources rejected on every node ("cannot
allocate all claims") keeps its message when a preemption victim without claims leaves, while one that some node
refused with "Insufficient cpu" is tried again (NodeResourcesFit's ``isSchedulableAfterPodEvent``: ``Queue`` for any
assigned pod deleted). The other plugins' delete hints (NodePorts, InterPodAffinity, PodTopologySpread,
VolumeRestrictions) are read as ``Queue``, as is a failure with no Filter reasons (a PreFilter message, an error).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubedra.objects.model import Pod
from kubedra.scheduler.dynamicresources import CLAIM_NOT_ON_NODE, TIMED_OUT, UNSCHEDULABLE_CLAIMS
from kubedra.scheduler.interpodaffinity import INTER_POD_REASONS, Term, selector_matches, terms_of
from kubedra.scheduler.nodefit import (
    NODE_AFFINITY_REASON,
    NODE_NAME_MISMATCH,
    TAINT_REASON,
    UNSCHEDULABLE_REASON,
    reasons_of,
)
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, DO_NOT_SCHEDULE, constraints_of

INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

ON_POD_DELETE = "pod"  # some rejecting plugin queues the pod when any assigned pod leaves
ON_DEALLOCATION = "claim"  # only DynamicResources (besides node rules): when a pod's leaving deallocates a claim
NEVER_ON_DELETE = ""  # only node rules: a pod leaving never helps
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


def delete_hint(reasons: Mapping[str, Iterable[str]]) -> str:
    """Which assigned pod leaving moves a pod rejected with these Filter reasons back to the queue: ``ON_POD_DELETE``
    (any), ``ON_DEALLOCATION`` (one whose claims are deallocated) or ``NEVER_ON_DELETE``."""
    if not reasons:
        return ON_POD_DELETE
    hint = NEVER_ON_DELETE
    for status in reasons:
        for reason in reasons_of(status):
            if reason in CLAIM_REASONS:
                hint = ON_DEALLOCATION
            elif reason not in NODE_RULE_REASONS:
                return ON_POD_DELETE
    return hint


def requeue_after_delete(hint: str, deallocated: bool) -> bool:
    """Whether a pod with ``delete_hint`` ``hint`` goes back when an assigned pod leaves (``deallocated``: its claims
    were deallocated)."""
    return hint == ON_POD_DELETE or (hint == ON_DEALLOCATION and deallocated)
