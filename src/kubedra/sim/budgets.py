"""PodDisruptionBudgets (``policy/v1``) as preemption reads them: the disruptions each allows right now.

The disruption controller's arithmetic (``pkg/controller/disruption``): the pods the selector covers in the budget's
namespace are the expected ones, those bound and not yet leaving are healthy (the simulator's running pods are
Ready); ``minAvailable`` (a count, or a percentage of the expected pods rounded up) or ``expected - maxUnavailable``
(rounded up likewise) is the desired number, and ``status.disruptionsAllowed = max(0, healthy - desired)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import partial
from typing import Any

import msgspec

from kubedra.cluster.nodepool import RawLike, Strict, at, convert_strict, object_location
from kubedra.cluster.state import ClusterState
from kubedra.objects.errors import Problem
from kubedra.objects.model import ObjectMeta
from kubedra.scheduler.preemption import Budget
from kubedra.sim.manifests import LabelSelector, selector_matches
from kubedra.sim.workloads import DEFAULT_NAMESPACE

API_VERSION = "policy/v1"


class BudgetSpec(Strict, kw_only=True):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: Any = None


class PodDisruptionBudget(Strict, kw_only=True):
    api_version: str
    kind: str
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: BudgetSpec
    status: Any = None


def is_budget(data: dict[str, Any]) -> bool:
    return data.get("kind") == "PodDisruptionBudget" and data.get("apiVersion") == API_VERSION


def read_budgets(docs: Iterable[RawLike], problems: list[Problem]) -> list[PodDisruptionBudget]:
    out = []
    for raw in docs:
        where = object_location(raw, "PodDisruptionBudget")
        budget = convert_strict(raw.data, PodDisruptionBudget, where, problems)
        if budget is None:
            continue
        spec = budget.spec
        if (spec.min_available is None) == (spec.max_unavailable is None):
            problems.append(Problem(at(where, "spec"), "Invalid value: exactly one of minAvailable and maxUnavailable"
                                                       " must be set"))
            continue
        for name, value in (("minAvailable", spec.min_available), ("maxUnavailable", spec.max_unavailable)):
            if isinstance(value, str) and not _percent(value):
                problems.append(Problem(at(where, f"spec.{name}"),
                                        f'Invalid value: "{value}": must be an integer or a percentage like "50%"'))
        out.append(budget)
    return out


def _percent(text: str) -> int | None:
    number = text.removesuffix("%")
    return int(number) if text.endswith("%") and number.isdigit() else None


def _scaled(value: int | str, expected: int) -> int:
    """An IntOrString against the expected count, percentages rounded up (``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, int):
        return value
    return math.ceil((_percent(value) or 0) * expected / 100)


def _covers(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    """``filterPodsWithPDBViolation``: a budget with a nil or empty selector matches no pod."""
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return False
    return selector_matches(selector, labels)


def current_budgets(
    budgets: Iterable[PodDisruptionBudget], state: ClusterState, leaving: Iterable[str] = ()
) -> list[Budget]:
    """Each budget with the disruptions it allows in ``state`` (``leaving``: pods already being deleted)."""
    going = set(leaving)
    out = []
    for budget in budgets:
        namespace = budget.metadata.namespace or DEFAULT_NAMESPACE
        covers = partial(_covers, budget.spec.selector)
        expected = [r for r in state.pods.values() if (r.pod.metadata.namespace or DEFAULT_NAMESPACE) == namespace
                    and not r.deleted and r.finished_at is None and covers(r.pod.metadata.labels)]
        # countHealthyPods: a pod being deleted (preempted, or deleted by its controller) is not healthy
        healthy = sum(1 for r in expected if r.started_at is not None and r.key not in going
                      and r.pod.metadata.deletion_timestamp is None)
        spec = budget.spec
        if spec.min_available is not None:
            desired = _scaled(spec.min_available, len(expected))
        else:
            desired = len(expected) - _scaled(spec.max_unavailable or 0, len(expected))
        out.append(Budget(namespace, covers, max(0, healthy - desired)))
    return out
