"""A DaemonSet's pods as v1.37.2's DaemonSet controller makes them (``pkg/controller/daemon``).

The controller, not kube-scheduler, decides which nodes get a pod (``NodeShouldRunDaemonPod``): the template's
``nodeName`` if set, its ``nodeSelector`` and required node affinity, and no NoSchedule or NoExecute taint left
untolerated by the template's tolerations plus the ones every daemon pod gets (``AddOrUpdateDaemonPodTolerations``).
Room on the node is not weighed: a pod that does not fit its node stays pending there, as in a cluster. Each pod is
pinned by replacing the required node affinity with ``matchFields metadata.name In [node]`` and then scheduled like
any pod. Nodes are read once, at the DaemonSet's arrival; following pools as they change is not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from kubedra.objects.model import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSpec,
    Toleration,
)
from kubedra.objects.selection import node_selector_matches, toleration_tolerates

# In the order the controller appends them; network-unavailable only for hostNetwork pods.
DAEMON_TOLERATIONS = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
)
HOST_NETWORK_TOLERATION = Toleration(key="node.kubernetes.io/network-unavailable", operator="Exists",
                                     effect="NoSchedule")
TEMPLATE_GENERATION = "1"  # the API server sets a new DaemonSet's templateGeneration to 1


def _same(a: Toleration, b: Toleration) -> bool:
    """``Toleration.MatchToleration``: tolerations are unique by key, effect, operator and value."""
    return (a.key, a.effect, a.operator, a.value) == (b.key, b.effect, b.operator, b.value)


def add_or_update(tolerations: Iterable[Toleration], toleration: Toleration) -> list[Toleration]:
    """``AddOrUpdateTolerationInPodSpec``: a matching toleration is replaced in place (dropping its
    tolerationSeconds), otherwise the new one is appended."""
    out, updated = [], False
    for existing in tolerations:
        if _same(existing, toleration):
            out.append(toleration)
            updated = True
        else:
            out.append(existing)
    return out if updated else [*out, toleration]


def daemon_tolerations(spec: PodSpec, host_network: bool) -> list[Toleration]:
    """The template's tolerations plus the ones every daemon pod gets."""
    tolerations = list(spec.tolerations)
    for toleration in (*DAEMON_TOLERATIONS, *((HOST_NETWORK_TOLERATION,) if host_network else ())):
        tolerations = add_or_update(tolerations, toleration)
    return tolerations


def should_run(node: Node, spec: PodSpec) -> bool:
    """``NodeShouldRunDaemonPod``'s shouldRun for a spec that already carries the daemon tolerations."""
    name, labels = node.metadata.name, node.metadata.labels
    if spec.node_name and spec.node_name != name:
        return False
    if any(labels.get(key) != value for key, value in spec.node_selector.items()):
        return False
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and not node_selector_matches(required, name, labels):
        return False
    return not any(
        taint.effect in ("NoSchedule", "NoExecute") and not any(
            toleration_tolerates(key=t.key, operator=t.operator, value=t.value, effect=t.effect,
                                 taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect)
            for t in spec.tolerations
        )
        for taint in node.spec.taints
    )


def pinned(spec: PodSpec, node_name: str) -> PodSpec:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node affinity becomes the node's name alone;
    preferred terms and the rest of the spec are kept."""
    term = NodeSelectorTerm(match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In",
                                                                  values=[node_name])])
    required = NodeSelector(node_selector_terms=[term])
    affinity = spec.affinity or Affinity()
    node_affinity = affinity.node_affinity or NodeAffinity()
    node_affinity = msgspec.structs.replace(node_affinity, required_during_scheduling_ignored_during_execution=required)
    return msgspec.structs.replace(spec, affinity=msgspec.structs.replace(affinity, node_affinity=node_affinity))


def daemon_specs(spec: PodSpec, host_network: bool, nodes: Sequence[Node]) -> list[tuple[str, PodSpec]]:
    """(node name, pod spec) for every node the DaemonSet should run on, in the nodes' order."""
    template = msgspec.structs.replace(spec, tolerations=daemon_tolerations(spec, host_network))
    return [(node.metadata.name, pinned(template, node.metadata.name)) for node in nodes if should_run(node, template)]
