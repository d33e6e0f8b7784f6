"""TaintToleration's Score: PreferNoSchedule taints not tolerated (its Filter is ``nodefit.py``'s)."""

from __future__ import annotations

from kubedra.objects.model import Node, Pod
from kubedra.objects.selection import toleration_tolerates


def intolerable_prefer_no_schedule(node: Node, pod: Pod) -> int:
    """TaintToleration's raw score: the node's PreferNoSchedule taints no PreferNoSchedule (or any-effect)
    toleration of the pod tolerates."""
    tolerations = [t for t in pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
    count = 0
    for taint in node.spec.taints:
        if taint.effect != "PreferNoSchedule":
            continue
        if not any(
            toleration_tolerates(
                key=t.key, operator=t.operator, value=t.value, effect=t.effect,
                taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect,
            )
            for t in tolerations
        ):
            count += 1
    return count
