"""NodeResourcesFit's (LeastAllocated) and NodeResourcesBalancedAllocation's Score formulas, on cpu and memory."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kubedra.cluster.usage import ScoringRequests
from kubedra.scheduler.normalize import MAX_NODE_SCORE, go_div

ResourceKey = tuple[tuple[int, int], ScoringRequests]  # a node's allocatable and what its pods request


def least_requested(requested: int, capacity: int) -> int:
    """NodeResourcesFit ``leastRequestedScore``."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``leastResourceScorer`` with weight 1 per resource; resources the node does not have are left out."""
    total = weights = 0
    for want, have in zip(requested, allocatable, strict=True):
        if have == 0:
            continue
        total += least_requested(want, have)
        weights += 1
    return total // weights if weights else 0


def balance(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScore``: 100 x (1 - standard deviation of the requested fractions), truncated."""
    fractions = [min(1.0, want / have) for want, have in zip(requested, allocatable, strict=True) if have != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_allocation(with_pod: Sequence[int], without_pod: Sequence[int], allocatable: Sequence[int]) -> int:
    """1.37's ``balancedResourceScorer``: 50 + (50 + balance with the pod - balance without it) / 2."""
    delta = balance(with_pod, allocatable) - balance(without_pod, allocatable)
    return MAX_NODE_SCORE // 2 + go_div(MAX_NODE_SCORE // 2 + delta, 2)


def resource_total(key: ResourceKey, wants: ScoringRequests) -> int:
    """``KubeScorer.resources``' weighted sum (both weights are 1), written out for cpu and memory: what the fast path
    computes for every node of a window whose nodes all differ (a test holds it equal to the plugin formulas)."""
    (cpu, memory), used = key
    want_cpu, want_memory = wants.milli_cpu, wants.memory
    # NodeResourcesFit, LeastAllocated on the "non-zero" requests
    fit = weights = 0
    if cpu:
        requested = used.nonzero_milli_cpu + wants.nonzero_milli_cpu
        fit += (cpu - requested) * MAX_NODE_SCORE // cpu if requested <= cpu else 0
        weights += 1
    if memory:
        requested = used.nonzero_memory + wants.nonzero_memory
        fit += (memory - requested) * MAX_NODE_SCORE // memory if requested <= memory else 0
        weights += 1
    fit = fit // weights if weights else 0
    if want_cpu == 0 and want_memory == 0:
        return fit
    if cpu and memory:
        after = abs((min(1.0, (used.milli_cpu + want_cpu) / cpu) - min(1.0, (used.memory + want_memory) / memory)) / 2)
        before = abs((min(1.0, used.milli_cpu / cpu) - min(1.0, used.memory / memory)) / 2)
        delta = int((1 - after) * MAX_NODE_SCORE) - int((1 - before) * MAX_NODE_SCORE)
    else:
        delta = 0  # one resource or none: no spread, balance 100 with and without the pod
    return fit + MAX_NODE_SCORE // 2 + go_div(MAX_NODE_SCORE // 2 + delta, 2)
