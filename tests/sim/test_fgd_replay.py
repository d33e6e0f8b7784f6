"""``--policy fgd`` against an independent replay of the FGD artifact's scheduling, pod for pod, on cuts of the trace.

The replay below is written from the artifact's code as read (kubernetes-scheduler-simulator's FGDScore and
utils/frag.go, and its kube-scheduler fork's selectHost), with nothing of kubedra's scheduler: every node with room
(cpu, memory, the GPUs: a share on one GPU with that much left, N whole GPUs on N free ones; the model its gpu_spec
names) is scored int(100 x sigmoid((F_before - F_after) / 1000)) over the milli-GPUs of the run's task shapes, a share
tried on each GPU and scored by its best; the top score wins, a tie the smallest node name; a share takes that GPU,
whole GPUs the first free ones. Pods that fit nowhere are skipped (nothing leaves, so nothing would change).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kubedra.objects.load import load_text
from kubedra.scheduler.scoring import Policy
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate
from kubedra.traces import openb

CUT = Path(__file__).resolve().parents[2] / "examples" / "traces" / "openb"


def _fragment(cpu: int, lefts: list[int], model: str, shapes: list[tuple[tuple[int, int, int, str], float]]) -> float:
    idle = sum(lefts)
    total = 0.0
    for (task_cpu, milli, count, spec), p in shapes:
        if milli == 0 or (spec and model not in spec.split("|")):
            total += p * idle
        elif sum(1 for left in lefts if left >= milli) >= count and cpu >= task_cpu:
            total += p * sum(left for left in lefts if left < milli)
        else:
            total += p * idle
    return total


def _score(before: float, after: float) -> int:
    return int(1 / (1 + math.exp(-(before - after) / 1000)) * 100)


def replay(nodes: list[openb.TraceNode], order: list[openb.Task]) -> list[str | None]:
    """The node each task lands on (None: skipped)."""
    pools = openb.nodepools(nodes)
    shapes_seen: dict[tuple[int, int, int, str], str] = {}
    for node in nodes:
        shapes_seen.setdefault((node.cpu_milli, node.memory_mib, node.gpus, node.model if node.gpus else ""),
                               node.model)
    state = []  # [name, cpu left, memory left, milli-GPU left per GPU, trace model]
    for pool, (key, model) in zip(pools, shapes_seen.items(), strict=True):
        for i in range(pool["spec"]["count"]):
            state.append([f"{pool['metadata']['name']}-{i}", key[0], key[1], [1000] * key[2], model])
    counts = Counter((t.cpu_milli, t.gpu_milli if t.num_gpu else 0, t.num_gpu, t.gpu_spec) for t in order)
    shapes = [(k, c / len(order)) for k, c in counts.items()]
    placed: list[str | None] = []
    for task in order:
        candidates = []
        for node in state:
            name, cpu, memory, lefts, model = node
            if cpu < task.cpu_milli or memory < task.memory_mib:
                continue
            if task.num_gpu and ((task.gpu_spec and model not in task.gpu_spec.split("|"))
                                 or sum(1 for left in lefts if left >= task.gpu_milli) < task.num_gpu):
                continue
            before = _fragment(cpu, lefts, model, shapes)
            if task.num_gpu == 1 and task.gpu_milli < 1000:
                best, gpu = -1, -1
                for j, left in enumerate(lefts):
                    if left >= task.gpu_milli:
                        after = [*lefts[:j], left - task.gpu_milli, *lefts[j + 1:]]
                        score = _score(before, _fragment(cpu - task.cpu_milli, after, model, shapes))
                        if score > best:
                            best, gpu = score, j
                candidates.append((best, name, node, [gpu]))
            else:
                free = [j for j, left in enumerate(lefts) if left >= 1000][:task.num_gpu]
                after = [0 if j in free else left for j, left in enumerate(lefts)]
                candidates.append((_score(before, _fragment(cpu - task.cpu_milli, after, model, shapes)), name, node,
                                   free))
        if not candidates:
            placed.append(None)
            continue
        top = max(c[0] for c in candidates)
        _, name, node, gpus = min((c for c in candidates if c[0] == top), key=lambda c: c[1])
        node[1] -= task.cpu_milli
        node[2] -= task.memory_mib
        for j in gpus:
            node[3][j] -= task.gpu_milli if task.num_gpu == 1 else 1000
        placed.append(name)
    return placed


@pytest.mark.parametrize("workload", ["default", "gpushare100", "gpuspec33", "multigpu50"])
@pytest.mark.parametrize("seed", [42, 45])
def test_fgd_places_every_pod_where_the_artifacts_replay_does(workload: str, seed: int) -> None:
    nodes = openb.read_nodes((CUT / openb.NODE_FILE).read_text())
    tasks = openb.read_tasks((CUT / openb.pod_file(workload)).read_text(), openb.pod_file(workload))
    gpus = sum(n.gpus for n in nodes)
    order = openb.arrived_prefix(openb.artifact_order(tasks, gpus, seed), gpus, 1.0)
    expected = replay(nodes, order)
    docs = openb.documents(nodes, tasks, seed=seed, arrived=1.0)
    result = simulate(build_scenario(load_text(yaml.safe_dump_all(docs)), seed=seed),
                      Options(policy=Policy.FGD, seed=seed, fragmentation_samples=0))
    state = result.state
    got = [state.pods[f"default/task-{i:05d}"].pod.spec.node_name or None for i in range(len(order))]
    assert got == expected
    assert sum(1 for n in got if n) > len(got) // 2
    assert build_report(result).summary["pods"]["pending"] == got.count(None)
