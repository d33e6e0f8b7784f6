"""Where the next pod's search starts, past the nodes Filter processed (kube-scheduler's ``nextStartNodeIndex``).

With more than 100 nodes Filter stops at ``numFeasibleNodesToFind`` feasible nodes: it cancels at the feasible node
after the last one wanted, not counting it, so the nodes that failed between count as processed. The expected
placements are the real kube-scheduler v1.37.2's (``tests/kube/scenarios/window-start``, compared there too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubedra.objects.load import load_text
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

SCENARIO = Path(__file__).resolve().parents[1] / "kube" / "scenarios" / "window-start" / "objects.yaml"


@pytest.mark.parametrize("fast_path", [True, False])
def test_the_search_starts_past_the_failed_nodes_before_the_cancelling_one(fast_path: bool) -> None:
    scenario = build_scenario(load_text(SCENARIO.read_text()))
    result = simulate(scenario, Options(policy=Policy.KUBE_SCHEDULER, fast_path=fast_path))
    placed = {r.pod.metadata.name: r.pod.spec.node_name for r in result.state.pods.values()}
    # a: n000-n099 feasible, n100 and n101 tainted, n102 cancels: b starts at n102 (not n100), c after b's window.
    assert placed == {"a": "n000", "b": "n102", "c": "n098"}
