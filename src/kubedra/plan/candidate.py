"""One candidate fleet simulated: the workloads on NodePools of the given node counts. Texts in, figures out (no
file I/O), so a worker process or a Ray task runs it as it is."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import yaml

from kubedra import __version__
from kubedra.allocator.features import Features

Doc = dict[str, Any]


@dataclass(frozen=True)
class Candidate:
    """Node counts per pool (in the pools' order) and everything else a run depends on."""

    counts: tuple[int, ...]
    pools: tuple[str, ...]  # each pool's NodePool document as canonical JSON
    workloads: str  # the workload manifests' text
    seed: int
    policy: str
    features: Features  # the Kubernetes release and its feature gates, as --kubernetes-version/--feature-gates set

    def key(self) -> str:
        """The scenario hash: equal candidates share one cached result. It holds everything a result depends on,
        kubedra's version included, so an upgrade or another gate never reads a stale result."""
        gates = dataclasses.asdict(self.features)  # every gate resolved: equal settings, however written, share it
        body = json.dumps([__version__, list(self.counts), list(self.pools), self.workloads, self.seed, self.policy,
                           gates], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()

    def documents(self) -> list[Doc]:
        docs: list[Doc] = []
        for count, text in zip(self.counts, self.pools, strict=True):
            pool = copy.deepcopy(json.loads(text))
            pool["spec"]["count"] = count
            docs.append(pool)
        return docs


def pending_time(lines: list[Any]) -> dict[str, Any]:
    """p50, p99 and max pending time, a pod still pending at the end counting as waiting forever (None, "never"):
    a fleet on which pods never start does not meet a pending-time goal however short the run."""
    from kubedra.sim.report import format_duration, percentile

    waits = sorted(math.inf if line.phase == "Pending" else line.waited for line in lines)
    found: dict[str, Any] = {}
    for name, fraction in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        value = percentile(waits, fraction)
        found[f"{name}Seconds"] = None if math.isinf(value) else value
        found[name] = "never" if math.isinf(value) else format_duration(value)
    return found


def simulate_candidate(candidate: Candidate) -> dict[str, Any]:
    """The figures a goal reads: pending time, pods placed and pending, GPU capacity in use, stranded GPUs."""
    from kubedra.objects.load import load_text
    from kubedra.scheduler.scoring import Policy
    from kubedra.sim.report import build_report
    from kubedra.sim.scenario import build_scenario
    from kubedra.sim.simulate import Options, simulate

    text = yaml.safe_dump_all(candidate.documents()) + "---\n" + candidate.workloads
    features = candidate.features
    scenario = build_scenario(load_text(text, source="plan"), seed=candidate.seed,
                              generic_workload=features.generic_workload)
    result = simulate(scenario, Options(policy=Policy(candidate.policy), seed=candidate.seed, features=features))
    report = build_report(result)
    summary = report.summary
    return {
        "pods": summary["pods"],
        "pendingTime": pending_time(report.pods),
        "gpus": {"total": summary["gpus"]["total"], "capacityInUsePercent": summary["gpus"]["capacityInUsePercent"]},
        "stranded": summary["fragmentation"]["stranded"],
    }
