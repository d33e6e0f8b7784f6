"""Workload controllers beside the real kube-scheduler: the same objects given to a control plane that runs
kube-controller-manager's deployment, replicaset, statefulset and job controllers, and to ``kubedra simulate``.

A scenario is a directory under ``scenarios-controllers/`` as in ``vs_kube_scheduler`` (its ``expect.yaml`` keys
mean the same there). What differs is who makes the pods: the controllers, with names of their own. A ReplicaSet's
(a Deployment's) and a Job's pods get ``generateName`` suffixes, which differ between the two runs, and which of a
controller's identical pods the scheduler takes as a victim is not fixed either (the real one reads the start time
of pods no kubelet started as "now"). So every controller's pods are renamed ``<controller>-#<i>``, numbered in the
order of their outcomes (pending first, then preempted, then by node and devices), and compared pod by pod, messages
included; a StatefulSet's names are also compared as they are (its recreated pod keeps the victim's name).

The real run: each controller's pods are decided (bound or Unschedulable) before the next object is created; a
pod deleted (a preemption victim, a failed Job's pod) is removed at once, as no kubelet runs, and is ``PREEMPTED``
where the scheduler deleted it (its ``DisruptionTarget`` condition), else ``DELETED``, unless a pod of its name
exists at the end (a StatefulSet's recreated one). ``settle`` in ``expect.yaml`` waits longer for
the outcome to stop changing (a Job's replacement comes after its 10 s back-off). With ``honour-grace: true`` a
terminating pod is stopped and removed only once its ``deletionTimestamp`` (the deletion's time plus the pod's grace
period, as the API server sets it) has passed, as kubedra's victim leaves at the end of its grace period: meanwhile
it holds its node, terminating.

The harness is the kubelet for start times (``Kubelet``): a pod seen bound without ``status.startTime`` gets one,
and phase ``Running``, in bind order, one second after the pod bound before it. The scheduler reads a pod with no
start time as started "now" (``util.GetPodStartTime``), which would make ``pickOneNodeForPreemption``'s "latest start
of the highest-priority victims" rule, and the order victims are reprieved in, depend on the moment; and
``status.startTime`` has whole seconds, so pods a real kubelet starts within one second tie, and the tie goes to the
first node in Go's map order, at random. Distinct seconds in bind order are what kubedra models: the simulated time
a pod bound, then its place in the bind order. A bound pod being deleted is set ``Failed`` before it is removed, as a
kubelet does: the scheduler stops counting it then, even where a Job's finalizer keeps the object a while.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from tests.controlplane.fixture import ControlPlane
from tests.kube.vs_kube_scheduler import (
    DELETED,
    DRIVER,
    PATHS,
    PREEMPTED,
    SETTLE_SECONDS,
    TIMEOUT_SECONDS,
    Comparison,
    Outcome,
    Placed,
    Scenario,
    _decided,
    _for_api,
    _start_scheduler,
    _stop_scheduler,
    compare,
    namespace_claims,
    prepare,
    real_placed,
    run_kubedra,
)

from kubedra.cluster.state import PodRecord
from kubedra.scheduler import preemption, victims

CONTROLLER_SCENARIOS = Path(__file__).resolve().parent / "scenarios-controllers"
CONTROLLERS = ("resourceclaim-controller", "deployment-controller", "replicaset-controller",
               "statefulset-controller", "daemonset-controller", "job-controller")
OWNERS = {
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
}
ORDER = ["PriorityClass", "DeviceClass", "Node", "ResourceSlice", "ResourceClaimTemplate", "DaemonSet", "Deployment",
         "ReplicaSet", "StatefulSet", "Job", "Pod"]
CONTROLLER_KINDS = ("DaemonSet", "Deployment", "ReplicaSet", "StatefulSet", "Job")
BETWEEN_SECONDS = 1.0  # unchanged for this long before the next workload is created
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"  # the API server's generateName alphabet (and kubedra's)


class Kubelet:
    """Start times in bind order, one second apart, an hour in the past (the scheduler reads a pod not yet given one
    as started "now", after all of them, as kubedra's pod bound in the current instant is)."""

    def __init__(self, *, honour_grace: bool = False) -> None:
        self.clock = int(time.time()) - 3600
        self.started: set[str] = set()  # uids given a start time
        self.honour_grace = honour_grace

    def stops_now(self, pod: Mapping[str, Any]) -> bool:
        """Whether the terminating ``pod`` is stopped now: at once, or with ``honour_grace`` once its grace period
        (to its ``deletionTimestamp``) is over."""
        if not self.honour_grace:
            return True
        ends = datetime.datetime.strptime(pod["metadata"]["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
        return time.time() >= ends.replace(tzinfo=datetime.UTC).timestamp()

    def start(self, plane: ControlPlane, pods_path: str, pods: Sequence[Mapping[str, Any]]) -> None:
        """Every pod of ``pods`` (not terminating) bound and not started gets ``startTime`` and phase ``Running``,
        the earlier bound first: a bound pod no one has written since has the resourceVersion of its binding."""
        bound = [p for p in pods if p["spec"].get("nodeName") and not p.get("status", {}).get("startTime")
                 and p["metadata"]["uid"] not in self.started]
        for pod in sorted(bound, key=lambda p: (int(p["metadata"]["resourceVersion"]), p["metadata"]["name"])):
            self.clock += 1
            self.started.add(pod["metadata"]["uid"])
            stamp = datetime.datetime.fromtimestamp(self.clock, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            body = {"metadata": {"uid": pod["metadata"]["uid"]}, "status": {"startTime": stamp, "phase": "Running"}}
            with contextlib.suppress(Exception):  # gone meanwhile (a victim) or replaced (a StatefulSet's new pod)
                plane.request("PATCH", f"{pods_path}/{pod['metadata']['name']}/status", body,
                              content_type="application/merge-patch+json")


    def stop(self, plane: ControlPlane, pods_path: str, pod: Mapping[str, Any]) -> None:
        """A bound pod being deleted ends in phase ``Failed``, as a kubelet writes once it killed the containers: the
        scheduler watches non-terminal pods only, so the pod leaves its node then, even while a Job's tracking
        finalizer keeps the object until the job controller's next (batched, 1 s) sync."""
        status = pod.get("status", {})
        if not pod["spec"].get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            return
        body = {"metadata": {"uid": pod["metadata"]["uid"]}, "status": {"phase": "Failed"}}
        with contextlib.suppress(Exception):  # gone meanwhile
            plane.request("PATCH", f"{pods_path}/{pod['metadata']['name']}/status", body,
                          content_type="application/merge-patch+json")


def _path(doc: Mapping[str, Any], name: str | None = None) -> str:
    prefix, plural, namespaced = {**PATHS, **OWNERS}[doc["kind"]]
    base = f"{prefix}/namespaces/{doc['metadata']['namespace']}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{base}/{name}" if name else base


def _expected_pods(doc: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]) -> int:
    spec = doc.get("spec", {})
    if doc["kind"] == "DaemonSet":  # the scenarios' DaemonSets run on every node
        return sum(d["kind"] == "Node" for d in docs)
    if doc["kind"] == "Job":
        return int(spec.get("parallelism", 1))
    return int(spec.get("replicas", 1))


def _owned_by(pod: Mapping[str, Any], uids: set[str]) -> bool:
    return any(ref.get("uid") in uids for ref in pod["metadata"].get("ownerReferences", []))


def run_real(plane: ControlPlane, docs: Sequence[dict[str, Any]], namespace: str, settle: float, *,
             honour_grace: bool = False) -> Outcome:
    """The scenario on the control plane: cluster objects in ``ORDER``, then the workloads (controllers and bare
    pods) in document order (the order of their ``kubedra.io/start-after``), each created once every pod so far is
    decided, every controller has its pods and nothing changed for ``BETWEEN_SECONDS`` (kubedra's workloads arrive
    a minute apart: a Job's replacement after its back-off comes before the next one there too)."""
    _stop_scheduler(plane)
    _start_scheduler(plane)
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": namespace}})
    created: list[dict[str, Any]] = []
    owners: list[tuple[str, str, int]] = []  # kind, uid, pods expected
    deleted: dict[str, bool] = {}  # name -> whether the scheduler preempted it
    kubelet = Kubelet(honour_grace=honour_grace)
    try:
        for doc in sorted(docs, key=_rank):
            made = plane.request("POST", _path(doc), _for_api(doc, {}))
            created.append(doc)
            if doc["kind"] in CONTROLLER_KINDS:
                owners.append((doc["kind"], made["metadata"]["uid"], _expected_pods(doc, docs)))
            if doc["kind"] in CONTROLLER_KINDS or doc["kind"] == "Pod":
                _settled(plane, namespace, BETWEEN_SECONDS, deleted, kubelet, owners)
        pods = _settled(plane, namespace, settle, deleted, kubelet, owners)
        return _outcome(plane, namespace, pods, deleted)
    finally:
        _clean_up(plane, namespace, created)


def _rank(doc: Mapping[str, Any]) -> int:
    """Creation order: ``ORDER``'s, the workloads (controllers and bare pods) as one kind, in document order."""
    return ORDER.index("Pod" if doc["kind"] in CONTROLLER_KINDS else doc["kind"])


def _reaped(plane: ControlPlane, pods_path: str, deleted: dict[str, bool], kubelet: Kubelet) -> list[dict[str, Any]]:
    """The pods not terminating. A terminating one (``deletionTimestamp`` set: a preemption victim, a failed Job's
    pod) is stopped by the ``kubelet`` and removed here at once, by uid (a StatefulSet's new pod of the same name is
    left alone), and noted in ``deleted`` with whether the scheduler did it (the ``DisruptionTarget`` condition it
    sets, reason ``PreemptionByScheduler``)."""
    pods: list[dict[str, Any]] = plane.get(pods_path)["items"]
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            deleted[meta["name"]] = deleted.get(meta["name"], False) or any(
                c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
                for c in pod.get("status", {}).get("conditions", []))
            if not kubelet.stops_now(pod):
                continue
            kubelet.stop(plane, pods_path, pod)
            with contextlib.suppress(Exception):
                plane.request("DELETE", f"{pods_path}/{meta['name']}",
                              {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}})
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _complete(plane: ControlPlane, namespace: str, pods: Sequence[Mapping[str, Any]],
              owners: Sequence[tuple[str, str, int]]) -> bool:
    """Every controller of ``owners`` has its pods (a Deployment's are its ReplicaSet's; a finished Job none)."""
    if not owners:
        return True
    sets = plane.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    jobs = {j["metadata"]["uid"]: j for j in plane.get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]}
    for kind, uid, want in owners:
        uids = {uid}
        if kind == "Deployment":
            uids |= {r["metadata"]["uid"] for r in sets if _owned_by(r, uids)}
        finished = kind == "Job" and any(c.get("type") in ("Failed", "Complete") and c.get("status") == "True"
                                         for c in jobs.get(uid, {}).get("status", {}).get("conditions", []))
        if sum(_owned_by(p, uids) for p in pods) != (0 if finished else want):
            return False
    return True


def _settled(plane: ControlPlane, namespace: str, settle: float, deleted: dict[str, bool], kubelet: Kubelet,
             owners: Sequence[tuple[str, str, int]] = ()) -> list[dict[str, Any]]:
    """The pods not terminating (``_reaped``) once every one is decided, every controller of ``owners`` has its
    pods (``_complete``) and nothing changed for ``settle`` seconds; each poll the ``kubelet`` starts those bound."""
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    deadline = time.monotonic() + TIMEOUT_SECONDS
    last: tuple[tuple[str, str], ...] | None = None
    since = time.monotonic()
    while True:
        pods = _reaped(plane, pods_path, deleted, kubelet)
        kubelet.start(plane, pods_path, pods)
        snapshot = tuple(sorted((p["metadata"]["name"], p["spec"].get("nodeName", "")) for p in pods))
        if snapshot != last:
            last, since = snapshot, time.monotonic()
        elif (all(_decided(p) for p in pods) and time.monotonic() - since >= settle
              and _complete(plane, namespace, pods, owners)):
            return pods
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods in {pods_path} not settled after {TIMEOUT_SECONDS}s: {snapshot}")
        time.sleep(0.2)


def _outcome(
    plane: ControlPlane, namespace: str, pods: Sequence[Mapping[str, Any]], deleted: Mapping[str, bool]
) -> Outcome:
    claims = namespace_claims(plane, namespace)
    out: Outcome = {pod["metadata"]["name"]: real_placed(pod, claims) for pod in pods}
    # A victim with terminationGracePeriodSeconds 0 and no finalizer is gone before the harness sees it terminating:
    # the scheduler's Preempted event names it.
    for event in plane.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]:
        regarding = event.get("regarding", {})
        if event.get("reason") == "Preempted" and regarding.get("kind") == "Pod":
            deleted[regarding["name"]] = True
    for name, preempted in deleted.items():
        if name not in out:
            out[name] = Placed(PREEMPTED if preempted else DELETED)
    return out


def _clean_up(plane: ControlPlane, namespace: str, created: Sequence[Mapping[str, Any]]) -> None:
    """Every controller of the namespace first (a Deployment's ReplicaSet too: no garbage collector runs, and what
    is left would make pods on the next scenario's node of the same name), then the pods, then cluster-scoped
    objects."""
    for group, plural in (("apps/v1", "daemonsets"), ("apps/v1", "deployments"), ("apps/v1", "replicasets"),
                          ("apps/v1", "statefulsets"), ("batch/v1", "jobs")):
        plane.request("DELETE", f"/apis/{group}/namespaces/{namespace}/{plural}", {"propagationPolicy": "Orphan"})
    plane.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0})
    for doc in created:
        if not {**PATHS, **OWNERS}[doc["kind"]][2]:
            plane.request("DELETE", _path(doc, doc["metadata"]["name"]))


def canonical(outcome: Outcome, controllers: Sequence[str]) -> tuple[Outcome, dict[str, list[str]]]:
    """Each controller's pods renamed ``<controller>-#<i>`` in the order of their outcomes; also each controller's
    pods' own names, sorted (pods of no controller keep theirs)."""
    patterns = {name: re.compile(rf"^{re.escape(name)}-(?:[0-9]+|(?:[0-9]+-|[a-z0-9]+-)?{SUFFIX})$")
                for name in controllers}
    out: Outcome = {}
    owned: dict[str, list[tuple[str, Placed]]] = {}
    for pod, placed in outcome.items():
        owner = next((name for name, pattern in patterns.items() if pattern.match(pod)), None)
        if owner is None:
            out[pod] = placed
        else:
            owned.setdefault(owner, []).append((pod, placed))
    names: dict[str, list[str]] = {}
    for owner, pods in owned.items():
        pods.sort(key=lambda p: (p[1].node or "", sorted(p[1].devices.items()), p[1].message))
        names[owner] = sorted(pod for pod, _ in pods)
        for i, (_, placed) in enumerate(pods):
            out[f"{owner}-#{i}"] = placed
    return out, names


def _later_bound_first(record: PodRecord) -> tuple[float, int]:
    """``victims.start_key`` with the bind order of one instant reversed."""
    if record.started_at is None:
        return float("inf"), 0
    return record.started_at, -record.start_order


def turns_on_bind_order(docs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether kubedra's outcome of ``docs`` changes when pods bound in one simulated instant start in the reverse
    order. kubedra starts them in the order they were scheduled; the real scheduler binds each pod in its own
    goroutine, so two pods scheduled a millisecond apart may finish binding, and be started by the harness's
    ``Kubelet``, either way round (a real kubelet gives both the same second, and Go's map order decides). A scenario
    whose preemptions turn on that order is a coin toss in the real run, not a comparison."""
    controllers = [d["metadata"]["name"] for d in docs if d["kind"] in CONTROLLER_KINDS]
    as_scheduled = canonical(run_kubedra(docs)[0], controllers)[0]
    with mock.patch.object(victims, "start_key", _later_bound_first), \
            mock.patch.object(preemption, "start_key", _later_bound_first):
        reversed_ = canonical(run_kubedra(docs)[0], controllers)[0]
    return as_scheduled != reversed_


def run_scenario(plane: ControlPlane, scenario: Scenario) -> Comparison:
    """One real run and kubedra's, compared (``compare``) after ``canonical``; a StatefulSet's pod names too."""
    tag = secrets.token_hex(3)
    namespace = f"{scenario.name}-{tag}"
    docs = prepare(scenario.docs, namespace, f"s{tag}.{DRIVER}")
    for doc in docs:
        if doc["kind"] in OWNERS:  # namespaced kinds ``prepare`` does not know
            doc["metadata"]["namespace"] = namespace
    controllers = [d["metadata"]["name"] for d in docs if d["kind"] in CONTROLLER_KINDS]
    stateful = {d["metadata"]["name"] for d in docs if d["kind"] == "StatefulSet"}
    began = time.monotonic()
    settle = float(scenario.expect.get("settle", SETTLE_SECONDS))
    real, real_names = canonical(run_real(plane, docs, namespace, settle,
                                          honour_grace=bool(scenario.expect.get("honour-grace"))), controllers)
    sim, sim_names = canonical(run_kubedra(docs)[0], controllers)
    result = compare(scenario, real, sim)
    result.real_seconds = time.monotonic() - began
    for name in sorted(stateful):
        if real_names.get(name) != sim_names.get(name):
            result.problems.append(f"{name}'s pods: real {real_names.get(name)}, kubedra {sim_names.get(name)}")
    return result
