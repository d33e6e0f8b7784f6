"""Hypothesis fuzzing of the objects gangs and preemption read (PodGroup, Workload, PriorityClass,
PodDisruptionBudget, a member pod): no mutation of a valid document makes the scenario builder or the run raise
anything but InvalidInputError with readable problems."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.allocator import Features
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

FUZZ = settings(max_examples=depth.examples(80, 800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
GANGS = Features.for_release().with_gates({"GenericWorkload": True, "DRAWorkloadResourceClaims": True})

BASE: list[dict[str, Any]] = [
    {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
     "spec": {"count": 2, "allocatable": {"cpu": "8", "memory": "64Gi"}, "gpu": {"model": "A100-40GB", "count": 2}}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
     "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]}},
    {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
     "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high",
              "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one"},
     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}},
    *[{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"m{i}", "labels": {"app": "x"}},
       "spec": {"priorityClassName": "high", "schedulingGroup": {"podGroupName": "g"},
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "4"},
                                                                        "claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}]}} for i in range(2)],
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "low"},
     "spec": {"nodeName": "n-0", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "6"}}}]}},
]

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-3, max_value=2**40), st.text(max_size=8))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


@FUZZ
@given(st.integers(min_value=1, max_value=len(BASE) - 1), st.data(), values)
def test_a_mutated_workload_object_is_refused_cleanly_or_simulated(index: int, data: st.DataObject, value: Any) -> None:
    docs = copy.deepcopy(BASE)
    paths = [p for p in _paths(docs[index]) if p]
    path = data.draw(st.sampled_from(paths))
    target: Any = docs[index]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    problems = None
    try:
        scenario = build_scenario(load_text(yaml.safe_dump_all(docs)), generic_workload=True)
    except InvalidInputError as error:
        problems = error.problems
    if problems is not None:
        assert problems and all(str(p) for p in problems)
        return
    simulate(scenario, Options(features=GANGS))
