"""The fast path (device index, node sets, cached allocator verdicts) decides exactly as the allocator on every node.

Random small clusters and pod streams run twice, with ``fast_path`` on and off: the event timelines (which pod went to
which node when, which devices each claim got, every pending reason) must be identical under every policy, and
every placement must be valid (devices on the pod's node, no device held by two claims at once).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.objects.load import load_text
from kubedra.scheduler.scoring import Policy
from kubedra.sim.run import SimulationResult
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

DRIVER = "gpu.example.com"


def _node(name: str, rng: random.Random) -> dict[str, Any]:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": rng.choice(["a", "b"])}},
        "status": {"allocatable": {"cpu": str(rng.choice([2, 4, 8])), "memory": "16Gi", "pods": "6"}},
    }
    if rng.random() < 0.2:
        node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    return node


def _slice(node: str, devices: int, rng: random.Random) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "attributes": {"model": {"string": rng.choice(["A", "B"])}, "numa": {"int": d // 2}},
                    "capacity": {"memory": {"value": rng.choice(["8Gi", "16Gi"])}},
                }
                for d in range(devices)
            ],
        },
    }


def _class(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def _claim_spec(rng: random.Random) -> dict[str, Any]:
    requests = []
    for r in range(rng.choice([1, 1, 1, 2])):
        exactly: dict[str, Any] = {"deviceClassName": rng.choice(["gpu", "gpu", "model-a"])}
        if rng.random() < 0.4:
            exactly["count"] = rng.choice([1, 2, 3])
        if rng.random() < 0.2:
            exactly["selectors"] = [{"cel": {"expression": f'device.capacity["{DRIVER}"].memory.compareTo('
                                                           'quantity("16Gi")) >= 0'}}]
        requests.append({"name": f"r{r}", "exactly": exactly})
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.3:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    return {"devices": devices}


def _pod(i: int, rng: random.Random, templates: int, claims: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    spec: dict[str, Any] = {"containers": [container]}
    if rng.random() < 0.5:
        container["resources"] = {"requests": {"cpu": str(rng.choice([1, 2, 3]))}}
    roll = rng.random()
    if roll < 0.6:
        spec["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": f"t{rng.randrange(templates)}"}]
    elif roll < 0.75 and claims:
        spec["resourceClaims"] = [{"name": "g", "resourceClaimName": f"c{rng.randrange(claims)}"}]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice(["a", "b"])}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    annotations = {"kubedra.io/start-after": f"{rng.randrange(6)}s"}
    if rng.random() < 0.7:
        annotations["kubedra.io/run-for"] = f"{rng.randrange(1, 5)}s"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "annotations": annotations},
            "spec": spec}


def random_cluster(seed: int, nodes_count: int = 0, pods: int = 0) -> str:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(nodes_count or rng.randint(1, 7))]
    docs: list[dict[str, Any]] = [_node(n, rng) for n in nodes]
    docs += [_slice(n, rng.randint(0, 4), rng) for n in nodes if rng.random() < 0.85]
    docs += [_class("gpu", f'device.driver == "{DRIVER}"'),
             _class("model-a", f'device.attributes["{DRIVER}"].model == "A"')]
    templates = rng.randint(1, 3)
    docs += [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
              "metadata": {"name": f"t{t}", "namespace": "default"}, "spec": {"spec": _claim_spec(rng)}}
             for t in range(templates)]
    claims = rng.randint(0, 2)
    docs += [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": f"c{c}", "namespace": "default"}, "spec": _claim_spec(rng)}
             for c in range(claims)]
    docs += [_pod(i, rng, templates, claims) for i in range(pods or rng.randint(1, 25))]
    return yaml.safe_dump_all(docs)


def _shared_device(d: int, rng: random.Random) -> dict[str, Any]:
    """A GPU shared by consumable capacity (sometimes with a request policy), or now and then a plain one."""
    milli: dict[str, Any] = {"value": "1000"}
    multi = rng.random() < 0.8
    roll = rng.random() if multi else 1.0  # a request policy is for shared devices only (API validation)
    if roll < 0.25:
        milli["requestPolicy"] = {"default": "100", "validRange": {"min": "100", "step": "100"}}
    elif roll < 0.4:
        milli["requestPolicy"] = {"default": "250", "validValues": ["250", "500", "1000"]}
    device: dict[str, Any] = {
        "name": f"gpu-{d}",
        "attributes": {"model": {"string": rng.choice(["A", "B"])}},
        "capacity": {"milli": milli, "memory": {"value": rng.choice(["8Gi", "16Gi"])}},
    }
    if multi:
        device["allowMultipleAllocations"] = True
    return device


def random_shared_cluster(seed: int) -> str:
    """Nodes of GPUs shared by consumable capacity; pods asking for shares (1-3 of them, some sizes off the
    policies' steps, some with memory too) or whole GPUs, arriving and leaving."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(1, 6))]
    docs: list[dict[str, Any]] = [_node(n, rng) for n in nodes]
    for n in nodes:
        devices = [_shared_device(d, rng) for d in range(rng.randint(1, 4))]
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{n}-slice"},
                     "spec": {"driver": DRIVER, "nodeName": n,
                              "pool": {"name": n, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
    docs += [_class("gpu", f'device.driver == "{DRIVER}"'),
             _class("model-a", f'device.attributes["{DRIVER}"].model == "A"')]
    templates = rng.randint(1, 4)
    for t in range(templates):
        exactly: dict[str, Any] = {"deviceClassName": rng.choice(["gpu", "gpu", "model-a"])}
        if rng.random() < 0.85:
            requests = {"milli": str(rng.choice([100, 150, 250, 300, 500, 700, 1000]))}
            if rng.random() < 0.3:
                requests["memory"] = rng.choice(["4Gi", "8Gi"])
            exactly["capacity"] = {"requests": requests}
        if rng.random() < 0.4:
            exactly["count"] = rng.choice([2, 3])
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": f"t{t}", "namespace": "default"},
                     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}})
    docs += [_pod(i, rng, templates, 0) for i in range(rng.randint(5, 30))]
    return yaml.safe_dump_all(docs)


def _run(text: str, policy: Policy, fast_path: bool, seed: int) -> SimulationResult:
    scenario = build_scenario(load_text(text, source="random.yaml"))
    return simulate(scenario, Options(policy=policy, seed=seed, fast_path=fast_path))


def _timeline(result: SimulationResult) -> list[tuple[float, str, str, str, str]]:
    return [(e.time, e.type, e.object, e.node, e.message) for e in result.events]


def _assert_valid(result: SimulationResult) -> None:
    """Allocated devices sit on the node of every pod reserving the claim; no device is held twice."""
    holders: dict[tuple[str, str, str], str] = {}
    for key, claim in result.state.claims.items():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for r in allocation.devices.results:
            device = (r.driver, r.pool, r.device)
            if r.share_id is not None:
                continue  # a share: the device's capacity, not the device, is what it holds
            assert device not in holders, f"{device} held by {holders[device]} and {key}"
            holders[device] = key
            node = result.state.devices.node_of(f"{r.driver}/{r.pool}/{r.device}")
            for ref in claim.status.reserved_for:
                pod = result.state.pods[f"{claim.metadata.namespace}/{ref.name}"].pod
                assert pod.spec.node_name == node


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("seed", range(40))
def test_fast_path_decides_as_the_allocator_on_every_node(seed: int, policy: Policy) -> None:
    text = random_cluster(seed)
    fast = _run(text, policy, True, seed)
    slow = _run(text, policy, False, seed)
    assert _timeline(fast) == _timeline(slow)
    _assert_valid(fast)


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("seed", range(2))
def test_fast_path_walks_partial_windows_as_kube_scheduler_does(seed: int, policy: Policy) -> None:
    """Over 100 nodes Filter stops after numFeasibleNodesToFind and the next pod starts where it stopped."""
    text = random_cluster(1000 + seed, nodes_count=130, pods=90)
    fast = _run(text, policy, True, seed)
    slow = _run(text, policy, False, seed)
    assert _timeline(fast) == _timeline(slow)
    _assert_valid(fast)


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("seed", range(30))
def test_fast_path_decides_shares_as_the_allocator(seed: int, policy: Policy) -> None:
    """Consumable shares of many sizes, counts and request policies: where the device index says a node's devices
    have room for a claim's shares (``DeviceIndex.shares_fit``) and where a kept allocation still fits
    (``Witness.still_fits``), the allocator on every node says the same."""
    text = random_shared_cluster(seed)
    fast = _run(text, policy, True, seed)
    slow = _run(text, policy, False, seed)
    assert _timeline(fast) == _timeline(slow)
    _assert_valid(fast)


def test_shared_clusters_are_decided_by_the_share_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator is not vacuous: the share counts decide nodes, pods share GPUs and pods stay pending."""
    from kubedra.scheduler.device_index import DeviceIndex

    answers: list[bool | None] = []
    shares_fit = DeviceIndex.shares_fit

    def counted(self: DeviceIndex, demand: Any, node: str) -> bool | None:
        answers.append(shares_fit(self, demand, node))
        return answers[-1]

    monkeypatch.setattr(DeviceIndex, "shares_fit", counted)
    kinds: set[str] = set()
    shared = 0
    for seed in range(30):
        result = _run(random_shared_cluster(seed), Policy.KUBE_SCHEDULER, True, seed)
        kinds |= {e.type for e in result.events}
        shared += sum(1 for c in result.state.claims.values() if c.status.allocation is not None
                      and any(r.share_id for r in c.status.allocation.devices.results))
    assert {"Scheduled", "Pending", "Deallocated"} <= kinds
    assert shared > 0
    assert answers.count(True) > 20 and answers.count(False) > 5


def test_random_clusters_exercise_both_outcomes() -> None:
    """The generator is not vacuous: across seeds, pods are placed and pods stay pending."""
    kinds: set[str] = set()
    for seed in range(40):
        kinds |= {e.type for e in _run(random_cluster(seed), Policy.LEAST_ALLOCATED, True, seed).events}
    assert {"Scheduled", "Pending", "Allocated", "Deallocated"} <= kinds


@pytest.mark.parametrize("policy", [Policy.KUBE_SCHEDULER, Policy.LEAST_ALLOCATED])
def test_fast_path_on_a_replayed_trace_of_shares_and_whole_gpus(policy: Policy) -> None:
    """The cut of the Alibaba trace replayed with its departures: consumable shares of many sizes and whole GPUs on
    the same devices, nodes gaining and losing devices one pod at a time — where the node sets keep an allocator
    answer across a change that can only confirm it (``Verdicts.monotone``)."""
    from kubedra.traces import openb

    cut = Path(__file__).resolve().parents[2] / "examples" / "traces" / "openb"
    nodes = openb.read_nodes((cut / openb.NODE_FILE).read_text())
    tasks = openb.read_tasks((cut / openb.pod_file("default")).read_text(), "pods.csv")
    text = yaml.safe_dump_all(openb.documents(nodes, tasks, replay="trace"))
    fast = _run(text, policy, True, 0)
    slow = _run(text, policy, False, 0)
    assert _timeline(fast) == _timeline(slow)
    kinds = {e.type for e in fast.events}
    assert {"Scheduled", "Deallocated"} <= kinds
    _assert_valid(fast)
