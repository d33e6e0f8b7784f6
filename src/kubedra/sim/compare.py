"""Two simulations side by side: aggregate figures and the pods placed differently (``simulate --compare``)."""

from __future__ import annotations

from typing import Any

from kubedra.sim.report import Report, format_duration

# (label, path into the summary, kind): "n" a count, "s" seconds, "%" a percentage, "g" GPUs
_FIGURES = (
    ("pods running", ("pods", "running"), "n"),
    ("pods succeeded", ("pods", "succeeded"), "n"),
    ("pods pending", ("pods", "pending"), "n"),
    ("p50 pending time", ("pendingTime", "p50Seconds"), "s"),
    ("p99 pending time", ("pendingTime", "p99Seconds"), "s"),
    ("max pending time", ("pendingTime", "maxSeconds"), "s"),
    ("GPUs in use", ("gpus", "inUse"), "n"),
    ("peak GPUs in use", ("gpus", "peakInUse"), "n"),
    ("GPU capacity in use %", ("gpus", "capacityInUsePercent"), "%"),
    ("free GPUs", ("fragmentation", "free"), "n"),
    ("stranded GPUs", ("fragmentation", "stranded"), "n"),
    ("FGD measure (GPUs)", ("fragmentation", "fgd"), "g"),
)


def _value(summary: dict[str, Any], path: tuple[str, str]) -> float:
    return float(summary[path[0]][path[1]])


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
    for label, path, kind in _FIGURES:
        va, vb = _value(a.summary, path), _value(b.summary, path)
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
