"""A GPU NodePool without ``spec.allocatable`` gets its model's documented host, said in a note; one with its own
allocatable, or without a GPU, is left as written (issue 37: never a silent zero)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from kubedra.cluster import catalogue, hosts
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

ROOT = Path(__file__).resolve().parents[2]


def _pool(name: str, gpu: dict[str, Any] | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"count": 2, **spec}
    if gpu is not None:
        body["gpu"] = gpu
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name}, "spec": body}


def _deployment(cpu: str = "16", memory: str = "64Gi") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                    "requests": {"cpu": cpu, "memory": memory}, "limits": {"nvidia.com/gpu": "1"}}}]}}}}


def _scenario(*docs: dict[str, Any]) -> Any:
    return build_scenario(load_text(yaml.safe_dump_all(docs), source="in.yaml"))


def test_every_gpu_model_kubedra_knows_has_a_host() -> None:
    assert set(hosts.SHAPES) == set(catalogue.known_names())


def test_a_gpu_pool_without_allocatable_gets_its_models_host_and_says_so() -> None:
    scenario = _scenario(_pool("h100", {"model": "H100-80GB", "count": 8}), _deployment())
    node = scenario.nodes[0]
    assert node.status.allocatable == {"cpu": "192", "memory": "2048Gi", "pods": "110"}
    (note,) = [n for n in scenario.notes if "NodePool h100" in n]
    assert "192 cpu and 2048Gi memory" in note and "AWS p5.48xlarge" in note and "spec.allocatable" in note
    assert not [n for n in scenario.notes if "which no node publishes" in n]
    result = prepare(scenario, Options()).run(None)
    assert sorted(r.phase for r in result.state.pods.values()) == ["Running", "Running"]


def test_the_host_scales_with_the_pools_gpu_count() -> None:
    scenario = _scenario(_pool("l4", {"model": "L4", "count": 2}), _pool("a10", {"model": "a10", "count": 1}))
    by_pool = {n.metadata.name.rsplit("-", 1)[0]: n.status.allocatable for n in scenario.nodes}
    assert by_pool["l4"] == {"cpu": "48", "memory": "192Gi", "pods": "110"}
    assert by_pool["a10"] == {"cpu": "32", "memory": "256Gi", "pods": "110"}
    assert any("the nearest public shape" in n for n in scenario.notes if "NodePool a10" in n)


def test_a_pool_with_allocatable_of_its_own_is_left_as_written() -> None:
    scenario = _scenario(_pool("h100", {"model": "H100-80GB", "count": 8}, allocatable={"pods": "50"}), _deployment())
    assert scenario.nodes[0].status.allocatable == {"pods": "50"}
    assert not [n for n in scenario.notes if "names no spec.allocatable" in n]
    assert [n for n in scenario.notes if "ask for cpu" in n and "which no node publishes" in n]


def test_a_pool_without_a_gpu_gets_no_default_and_the_warning_stays() -> None:
    scenario = _scenario(_pool("cpu", None), _deployment())
    assert scenario.nodes[0].status.allocatable == {"pods": "110"}
    assert [n for n in scenario.notes if "ask for cpu" in n and "which no node publishes" in n]


def test_the_docs_table_is_the_code_table() -> None:
    page = (ROOT / "docs" / "reference" / "inputs.md").read_text()
    rows = re.findall(r"^\| ([A-Z0-9a-z-]+) \| (\d+) cpu, (\d+Gi) \| ([^|(]+?)(?: \(nearest; estimated\))? \| "
                      r"(\d+), (\d+), (\d+)Gi \|$", page, re.M)
    documented = {r[0]: (r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6])) for r in rows}
    assert documented == {
        model: (s.allocatable(1)["cpu"], s.allocatable(1)["memory"], s.instance, s.gpus, s.vcpus, s.memory_gib)
        for model, s in hosts.SHAPES.items()
    }
