"""The same objects given to the real kube-scheduler (the test control plane) and to ``kubedra simulate``, compared.

A scenario is a directory under ``scenarios/``: ``objects.yaml`` (plain manifests: Nodes with status, ResourceSlices,
DeviceClasses, claims, templates, PriorityClasses, bare Pods, owner objects) and ``expect.yaml``, which says what must
agree beyond the pending set (always compared):

* ``forced: true`` — every pod's node and every claim's devices, each having one possibility;
* ``exact: all`` or a list of pods — those pods' node and devices;
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

Ties between nodes are compared too, by the real scheduler's own rule. In v1.37.2 ``schedulePod`` takes the root of
a ``container/heap`` built over Filter's list of feasible nodes (``framework.NewSortedScoredNodes``; the
``Randomizer`` that would break ties at random is only drawn when extenders score), so the choice is fixed by that
list's order. Filter appends a node when its check finishes, on ``parallelism`` goroutines: with the default 16 the
order is a race, with ``parallelism: 1`` it is the node list's (from ``nextStartNodeIndex``), the one kubedra's
scorer builds its heap over. So the comparison runs the real scheduler with ``PARALLELISM`` 1 and compares every pod
exactly; ``tie_picks`` runs it with the default and checks each pick against the nodes both sides score highest.

Each run gets its own namespace and its own driver name (so device IDs of earlier runs' claims never collide), and a
freshly started kube-scheduler; its pods and cluster-scoped objects are deleted afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import re
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
from kubedra.cluster.state import PodRecord
from kubedra.objects.load import load_text
from kubedra.scheduler.bitsets import positions
from kubedra.scheduler.kube_scorer import WEIGHTS, Candidate, NodeScores
from kubedra.scheduler.scoring import Policy
from kubedra.scheduler.window_groups import RESOURCES, GroupScores
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options
from kubedra.sim.simulate import prepare as prepare_simulation

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
WORKLOAD_SCENARIOS = Path(__file__).resolve().parent / "scenarios-workloads"
WORKLOAD_GATES = "GenericWorkload=true,DRAWorkloadResourceClaims=true"
MISSING_OWNER_UID = "00000000-0000-0000-0000-000000000000"
PREEMPTED = "<preempted>"
DELETED = "<deleted>"  # deleted by its controller (a failed Job's pods), not by preemption (``vs_controllers``)
DRIVER = "gpu.example.com"
EXTENDED = "<extended-resources>"
SETTLE_SECONDS = 2.0  # unchanged for this long after every pod is bound or Unschedulable: done
TIMEOUT_SECONDS = 90.0
PARALLELISM = 1  # KubeSchedulerConfiguration.parallelism for the comparison: Filter's list in node order
DEFAULT_PARALLELISM = 16  # v1.37.2's default (apis/config/v1/defaults.go): Filter's list in completion order
SCORE_VERBOSITY = 10  # prioritizeNodes logs each plugin's weighted score and each node's total at -v=10
RANDOM_SEEDS = 6  # the random scenarios CI compares (seeds 0..5) and docs/fidelity.md's table shows
USER_SEEDS = 6  # likewise the random user-shaped ones (``random_user_scenario``, seeds 0..5)
LARGE_USER_SEEDS = 2  # and user-shaped ones on more than 100 nodes (Filter's window, ``LARGE_USER_NODES``)
LARGE_USER_NODES = (105, 130)
PLACEMENT_SEEDS = 8  # and the random ones with pod (anti-)affinity and spread constraints (``random_placement_scenario``)
# Creation order: what others refer to first.
KIND_ORDER = ["PriorityClass", "DeviceClass", "DeviceTaintRule", "Node", "ResourceSlice", "Service", "ReplicaSet",
              "StatefulSet", "Job", "ResourceClaim", "ResourceClaimTemplate", "Workload", "PodGroup",
              "PodDisruptionBudget", "Pod"]
PATHS = {
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
    "Node": ("/api/v1", "nodes", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "Service": ("/api/v1", "services", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
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
Scores = dict[str, dict[str, int]]  # node -> score plugin (weighted) and "total"
RESOURCE_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation")  # summed as the fast path's ``RESOURCES``


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
    scored: int = 0  # bound pods the real scheduler scored (two feasible nodes or more), their scores compared
    window_scored: int = 0  # of those, the pods the default run's fast path scored by groups (``compare_window``)
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


def sequenced(docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The objects for kubedra as ``run_real`` creates them by default: the pods one at a time, each at its own
    instant (``kubedra.io/start-after`` a millisecond apart, in document order), so a pod that pends is retried when
    a later pod's binding moves it back (``scheduler.queueing_hints``) before the next pod arrives, as the real
    scheduler pops it from its backoff queue while its active queue is empty."""
    out = []
    pods = 0
    for original in docs:
        doc = copy.deepcopy(dict(original))
        if doc["kind"] == "Pod":
            annotations = doc.setdefault("metadata", {}).setdefault("annotations", {})
            annotations.setdefault("kubedra.io/start-after", f"{pods}ms")
            pods += 1
        out.append(doc)
    return out


def run_kubedra(
    docs: Sequence[Mapping[str, Any]], policy: Policy = Policy.KUBE_SCHEDULER, gates: Mapping[str, bool] | None = None
) -> tuple[Outcome, dict[str, frozenset[str]]]:
    """``kubedra simulate`` on the same objects, in-process; also the pods whose node was chosen among equally
    scored nodes, with those nodes."""
    features = Features.for_release().with_gates(dict(gates or {}))
    scenario = build_scenario(load_text(yaml.safe_dump_all([dict(d) for d in docs])),
                              generic_workload=features.generic_workload)
    simulation = prepare_simulation(scenario, Options(policy=policy, features=features))
    kube = simulation.scheduler.kube
    if kube is not None:
        kube.keep_ties()  # off in simulations
    result = simulation.run()
    tied = {key.split("/", 1)[1]: nodes for key, nodes in kube.tied.items()} if kube is not None else {}
    state = result.state
    out: Outcome = {}
    for record in state.pods.values():
        pod = record.pod
        if record.deleted and record.end_reason.startswith("Preempted by "):
            out[pod.metadata.name] = Placed(PREEMPTED)
            continue
        if record.deleted:
            out[pod.metadata.name] = Placed(DELETED)
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


@dataclass(frozen=True)
class WindowScores:
    """What the fast path's ``KubeScorer.choose_window`` computed for one pod (``window_groups.GroupScores``): per node of
    the window, the weighted scores of the plugins it told nodes apart by (the two resource plugins as one sum,
    ``RESOURCES``) and the total where it computed one; and the nodes it found best."""

    nodes: dict[str, dict[str, int]]
    best: frozenset[str]


def kubedra_scores(
    docs: Sequence[Mapping[str, Any]], *, fast_path: bool = False, gates: Mapping[str, bool] | None = None
) -> dict[str, Scores | WindowScores]:
    """The scores kubedra's kube-scheduler scorer gave each pod's feasible nodes, in the last cycle that scored it,
    weighted as kube-scheduler logs them (plugins that scored 0 left out, as the log leaves out skipped ones).

    With ``fast_path`` off the simulation runs node by node, so that every choice among several nodes goes through
    ``KubeScorer.score``: every plugin on every node. With it on (the default run, whose placements are compared), a
    pod the fast path scores by groups of alike nodes (``choose_window``) gets what that computed, a
    ``WindowScores``; one it scores node by node (``KubeScorer.choose``) gets every plugin as above."""
    features = Features.for_release().with_gates(dict(gates or {}))
    scenario = build_scenario(load_text(yaml.safe_dump_all([dict(d) for d in docs])),
                              generic_workload=features.generic_workload)
    simulation = prepare_simulation(
        scenario, Options(policy=Policy.KUBE_SCHEDULER, features=features, fast_path=fast_path)
    )
    kube = simulation.scheduler.kube
    assert kube is not None
    scored: dict[str, Scores | WindowScores] = {}
    score = kube.score
    names = list(simulation.state.nodes)

    def recording(record: PodRecord, candidates: Sequence[Candidate], claims: Sequence[Any] = ()) -> list[NodeScores]:
        out = score(record, candidates, claims)
        scored[record.pod.metadata.name] = {
            s.node: {**{p: WEIGHTS[p] * v for p, v in s.plugins.items() if v}, "total": s.total} for s in out
        }
        return out

    def observing(record: PodRecord, window: int, groups: list[GroupScores], best: int) -> None:
        nodes: dict[str, dict[str, int]] = {}
        for group in groups:
            for i in positions(group.nodes):
                nodes[names[i]] = dict(group.scores)
        assert set(nodes) == {names[i] for i in positions(window)}, (record.key, nodes)
        scored[record.pod.metadata.name] = WindowScores(nodes, frozenset(names[i] for i in positions(best)))

    kube.score = recording  # type: ignore[method-assign]
    kube.observe = observing
    simulation.run()
    return scored


def without_zeros(scores: Mapping[str, Mapping[str, int]]) -> Scores:
    """Logged scores as ``kubedra_scores`` gives them: the plugins that scored 0 left out, the total kept."""
    return {n: {p: v for p, v in s.items() if v or p == "total"} for n, s in scores.items()}


# ---------------------------------------------------------------------------------------------- the real scheduler


def _path(doc: Mapping[str, Any], name: str | None = None) -> str:
    prefix, plural, namespaced = PATHS[doc["kind"]]
    base = f"{prefix}/namespaces/{doc['metadata']['namespace']}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{base}/{name}" if name else base


def _stop_scheduler(plane: ControlPlane) -> None:
    plane.components["kube-scheduler"].stop()


def _start_scheduler(plane: ControlPlane, parallelism: int = PARALLELISM, verbosity: int = 0) -> None:
    """Start kube-scheduler with ``parallelism`` (its configuration file rewritten) and klog's ``-v``."""
    config_path = plane.workdir / "scheduler.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["parallelism"] = parallelism
    config_path.write_text(yaml.safe_dump(config))
    component = plane.components["kube-scheduler"]
    component.args = [a for a in component.args if not a.startswith("-v=")] + [f"-v={verbosity}"]
    plane._start_and_wait("kube-scheduler")  # the fixture's own start-and-wait-for-/readyz


def _for_api(doc: dict[str, Any], uids: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """What the API server is given: no ``spec.priority`` (admission computes it from ``priorityClassName``), owner
    references with the owners' real uids (a made-up one for an owner the scenario does not create)."""
    body = copy.deepcopy(doc)
    if body["kind"] == "Pod":
        body["spec"].pop("priority", None)
        for ref in body["metadata"].get("ownerReferences", []):
            ref["uid"] = uids.get((ref["kind"], ref["name"]), MISSING_OWNER_UID)
    return body


def _decided(pod: Mapping[str, Any]) -> bool:
    if pod["spec"].get("nodeName"):
        return True
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        and c.get("reason") in ("Unschedulable", "SchedulerError", "SchedulingGated")  # gated: never tried
        for c in pod.get("status", {}).get("conditions", [])
    )


def _snapshot(pods: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((p["metadata"]["name"], p["spec"].get("nodeName", "")) for p in pods))


def run_real(
    plane: ControlPlane, docs: Sequence[dict[str, Any]], namespace: str, *, backlog: bool = False,
    parallelism: int = PARALLELISM, verbosity: int = 0,
) -> Outcome:
    """Place the scenario's pods with the real scheduler and read back where they went and with which devices.

    By default a fresh scheduler watches everything being created, and pods are created one at a time, each once the
    one before is bound or Unschedulable: its cache adds the nodes in document order (its NodeTree then lists them
    zones round-robin, as the simulator's ``ClusterState`` keeps them) and its queue is in document order. With
    ``backlog`` everything is created while the scheduler is stopped (template claims made too), then it starts and
    sees every pod at once: the queue orders them by priority. Its informers list objects in no fixed order, so pods
    of equal priority (and ties between nodes) are then not comparable one by one.
    """
    _stop_scheduler(plane)
    if not backlog:
        _start_scheduler(plane, parallelism, verbosity)
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
            _start_scheduler(plane, parallelism, verbosity)
    pods = _settled(plane, pods_path)
    present = {p["metadata"]["name"] for p in pods}
    claims = namespace_claims(plane, namespace)
    out: Outcome = {pod["metadata"]["name"]: real_placed(pod, claims) for pod in pods}
    for doc in created:
        if doc["kind"] == "Pod" and doc["metadata"]["name"] not in present:
            out[doc["metadata"]["name"]] = Placed(PREEMPTED)  # deleted by the scheduler's preemption
    _clean_up(plane, namespace, created)
    return out


def namespace_claims(plane: ControlPlane, namespace: str) -> dict[str, dict[str, Any]]:
    """The namespace's ResourceClaims on the real API server, by name."""
    listed = plane.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    return {c["metadata"]["name"]: c for c in listed}


def pending_message(pod: Mapping[str, Any]) -> str:
    """An unbound pod's PodScheduled message (what the scheduler or the API server wrote); "" once bound."""
    if pod["spec"].get("nodeName"):
        return ""
    scheduled = [c for c in pod.get("status", {}).get("conditions", []) if c.get("type") == "PodScheduled"]
    return str(scheduled[0].get("message", "")) if scheduled else ""


def real_placed(pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> Placed:
    """Where the real control plane put ``pod``: its node, each pod claim's allocated devices (the extended-resource
    claim under ``EXTENDED``) and, while unbound, its message."""
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
    return Placed(node, devices, pending_message(pod))


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


def compare(scenario: Scenario, real: Outcome, sim: Outcome) -> Comparison:
    """See the module docstring: the pods named by ``expect.yaml`` one by one in creation (name) order, then the
    pending set and, where asked, the pods per node. Nothing is excused."""
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
    if scenario.expect.get("forced") or exact == "all":
        exact = sorted(real)
    for pod in sorted(exact):
        result.exact_checked += 1
        if real[pod] == sim[pod]:
            result.exact_agreed += 1
        else:
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
    """One real run of the scenario, compared with kubedra under each policy (the first is the one that counts);
    the kube-scheduler policy's comparison also holds the scores kubedra gave each bound pod's nodes to those the
    real scheduler logged for it."""
    tag = secrets.token_hex(3)
    namespace = f"{scenario.name}-{tag}"
    docs = prepare(scenario.docs, namespace, f"s{tag}.{DRIVER}")
    began = time.monotonic()
    offset = log_offset(plane)
    real = run_real(plane, docs, namespace, backlog=bool(scenario.expect.get("backlog")), verbosity=SCORE_VERBOSITY)
    seconds = time.monotonic() - began
    logged = logged_scores(plane, offset, namespace)
    out = []
    ours = docs if scenario.expect.get("backlog") else sequenced(docs)
    for policy in policies:
        comparison = compare(scenario, real, run_kubedra(ours, policy, scenario.expect.get("gates"))[0])
        comparison.real_seconds = seconds
        out.append(comparison)
    if policies and policies[0] is Policy.KUBE_SCHEDULER:
        gates = scenario.expect.get("gates")
        compare_scores(out[0], logged, kubedra_scores(ours, gates=gates))
        compare_scores(out[0], logged, kubedra_scores(ours, fast_path=True, gates=gates), fast_path=True)
    return out


def compare_scores(
    result: Comparison, logged: Mapping[str, Scores], scored: Mapping[str, Scores | WindowScores], *,
    fast_path: bool = False,
) -> None:
    """Every bound pod the real scheduler scored: kubedra's scores of the same nodes, plugin by plugin (for a pod the
    fast path scored by groups, see ``compare_window``). Counted in ``scored``, or with ``fast_path`` in
    ``window_scored`` (pods whose fast-path scores came from ``choose_window``)."""
    for pod in sorted(logged):
        if result.real.get(pod, Placed(None)).node is None:
            continue  # scored in a cycle that did not bind it (it stayed pending): not one kubedra need repeat
        got = scored.get(pod)
        side = "kubedra's fast path" if fast_path else "kubedra"
        if isinstance(got, WindowScores):
            result.window_scored += 1
            result.problems.extend(f"{pod}'s scores ({side}): {p}" for p in compare_window(logged[pod], got))
            continue
        if not fast_path:
            result.scored += 1
        if without_zeros(logged[pod]) != got:
            result.problems.append(f"{pod}'s scores ({side}): real {without_zeros(logged[pod])}, kubedra {got}")


def compare_window(real: Mapping[str, Mapping[str, int]], window: WindowScores) -> list[str]:
    """The fast path's group scores against the real log, as far as they go: the same nodes scored; on each node,
    every score it computed (``RESOURCES`` against the sum of the two resource plugins, a plugin the log skipped
    as 0); every plugin it did not compute (nor the total) scoring the window's nodes alike, as its premise is; and
    the nodes of the highest real total its best."""
    problems = []
    if set(real) != set(window.nodes):
        return [f"nodes scored: real {sorted(real)}, kubedra {sorted(window.nodes)}"]
    computed: set[str] = set()
    for node, scores in sorted(window.nodes.items()):
        computed |= set(scores)
        logged = real[node]
        for key, value in sorted(scores.items()):
            want = sum(logged.get(p, 0) for p in RESOURCE_PLUGINS) if key == RESOURCES else logged.get(key, 0)
            if want != value:
                problems.append(f"{key} on {node}: real {want}, kubedra {value}")
    plugins = {p for scores in real.values() for p in scores} - computed - set(RESOURCE_PLUGINS) - {"total"}
    for plugin in sorted(plugins):
        values = {node: real[node].get(plugin, 0) for node in sorted(real)}
        if len(set(values.values())) > 1:
            problems.append(f"{plugin}, not computed, differs between nodes: real {values}")
    high = max(s["total"] for s in real.values())
    top = frozenset(node for node, s in real.items() if s["total"] == high)
    if top != window.best:
        problems.append(f"best nodes: real {sorted(top)}, kubedra {sorted(window.best)}")
    return problems


# ---------------------------------------------------------------------------------------------- ties at random

_FINAL_SCORE = re.compile(r'"Calculated node\'s final score for pod" pod="([^"]+)" node="([^"]+)" score=(-?\d+)')
_PLUGIN_SCORE = re.compile(r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)')


@dataclass(frozen=True)
class TiePick:
    """One pod the real scheduler placed among nodes that scored alike: the nodes its log scored highest, those
    kubedra's scorer found tied, and where the pod went."""

    pod: str
    real_top: frozenset[str]
    kubedra_top: frozenset[str]
    node: str | None


def log_offset(plane: ControlPlane) -> int:
    path = plane.components["kube-scheduler"].log
    return path.stat().st_size if path.exists() else 0


def logged_scores(plane: ControlPlane, offset: int, namespace: str) -> dict[str, dict[str, dict[str, int]]]:
    """The scores kube-scheduler logged at ``-v=10`` since ``offset``: pod -> node -> plugin (weighted) and
    ``"total"``; a pod scheduled more than once keeps its last cycle's."""
    text = plane.components["kube-scheduler"].log.read_bytes()[offset:].decode(errors="replace")
    out: dict[str, dict[str, dict[str, int]]] = {}
    totalled: set[str] = set()  # pods whose cycle logged its totals: a plugin line after them starts a new cycle
    prefix = f"{namespace}/"
    for line in text.splitlines():
        if (found := _PLUGIN_SCORE.search(line)) is not None:
            pod, plugin, node, score = found.groups()
            if pod.startswith(prefix):
                name = pod[len(prefix):]
                if name in totalled:
                    totalled.discard(name)
                    out[name] = {}
                out.setdefault(name, {}).setdefault(node, {})[plugin] = int(score)
        elif (found := _FINAL_SCORE.search(line)) is not None:
            pod, node, score = found.groups()
            if pod.startswith(prefix):
                totalled.add(pod[len(prefix):])
                out.setdefault(pod[len(prefix):], {}).setdefault(node, {})["total"] = int(score)
    return out


def tie_picks(plane: ControlPlane, scenario: Scenario, parallelism: int = DEFAULT_PARALLELISM) -> list[TiePick]:
    """The scenario on the real scheduler with ``parallelism`` and score logging, and kubedra on the same objects:
    per pod, the nodes with the highest total on each side and the real pick. Only meaningful where a pod's scores do
    not depend on where the pods before it went (the real run may break ties otherwise than kubedra's)."""
    tag = secrets.token_hex(3)
    namespace = f"{scenario.name}-{tag}"
    docs = prepare(scenario.docs, namespace, f"s{tag}.{DRIVER}")
    offset = log_offset(plane)
    real = run_real(plane, docs, namespace, parallelism=parallelism, verbosity=SCORE_VERBOSITY)
    scores = logged_scores(plane, offset, namespace)
    _, tied = run_kubedra(sequenced(docs))
    out = []
    for pod in sorted(real):
        nodes = scores.get(pod, {})
        best = max((n["total"] for n in nodes.values()), default=None)
        real_top = frozenset(name for name, n in nodes.items() if n["total"] == best)
        out.append(TiePick(pod, real_top, tied.get(pod, frozenset()), real[pod].node))
    return out


# ---------------------------------------------------------------------------------------------- reporting


def page_scenarios() -> list[Scenario]:
    """What CI compares and the page reports: every fixed scenario, then the random ones of ``RANDOM_SEEDS``, the
    random user-shaped ones (``user_scenarios``) and the random ones with placement terms (``placement_scenarios``)."""
    from tests.kube.random_scenarios import random_scenario

    return (load_scenarios() + [random_scenario(seed) for seed in range(RANDOM_SEEDS)] + user_scenarios()
            + placement_scenarios())


def user_scenarios() -> list[Scenario]:
    """The random user-shaped scenarios CI compares: ``USER_SEEDS`` small clusters, ``LARGE_USER_SEEDS`` large."""
    from tests.kube.random_scenarios import random_user_scenario

    return ([random_user_scenario(seed) for seed in range(USER_SEEDS)]
            + [random_user_scenario(seed, LARGE_USER_NODES) for seed in range(LARGE_USER_SEEDS)])


def placement_scenarios() -> list[Scenario]:
    """The random scenarios with pod affinity, anti-affinity and topologySpreadConstraints CI compares: seeds
    0..``PLACEMENT_SEEDS``-1 of ``random_placement_scenario``."""
    from tests.kube.random_scenarios import random_placement_scenario

    return [random_placement_scenario(seed) for seed in range(PLACEMENT_SEEDS)]


def page_section() -> str:
    """docs/fidelity.md's generated ``kube-scheduler`` section, from a fresh control plane (``scripts/fidelity``)."""
    policies = list(Policy)
    with running_control_plane(scheduler_config={"parallelism": PARALLELISM}) as plane:
        results = [run_scenario(plane, s, policies) for s in page_scenarios()]
    if not all(r[0].agrees for r in results):
        raise SystemExit("the kube-scheduler comparison does not pass:\n" + table([r[0] for r in results]))
    return summary(results, policies)


def table(comparisons: Sequence[Comparison]) -> str:
    """One line per scenario: agreement, exact placements agreeing, the pending set and the problems."""
    rows = ["| scenario | agrees | exact placements | pods scored alike | pending (real) | differences |",
            "|---|---|---:|---:|---|---|"]
    for c in comparisons:
        pending = ", ".join(sorted(p for p, placed in c.real.items() if placed.node is None)) or "-"
        exact = f"{c.exact_agreed}/{c.exact_checked}" if c.exact_checked else "-"
        rows.append(f"| {c.scenario} | {'yes' if c.agrees else 'NO'} | {exact} | {c.scored if c.agrees else '-'} | "
                    f"{pending} | {'; '.join(c.problems) or '-'} |")
    return "\n".join(rows)


def summary(results: Sequence[Sequence[Comparison]], policies: Sequence[Policy]) -> str:
    """The page's generated section: the table for the kube-scheduler policy (the first), then how each policy fared
    on the same real outcomes."""
    lines = [table([r[0] for r in results]), ""]
    scored = sum(r[0].scored for r in results)
    windows = sum(r[0].window_scored for r in results)
    lines.append(f"- scores: {scored} bound pods that had two feasible nodes or more, every score plugin's weighted "
                 "score on every node as the real scheduler logged it at `-v=10`")
    lines.append(f"- the default run's fast path: {windows} of those pods scored by groups of alike nodes, every score "
                 "it computed on every node, the rest scoring alike and its best nodes the real ones")
    for i, policy in enumerate(policies):
        agreed = sum(r[i].agrees for r in results)
        pods = sum(r[i].exact_agreed for r in results)
        checked = sum(r[i].exact_checked for r in results)
        lines.append(f"- `--policy {policy.value}`: {agreed}/{len(results)} scenarios agree entirely; "
                     f"{pods}/{checked} placements")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    """``python -m tests.kube.vs_kube_scheduler [ROUNDS [RANDOM [USER [PLACEMENT]]]]``: the scenarios ROUNDS times
    (default 1), RANDOM random ones (seeds 0..RANDOM-1, default 0), USER random user-shaped ones (seeds 0..USER-1,
    default 0) and PLACEMENT random ones with placement terms (seeds 0..PLACEMENT-1, default 0); the table for the
    kube-scheduler policy, and how often each policy agreed on the same real outcomes."""
    from tests.kube.random_scenarios import random_placement_scenario, random_scenario, random_user_scenario

    rounds = int(argv[0]) if argv else 1
    randoms = int(argv[1]) if len(argv) > 1 else 0
    users = int(argv[2]) if len(argv) > 2 else 0
    placements = int(argv[3]) if len(argv) > 3 else 0
    policies = list(Policy)
    results: list[list[Comparison]] = []
    with running_control_plane() as plane:
        for _ in range(rounds):
            results.extend(run_scenario(plane, s, policies) for s in load_scenarios())
        results.extend(run_scenario(plane, random_scenario(seed), policies) for seed in range(randoms))
        results.extend(run_scenario(plane, random_user_scenario(seed), policies) for seed in range(users))
        results.extend(run_scenario(plane, random_placement_scenario(seed), policies) for seed in range(placements))
    print(summary(results, policies))
    return 0 if all(r[0].agrees for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
