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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubedra.objects.model import Pod
from kubedra.scheduler.interpodaffinity import INTER_POD_REASONS, Term, selector_matches, terms_of
from kubedra.scheduler.nodefit import reasons_of
from kubedra.scheduler.podtopologyspread import CONSTRAINTS_REASON, DO_NOT_SCHEDULE, constraints_of

INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"


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
