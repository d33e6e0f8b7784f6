"""kubedra's JobSet expansion (``kubedra.sim.jobsets``) against the released JobSet controller, sigs.k8s.io/jobset
v0.12.0 (``tests/sigs/build.sh``): its manager runs against a control plane of this module's own (with
kube-controller-manager's Job controller, which makes the Jobs' pods; nothing schedules), with the CRD and the
webhooks (JobSet defaulting and validation, the pod webhooks of exclusive placement) of the same module. The example
JobSet and variants are applied to both, and the Jobs and pods compared: names (pods' modulo the Job controller's
5-character suffix), counts, labels, annotations, owner references, the Jobs' shape, hostnames and subdomains,
containers' resources and claims, the pods' resource claims, affinity, nodeSelector and what else the scheduler
reads, and, for ``startupPolicy: InOrder``, which Jobs exist before the first replicated job's are ready.

Skips with the reason when the controller is not built (``scripts/test`` builds it where ``go`` is); in CI
(``CI=true``) a missing controller fails instead."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.sigs import harness
from tests.sigs.jobs import compare, kubedra_jobs, pod_shape, real_jobs, real_pods

from kubedra.objects.load import load_text
from kubedra.sim.jobset_controllers import failed_message
from kubedra.sim.scenario import build_scenario

BINARY = harness.BIN / "jobset-controller"
MODULE = "sigs.k8s.io/jobset"
EXAMPLE = harness.EXAMPLES / "jobset-train.yaml"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"

pytestmark = pytest.mark.controlplane


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    harness.require(BINARY)
    with harness.control_plane(tmp_path_factory.mktemp("jobset-cp"), ("job-controller",)) as cp:
        yield cp


@pytest.fixture(scope="module")
def jobset(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The JobSet controller v0.12.0 with its CRD and webhooks."""
    root = harness.module_dir(MODULE)
    crds = [root / "config" / "components" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"]
    with harness.controller(plane, tmp_path_factory.mktemp("jobset"), BINARY, "config.jobset.x-k8s.io/v1alpha1",
                            root, crds, root / "config" / "components" / "webhook"):
        yield


def example(namespace: str) -> list[dict[str, Any]]:
    return harness.in_namespace(namespace, list(yaml.safe_load_all(EXAMPLE.read_text())))




def test_the_example_jobset_expands_as_the_jobset_controller_makes_it(plane: ControlPlane, jobset: None) -> None:
    namespace = plane.create_namespace("js")
    docs = example(namespace)
    harness.apply(plane, docs)
    real = real_jobs(plane, namespace, 2)
    assert sorted(real) == ["train-workers-0", "train-workers-1"]
    compare(plane, namespace, docs, real)


def test_inorder_makes_the_next_replicated_job_once_the_first_is_ready(plane: ControlPlane, jobset: None) -> None:
    namespace = plane.create_namespace("js")
    docs = example(namespace)
    js = docs[-1]
    js["metadata"]["name"] = "staged"
    driver = copy.deepcopy(js["spec"]["replicatedJobs"][0])
    driver["name"], driver["replicas"] = "driver", 1
    driver["template"]["spec"].update(parallelism=1, completions=1)
    driver["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    js["spec"]["replicatedJobs"].insert(0, driver)
    js["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    harness.apply(plane, docs)
    first = real_jobs(plane, namespace, 1)  # only the driver's until its pod is ready
    assert sorted(first) == ["staged-driver-0"]
    for pod in real_pods(plane, namespace, "staged-driver-0", 1):
        harness.make_ready(plane, pod)
    real = real_jobs(plane, namespace, 3)
    compare(plane, namespace, docs, real)
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    assert [j.name for run in scenario.workloads.jobsets for j in run.first] == ["staged-driver-0"]
    assert [[j.name for j in stage] for run in scenario.workloads.jobsets for stage in run.stages] == [
        ["staged-workers-0", "staged-workers-1"]]


def test_negative_replicas_are_accepted_and_make_no_jobs(plane: ControlPlane, jobset: None) -> None:
    namespace = plane.create_namespace("js")
    docs = example(namespace)
    js = docs[-1]
    js["metadata"]["name"] = "neg"
    none = copy.deepcopy(js["spec"]["replicatedJobs"][0])
    none["name"], none["replicas"] = "none", -1
    js["spec"]["replicatedJobs"].insert(0, none)
    harness.apply(plane, docs)  # accepted: neither the CRD nor the webhook bounds replicas below
    # none of "none"; workers-0's job-global-index and job-group-index are "-1", which kube-apiserver refuses as a
    # label value (the controller retries it for ever); workers-1 is made, global-replicas "1"
    real = real_jobs(plane, namespace, 1)
    assert sorted(real) == ["neg-workers-1"]
    compare(plane, namespace, docs, real)


def test_exclusive_placement_pins_followers_to_the_leader_s_domain(plane: ControlPlane, jobset: None) -> None:
    namespace = plane.create_namespace("js")
    docs = example(namespace)
    js = docs[-1]
    js["metadata"]["name"] = "excl"
    js["metadata"]["annotations"] = {EXCLUSIVE: "rack"}
    harness.apply(plane, docs)
    real = real_jobs(plane, namespace, 2)
    ours = kubedra_jobs(docs)
    for index, name in enumerate(sorted(real)):
        # the leader (completion index 0) is made first, with the affinities; the followers are refused until it
        # is scheduled, then made with a nodeSelector on its node's rack
        leaders = real_pods(plane, namespace, name, 1)
        uid = real[name]["metadata"]["uid"]
        _, our_pods = ours[name]
        our_uid = our_pods[0]["metadata"]["ownerReferences"][0]["uid"]
        assert pod_shape(leaders[0], uid) == pod_shape(our_pods[0], our_uid)
        node = f"node-{index}"
        plane.create_node(node, labels={"rack": f"r{index}"})
        harness.bind(plane, leaders[0], node)
        pods = real_pods(plane, namespace, name, 2)
        follower = next(p for p in pods if p["metadata"]["name"] != leaders[0]["metadata"]["name"])
        shape = pod_shape(follower, uid)
        assert shape["nodeSelector"] == {"rack": f"r{index}"}
        assert shape["affinity"] is None
        # kubedra's follower as expanded: no affinity; its ExclusiveJobController makes it once the leader is bound,
        # with the nodeSelector on the leader's node's value (tests/sim/test_jobset.py runs that)
        ours_follower = pod_shape(our_pods[1], our_uid)
        assert ours_follower["affinity"] is None and ours_follower["nodeSelector"] == {}
        assert {**ours_follower, "nodeSelector": {"rack": f"r{index}"}} == shape



def succeed(plane: ControlPlane, pod: dict[str, Any], phase: str = "Succeeded") -> None:
    """What a kubelet writes once the pod's containers exit (0: Succeeded, else Failed)."""
    meta = pod["metadata"]
    plane.request("PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                  {"status": {"phase": phase, "conditions": [{"type": "Ready", "status": "False"}]}},
                  content_type="application/merge-patch+json")


def condition(plane: ControlPlane, namespace: str, name: str, kind: str) -> dict[str, Any]:
    """The JobSet's ``kind`` condition once it is True."""
    def true() -> dict[str, Any] | None:
        js = plane.get(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/{name}")
        return next((c for c in js.get("status", {}).get("conditions", [])
                     if c["type"] == kind and c["status"] == "True"), None)

    found: dict[str, Any] = plane.wait_for(true, timeout=harness.WAIT, interval=0.5, what=f"the JobSet {kind}")
    return found


def deleted_jobs(plane: ControlPlane, namespace: str, count: int) -> list[str]:
    """The Jobs given a deletionTimestamp (foreground deletion: nothing here collects them)."""
    def deleted() -> list[str] | None:
        items = plane.get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]
        gone = sorted(j["metadata"]["name"] for j in items if j["metadata"].get("deletionTimestamp"))
        return gone if len(gone) >= count else None

    found: list[str] = plane.wait_for(deleted, timeout=harness.WAIT, interval=0.5, what=f"{count} Jobs deleted")
    return found


def with_driver(namespace: str, name: str) -> list[dict[str, Any]]:
    """The example with a one-pod ``driver`` replicated job first."""
    docs = example(namespace)
    js = docs[-1]
    js["metadata"]["name"] = name
    driver = copy.deepcopy(js["spec"]["replicatedJobs"][0])
    driver["name"], driver["replicas"] = "driver", 1
    driver["template"]["spec"].update(parallelism=1, completions=1)
    driver["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    js["spec"]["replicatedJobs"].insert(0, driver)
    return docs


def test_success_policy_any_completes_the_jobset_and_deletes_the_other_jobs(plane: ControlPlane,
                                                                           jobset: None) -> None:
    # executeSuccessPolicy, then jobSetFinished -> deleteJobs (foreground: nothing here collects the Jobs, so they
    # keep a deletionTimestamp)
    namespace = plane.create_namespace("js")
    docs = with_driver(namespace, "anyof")
    docs[-1]["spec"]["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": ["driver"]}
    harness.apply(plane, docs)
    real = real_jobs(plane, namespace, 3)
    compare(plane, namespace, docs, real)
    for pod in real_pods(plane, namespace, "anyof-driver-0", 1):
        succeed(plane, pod)

    done = condition(plane, namespace, "anyof", "Completed")
    assert f"{done['reason']}: {done['message']}" == "AllJobsCompleted: jobset completed successfully"
    gone = deleted_jobs(plane, namespace, 2)
    assert gone == ["anyof-workers-0", "anyof-workers-1"]
    # kubedra: the JobSet's controller completes it when the driver's Job succeeds and deletes the same Jobs
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    [run] = scenario.workloads.jobsets
    assert run.success == ("Any", ("driver",))
    assert sorted(j.name for j in run.first) == ["anyof-driver-0", *gone]


def test_depends_on_complete_makes_the_next_replicated_job_once_the_first_succeeded(plane: ControlPlane,
                                                                                   jobset: None) -> None:
    # reconcileReplicatedJobs: dependencyReachedStatus (depends_on.go) keeps the workers' Jobs unmade until the
    # driver's replicas all succeeded
    namespace = plane.create_namespace("js")
    docs = with_driver(namespace, "deps")
    docs[-1]["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "driver", "status": "Complete"}]
    harness.apply(plane, docs)
    first = real_jobs(plane, namespace, 1)
    assert sorted(first) == ["deps-driver-0"]
    for pod in real_pods(plane, namespace, "deps-driver-0", 1):
        harness.make_ready(plane, pod)
    assert sorted(real_jobs(plane, namespace, 1)) == ["deps-driver-0"]  # Ready is not Complete
    for pod in real_pods(plane, namespace, "deps-driver-0", 1):
        succeed(plane, pod)
    real = real_jobs(plane, namespace, 3)
    compare(plane, namespace, docs, real)
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    [run] = scenario.workloads.jobsets
    assert [j.name for j in run.first] == ["deps-driver-0"]
    assert [[j.name for j in stage] for stage in run.stages] == [["deps-workers-0", "deps-workers-1"]]
    assert run.waits == ((("driver", "Complete"),),)


def test_a_failed_job_fails_the_jobset_and_deletes_the_others(plane: ControlPlane, jobset: None) -> None:
    # executeFailurePolicy without a failurePolicy: Failed, FailedJobs, naming the first failed Job; then deleteJobs
    namespace = plane.create_namespace("js")
    docs = with_driver(namespace, "fails")
    docs[-1]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    harness.apply(plane, docs)
    real_jobs(plane, namespace, 3)
    for pod in real_pods(plane, namespace, "fails-driver-0", 1):
        succeed(plane, pod, "Failed")
    failed = condition(plane, namespace, "fails", "Failed")
    assert f"{failed['reason']}: {failed['message']}" == failed_message("FailedJobs", "fails-driver-0")
    assert deleted_jobs(plane, namespace, 2) == ["fails-workers-0", "fails-workers-1"]


def collect(plane: ControlPlane, namespace: str) -> list[str]:
    """What kube-controller-manager's garbage collector does for the Jobs deleted in the foreground (it does not run
    here): each one's pods deleted, then its ``foregroundDeletion`` finalizer removed, so the Job is gone; the
    names of the Jobs collected."""
    merge = "application/merge-patch+json"
    jobs = plane.get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]
    gone = []
    for job in jobs:
        meta = job["metadata"]
        if not meta.get("deletionTimestamp"):
            continue
        path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=controller-uid%3D{meta['uid']}"
        for pod in plane.get(path)["items"]:
            pod_path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"
            plane.request("PATCH", pod_path, {"metadata": {"finalizers": None}}, content_type=merge)
            if harness.get_or_none(plane, pod_path) is not None:
                plane.request("DELETE", pod_path)
        plane.request("PATCH", f"/apis/batch/v1/namespaces/{namespace}/jobs/{meta['name']}",
                      {"metadata": {"finalizers": None}}, content_type=merge)
        gone.append(meta["name"])
    return sorted(gone)


def jobset_status(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = plane.get(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/{name}").get(
        "status", {})
    return status


def test_restart_jobset_recreates_every_job_then_fails_at_max_restarts(plane: ControlPlane, jobset: None) -> None:
    # executeFailurePolicy, no rule: RestartJobSet. Below maxRestarts (1) it bumps status.restarts and
    # restartsCountTowardsMax (failurePolicyRecreateAll); getChildJobs finds every Job's restart-attempt below it:
    # deleted (foreground) and, once gone, made again with restart-attempt 1 (Recreate). The next failure reaches
    # maxRestarts: Failed, ReachedMaxRestarts, the other Jobs deleted.
    from kubedra.sim.jobset_restarts import restarted

    namespace = plane.create_namespace("js")
    docs = with_driver(namespace, "again")
    docs[-1]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 0
    docs[-1]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    harness.apply(plane, docs)
    first = real_jobs(plane, namespace, 3)
    compare(plane, namespace, docs, first)
    for pod in real_pods(plane, namespace, "again-driver-0", 1):
        succeed(plane, pod, "Failed")
    plane.wait_for(lambda: jobset_status(plane, namespace, "again").get("restarts") == 1, timeout=harness.WAIT,
                   interval=0.5, what="status.restarts 1")
    status = jobset_status(plane, namespace, "again")
    assert status.get("restartsCountTowardsMax") == 1
    restarting = next(c for c in status["conditions"] if c["type"] == "RestartingJobSet")
    assert restarting["message"] == ("applying RestartJobSet failure policy action "
                                     "(first failed job: again-driver-0)")
    assert deleted_jobs(plane, namespace, 3) == sorted(first)
    assert collect(plane, namespace) == sorted(first)

    def remade() -> dict[str, dict[str, Any]] | None:
        items = plane.get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]
        fresh = {j["metadata"]["name"]: j for j in items
                 if j["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == "1"}
        return fresh if len(fresh) == len(first) else None

    again: dict[str, dict[str, Any]] = plane.wait_for(remade, timeout=harness.WAIT, interval=0.5,
                                                      what="the Jobs made again")
    assert sorted(again) == sorted(first)
    assert all(again[n]["metadata"]["uid"] != first[n]["metadata"]["uid"] for n in again)
    # kubedra's Jobs after one restart (sim.jobset_restarts.restarted): the same Jobs, restart-attempt 1 on the
    # Jobs' templates and their pods, a new Job uid
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    ours = {job.name: (msgspec.to_builtins(restarted(job, 1).spec),
                       [msgspec.to_builtins(p) for p in restarted(job, 1).pods])
            for job in scenario.workloads.all_jobs()}
    pods = compare(plane, namespace, docs, again, ours)
    assert {p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for ps in pods.values() for p in ps} == {
        "1"}
    for pod in pods["again-driver-0"]:
        succeed(plane, pod, "Failed")
    failed = condition(plane, namespace, "again", "Failed")
    assert f"{failed['reason']}: {failed['message']}" == failed_message("ReachedMaxRestarts", "again-driver-0")
    status = jobset_status(plane, namespace, "again")
    assert (status.get("restarts"), status.get("restartsCountTowardsMax")) == (1, 1)
    assert deleted_jobs(plane, namespace, 2) == ["again-workers-0", "again-workers-1"]


def test_restart_job_is_refused_while_its_gate_is_off(plane: ControlPlane, jobset: None) -> None:
    import urllib.error

    namespace = plane.create_namespace("js")
    docs = example(namespace)
    docs[-1]["metadata"]["name"] = "perjob"
    docs[-1]["spec"]["failurePolicy"] = {"maxRestarts": 1, "rules": [{"name": "one", "action": "RestartJob"}]}
    with pytest.raises(urllib.error.HTTPError) as refused:
        harness.apply(plane, docs)
    body = refused.value.read().decode()
    assert "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed when RestartJob " \
           "feature gate is disabled" in body, body
    with pytest.raises(Exception, match="not allowed when RestartJob feature gate is disabled"):
        build_scenario(load_text(yaml.safe_dump_all(docs)))
