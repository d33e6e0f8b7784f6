"""The fast path against the node-by-node walk on the same objects: random small zoned clusters, and each pod's
node (or pending reason) from a run with the fast path and from one without it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubedra.objects.load import load_text
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

H, Z = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def random_nodes(rng: random.Random, zones: str) -> list[dict[str, Any]]:
    """2 to 9 nodes of 2 or 4 cpus, each in one of ``zones`` (a letter each; '-': no zone label)."""
    nodes = []
    for i in range(rng.randint(2, 9)):
        zone = rng.choice(zones)
        labels = {H: f"n{i}", **({Z: zone} if zone != "-" else {})}
        nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
                      "status": {"allocatable": {"cpu": str(rng.choice([2, 4])), "memory": "8Gi", "pods": "110"}}})
    return nodes


def placements(text: str) -> dict[str, str]:
    result = simulate(build_scenario(load_text(text)), Options(policy=Policy.KUBE_SCHEDULER))
    return {r.pod.metadata.name: r.pod.spec.node_name or r.pending_reason for r in result.state.pods.values()}


def fast_and_walked(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[dict[str, str], dict[str, str]]:
    """The placements with the fast path, and with every pod walked node by node."""
    fast = placements(text)
    monkeypatch.setattr(Scheduler, "_schedule_fast", lambda *_: None)
    walked = placements(text)
    monkeypatch.undo()
    return fast, walked
