"""Two simulations side by side: aggregate figures and the pods placed differently (``simulate --compare``)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from kubedra.sim.report import Report, format_duration


def _series(summary: dict[str, Any], key: str) -> list[float]:
    """The fragmentation figure ``key`` at each sample over the run (the end-of-run value where none was sampled)."""
    fragmentation = summary["fragmentation"]
    points = fragmentation.get("series") or [fragmentation]
    return [float(point[key]) for point in points]


def _path(first: str, second: str) -> Callable[[dict[str, Any]], float]:
    return lambda summary: float(summary[first][second])


# (label, how to read it from a summary, kind): "n" a count, "s" seconds, "%" a percentage, "g" GPUs. Pods in every
# end state are counted (a Deployment's pods end by deletion), and the GPU and fragmentation figures over the whole
# run stand beside the end-of-run ones: two runs can end alike and differ all along.
_FIGURES: tuple[tuple[str, Callable[[dict[str, Any]], float], str], ...] = (
    ("pods running", _path("pods", "running"), "n"),
    ("pods succeeded", _path("pods", "succeeded"), "n"),
    ("pods deleted", _path("pods", "deleted"), "n"),
    ("pods pending", _path("pods", "pending"), "n"),
    ("p50 pending time", _path("pendingTime", "p50Seconds"), "s"),
    ("p99 pending time", _path("pendingTime", "p99Seconds"), "s"),
    ("max pending time", _path("pendingTime", "maxSeconds"), "s"),
    ("GPUs in use at the end", _path("gpus", "inUse"), "n"),
    ("peak GPUs in use", _path("gpus", "peakInUse"), "n"),
    ("mean GPUs in use", _path("gpus", "meanInUse"), "g"),
    ("GPU-hours in use", _path("gpus", "gpuHours"), "g"),
    ("GPU capacity in use % at the end", _path("gpus", "capacityInUsePercent"), "%"),
    ("free GPUs at the end", _path("fragmentation", "free"), "n"),
    ("stranded GPUs at the end", _path("fragmentation", "stranded"), "n"),
    ("peak stranded GPUs (samples)", lambda summary: max(_series(summary, "stranded")), "n"),
    ("mean stranded GPUs (samples)", lambda summary: statistics.fmean(_series(summary, "stranded")), "g"),
    ("FGD measure (GPUs) at the end", _path("fragmentation", "fgd"), "g"),
)


def _text(value: float, kind: str, signed: bool = False) -> str:
    sign = "+" if signed and value > 0 else "-" if signed and value < 0 else ""
    magnitude = abs(value) if signed else value
    if kind == "s":
        return sign + format_duration(magnitude)
    if kind == "n":
        return f"{sign}{magnitude:.0f}"
    return f"{sign}{magnitude:.2f}".rstrip("0").rstrip(".") if magnitude else "0"


def compare(a: Report, b: Report, labels: tuple[str, str]) -> dict[str, Any]:
    """The comparison document: figures of both runs and their difference, then every pod whose phase or node
    differs (pods matched by namespace/name)."""
    figures = []
    for label, read, kind in _FIGURES:
        va, vb = read(a.summary), read(b.summary)
        figures.append({"figure": label, "a": va, "b": vb, "difference": vb - va,
                        "text": [_text(va, kind), _text(vb, kind), _text(vb - va, kind, signed=True)]})
    lines_b = {line.pod: line for line in b.pods}
    pods = []
    for line in a.pods:
        other = lines_b.get(line.pod)
        if other is None or (other.phase, other.node) != (line.phase, line.node):
            pods.append({
                "pod": line.pod,
                "a": {"phase": line.phase, "node": line.node, "waited": line.waited},
                "b": None if other is None else {"phase": other.phase, "node": other.node, "waited": other.waited},
            })
    only_b = [p for p in lines_b if p not in {line.pod for line in a.pods}]
    pods.extend({"pod": p, "a": None, "b": {"phase": lines_b[p].phase, "node": lines_b[p].node,
                                            "waited": lines_b[p].waited}} for p in only_b)
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "SimulationComparison", "a": labels[0], "b": labels[1],
            "figures": figures, "podsDiffering": len(pods), "pods": pods}
