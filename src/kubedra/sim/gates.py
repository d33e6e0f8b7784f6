"""Scheduling gates (``spec.schedulingGates``): a gated pod is created but never enters the scheduling queue.

The API server marks it ``PodScheduled=False`` with reason ``SchedulingGated``; kube-scheduler's SchedulingGates
plugin keeps it out of the queue (PreEnqueue) until a controller removes the last gate — Kueue does so when it admits
the workload. A scenario removes them at a time with the ``kubedra.io/ungate-after`` annotation (from the pod's
arrival, Go duration syntax); without it the pod stays gated to the end of the run, as it would in a cluster where
nothing removes its gates.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import Pod
from kubedra.sim.durations import DurationError, parse_duration

UNGATE_AFTER = "kubedra.io/ungate-after"
GATED_REASON = "SchedulingGated"  # the PodScheduled condition's reason (v1.PodReasonSchedulingGated)
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"  # the API server's condition message


def ungate_after(pod: Pod) -> float | None:
    """Seconds from arrival until the pod's gates are removed; None: never (checked by ``gate_problems``)."""
    text = pod.metadata.annotations.get(UNGATE_AFTER)
    if text is None or not pod.spec.scheduling_gates:
        return None
    try:
        return max(parse_duration(text), 0.0)
    except DurationError:
        return None


def gate_problems(pods: Iterable[Pod]) -> list[Problem]:
    """Each pod whose ``kubedra.io/ungate-after`` is not a duration, or is negative, or has no gate to remove."""
    problems: list[Problem] = []
    for pod in pods:
        text = pod.metadata.annotations.get(UNGATE_AFTER)
        if text is None:
            continue
        where = Location(object=f"Pod {pod.metadata.namespace or 'default'}/{pod.metadata.name}",
                         field=f"metadata.annotations[{UNGATE_AFTER}]")
        try:
            seconds = parse_duration(text)
        except DurationError as err:
            problems.append(Problem(where, str(err)))
            continue
        if seconds < 0:
            problems.append(Problem(where, f"must not be negative, got {text!r}"))
        elif not pod.spec.scheduling_gates:
            problems.append(Problem(where, "the pod has no spec.schedulingGates to remove"))
    return problems
