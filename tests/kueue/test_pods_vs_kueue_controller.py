"""kubedra's model of Kueue's pod integration (``sim.kueue_pods``) against the released controller manager
(``conftest.py``: sigs.k8s.io/kueue v0.17.0 with the ``pod`` framework on and its pod webhook served): plain Pods
labelled ``kueue.x-k8s.io/queue-name``, single or in groups (``kueue.x-k8s.io/pod-group-name`` with the
``pod-group-total-count`` annotation), go to both. No scheduler or kubelet runs: the controller's decisions are what it
writes into the pods (the webhook's ``kueue.x-k8s.io/admission`` gate, removed on admission with the flavor's node
labels merged into ``nodeSelector``); a pod's end is its ``status.phase`` patched to Succeeded, as a kubelet writes it.
The pods the controller ungated, with their node selectors, must equal those kubedra ungates.

Pods are created 1.1 s apart (a Workload's creationTimestamp has whole seconds); kubedra is given them a second apart,
none ending but those the check finishes (an hour in, on nodes of every flavor's pool, so that they run)."""

from __future__ import annotations

import copy
import json
import time
import urllib.error
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.kueue.queues import QUEUE, V1B2, queues
from tests.sigs import harness

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.kueue_pods import GATE, GROUP_NAME, GROUP_TOTAL
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane


def pod(name: str, namespace: str, gpus: int, group: tuple[str, int] | None = None) -> dict[str, Any]:
    """A Pod asking 1 CPU and ``gpus`` GPUs of LocalQueue ``lq``; ``group``: (its group, the group's total count)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {QUEUE: "lq"}}
    if group is not None:
        meta["labels"][GROUP_NAME] = group[0]
        meta["annotations"] = {GROUP_TOTAL: str(group[1])}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def group(name: str, namespace: str, size: int, gpus: int, total: int | None = None) -> list[dict[str, Any]]:
    """``size`` pods of ``gpus`` GPUs each in the group ``name``, whose total count is ``total`` (``size`` unless
    given)."""
    return [pod(f"{name}-{i}", namespace, gpus, (name, total or size)) for i in range(size)]


def _workloads(pods: list[dict[str, Any]]) -> int:
    """How many Workloads the controller makes: one per single pod, one per group with its total count of pods."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for doc in pods:
        groups.setdefault(doc["metadata"]["labels"].get(GROUP_NAME) or doc["metadata"]["name"], []).append(doc)
    return sum(1 for members in groups.values()
               if len(members) >= int((members[0]["metadata"].get("annotations") or {}).get(GROUP_TOTAL, 1)))


def ungated(plane: ControlPlane, namespace: str) -> dict[str, dict[str, str]]:
    """Pod name -> its node selector, for each pod of the namespace without Kueue's gate."""
    items = plane.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeSelector", {}) for p in items
            if not any(g["name"] == GATE for g in p["spec"].get("schedulingGates") or [])}


def real(plane: ControlPlane, docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The queues made, then the pods, 1.1 s apart (each, as the webhook lets it in, carries Kueue's gate); once every
    Workload is made and one decided, and 3 s more: the pods the controller ungated."""
    pods = [d for d in docs if d["kind"] == "Pod"]
    for doc in docs:
        if doc["kind"] == "Pod":
            continue
        ns = doc["metadata"].get("namespace")
        plane.request("POST", f"/apis/{V1B2}/" + (f"namespaces/{ns}/" if ns else "") + doc["kind"].lower() + "s", doc)
    time.sleep(1.0)  # the controller's caches see the queues before the first Workload
    namespace = pods[0]["metadata"]["namespace"]
    for doc in pods:
        made = plane.request("POST", f"/api/v1/namespaces/{namespace}/pods", doc)
        assert GATE in [g["name"] for g in made["spec"]["schedulingGates"]]
        time.sleep(1.1)
    expected = _workloads(pods)

    def settled() -> bool:
        items = plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]
        return len(items) == expected and any(c["type"] == "QuotaReserved" for w in items
                                              for c in w.get("status", {}).get("conditions", []))

    plane.wait_for(settled, timeout=harness.WAIT, interval=0.5, what="the Workloads, one with QuotaReserved")
    time.sleep(3)
    return ungated(plane, namespace)


def finish(plane: ControlPlane, namespace: str, *names: str) -> dict[str, dict[str, str]]:
    """The pods' phase Succeeded (their kubelet's report); 3 s on, the pods the controller ungated."""
    for name in names:
        plane.finish_pod(name, namespace)
    time.sleep(3)
    return ungated(plane, namespace)


def kubedra(docs: list[dict[str, Any]], finished: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """The same from kubedra: each pod made a second after the one before, those ``finished`` names ending an hour
    after they start (on a node of a pool of each flavor's labels), the rest never; the pods ungated at the end."""
    docs = copy.deepcopy(docs)
    for i, doc in enumerate(d for d in docs if d["kind"] == "Pod"):
        doc["metadata"].setdefault("annotations", {})["kubedra.io/start-after"] = f"{i}s"
        if doc["metadata"]["name"] in finished:
            doc["metadata"]["annotations"]["kubedra.io/run-for"] = "1h"
    pools = [{"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": f"pool-{i}"}, "spec": {
        "count": 2, "labels": d["spec"]["nodeLabels"], "allocatable": {"cpu": "64", "memory": "512Gi"},
        "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}
        for i, d in enumerate(d for d in docs if d["kind"] == "ResourceFlavor")]
    result = simulate(build_scenario(load_text(yaml.safe_dump_all([*docs, *pools]))), Options(fragmentation_samples=0))
    return {r.pod.metadata.name: dict(r.pod.spec.node_selector) for r in result.state.pods.values()
            if not any(g.name == GATE for g in r.pod.spec.scheduling_gates)}


SCENARIOS = {
    # 8 GPUs of quota, three 4-GPU pods: the first two
    "singles": ([("default", "8")], "BestEffortFIFO", lambda ns: [pod(n, ns, 4) for n in "abc"]),
    # two flavors of 4: the first's, then the second's
    "two-flavors": ([("on-demand", "4"), ("spot", "4")], "BestEffortFIFO",
                    lambda ns: [pod("a", ns, 4), pod("b", ns, 2), pod("c", ns, 2), pod("d", ns, 1)]),
    # a group that never fits (3 x 4 of 8) moved aside, one that does (2 x 3) admitted whole, a group short of its
    # total count that has no Workload, single pods after them
    "groups": ([("default", "8")], "BestEffortFIFO",
               lambda ns: [*group("big", ns, 3, 4), *group("pair", ns, 2, 3), *group("short", ns, 1, 1, total=2),
                           pod("s", ns, 2), pod("t", ns, 1)]),
    # StrictFIFO: the group that never fits blocks the pods behind it
    "strict": ([("default", "8")], "StrictFIFO", lambda ns: [*group("big", ns, 3, 4), pod("s", ns, 2)]),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_pods_kueue_ungates_and_their_node_selectors_equal_kubedras(plane: ControlPlane, name: str) -> None:
    flavors, strategy, make = SCENARIOS[name]
    namespace = plane.create_namespace("kueue-pods")
    docs = [*queues(f"{namespace}-{name}", namespace, flavors, strategy), *make(namespace)]
    assert real(plane, docs) == kubedra(docs)


def test_a_single_pods_quota_is_released_when_it_succeeds(plane: ControlPlane) -> None:
    """8 GPUs: ``a`` (6) is ungated, ``b`` (4) waits; once ``a`` has succeeded its Workload is finished and ``b``
    ungated."""
    namespace = plane.create_namespace("kueue-pods")
    docs = [*queues(f"{namespace}-release", namespace, [("default", "8")], "BestEffortFIFO"),
            pod("a", namespace, 6), pod("b", namespace, 4)]
    assert real(plane, docs) == kubedra(docs)
    assert finish(plane, namespace, "a") == kubedra(docs, ("a",))


def test_a_pod_groups_succeeded_pods_free_their_share_of_the_quota(plane: ControlPlane) -> None:
    """8 GPUs: the group ``pair`` (2 x 4) is ungated whole, ``s`` (2) waits; one of the pair succeeding frees its
    share (``ReclaimablePods``: the group's Workload keeps its quota reserved, less its succeeded pods') and ``s`` is
    ungated; the second ends the Workload (``Finished``: every pod of the group succeeded)."""
    namespace = plane.create_namespace("kueue-pods")
    docs = [*queues(f"{namespace}-group", namespace, [("default", "8")], "BestEffortFIFO"),
            *group("pair", namespace, 2, 4), pod("s", namespace, 2)]
    assert real(plane, docs) == kubedra(docs)
    assert finish(plane, namespace, "pair-0") == kubedra(docs, ("pair-0",))
    assert finish(plane, namespace, "pair-1") == kubedra(docs, ("pair-0", "pair-1"))


REFUSED = {
    "no-total-count": lambda doc: doc["metadata"]["annotations"].pop(GROUP_TOTAL),
    "no-group-name": lambda doc: doc["metadata"]["labels"].pop(GROUP_NAME),
    "zero": lambda doc: doc["metadata"]["annotations"].update({GROUP_TOTAL: "0"}),
    "not-a-number": lambda doc: doc["metadata"]["annotations"].update({GROUP_TOTAL: "two"}),
    # on a pod naming no queue: the mutating webhook sets a queued pod's to "true" before it is checked
    "managed-label": lambda doc: doc["metadata"].update(labels={"kueue.x-k8s.io/managed": "yes"}, annotations={}),
    "unqueued": lambda doc: doc["metadata"]["labels"].pop(QUEUE),  # the webhook checks a pod with no queue too
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_pod_kueues_webhook_refuses_is_kubedras_input_problem_in_its_words(plane: ControlPlane, name: str) -> None:
    """The pod webhook's ``ValidateCreate`` refuses the pod; kubedra's problem names the same field with the same
    message (its ``field: message`` is in the API server's answer)."""
    namespace = plane.create_namespace("kueue-pods")
    bad = pod("bad", namespace, 1, ("grp", 1))
    REFUSED[name](bad)
    if name == "unqueued":
        bad["metadata"]["annotations"][GROUP_TOTAL] = "0"
    with pytest.raises(InvalidInputError) as raised:
        build_scenario(load_text(yaml.safe_dump_all([*queues(f"{namespace}-bad", namespace, [("default", "8")],
                                                              "BestEffortFIFO"), bad])))
    (problem,) = raised.value.problems
    with pytest.raises(urllib.error.HTTPError) as refused:
        plane.request("POST", f"/api/v1/namespaces/{namespace}/pods", bad)
    try:
        answer = json.loads(refused.value.read())["message"]
    finally:
        refused.value.close()
    assert 'admission webhook "vpod.kb.io" denied the request' in answer
    assert f"{problem.location.field}: {problem.message}" in answer
