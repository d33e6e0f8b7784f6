"""Property tests of ``kubedra migrate plan`` on generated clusters (1-4 device-plugin nodes, 0-3 Deployments).

Every wave's placement is checked independently: the wave's mixed cluster is written out as manifests from scratch
(NodePools on the device plugin or on DRA, each running pod a bare Pod pinned to the node the plan names) and
simulated with ``kubedra.sim`` alone; no pod the plan says runs may be left pending. And ``smart`` is never worse than
``naive``: fewer broken budgets, or as many and no more evictions.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubedra.allocator import Features
from kubedra.migrate import waves
from kubedra.migrate.rollout import read_cluster
from kubedra.objects.load import load_paths
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

FEATURES = Features.for_release("1.37")
MODELS = ("A100-40GB", "H100-80GB")

nodes_st = st.lists(st.tuples(st.sampled_from(MODELS), st.integers(1, 4), st.booleans()), min_size=1, max_size=4)
workloads_st = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 2), st.sampled_from([None, 1, 2])),
                        min_size=0, max_size=3)


def _pool(name: str, model: str, gpus: int, *, plugin: bool, shared: bool) -> dict[str, object]:
    spec: dict[str, object] = {"count": 1, "gpu": {"model": model, "count": gpus}}
    if plugin:
        spec["devicePlugin"] = True
    if shared:
        spec["labels"] = {"nvidia.com/device-plugin.config": "shared"}
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def _container(gpus: int) -> dict[str, object]:
    return {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": gpus}}}


def _cluster_docs(nodes: list[tuple[str, int, bool]], workloads: list[tuple[int, int, int | None]]) -> list[object]:
    docs: list[object] = [_pool(f"n{i}", m, g, plugin=True, shared=s) for i, (m, g, s) in enumerate(nodes)]
    if any(s for _, _, s in nodes):
        config = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu",
                                                                               "replicas": 2}]}}}
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ts"},
                     "data": {"shared": yaml.safe_dump(config)}})
    for i, (replicas, gpus, budget) in enumerate(workloads):
        labels = {"app": f"w{i}"}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"w{i}"},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels},
                                           "spec": {"containers": [_container(gpus)]}}}})
        if budget is not None:
            docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": f"w{i}"},
                         "spec": {"minAvailable": budget, "selector": {"matchLabels": labels}}})
    return docs


def _pending_from_scratch(path: Path, nodes: list[tuple[str, int, bool]], switched: set[str],
                          placement: dict[str, str], gpus_of: dict[str, int]) -> list[str]:
    """The wave's cluster written out and simulated with the simulator alone: the pods left pending."""
    docs: list[object] = []
    for i, (model, gpus, shared) in enumerate(nodes):
        node = f"n{i}-0"
        docs.append(_pool(f"n{i}", model, gpus, plugin=node not in switched, shared=shared))
    if any(s for _, _, s in nodes):
        config = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu",
                                                                               "replicas": 2}]}}}
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ts"},
                     "data": {"shared": yaml.safe_dump(config)}})
    for key, node in sorted(placement.items()):
        name = key.split("/", 1)[1]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                     "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                              "containers": [_container(gpus_of[key])]}})
    path.write_text(yaml.safe_dump_all(docs))
    loaded = load_paths([str(path)])
    scenario = build_scenario(loaded)
    # Time-slicing on the device plugin: the scratch cluster multiplies what the shared nodes advertise itself.
    import msgspec

    for j, n in enumerate(scenario.nodes):
        index = int(n.metadata.name[1:].split("-")[0])
        if nodes[index][2] and "nvidia.com/gpu" in n.status.allocatable:
            allocatable = {**n.status.allocatable, "nvidia.com/gpu": str(nodes[index][1] * 2)}
            scenario.nodes[j] = msgspec.structs.replace(
                n, status=msgspec.structs.replace(n.status, allocatable=allocatable, capacity=allocatable))
    result = simulate(scenario, Options(features=FEATURES, fragmentation_samples=0))
    return sorted(k for k, r in result.state.pods.items() if r.phase != "Running")


def _plans(tmp: Path, nodes: list[tuple[str, int, bool]], workloads: list[tuple[int, int, int | None]],
           max_unavailable: int) -> tuple[waves.Plan, waves.Plan, dict[str, int]]:
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(_cluster_docs(nodes, workloads)))
    loaded = load_paths([str(path)])
    cluster = read_cluster(loaded, build_scenario(loaded))
    gpus_of = {f"default/{a.pod.metadata.name}": int(a.pod.spec.containers[0].resources.limits["nvidia.com/gpu"])
               for a in cluster.pods}
    naive = waves.naive(cluster, FEATURES, max_unavailable)
    return naive, waves.smart(cluster, FEATURES, max_unavailable, naive), gpus_of


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=nodes_st, workloads=workloads_st, max_unavailable=st.integers(1, 2))
def test_no_wave_that_fits_leaves_a_pod_pending(tmp_path: Path, nodes: list[tuple[str, int, bool]],
                                                 workloads: list[tuple[int, int, int | None]],
                                                 max_unavailable: int) -> None:
    naive, smart, gpus_of = _plans(tmp_path, nodes, workloads, max_unavailable)
    for plan in (naive, smart):
        switched: set[str] = set()
        for wave in plan.waves:
            switched |= set(wave.switching)
            pending = _pending_from_scratch(tmp_path / "wave.yaml", nodes, switched, wave.placement, gpus_of)
            assert pending == [], (plan.order, wave.switching, pending)
            assert set(wave.placement).isdisjoint(wave.waiting)
        assert switched == {f"n{i}-0" for i in range(len(nodes))}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=nodes_st, workloads=workloads_st, max_unavailable=st.integers(1, 2))
def test_smart_is_never_worse_than_naive(tmp_path: Path, nodes: list[tuple[str, int, bool]],
                                         workloads: list[tuple[int, int, int | None]], max_unavailable: int) -> None:
    naive, smart, _ = _plans(tmp_path, nodes, workloads, max_unavailable)
    assert smart.breaks < naive.breaks or (smart.breaks == naive.breaks and smart.evictions <= naive.evictions)
