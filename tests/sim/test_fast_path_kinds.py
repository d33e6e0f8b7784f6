"""The fast path on every device kind the simulator models gives byte-identical output to ``--exact``.

Random clusters of NodePools (plain GPUs, MIG counter sets, consumable shares, node taints, device-plugin nodes), a
network-attached pool (nodeSelector slices of another driver), DeviceTaintRules, and pods asking for claims from
templates, shared claims and KEP-5004 ``nvidia.com/gpu`` run with ``fast_path`` on and off: the whole JSON document
(final objects, shareIDs included, and the event timeline) must be the same bytes. shareIDs are hashed from the
seed and the share, not drawn from a stream, so the nodes and branches the exact path tries do not change them.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from fixtures.scenarios import claim_template, nodepool, pod, run

from kubedra.scheduler.scoring import Policy

Doc = dict[str, Any]
PROFILE = "device.attributes['gpu.nvidia.com'].profile == '{}'"
NET_DRIVER = "net.example.com"


def _network_pool(rng: random.Random) -> list[Doc]:
    """Network-attached devices: one slice per zone, selected by node label (not node-local)."""
    docs: list[Doc] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic"},
                        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{NET_DRIVER}"'}}]}}]
    for zone in ("a", "b"):
        docs.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"fabric-{zone}"},
            "spec": {"driver": NET_DRIVER, "pool": {"name": f"fabric-{zone}", "generation": 1, "resourceSliceCount": 1},
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "zone", "operator": "In", "values": [zone]}]}]},
                     "devices": [{"name": f"nic-{i}"} for i in range(rng.randint(1, 3))]},
        })
    return docs


def _taint_rule(rng: random.Random, pools: list[str]) -> Doc:
    selector: Doc = {"driver": "gpu.nvidia.com", "pool": f"{rng.choice(pools)}-0"}
    if rng.random() < 0.5:
        selector["device"] = "gpu-0"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": f"rule-{rng.random():.6f}"[:20].replace(".", "")},
            "spec": {"deviceSelector": selector, "taint": {"key": "example.com/bad", "value": "x", "effect": "NoSchedule"}}}


def random_kinds_cluster(seed: int) -> list[Doc]:
    rng = random.Random(seed)
    docs: list[Doc] = []
    pools: list[str] = []
    for i in range(rng.randint(2, 5)):
        kind = rng.choice(["plain", "mig", "shares", "plugin", "tainted"])
        name = f"{kind}{i}"
        pools.append(name)
        labels = {"zone": rng.choice(["a", "b"])}
        count, gpus = rng.randint(1, 3), rng.randint(1, 4)
        if kind == "mig":
            docs.append(nodepool(name, count=count, gpus=gpus, model="A100-40GB", mig=True, labels=labels))
        elif kind == "shares":
            docs.append(nodepool(name, count=count, gpus=gpus, shares=rng.choice([2, 4]), labels=labels))
        elif kind == "plugin":
            docs.append(nodepool(name, count=count, gpus=gpus, device_plugin=True, labels=labels))
        elif kind == "tainted":
            docs.append(nodepool(name, count=count, gpus=gpus, labels=labels,
                                 taints=[{"key": "example.com/bad", "value": "x", "effect": "NoSchedule"}]))
        else:
            docs.append(nodepool(name, count=count, gpus=gpus, labels=labels))
    docs += _network_pool(rng)
    docs += [_taint_rule(rng, pools) for _ in range(rng.randint(0, 2))]
    docs += [
        claim_template("one-gpu"),
        claim_template("two-gpus", count=2),
        claim_template("mig-small", device_class="mig.nvidia.com", selector=PROFILE.format("1g.5gb")),
        claim_template("mig-half", device_class="mig.nvidia.com", selector=PROFILE.format("3g.20gb")),
        claim_template("nic", device_class="nic"),
    ]
    tolerate = [{"key": "example.com/bad", "operator": "Exists"}]
    for p in range(rng.randint(4, 18)):
        roll = rng.random()
        timing = {"start_after": f"{rng.randrange(5)}s"}
        if rng.random() < 0.5:  # the others run to the end, so the final objects hold allocations (and shareIDs)
            timing["run_for"] = f"{rng.randrange(1, 6)}s"
        if roll < 0.2:
            spec: Doc = {"limits": {"nvidia.com/gpu": str(rng.choice([1, 1, 2]))}}  # KEP-5004 or the device plugin
        else:
            spec = {"template": rng.choice(["one-gpu", "one-gpu", "two-gpus", "mig-small", "mig-half", "nic"])}
        if rng.random() < 0.3:
            spec["tolerations"] = tolerate
        docs.append(pod(f"p{p}", **timing, **spec))
    return docs


def _document(seed: int, policy: Policy, fast_path: bool) -> str:
    return json.dumps(run(*random_kinds_cluster(seed), policy=policy, seed=seed, fast_path=fast_path).document,
                      sort_keys=True)


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("seed", range(15))
def test_fast_path_and_exact_give_identical_output_on_every_device_kind(seed: int, policy: Policy) -> None:
    assert _document(seed, policy, True) == _document(seed, policy, False)


def test_the_generator_reaches_every_kind_and_shares() -> None:
    """Not vacuous: across seeds, shared devices get shareIDs, MIG devices, NICs and device-plugin GPUs are used."""
    text = "".join(_document(seed, Policy.LEAST_ALLOCATED, True) for seed in range(15))
    assert '"shareID"' in text
    assert "-mig-" in text
    assert '"nic-' in text
    assert '"device": "gpu-' in text
    assert "untolerated taint" in text
