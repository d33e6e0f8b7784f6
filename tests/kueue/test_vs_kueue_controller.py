"""kubedra's Kueue admission (``sim.kueue``) against the released controller manager, sigs.k8s.io/kueue v0.17.0
(``tests/kueue/build.sh``), on the test control plane's etcd and kube-apiserver (no scheduler, no
kube-controller-manager: admission needs neither). Its CRDs come from the module go.mod pins, with the JobSet CRD of
the sigs.k8s.io/jobset version Kueue requires and the RayCluster and RayJob CRDs of its ray-operator version (its
jobset and rayjob integrations are on; no JobSet controller or ray-operator runs: Kueue only suspends and resumes the
JobSet or RayJob, writing node selectors into their templates); its Job, JobSet, RayJob and queue webhooks are served
over TLS with a self-signed certificate (``tests/sigs/harness``), so a labelled workload is made suspended as in a
cluster. For each scenario the same ResourceFlavors, ClusterQueues (one, or two in a cohort), LocalQueues and Jobs,
JobSets or RayJobs go to both; those
the controller unsuspends (their Workloads' QuotaReserved) and the node selectors it writes into their templates (a
JobSet's per replicated job, a RayJob's per pod set) must equal kubedra's admissions.

The controller manager is started once for the package (``conftest.py``); plain pods are checked in
``test_pods_vs_kueue_controller.py``. Workloads are created 1.1 s apart (a Workload's creationTimestamp has whole seconds, and Kueue breaks a tie by UID);
kubedra is given them a second apart, none ending."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.kueue.queues import QUEUE, V1B2, queues
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
RAY_API = "ray.io/v1"


def job_spec(gpus: int, parallelism: int) -> dict[str, Any]:
    return {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}


def job(name: str, namespace: str, gpus: int, parallelism: int = 1, queue: str = "lq") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE: queue}},
            "spec": job_spec(gpus, parallelism)}


def jobset(name: str, namespace: str, *replicated: tuple[str, int, int, int]) -> dict[str, Any]:
    """``replicated``: (name, replicas, parallelism, GPUs per pod) of each replicated job."""
    return {"apiVersion": JOBSET_API, "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE: "lq"}},
            "spec": {"replicatedJobs": [{"name": rjob, "replicas": replicas, "template": {"spec": job_spec(
                gpus, parallelism)}} for rjob, replicas, parallelism, gpus in replicated]}}


WORKLOADS = {"Job": ("batch/v1", "jobs"), "JobSet": (JOBSET_API, "jobsets"), "RayJob": (RAY_API, "rayjobs")}


def selectors(item: dict[str, Any]) -> dict[str, Any]:
    """A Job's template's node selector; a JobSet's, by replicated job; a RayJob's, by pod set (head, each worker
    group, the submitter: its ``submitterPodTemplate``'s, none without one)."""
    if item["kind"] == "RayJob":
        cluster = item["spec"]["rayClusterSpec"]
        submitter = (item["spec"].get("submitterPodTemplate") or {}).get("spec", {})
        return {"head": cluster["headGroupSpec"]["template"]["spec"].get("nodeSelector", {}),
                **{g["groupName"]: g["template"]["spec"].get("nodeSelector", {}) for g in cluster["workerGroupSpecs"]},
                "submitter": submitter.get("nodeSelector", {})}
    if item["kind"] == "JobSet":
        return {r["name"]: r["template"]["spec"]["template"]["spec"].get("nodeSelector", {})
                for r in item["spec"]["replicatedJobs"]}
    return item["spec"]["template"]["spec"].get("nodeSelector", {})


def real(plane: ControlPlane, docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Workload name -> its node selectors (``selectors``), for each Job or JobSet the controller unsuspended."""
    queued = [d for d in docs if d["kind"] in WORKLOADS]
    for doc in docs:
        if doc["kind"] in WORKLOADS:
            continue
        plural = doc["kind"].lower() + "s"
        ns = doc["metadata"].get("namespace")
        plane.request("POST", f"/apis/{V1B2}/" + (f"namespaces/{ns}/" if ns else "") + plural, doc)
    time.sleep(1.0)  # the controller's caches see the queues before the first Workload
    namespace = queued[0]["metadata"]["namespace"]
    for doc in queued:
        api, plural = WORKLOADS[doc["kind"]]
        plane.request("POST", f"/apis/{api}/namespaces/{namespace}/{plural}", doc)
        time.sleep(1.1)

    def settled() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]
        decided = [w for w in items if any(c["type"] == "QuotaReserved"
                                           for c in w.get("status", {}).get("conditions", []))]
        return items if len(items) == len(queued) and decided else None

    # Every Workload made and the first decided; then a moment for the rest (StrictFIFO never looks at a Workload
    # behind a head that does not fit: it has no status) and for the reconcilers to unsuspend the admitted ones.
    plane.wait_for(settled, timeout=harness.WAIT, interval=0.5, what="the Workloads, one with QuotaReserved")
    time.sleep(3)
    out = {}
    for kind, (api, plural) in WORKLOADS.items():
        if not any(d["kind"] == kind for d in queued):
            continue
        for item in plane.get(f"/apis/{api}/namespaces/{namespace}/{plural}")["items"]:
            assert QUEUE in item["metadata"]["labels"]
            if not item["spec"].get("suspend"):
                out[item["metadata"]["name"]] = selectors({**item, "kind": kind})
    return out


def kubedra(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The same from kubedra's admissions, each workload made a second after the one before (as ``real`` makes
    them), none ending."""
    docs = copy.deepcopy(docs)
    for i, doc in enumerate(d for d in docs if d["kind"] in WORKLOADS):
        doc["metadata"]["annotations"] = {"kubedra.io/start-after": f"{i}s"}
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    result = simulate(scenario, Options(fragmentation_samples=0))
    admitted = {e.object.split(" ", 1)[1].rsplit("/", 1)[1]: e.object.split(" ", 1)[0] for e in result.events
                if e.type == "Admitted"}
    out: dict[str, dict[str, Any]] = {}
    for record in result.state.pods.values():
        labels = record.pod.metadata.labels
        owner = labels.get("jobset.sigs.k8s.io/jobset-name") or record.owner.rsplit("/", 1)[1]
        if admitted.get(owner) == "JobSet":
            out.setdefault(owner, {})[labels["jobset.sigs.k8s.io/replicatedjob-name"]] = dict(
                record.pod.spec.node_selector)
        elif owner in admitted:
            out[owner] = dict(record.pod.spec.node_selector)
    assert set(out) == set(admitted)
    return out


SCENARIOS = {
    # 8 GPUs of quota, three 4-GPU Jobs: the first two
    "two-of-three": ([("default", "8")], "BestEffortFIFO", [("a", 4, 1), ("b", 4, 1), ("c", 4, 1)]),
    # two flavors: the first's 4 GPUs, then the second's
    "two-flavors": ([("on-demand", "4"), ("spot", "4")], "BestEffortFIFO", [("a", 4, 1), ("b", 2, 2), ("c", 1, 1)]),
    # a head that never fits (12 GPUs of 8): BestEffortFIFO admits the Job behind it, StrictFIFO nothing
    "best-effort": ([("default", "8")], "BestEffortFIFO", [("big", 4, 3), ("small", 2, 1)]),
    "strict": ([("default", "8")], "StrictFIFO", [("big", 4, 3), ("small", 2, 1)]),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_jobs_kueue_admits_at_once_and_their_node_selectors_equal_kubedras(plane: ControlPlane,
                                                                              name: str) -> None:
    flavors, strategy, shapes = SCENARIOS[name]
    namespace = plane.create_namespace("kueue")
    prefix = f"{namespace}-{name}"
    docs = [*queues(prefix, namespace, flavors, strategy),
            *(job(job_name, namespace, gpus, parallelism) for job_name, gpus, parallelism in shapes)]
    assert real(plane, docs) == kubedra(docs)


def test_jobsets_are_admitted_whole_or_held_with_each_replicated_jobs_flavor(plane: ControlPlane) -> None:
    """Two flavors of 4 GPUs: ``first``'s leader (1 GPU) takes pool a, its workers (2 x 2) no longer fit there and
    take pool b; ``whole`` (2 x 4) fits nowhere and stays suspended; ``small`` (3) takes what pool a has left."""
    namespace = plane.create_namespace("kueue")
    docs = [*queues(f"{namespace}-js", namespace, [("a", "4"), ("b", "4")], "BestEffortFIFO"),
            jobset("first", namespace, ("leader", 1, 1, 1), ("workers", 1, 2, 2)),
            jobset("whole", namespace, ("w", 2, 1, 4)), jobset("small", namespace, ("w", 1, 1, 3))]
    expected = {"first": {"leader": {"pool": "a"}, "workers": {"pool": "b"}}, "small": {"w": {"pool": "a"}}}
    assert kubedra(docs) == expected
    assert real(plane, docs) == expected


def test_a_cluster_queue_borrows_its_cohorts_unused_quota(plane: ControlPlane) -> None:
    """``a`` and ``b`` lend each other 4 GPUs: ``a`` runs 4 + 2 (borrowing 2 of ``b``'s), ``b`` then has 2 for its
    first Job and none for its second (reclaiming lent quota needs Kueue's preemption)."""
    namespace = plane.create_namespace("kueue")
    prefix = f"{namespace}-co"
    docs = [*queues(f"{prefix}-a", namespace, [("default", "4")], "BestEffortFIFO", f"{prefix}-org"),
            *queues(f"{prefix}-b", namespace, [("default", "4")], "BestEffortFIFO", f"{prefix}-org", "lqb",
                    f"{prefix}-a"),
            job("a1", namespace, 4), job("a2", namespace, 2), job("b1", namespace, 2, queue="lqb"),
            job("b2", namespace, 2, queue="lqb")]
    expected = {name: {"pool": "default"} for name in ("a1", "a2", "b1")}
    assert kubedra(docs) == expected
    assert real(plane, docs) == expected


def _priority_classes(plane: ControlPlane, prefix: str) -> list[dict[str, Any]]:
    """``<prefix>-low`` (10) and ``<prefix>-high`` (100), made in the control plane (Kueue reads a Job's priority
    from its template's PriorityClass) and returned for kubedra's input."""
    docs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"{prefix}-{name}"},
             "value": value} for name, value in (("low", 10), ("high", 100))]
    for doc in docs:
        plane.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", doc)
    return docs


def _prioritized(doc: dict[str, Any], priority_class: str) -> dict[str, Any]:
    doc["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return doc


def _kubedra_running(docs: list[dict[str, Any]]) -> set[str]:
    """The Jobs kubedra has admitted and not preempted since, the workloads made a second apart, none ending."""
    docs = copy.deepcopy(docs)
    for i, doc in enumerate(d for d in docs if d["kind"] == "Job"):
        doc["metadata"]["annotations"] = {"kubedra.io/start-after": f"{i}s"}
    result = simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options(fragmentation_samples=0))
    last: dict[str, str] = {}
    for event in result.events:
        if event.type in ("Admitted", "Preempted") and event.object.startswith("Job "):
            last[event.object.rsplit("/", 1)[1]] = event.type
    return {name for name, kind in last.items() if kind == "Admitted"}


@pytest.mark.parametrize(("low_class", "preempted"), [("low", True), ("high", False)])
def test_within_cluster_queue_preemption_evicts_a_lower_priority_job_as_kueue_does(
        plane: ControlPlane, low_class: str, preempted: bool) -> None:
    """8 GPUs of quota, ``withinClusterQueue: LowerPriority``: ``first`` (8 GPUs) is admitted, ``second`` (8 GPUs,
    high priority) comes 1.1 s later. Where ``first`` is of lower priority, Kueue evicts it (its Workload
    ``Evicted`` and ``Preempted``, reasons ``Preempted`` and ``InClusterQueue``), suspends its Job and, its quota
    released (no Job controller runs here: the Job has no active pod), admits ``second``; where both are of high
    priority, nothing is preempted and ``second`` waits. kubedra must leave the same Job running."""
    namespace = plane.create_namespace("kueue")
    prefix = f"{namespace}-pre"
    classes = _priority_classes(plane, prefix)
    cq_docs = queues(prefix, namespace, [("default", "8")], "BestEffortFIFO")
    cq_docs[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    jobs = [_prioritized(job("first", namespace, 8), f"{prefix}-{low_class}"),
            _prioritized(job("second", namespace, 8), f"{prefix}-high")]
    expected = {"second"} if preempted else {"first"}
    assert _kubedra_running([*classes, *cq_docs, *jobs]) == expected
    assert set(real(plane, [*cq_docs, *jobs])) == expected
    workloads = plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]
    (first,) = [w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] == "first"]
    conditions = {c["type"]: c for c in first.get("status", {}).get("conditions", [])}
    if preempted:
        assert conditions["Evicted"]["reason"] == "Preempted"
        assert conditions["Preempted"]["reason"] == "InClusterQueue"
        assert "due to prioritization in the ClusterQueue" in conditions["Preempted"]["message"]
        assert conditions["QuotaReserved"]["status"] == "False"
    else:
        assert "Evicted" not in conditions and conditions["QuotaReserved"]["status"] == "True"


def rayjob(name: str, namespace: str, gpus: int, own_submitter: bool = True) -> dict[str, Any]:
    """A RayJob as Kueue's webhook accepts it (``shutdownAfterJobFinishes``, no autoscaling): a 2-CPU head, one worker
    group ``gpu`` of one ``gpus``-GPU worker, and with ``own_submitter`` a submitterPodTemplate (500m CPU)."""
    def template(container: str, requests: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
        return {"spec": {"restartPolicy": "Never", "containers": [{"name": container, "image": "rayproject/ray:2.49.0",
                                                                   "resources": {"requests": requests,
                                                                                 **({"limits": limits} if limits
                                                                                    else {})}}]}}

    return {"apiVersion": RAY_API, "kind": "RayJob",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE: "lq"}},
            "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
                     **({"submitterPodTemplate": template("submit", {"cpu": "500m"})} if own_submitter else {}),
                     "rayClusterSpec": {
                         "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head", {"cpu": "2"})},
                         "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "rayStartParams": {},
                                               "template": template("ray-worker", {"cpu": "1"},
                                                                    {"nvidia.com/gpu": str(gpus)})}]}}}


def kubedra_rayjobs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``kubedra`` for RayJobs: each admitted one's pods' node selectors by pod set (the head, its worker group, the
    submitter), on nodes of both pools so that its cluster gets ready and its submitter is made."""
    docs = copy.deepcopy(docs)
    for i, doc in enumerate(d for d in docs if d["kind"] == "RayJob"):
        doc["metadata"]["annotations"] = {"kubedra.io/start-after": f"{i}s"}
    pools = [{"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": f"pool-{p}"}, "spec": {
        "count": 2, "labels": {"pool": p}, "allocatable": {"cpu": "64", "memory": "512Gi"},
        "gpu": {"model": "H100-80GB", "count": 8}, "devicePlugin": True}} for p in ("a", "b")]
    result = simulate(build_scenario(load_text(yaml.safe_dump_all([*docs, *pools]))), Options(fragmentation_samples=0))
    admitted = {e.object.rsplit("/", 1)[1] for e in result.events if e.type == "Admitted"}
    out: dict[str, dict[str, Any]] = {}
    for record in result.state.pods.values():
        kind, owner = record.owner.split("/")[0], record.owner.rsplit("/", 1)[1]
        rayjob_name = owner.rsplit("-", 1)[0] if kind == "RayCluster" else owner
        if rayjob_name not in admitted:
            continue
        group = record.pod.metadata.labels.get("ray.io/group")
        podset = "submitter" if kind == "Job" else "head" if group == "headgroup" else group
        out.setdefault(rayjob_name, {})[podset] = dict(record.pod.spec.node_selector)
    return out


@pytest.mark.parametrize("own_submitter", [True, False])
def test_rayjobs_are_admitted_whole_with_the_head_and_workers_on_their_own_flavors(plane: ControlPlane,
                                                                                   own_submitter: bool) -> None:
    """Kueue's rayjob integration (``PodSets``: head, each worker group, the submitter): flavor ``a`` has 4 GPUs,
    ``b`` 8. ``first``'s head and submitter (CPU only) take ``a``, its 8-GPU worker fits only ``b``; ``second`` (the
    same) fits nowhere once ``first`` holds ``b`` and stays suspended. ``RunWithPodSetsInfo`` writes each pod set's
    node labels into the head's, the worker group's and the submitterPodTemplate's spec (without one, into a default
    it makes anew and drops: the RayJob gets none); kubedra's pods carry the same. The default submitter asks 200Mi of
    memory, which no resource group covers: the ClusterQueue covers memory there."""
    namespace = plane.create_namespace("kueue")
    docs = [*queues(f"{namespace}-ray", namespace, [("a", "4"), ("b", "8")], "BestEffortFIFO"),
            rayjob("first", namespace, 8, own_submitter), rayjob("second", namespace, 8, own_submitter)]
    if not own_submitter:
        group = docs[2]["spec"]["resourceGroups"][0]
        group["coveredResources"].append("memory")
        for flavor_quota in group["flavors"]:
            flavor_quota["resources"].append({"name": "memory", "nominalQuota": "512Gi"})
    expected = {"first": {"head": {"pool": "a"}, "gpu": {"pool": "b"},
                          "submitter": {"pool": "a"} if own_submitter else {}}}
    assert kubedra_rayjobs(docs) == expected
    assert real(plane, docs) == expected
