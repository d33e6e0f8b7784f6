"""The same objects given to the real kube-scheduler (the test control plane) and to ``kubedra simulate``, compared.

A scenario is a directory under ``scenarios/``: ``objects.yaml`` (plain manifests: Nodes with status, ResourceSlices,
DeviceClasses, claims, templates, PriorityClasses, bare Pods, owner objects) and ``expect.yaml``, which says what must
agree beyond the pending set (always compared):

* ``forced: true`` — every pod's node and every claim's devices, with no tie allowed (each has one possibility);
* ``exact: all`` or a list of pods — those pods' node and devices, in creation order, up to the first pod the real
  scheduler placed on another node that kubedra found tied for the best score (its Filter runs in parallel, so
  which tied node comes first in its list is not fixed): the run then counts as a tie, and is not compared further;
* ``distribution: true`` — how many pods each node got, as a sorted list;
* ``pending: [...]`` — the pods that must stay pending, in both;
* ``preempted: [...]`` — the pods the real scheduler must preempt (which pods were preempted is always compared);
* ``messages: true`` — every pending pod's message too (the PodScheduled condition's, kubedra's pending reason);
  ``messages: multiset`` — the pending pods' messages as a multiset, where which pod gets which message follows the
  real queue's order among pods of equal priority created together (a gang's members in ``backlog``);
* ``backlog: true`` — the real scheduler sees every pod at once (see ``run_real``), for priority order;
* ``gates: {Gate: true}`` — the feature gates kubedra runs with (the control plane must run with them too: such
  scenarios live in ``scenarios-workloads/``, run on a control plane with GenericWorkload and
  DRAWorkloadResourceClaims on).

A pod preempted by the real scheduler is deleted (the harness stands in for the kubelet and removes it at once); it
and a pod kubedra preempted are both ``PREEMPTED``, so which pods were preempted is compared like placements.

Each run gets its own namespace and its own driver name (so device IDs of earlier runs' claims never collide), and a
freshly started kube-scheduler; its pods and cluster-scoped objects are deleted afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane

from kubedra.allocator import Features
from kubedra.objects.load import load_text
from kubedra.scheduler.scoring import Policy
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options
from kubedra.sim.simulate import prepare as prepare_simulation

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
WORKLOAD_SCENARIOS = Path(__file__).resolve().parent / "scenarios-workloads"
WORKLOAD_GATES = "GenericWorkload=true,DRAWorkloadResourceClaims=true"
PREEMPTED = "<preempted>"
DRIVER = "gpu.example.com"
EXTENDED = "<extended-resources>"
SETTLE_SECONDS = 2.0  # unchanged for this long after every pod is bound or Unschedulable: done
TIMEOUT_SECONDS = 90.0
# Creation order: what others refer to first.
KIND_ORDER = ["PriorityClass", "DeviceClass", "DeviceTaintRule", "Node", "ResourceSlice", "ReplicaSet",
              "StatefulSet", "ResourceClaim", "ResourceClaimTemplate", "Workload", "PodGroup", "PodDisruptionBudget", "Pod"]
PATHS = {
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
    "Node": ("/api/v1", "nodes", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "Workload": ("/apis/scheduling.k8s.io/v1beta1", "workloads", True),
    "PodGroup": ("/apis/scheduling.k8s.io/v1beta1", "podgroups", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Pod": ("/api/v1", "pods", True),
}

Devices = dict[str, list[tuple[str, str, str]]]  # pod claim name (or EXTENDED) -> [(request, pool, device)]


@dataclass(frozen=True)
class Placed:
    node: str | None  # None: pending
    devices: Devices = field(default_factory=dict)
    message: str = field(default="", compare=False)  # a pending pod's PodScheduled message (``messages: true``)


Outcome = dict[str, Placed]  # pod name -> where it went


@dataclass(frozen=True)
class Scenario:
    name: str
    docs: list[dict[str, Any]]
    expect: dict[str, Any]
    description: str


@dataclass
class Comparison:
    scenario: str
    real: Outcome
    sim: Outcome
    problems: list[str]
    exact_checked: int = 0
    exact_agreed: int = 0
    tie: str = ""  # the first pod placed differently, when kubedra found it a tie (then nothing after it is compared)
    real_seconds: float = 0.0

    @property
    def agrees(self) -> bool:
        return not self.problems


def load_scenarios(root: Path = SCENARIOS) -> list[Scenario]:
    out = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        text = (directory / "objects.yaml").read_text()
        comment = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
        docs = [d for d in yaml.safe_load_all(text) if d]
        expect = yaml.safe_load((directory / "expect.yaml").read_text()) or {}
        out.append(Scenario(directory.name, docs, expect, comment))
    return out


def prepare(docs: Sequence[Mapping[str, Any]], namespace: str, driver: str) -> list[dict[str, Any]]:
    """The scenario's objects for one run: namespaced ones in ``namespace``, the driver renamed to ``driver``."""
    text = yaml.safe_dump_all([dict(d) for d in docs]).replace(DRIVER, driver)
    out = []
    for doc in yaml.safe_load_all(text):
        if PATHS.get(doc["kind"], ("", "", False))[2]:
            doc.setdefault("metadata", {})["namespace"] = namespace
        out.append(doc)
    return out


# ---------------------------------------------------------------------------------------------- kubedra


def run_kubedra(
    docs: Sequence[Mapping[str, Any]], policy: Policy = Policy.KUBE_SCHEDULER, gates: Mapping[str, bool] | None = None
) -> tuple[Outcome, dict[str, frozenset[str]]]:
    """``kubedra simulate`` on the same objects, in-process; also the pods whose node was chosen among equally
    scored nodes, with those nodes."""
    features = Features.for_release().with_gates(dict(gates or {}))
    scenario = build_scenario(load_text(yaml.safe_dump_all([dict(d) for d in docs])),
                              generic_workload=features.generic_workload)
    simulation = prepare_simulation(scenario, Options(policy=policy, features=features))
    result = simulation.run()
    kube = simulation.scheduler.kube
    tied = {key.split("/", 1)[1]: nodes for key, nodes in kube.tied.items()} if kube is not None else {}
    state = result.state
    out: Outcome = {}
    for record in state.pods.values():
        pod = record.pod
        if record.deleted and record.end_reason == "preempted":
            out[pod.metadata.name] = Placed(PREEMPTED)
            continue
        node = pod.spec.node_name or None
        devices: Devices = {}
        generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
        names = {c.name: c.resource_claim_name or generated.get(c.name) for c in pod.spec.resource_claims}
        extended = pod.status.extended_resource_claim_status
        if extended is not None:
            names[EXTENDED] = extended.resource_claim_name
        for pod_claim, claim_name in names.items():
            claim = state.claims.get(f"{pod.metadata.namespace}/{claim_name}") if claim_name else None
            if node is not None and claim is not None and claim.status.allocation is not None:
                devices[pod_claim] = [(r.request, r.pool, r.device) for r in claim.status.allocation.devices.results]
        out[pod.metadata.name] = Placed(node, devices, record.pending_reason.removeprefix("error: ") if node is None
                                        else "")
    return out, tied


# ---------------------------------------------------------------------------------------------- the real scheduler


def _path(doc: Mapping[str, Any], name: str | None = None) -> str:
    prefix, plural, namespaced = PATHS[doc["kind"]]
    base = f"{prefix}/namespaces/{doc['metadata']['namespace']}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{base}/{name}" if name else base


def _stop_scheduler(plane: ControlPlane) -> None:
    plane.components["kube-scheduler"].stop()


def _start_scheduler(plane: ControlPlane) -> None:
    plane._start_and_wait("kube-scheduler")  # the fixture's own start-and-wait-for-/readyz


def _for_api(doc: dict[str, Any], uids: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """What the API server is given: no ``spec.priority`` (admission computes it from ``priorityClassName``), owner
    references with the owners' real uids."""
    body = copy.deepcopy(doc)
    if body["kind"] == "Pod":
        body["spec"].pop("priority", None)
        for ref in body["metadata"].get("ownerReferences", []):
            ref["uid"] = uids[(ref["kind"], ref["name"])]
    return body


def _decided(pod: Mapping[str, Any]) -> bool:
    if pod["spec"].get("nodeName"):
        return True
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        and c.get("reason") in ("Unschedulable", "SchedulerError")
        for c in pod.get("status", {}).get("conditions", [])
    )


def _snapshot(pods: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((p["metadata"]["name"], p["spec"].get("nodeName", "")) for p in pods))


def run_real(plane: ControlPlane, docs: Sequence[dict[str, Any]], namespace: str, *, backlog: bool = False) -> Outcome:
    """Place the scenario's pods with the real scheduler and read back where they went and with which devices.

    By default a fresh scheduler watches everything being created, and pods are created one at a time, each once the
    one before is bound or Unschedulable: its node list and its queue are then in document order, as the simulator's
    are. With ``backlog`` everything is created while the scheduler is stopped (template claims made too), then it
    starts and sees every pod at once: the queue orders them by priority. Its informers list objects in no fixed
    order, so pods of equal priority (and ties between nodes) are then not comparable one by one.
    """
    _stop_scheduler(plane)
    if not backlog:
        _start_scheduler(plane)
    created: list[dict[str, Any]] = []
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    try:
        plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": namespace}})
        uids: dict[tuple[str, str], str] = {}
        for doc in sorted(docs, key=lambda d: KIND_ORDER.index(d["kind"])):
            made = plane.request("POST", _path(doc), _for_api(doc, uids))
            uids[(doc["kind"], doc["metadata"]["name"])] = made["metadata"]["uid"]
            created.append(doc)
            if doc["kind"] == "Pod":
                path = f"{pods_path}/{doc['metadata']['name']}"
                ready = _claims_made if backlog else _decided
                plane.wait_for(lambda path=path, ready=ready: ready(plane.get(path)), timeout=TIMEOUT_SECONDS,
                               what=f"pod {doc['metadata']['name']}")
    finally:
        if backlog:
            _start_scheduler(plane)
    pods = _settled(plane, pods_path)
    present = {p["metadata"]["name"] for p in pods}
    claims = {c["metadata"]["name"]: c for c in plane.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/"
                                                             "resourceclaims")["items"]}
    out: Outcome = {}
    for pod in pods:
        node = pod["spec"].get("nodeName") or None
        status = pod.get("status", {})
        generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses", [])}
        names = {c["name"]: c.get("resourceClaimName") or generated.get(c["name"])
                 for c in pod["spec"].get("resourceClaims", [])}
        if "extendedResourceClaimStatus" in status:
            names[EXTENDED] = status["extendedResourceClaimStatus"]["resourceClaimName"]
        devices: Devices = {}
        for pod_claim, claim_name in names.items():
            allocation = claims.get(claim_name or "", {}).get("status", {}).get("allocation")
            if node is not None and allocation is not None:
                devices[pod_claim] = [(r["request"], r["pool"], r["device"]) for r in allocation["devices"]["results"]]
        scheduled = [c for c in status.get("conditions", []) if c.get("type") == "PodScheduled"]
        message = scheduled[0].get("message", "") if scheduled and node is None else ""
        out[pod["metadata"]["name"]] = Placed(node, devices, message)
    for doc in created:
        if doc["kind"] == "Pod" and doc["metadata"]["name"] not in present:
            out[doc["metadata"]["name"]] = Placed(PREEMPTED)  # deleted by the scheduler's preemption
    _clean_up(plane, namespace, created)
    return out


def _claims_made(pod: Mapping[str, Any]) -> bool:
    """The resourceclaim controller has made the pod's claims from templates (else PreEnqueue holds the pod back)."""
    templates = {c["name"] for c in pod["spec"].get("resourceClaims", []) if c.get("resourceClaimTemplateName")}
    made = {s["name"] for s in pod.get("status", {}).get("resourceClaimStatuses", []) if s.get("resourceClaimName")}
    return templates <= made


def _settled(plane: ControlPlane, pods_path: str) -> list[dict[str, Any]]:
    """The pods, once every one is bound or Unschedulable and nothing changed for ``SETTLE_SECONDS``."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    last: tuple[tuple[str, str], ...] | None = None
    since = time.monotonic()
    while True:
        pods: list[dict[str, Any]] = plane.get(pods_path)["items"]
        for pod in pods:  # a preemption victim: no kubelet finishes its grace period, so the harness does
            if pod["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(Exception):
                    plane.request("DELETE", f"{pods_path}/{pod['metadata']['name']}", {"gracePeriodSeconds": 0})
        pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        snapshot = _snapshot(pods)
        if snapshot != last:
            last, since = snapshot, time.monotonic()
        elif all(_decided(p) for p in pods) and time.monotonic() - since >= SETTLE_SECONDS:
            return pods
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods in {pods_path} not settled after {TIMEOUT_SECONDS}s: {snapshot}")
        time.sleep(0.2)


def _clean_up(plane: ControlPlane, namespace: str, created: Sequence[Mapping[str, Any]]) -> None:
    """Delete the run's pods at once (no kubelet) and its cluster-scoped objects, so later runs see none of them."""
    plane.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0})
    for doc in created:
        if not PATHS[doc["kind"]][2]:
            plane.request("DELETE", _path(doc, doc["metadata"]["name"]))


# ---------------------------------------------------------------------------------------------- comparing


def compare(
    scenario: Scenario, real: Outcome, sim: Outcome, tied: Mapping[str, frozenset[str]] | None = None
) -> Comparison:
    """See the module docstring. Pods are compared in creation (name) order; when the first that differs went, on the
    real side, to one of the nodes kubedra found tied for the best score (``tied``), the real scheduler broke the tie
    otherwise (its Filter order is not fixed) and what follows is not compared pod by pod: the run counts as a tie,
    not a disagreement."""
    result = Comparison(scenario.name, real, sim, [])
    problems = result.problems
    if set(real) != set(sim):
        problems.append(f"pods differ: real {sorted(real)}, kubedra {sorted(sim)}")
        return result
    real_pending = sorted(p for p, placed in real.items() if placed.node is None)
    wanted = scenario.expect.get("pending")
    if wanted is not None and sorted(wanted) != real_pending:
        problems.append(f"expected pending {sorted(wanted)}, real scheduler left {real_pending}")
    real_preempted = sorted(p for p, placed in real.items() if placed.node == PREEMPTED)
    wanted_preempted = scenario.expect.get("preempted")
    if wanted_preempted is not None and sorted(wanted_preempted) != real_preempted:
        problems.append(f"expected preempted {sorted(wanted_preempted)}, real scheduler preempted {real_preempted}")
    sim_preempted = sorted(p for p, placed in sim.items() if placed.node == PREEMPTED)
    if real_preempted != sim_preempted:
        problems.append(f"preempted: real {real_preempted}, kubedra {sim_preempted}")
    exact = scenario.expect.get("exact", [])
    forced = bool(scenario.expect.get("forced"))
    if forced or exact == "all":
        exact = sorted(real)
    for pod in sorted(exact):
        if real[pod] == sim[pod]:
            result.exact_checked += 1
            result.exact_agreed += 1
        elif not forced and not problems and real[pod].node in (tied or {}).get(pod, ()):
            result.tie = f"{pod}: real {real[pod].node}, kubedra {sim[pod].node} (equal scores)"
            return result  # the two runs part here: the pending set and the counts per node follow other paths
        else:
            result.exact_checked += 1
            problems.append(f"{pod}: real {real[pod]}, kubedra {sim[pod]}")
    sim_pending = sorted(p for p, placed in sim.items() if placed.node is None)
    if real_pending != sim_pending:
        problems.append(f"pending: real {real_pending}, kubedra {sim_pending}")
    if scenario.expect.get("messages") == "multiset":  # which member gets which message follows the queue's order
        real_messages = sorted(real[p].message for p in real_pending)
        sim_messages = sorted(sim[p].message for p in sim_pending_names(sim))
        if real_messages != sim_messages:
            problems.append(f"messages: real {real_messages}, kubedra {sim_messages}")
    elif scenario.expect.get("messages"):
        for pod in real_pending:
            if pod in sim and real[pod].message != sim[pod].message:
                problems.append(f"{pod}: real message {real[pod].message!r}, kubedra {sim[pod].message!r}")
    if scenario.expect.get("distribution"):
        def spread(outcome: Outcome) -> list[int]:
            return sorted(Counter(p.node for p in outcome.values() if p.node is not None).values())

        if spread(real) != spread(sim):
            problems.append(f"pods per node: real {spread(real)}, kubedra {spread(sim)}")
    return result


def sim_pending_names(sim: Outcome) -> list[str]:
    return sorted(p for p, placed in sim.items() if placed.node is None)


def run_scenario(
    plane: ControlPlane, scenario: Scenario, policies: Sequence[Policy] = (Policy.KUBE_SCHEDULER,)
) -> list[Comparison]:
    """One real run of the scenario, compared with kubedra under each policy (the first is the one that counts)."""
    tag = secrets.token_hex(3)
    namespace = f"{scenario.name}-{tag}"
    docs = prepare(scenario.docs, namespace, f"s{tag}.{DRIVER}")
    began = time.monotonic()
    real = run_real(plane, docs, namespace, backlog=bool(scenario.expect.get("backlog")))
    seconds = time.monotonic() - began
    out = []
    for policy in policies:
        comparison = compare(scenario, real, *run_kubedra(docs, policy, scenario.expect.get("gates")))
        comparison.real_seconds = seconds
        out.append(comparison)
    return out


def table(comparisons: Sequence[Comparison]) -> str:
    """One line per scenario: agreement, exact placements agreeing, the pending set and the problems."""
    rows = ["| scenario | agrees | exact placements | pending (real) | differences |", "|---|---|---:|---|---|"]
    for c in comparisons:
        pending = ", ".join(sorted(p for p, placed in c.real.items() if placed.node is None)) or "-"
        exact = f"{c.exact_agreed}/{c.exact_checked}" if c.exact_checked else "-"
        verdict = "NO" if not c.agrees else "tie" if c.tie else "yes"
        rows.append(f"| {c.scenario} | {verdict} | {exact} | {pending} | {'; '.join(c.problems) or c.tie or '-'} |")
    agreed = sum(c.agrees and not c.tie for c in comparisons)
    ties = sum(bool(c.agrees and c.tie) for c in comparisons)
    rows.append(f"\n{agreed}/{len(comparisons)} scenarios agree entirely; {ties} more up to a tie broken otherwise")
    return "\n".join(rows)


def main(argv: Sequence[str]) -> int:
    """``python -m tests.kube.vs_kube_scheduler [ROUNDS [RANDOM]]``: the scenarios ROUNDS times (default 1) and RANDOM
    random ones (seeds 0..RANDOM-1, default 0); the table for the kube-scheduler policy, and how often each policy
    agreed on the same real outcomes."""
    from tests.kube.random_scenarios import random_scenario

    rounds = int(argv[0]) if argv else 1
    randoms = int(argv[1]) if len(argv) > 1 else 0
    policies = list(Policy)
    results: list[list[Comparison]] = []
    with running_control_plane() as plane:
        for _ in range(rounds):
            results.extend(run_scenario(plane, s, policies) for s in load_scenarios())
        results.extend(run_scenario(plane, random_scenario(seed), policies) for seed in range(randoms))
    print(table([r[0] for r in results]))
    for i, policy in enumerate(policies):
        agreed = sum(r[i].agrees and not r[i].tie for r in results)
        pods = sum(r[i].exact_agreed for r in results)
        checked = sum(r[i].exact_checked for r in results)
        print(f"--policy {policy.value}: {agreed}/{len(results)} scenarios agree; exact placements {pods}/{checked}")
    return 0 if all(r[0].agrees for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
