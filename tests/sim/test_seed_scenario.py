"""The default scenario: the seed article's objects (legacy dialect and all) on the built-in demo cluster.

What the issue promises a first-time user of ``kubedra simulate``: the legacy-dialect warnings, the trainer on an
A100 or better with at least 40Gi, five inference replicas sharing GPUs at most four per GPU (the fifth on another
GPU), the device-plugin Job served both ways, and a final state of real objects with an event timeline.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubedra.data import seed_dir
from kubedra.objects.load import load_paths
from kubedra.objects.quantity import Quantity
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def seed_run() -> tuple[Doc, dict[str, dict[str, Any]], list[str]]:
    loaded = load_paths([str(seed_dir()), str(seed_dir().parent / "demo")])
    scenario = build_scenario(loaded)
    result = simulate(scenario, Options())
    report = build_report(result, [str(w) for w in loaded.warnings])
    devices = {
        f"{s.spec.pool.name}/{d.name}": {
            "attributes": dict(d.attributes),
            "capacity": {k: c.value for k, c in d.capacity.items()},
        }
        for s in result.state.slices
        for d in s.spec.devices
    }
    return report.as_document(), devices, [str(w) for w in loaded.warnings]


def _objects(document: Doc, kind: str) -> dict[str, Doc]:
    return {o["metadata"]["name"]: o for o in document["items"] if o["kind"] == kind}


def test_the_legacy_dialect_is_converted_with_warnings(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, _, warnings = seed_run
    assert len(warnings) == 12
    assert any("ResourceClass gpu-nvidia-a100" in w for w in warnings)
    assert any("maxSharableGPU" in w for w in warnings)
    assert document["warnings"] == warnings


def test_every_seed_pod_is_scheduled(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, _, _ = seed_run
    summary = document["summary"]
    assert summary["pods"] == {"total": 9, "running": 6, "succeeded": 3, "pending": 0, "deleted": 0}
    pods = _objects(document, "Pod")
    assert all(p["spec"].get("nodeName") for p in pods.values())


def test_the_trainer_lands_on_an_a100_or_better_with_at_least_40gi(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, devices, _ = seed_run
    pods = _objects(document, "Pod")
    trainers = [p for name, p in pods.items() if name.startswith("trainer-")]
    assert len(trainers) == 1
    trainer = trainers[0]
    assert trainer["metadata"]["namespace"] == "ml-training"
    claim = _objects(document, "ResourceClaim")["my-gpu-claim"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1
    node = trainer["spec"]["nodeName"]
    assert results[0]["pool"] == node
    device = devices[f"{node}/{results[0]['device']}"]
    assert Quantity.parse(device["capacity"]["memory"]) >= Quantity.parse("40Gi")
    capability = device["attributes"]["cudaComputeCapability"].version
    assert tuple(int(x) for x in capability.split(".")[:2]) >= (8, 0)
    assert device["attributes"]["type"].string == "gpu"
    assert device["attributes"]["productName"].string.startswith(("NVIDIA A100", "NVIDIA H100"))
    assert [r["name"] for r in claim["status"]["reservedFor"]] == [trainer["metadata"]["name"]]


def test_five_inference_replicas_share_gpus_at_most_four_per_gpu(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, _, _ = seed_run
    pods = {n: p for n, p in _objects(document, "Pod").items() if n.startswith("llm-inference-")}
    assert len(pods) == 5
    claims = _objects(document, "ResourceClaim")
    per_gpu: Counter[str] = Counter()
    for name, p in pods.items():
        assert p["metadata"]["namespace"] == "inference"
        assert p["spec"]["nodeName"] == "a100-shared-0"
        claim_name = p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = claims[claim_name]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "shared-gpu-config"
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [name]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["shareID"]
        per_gpu[f"{result['pool']}/{result['device']}"] += 1
    assert sorted(per_gpu.values()) == [1, 4]
    assert document["summary"]["shares"]["allocations"] == 5


def test_the_device_plugin_job_is_served_by_both_kinds_of_node(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, _, _ = seed_run
    pods = {n: p for n, p in _objects(document, "Pod").items() if n.startswith("legacy-finetune-")}
    assert len(pods) == 3
    assert all(p["status"]["phase"] == "Succeeded" for p in pods.values())
    on_legacy = [p for p in pods.values() if p["spec"]["nodeName"].startswith("legacy-")]
    on_dra = [p for p in pods.values() if not p["spec"]["nodeName"].startswith("legacy-")]
    # The device-plugin node has 4 GPUs: two pods of 2; the third goes through DRA with a special claim.
    assert len(on_legacy) == 2
    assert len(on_dra) == 1
    assert all("extendedResourceClaimStatus" not in p["status"] for p in on_legacy)
    special = on_dra[0]["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    events = [(e["type"], e["seconds"]) for e in document["events"] if e["object"] == f"ResourceClaim ml-training/{special}"]
    assert events == [("Allocated", 120.0), ("Deallocated", 7320.0), ("Deleted", 7320.0)]
    assert special not in _objects(document, "ResourceClaim")


def test_the_report_is_real_objects_and_a_timeline(seed_run: tuple[Doc, Any, list[str]]) -> None:
    document, _, _ = seed_run
    assert document["apiVersion"] == "kubedra.io/v1alpha1"
    assert document["kind"] == "SimulationReport"
    kinds = Counter(o["kind"] for o in document["items"])
    assert kinds == {"Pod": 9, "ResourceClaim": 6}
    for obj in document["items"]:
        expected = "v1" if obj["kind"] == "Pod" else "resource.k8s.io/v1"
        assert obj["apiVersion"] == expected
    for claim in _objects(document, "ResourceClaim").values():
        assert claim["status"]["allocation"]["devices"]["results"]
        assert claim["status"]["reservedFor"]
    types = Counter(e["type"] for e in document["events"])
    assert types == {"Created": 5, "Allocated": 7, "Scheduled": 9, "Finished": 3, "Deallocated": 1, "Deleted": 1}
    seconds = [e["seconds"] for e in document["events"]]
    assert seconds == sorted(seconds)
    assert document["events"][-1]["time"] == "2h2m"
    assert document["summary"]["simulatedTime"] == "2h2m"
