"""kubedra's choice of Kueue preemption victims of every kind (``sim.kueue_preemption``, ``sim.kueue_victims``)
against the released controller manager (``conftest.py``: sigs.k8s.io/kueue v0.17.0, its batch/job, jobset and pod
integrations on). A ClusterQueue of 8 GPUs with ``withinClusterQueue: LowerPriority``: a low-priority JobSet, pod or
pod group is admitted, a high-priority Job or pod created 1.1 s later needs its quota. No scheduler, kubelet,
JobSet controller or garbage collector runs: the controller's decisions are what it writes (a JobSet's or Job's
``spec.suspend``, a pod's admission gate and its deletion), and the victims never have an active pod, so their quota is
released as soon as they are stopped. The workloads the controller leaves admitted and the pods it deletes must be
kubedra's."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.kueue import test_vs_kueue_controller as jobs_check
from tests.kueue.queues import V1B2, queues
from tests.kueue.test_pods_vs_kueue_controller import group, pod
from tests.kueue.test_vs_kueue_controller import RAY_API, _priority_classes, job, jobset, rayjob
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.kueue_pods import GATE, GROUP_NAME
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane


def _classed(doc: dict[str, Any], priority_class: str) -> dict[str, Any]:
    """The Job's, JobSet's, RayJob's (its cluster's) or Pod's pods given ``priority_class``."""
    if doc["kind"] == "RayJob":
        cluster = doc["spec"]["rayClusterSpec"]
        for group in (cluster["headGroupSpec"], *cluster["workerGroupSpecs"]):
            group["template"]["spec"]["priorityClassName"] = priority_class
    elif doc["kind"] == "JobSet":
        for rjob in doc["spec"]["replicatedJobs"]:
            rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    elif doc["kind"] == "Job":
        doc["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    else:
        doc["spec"]["priorityClassName"] = priority_class
    return doc


def _setup(plane: ControlPlane, name: str) -> tuple[str, str, list[dict[str, Any]], list[dict[str, Any]]]:
    """A namespace, the priority classes' prefix, the classes (for kubedra) and the preempting queues."""
    namespace = plane.create_namespace("kueue-pre")
    prefix = f"{namespace}-{name}"
    classes = _priority_classes(plane, prefix)
    cq_docs = queues(prefix, namespace, [("default", "8")], "BestEffortFIFO")
    cq_docs[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    return namespace, prefix, classes, cq_docs


def kubedra(docs: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """The workloads kubedra has admitted and not preempted since (by name: a Job's, JobSet's, pod's or group's),
    and the pods it deleted; the workloads made a second apart, none ending, on nodes of the flavor's pool."""
    docs = copy.deepcopy(docs)
    for i, doc in enumerate(d for d in docs if d["kind"] in ("Job", "JobSet", "Pod", "RayJob")):
        doc["metadata"].setdefault("annotations", {})["kubedra.io/start-after"] = f"{i}s"
    pools = [{"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "pool"}, "spec": {
        "count": 1, "labels": {"pool": "default"}, "allocatable": {"cpu": "64", "memory": "512Gi"},
        "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}}]
    result = simulate(build_scenario(load_text(yaml.safe_dump_all([*docs, *pools]))), Options(fragmentation_samples=0))
    last: dict[str, str] = {}
    for event in result.events:
        if event.type == "Admitted" or (event.type == "Preempted" and (event.message or "").startswith(
                "Preempted to accommodate")):
            last[event.object.rsplit("/", 1)[1]] = event.type
    deleted = {r.pod.metadata.name for r in result.state.pods.values() if r.deleted}
    return {name for name, kind in last.items() if kind == "Admitted"}, deleted


def _pods_left(plane: ControlPlane, namespace: str) -> tuple[set[str], set[str]]:
    """The pods the controller ungated and did not delete; those it deleted (gone, or terminating)."""
    items = plane.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    live = {p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp")
            and not any(g["name"] == GATE for g in p["spec"].get("schedulingGates") or [])}
    return live, {p["metadata"]["name"] for p in items if p["metadata"].get("deletionTimestamp")}


def _evicted(plane: ControlPlane, namespace: str) -> set[str]:
    """The owners (a JobSet, a pod, a group's pods) of the Workloads the controller evicted by preemption
    (``Evicted``, reason ``Preempted``)."""
    out = set()
    for w in plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]:
        conditions = {c["type"]: c for c in w.get("status", {}).get("conditions", [])}
        if conditions.get("Evicted", {}).get("reason") == "Preempted":
            out |= {ref["name"] for ref in w["metadata"]["ownerReferences"]}
    return out


@pytest.mark.parametrize("low_class", ["low", "high"])
def test_a_jobset_is_preempted_by_a_higher_priority_job_as_kueue_does(plane: ControlPlane, low_class: str) -> None:
    """``low`` (a JobSet of 2 x 4 GPUs) is admitted; ``high`` (a Job of 8 GPUs) needs its quota: Kueue evicts the
    JobSet's Workload and suspends the JobSet (``spec.suspend``), then admits the Job; where the JobSet is of high
    priority too, nothing is preempted and the Job waits."""
    namespace, prefix, classes, cq_docs = _setup(plane, f"js-{low_class}")
    docs = [_classed(jobset("low", namespace, ("w", 2, 1, 4)), f"{prefix}-{low_class}"),
            _classed(job("high", namespace, 8), f"{prefix}-high")]
    expected = {"high"} if low_class == "low" else {"low"}
    assert kubedra([*classes, *cq_docs, *docs])[0] == expected
    assert _reserved(plane, [*cq_docs, *docs]) == expected
    assert _evicted(plane, namespace) == ({"low"} if low_class == "low" else set())


def test_a_rayjob_is_preempted_and_suspended_as_kueue_does(plane: ControlPlane) -> None:
    """``low`` (a RayJob with an 8-GPU worker) is admitted; ``high`` (a Job of 8 GPUs) needs its quota: Kueue evicts
    the RayJob's Workload and suspends it (``spec.suspend``), and admits ``high`` once the RayJob is no longer active
    (``IsActive``: its ``jobDeploymentStatus`` neither New nor Suspended; no ray-operator runs here, so it stays New,
    ``""``: at once, as kubedra releases it)."""
    namespace, prefix, classes, cq_docs = _setup(plane, "ray")
    docs = [_classed(rayjob("low", namespace, 8), f"{prefix}-low"), _classed(job("high", namespace, 8),
                                                                           f"{prefix}-high")]
    assert kubedra([*classes, *cq_docs, *docs])[0] == {"high"}
    assert _reserved(plane, [*cq_docs, *docs]) == {"high"}
    assert _evicted(plane, namespace) == {"low"}
    assert plane.get(f"/apis/{RAY_API}/namespaces/{namespace}/rayjobs/low")["spec"]["suspend"] is True


SHAPES = {
    # a single pod of 8 GPUs
    "pod": lambda ns: [pod("low", ns, 8)],
    # a group of two 4-GPU pods: both deleted
    "group": lambda ns: group("low", ns, 2, 4),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_plain_pods_are_preempted_deleted_and_the_preemptor_ungated_as_kueue_does(plane: ControlPlane,
                                                                                  shape: str) -> None:
    """The low-priority pod or group is admitted (ungated); ``high`` (a pod of 8 GPUs) needs its quota: Kueue evicts
    its Workload and deletes its pods (``Stop``), then ungates ``high``."""
    namespace, prefix, classes, cq_docs = _setup(plane, shape)
    docs = [*(_classed(d, f"{prefix}-low") for d in SHAPES[shape](namespace)),
            _classed(pod("high", namespace, 8), f"{prefix}-high")]
    admitted, deleted = kubedra([*classes, *cq_docs, *docs])
    assert admitted == {"high"}
    assert _reserved(plane, [*cq_docs, *docs]) == {"high"}
    live, terminating = _pods_left(plane, namespace)
    gone = {d["metadata"]["name"] for d in docs} - live - terminating
    assert live == {"high"}
    assert terminating | gone == deleted
    assert _evicted(plane, namespace) == deleted


def _reserved(plane: ControlPlane, docs: list[dict[str, Any]]) -> set[str]:
    """The queues, then the Jobs, JobSets, RayJobs and Pods of ``docs`` made in the control plane, each 1.1 s after
    the Workload of the one before holds quota (the victims are admitted before their preemptor comes, a second
    apart at least, as kubedra has them); once the last one's Workload is decided, and 3 s more: the owners of the
    Workloads holding quota (QuotaReserved)."""
    apis = {"Job": "/apis/batch/v1", "JobSet": f"/apis/{jobs_check.JOBSET_API}", "RayJob": f"/apis/{RAY_API}",
            "Pod": "/api/v1"}
    queued = [d for d in docs if d["kind"] in apis]
    for doc in docs:
        if doc["kind"] not in apis:
            ns = doc["metadata"].get("namespace")
            plane.request("POST", f"/apis/{V1B2}/" + (f"namespaces/{ns}/" if ns else "") + doc["kind"].lower() + "s",
                          doc)
    time.sleep(1.0)  # the controller's caches see the queues before the first Workload
    namespace = queued[0]["metadata"]["namespace"]

    def workloads() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]
        return items

    def decided(made: int, admitted: bool) -> bool:
        """The Workloads of the first ``made`` owners exist (a group's with its last pod), the last one decided
        (with ``admitted``: holding quota)."""
        names = {d["metadata"]["name"] for d in queued[:made]}
        owned = [w for w in workloads() if {r["name"] for r in w["metadata"]["ownerReferences"]} & names]
        last = queued[made - 1]["metadata"]["name"]
        mine = [w for w in owned if last in {r["name"] for r in w["metadata"]["ownerReferences"]}]
        return bool(mine) and any(c["type"] == "QuotaReserved" and (c["status"] == "True" or not admitted)
                                  for c in mine[0].get("status", {}).get("conditions", []))

    groups = {d["metadata"].get("labels", {}).get(GROUP_NAME) for d in queued} - {None}
    for made, doc in enumerate(queued, start=1):
        plane.request("POST", f"{apis[doc['kind']]}/namespaces/{namespace}/{doc['kind'].lower()}s", doc)
        group = doc["metadata"].get("labels", {}).get(GROUP_NAME)
        if group not in groups or made == len(queued) or queued[made]["metadata"].get("labels", {}).get(
                GROUP_NAME) != group:  # a group's Workload is made with its last pod
            plane.wait_for(lambda m=made: decided(m, m < len(queued)), timeout=harness.WAIT, interval=0.5,
                           what=f"the Workload of {doc['metadata']['name']} decided")
        time.sleep(1.1)  # a condition's time has whole seconds: admissions (Kueue's candidate order) a second apart
    time.sleep(3)
    return {ref["name"] for w in workloads()
            if any(c["type"] == "QuotaReserved" and c["status"] == "True"
                   for c in w.get("status", {}).get("conditions", []))
            for ref in w["metadata"]["ownerReferences"]}


def test_the_fewest_victims_of_any_kind_are_taken_lowest_priority_first(plane: ControlPlane) -> None:
    """``classicalPreemptions`` across kinds: a JobSet (2 GPUs, priority 1), a pod (4 GPUs, priority 2) and a Job
    (2 GPUs, priority 3) fill the 8 GPUs; a 4-GPU Job of priority 100 comes. Candidates lowest priority first: the
    JobSet (2 free: not enough), then the pod (6 free); ``fillBackWorkloads`` adds the JobSet back (4 free without
    it): only the pod is preempted, and deleted."""
    namespace = plane.create_namespace("kueue-pre")
    prefix = f"{namespace}-mix"
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"{prefix}-{n}"},
                "value": n} for n in (1, 2, 3, 100)]
    for doc in classes:
        plane.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", doc)
    cq_docs = queues(prefix, namespace, [("default", "8")], "BestEffortFIFO")
    cq_docs[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    docs = [_classed(jobset("js", namespace, ("w", 1, 1, 2)), f"{prefix}-1"),
            _classed(pod("solo", namespace, 4), f"{prefix}-2"),
            _classed(job("j", namespace, 2), f"{prefix}-3"),
            _classed(job("high", namespace, 4), f"{prefix}-100")]
    admitted, deleted = kubedra([*classes, *cq_docs, *docs])
    assert (admitted, deleted) == ({"js", "j", "high"}, {"solo"})
    assert _reserved(plane, [*cq_docs, *docs]) == admitted
    assert _evicted(plane, namespace) == deleted
    assert _pods_left(plane, namespace)[0] == set()


def _cohort(plane: ControlPlane, name: str, preemption: dict[str, str]) -> tuple[str, str, list[dict[str, Any]],
                                                                                 list[dict[str, Any]]]:
    """ClusterQueues ``<prefix>-a`` (``preemption``) and ``<prefix>-b`` of 4 GPUs each in one cohort, LocalQueues
    ``lq`` and ``lqb``; the priority classes."""
    namespace = plane.create_namespace("kueue-pre")
    prefix = f"{namespace}-{name}"
    classes = _priority_classes(plane, prefix)
    cq_docs = [*queues(f"{prefix}-a", namespace, [("default", "4")], "BestEffortFIFO", f"{prefix}-org"),
               *queues(f"{prefix}-b", namespace, [("default", "4")], "BestEffortFIFO", f"{prefix}-org", "lqb",
                       f"{prefix}-a")]
    cq_docs[1]["spec"]["preemption"] = preemption
    return namespace, prefix, classes, cq_docs


@pytest.mark.parametrize(("policy", "b2_class", "reclaimed"), [("Any", None, True), ("Never", None, False),
                                                               ("LowerPriority", None, False),
                                                               ("LowerPriority", "low", True)])
def test_a_cluster_queue_reclaims_its_lent_quota_as_kueue_does(plane: ControlPlane, policy: str,
                                                               b2_class: str | None, reclaimed: bool) -> None:
    """``b`` runs ``b1`` (4) and ``b2`` (2, borrowing 2 of ``a``'s); ``a1`` (4, ``a``'s nominal quota, high
    priority) comes. With ``reclaimWithinCohort`` allowing it (``Any``; ``LowerPriority`` where ``b2`` is of lower
    priority) Kueue evicts ``b2`` and admits ``a1``; else ``a1`` waits."""
    namespace, prefix, classes, cq_docs = _cohort(plane, f"rc-{policy.lower()}-{b2_class or 'eq'}",
                                                  {"reclaimWithinCohort": policy})
    b2 = job("b2", namespace, 2, queue="lqb")
    docs = [_classed(job("b1", namespace, 4, queue="lqb"), f"{prefix}-high"),
            _classed(b2, f"{prefix}-{b2_class}") if b2_class else _classed(b2, f"{prefix}-high"),
            _classed(job("a1", namespace, 4), f"{prefix}-high")]
    expected = {"b1", "a1"} if reclaimed else {"b1", "b2"}
    assert kubedra([*classes, *cq_docs, *docs])[0] == expected
    assert _reserved(plane, [*cq_docs, *docs]) == expected
    assert _evicted(plane, namespace) == ({"b2"} if reclaimed else set())


def test_priority_candidates_in_the_cohort_go_before_the_cluster_queues_own(plane: ControlPlane) -> None:
    """``a`` runs ``a1`` (2, low); ``b`` runs ``b1`` and ``b2`` (4 + 2, borrowing 2); ``a2`` (4, high) would take
    ``a`` beyond its nominal quota: ``b2`` goes first (``b`` is then within its own), then ``a1``; ``b1`` stays."""
    namespace, prefix, classes, cq_docs = _cohort(plane, "mix", {"reclaimWithinCohort": "Any",
                                                                 "withinClusterQueue": "LowerPriority"})
    docs = [_classed(job("a1", namespace, 2), f"{prefix}-low"),
            _classed(job("b1", namespace, 4, queue="lqb"), f"{prefix}-high"),
            _classed(job("b2", namespace, 2, queue="lqb"), f"{prefix}-high"),
            _classed(job("a2", namespace, 4), f"{prefix}-high")]
    assert kubedra([*classes, *cq_docs, *docs])[0] == {"b1", "a2"}
    assert _reserved(plane, [*cq_docs, *docs]) == {"b1", "a2"}
    assert _evicted(plane, namespace) == {"a1", "b2"}
