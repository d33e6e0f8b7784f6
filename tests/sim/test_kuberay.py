"""KubeRay (``ray.io/v1``, ``kubedra.sim.rayclusters`` / ``rayjobs``) against ray-operator v1.5.0's code: pod names,
labels and counts, min/max clamping, numOfHosts, suspend, a RayJob's cluster and submitter, bad input, the example."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from fixtures.scenarios import nodepool, pod_spec, run, text_of

from kubedra.cli import main

GPUS8 = {"nvidia.com/gpu": "8"}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "ray-cluster.yaml"
RAYJOB_EXAMPLE = EXAMPLE.with_name("rayjob.yaml")


def group(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"groupName": name, "template": {"spec": pod_spec(limits=GPUS8)}, **fields}


def cluster(*groups: dict[str, Any], name: str = "rc", **spec: Any) -> dict[str, Any]:
    head = {"template": {"spec": pod_spec(requests={"cpu": "1"})}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": {"headGroupSpec": head, "workerGroupSpecs": list(groups), **spec}}


def pool(count: int = 8) -> dict[str, Any]:
    return nodepool("h100", count, gpus=8, model="H100-80GB", device_plugin=True)


def workers(sim: Any, prefix: str = "rc-gpu-worker-") -> list[str]:
    return [n for n in sim.pods if n.startswith(prefix)]


def test_names_and_labels_as_build_head_pod_and_build_worker_pod_make_them() -> None:
    # PodName (utils/util.go): "<cluster>-head-" and "<cluster>-<group>-worker-" generateNames, + 5 characters.
    # labelPod (common/pod.go): the seven labels below; ray.io/group is "headgroup" for the head
    # (RayNodeHeadGroupLabelValue); mergeLabels lets group labels override the template's, not cluster/node-type/group.
    g = group(replicas=2, labels={"team": "a", "ray.io/group": "nope"})
    sim = run(pool(), cluster(g))
    heads = [n for n in sim.pods if n.startswith("rc-head-")]
    assert len(heads) == 1 and len(heads[0]) == len("rc-head-") + 5
    assert len(workers(sim)) == 2
    head = sim.pods[heads[0]]["metadata"]
    assert {k: v for k, v in head["labels"].items() if k.startswith(("ray.io/", "app.kubernetes.io/"))} == {
        "ray.io/is-ray-node": "yes", "ray.io/cluster": "rc", "ray.io/node-type": "head", "ray.io/group": "headgroup",
        "ray.io/identifier": "rc-head", "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator"}
    assert head["ownerReferences"][0]["kind"] == "RayCluster" and head["ownerReferences"][0]["name"] == "rc"
    worker = sim.pods[workers(sim)[0]]
    labels = worker["metadata"]["labels"]
    assert labels["ray.io/node-type"] == "worker" and labels["ray.io/group"] == "gpu"
    assert labels["ray.io/identifier"] == "rc-worker" and labels["team"] == "a"
    # DefaultWorkerPodTemplate: the wait-gcs-ready init container (200m CPU, 256Mi)
    assert [c["name"] for c in worker["spec"]["initContainers"]] == ["wait-gcs-ready"]
    assert {sim.phase(n) for n in sim.pods} == {"Running"}


@pytest.mark.parametrize(("fields", "expected"), [
    ({"replicas": 6, "minReplicas": 1, "maxReplicas": 4}, 4),  # above max: max
    ({"replicas": 0, "minReplicas": 2, "maxReplicas": 4}, 2),  # below min: min
    ({"minReplicas": 3}, 3),  # replicas' CRD default 0, raised to min
    ({"replicas": 2, "minReplicas": 5, "maxReplicas": 3}, 3),  # min above max: max
    ({"replicas": 2, "numOfHosts": 3}, 6),  # times numOfHosts
    ({"replicas": 3, "suspend": True}, 0),  # a suspended group: 0
])
def test_counts_as_get_worker_group_desired_replicas(fields: dict[str, Any], expected: int) -> None:
    # GetWorkerGroupDesiredReplicas (utils/util.go)
    sim = run(pool(), cluster(group(**fields)))
    assert len(workers(sim)) == expected


@pytest.mark.parametrize(("options", "expected"), [({"version": "v2"}, "Never"), ({}, "Always")])
def test_autoscaler_v2_makes_every_pod_restart_never(options: dict[str, Any], expected: str) -> None:
    # DefaultHeadPodTemplate / DefaultWorkerPodTemplate (common/pod.go): IsAutoscalingV2Enabled sets restartPolicy
    # Never on the head and the workers (found by tests/kuberay against the real operator)
    sim = run(pool(), cluster(group(replicas=1), enableInTreeAutoscaling=True, autoscalerOptions=options))
    assert {p["spec"]["restartPolicy"] for p in sim.pods.values()} == {expected}
    head = next(p for n, p in sim.pods.items() if n.startswith("rc-head-"))
    assert [c["name"] for c in head["spec"]["containers"]][-1] == "autoscaler"


def test_suspended_cluster_makes_no_pods() -> None:
    # reconcilePods (raycluster_controller.go): spec.suspend stops pod creation
    sim = run(pool(), cluster(group(replicas=2), suspend=True))
    assert sim.pods == {}


def test_rayjob_makes_its_cluster_then_the_submitter_and_shuts_down() -> None:
    # constructRayClusterForRayJob / GenerateRayClusterName: "<rayjob>-<5>"; createNewK8sJob: Job "<rayjob>" once the
    # cluster is Ready; GetDefaultSubmitterContainer; handleShutdownAfterJobFinishes deletes the cluster.
    rc = cluster(group(replicas=2))["spec"]
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob",
           "metadata": {"name": "train", "annotations": {"kubedra.io/run-for": "10m"}},
           "spec": {"rayClusterSpec": rc, "shutdownAfterJobFinishes": True}}
    sim = run(pool(), job)
    submitter = [n for n in sim.pods if n.startswith("train-") and "-head-" not in n and "-worker-" not in n]
    assert len(submitter) == 1
    assert sim.phase(submitter[0]) == "Succeeded"
    spec = sim.pods[submitter[0]]["spec"]
    assert spec["containers"][0]["name"] == "ray-job-submitter" and spec["restartPolicy"] == "Never"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    # createNewK8sJob's ray.io/originated-from-* labels are the Job's, not its pod's (tests/kuberay: the real operator)
    assert not any(k.startswith("ray.io/") for k in sim.pods[submitter[0]]["metadata"]["labels"])
    assert sim.pods[submitter[0]]["metadata"]["labels"]["job-name"] == "train"
    deleted = [e["object"].rsplit("/", 1)[1] for e in sim.events if e["type"] == "Deleted"]
    assert len(deleted) == 3 and all("shutdownAfterJobFinishes" in e["message"] for e in sim.events
                                     if e["type"] == "Deleted")
    assert len({n.split("-")[1] for n in deleted}) == 1  # one cluster, "train-<5 chars>"
    assert sorted(n.split("-")[2] for n in deleted) == ["gpu", "gpu", "head"]


def test_malformed_objects_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ray.yaml"
    bad = cluster(group(replicas=1, numOfHostz=2))
    path.write_text(text_of(pool(), bad))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "ray.yaml" in err and "RayCluster" in err and "numOfHostz" in err, err
    bad = cluster(group(), group())
    bad["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    path.write_text(text_of(pool(), bad))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.headGroupSpec.template.spec.containers" in err, err
    assert 'spec.workerGroupSpecs[1].groupName: Duplicate value: "gpu"' in err, err
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
           "spec": {"submissionMode": "Sometimes"}}
    path.write_text(text_of(pool(), job))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.rayClusterSpec: Required value" in err and 'spec.submissionMode: Unsupported value' in err, err


def _example(path: Path) -> dict[str, Any]:
    """The example's first-line command with ``-o json``, from the repository root."""
    argv = shlex.split(path.read_text().splitlines()[0].removeprefix("# "))
    out = io.StringIO()
    with contextlib.chdir(path.parents[2]), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv[1:], "-o", "json"]) == 0
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def test_the_example_runs_end_to_end_as_its_header_says() -> None:
    report = _example(EXAMPLE)
    scheduled = {e["object"].rsplit("/", 1)[1]: (e["seconds"], e["node"]) for e in report["events"]
                 if e["type"] == "Scheduled" and e["object"].startswith("Pod ray/")}
    gpu = [n for n in scheduled if n.startswith("ray-cluster-gpu-worker-")]
    head = [n for n in scheduled if n.startswith("ray-cluster-head-")]
    assert len(gpu) == 4 and len(head) == 1
    assert scheduled[head[0]][1].startswith("cpu-")
    assert len({scheduled[n][1] for n in gpu}) == 4
    assert {at for at, _ in scheduled.values()} == {0.0}


def test_the_rayjob_example_runs_its_job_then_shuts_its_cluster_down() -> None:
    """As its header says: the three 4-GPU workers on the two 8-GPU nodes, the head on the CPU node, all at 0 s;
    the submitter Job's pod once the cluster runs, for the 2 hours of kubedra.io/run-for; then the cluster's pods
    deleted (shutdownAfterJobFinishes)."""
    report = _example(RAYJOB_EXAMPLE)
    events = [e for e in report["events"] if e["object"].startswith("Pod ray/")]
    scheduled = {e["object"].rsplit("/", 1)[1]: (e["seconds"], e["node"]) for e in events if e["type"] == "Scheduled"}
    workers = [n for n in scheduled if "-gpu-worker-" in n]
    (head,) = [n for n in scheduled if "-head-" in n]
    (submitter,) = [n for n in scheduled if n.startswith("tune-") and n.count("-") == 1]
    assert len(workers) == 3 and sorted({scheduled[n][1] for n in workers}) == ["gpu-0", "gpu-1"]
    assert scheduled[head][1] == "cpu-0" and {at for at, _ in scheduled.values()} == {0.0}
    ended = {e["object"].rsplit("/", 1)[1]: (e["type"], e["seconds"]) for e in events
             if e["type"] in ("Finished", "Deleted")}
    assert ended[submitter] == ("Finished", 7200.0)
    assert {ended[n] for n in [*workers, head]} == {("Deleted", 7200.0)}


def _rayjob(replicas: int, run_for: str, **spec: Any) -> dict[str, Any]:
    rc = cluster(group(replicas=replicas))["spec"]
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "train", "annotations": {"kubedra.io/run-for": run_for}},
            "spec": {"rayClusterSpec": rc, **spec}}


def _rayjob_events(sim: Any, kind: str) -> list[tuple[float, str]]:
    return [(e["seconds"], e["message"]) for e in sim.events if e["object"] == "RayJob default/train"
            and e["type"] == kind]


def test_a_rayjob_whose_cluster_never_gets_ready_fails_at_its_deadline_and_shuts_it_down() -> None:
    # checkActiveDeadlineAndUpdateStatusIfNeeded while Initializing: 10 workers of 8 GPUs on 8 nodes never all run.
    sim = run(pool(), _rayjob(10, "1h", activeDeadlineSeconds=600, shutdownAfterJobFinishes=True))
    (failed,) = _rayjob_events(sim, "Failed")
    assert failed[0] == 600.0 and failed[1].startswith("DeadlineExceeded") and "no submitter Job" in failed[1]
    assert not [n for n in sim.pods if "-head-" not in n and "-worker-" not in n]  # no submitter Job was made
    deletions = [e for e in sim.events if e["type"] == "Deleted" and e["object"].startswith("Pod ")]
    assert len(deletions) == 11 and {e["seconds"] for e in deletions} == {600.0}  # the head and 10 workers


def test_a_running_rayjob_past_its_deadline_fails_its_cluster_deleted_after_the_ttl_its_submitter_kept() -> None:
    # handleShutdownAfterJobFinishes: the RayCluster deleted ttlSecondsAfterFinished after the end, the Job kept.
    sim = run(pool(), _rayjob(2, "2h", activeDeadlineSeconds=3600, shutdownAfterJobFinishes=True,
                              ttlSecondsAfterFinished=60))
    assert [t for t, _ in _rayjob_events(sim, "Failed")] == [3600.0]
    cluster_gone = {e["seconds"] for e in sim.events if e["type"] == "Deleted"}
    assert cluster_gone == {3660.0}
    (submitter,) = [n for n in sim.pods if "-head-" not in n and "-worker-" not in n]
    assert sim.phase(submitter) == "Succeeded"


def test_a_rayjob_done_before_its_deadline_does_not_fail_and_waits_the_ttl() -> None:
    sim = run(pool(), _rayjob(2, "10m", activeDeadlineSeconds=3600, shutdownAfterJobFinishes=True,
                              ttlSecondsAfterFinished=30))
    assert not _rayjob_events(sim, "Failed")
    assert {e["seconds"] for e in sim.events if e["type"] == "Deleted"} == {630.0}


def test_without_shutdown_a_failed_rayjob_keeps_its_cluster() -> None:
    sim = run(pool(), _rayjob(2, "2h", activeDeadlineSeconds=600))
    assert [t for t, _ in _rayjob_events(sim, "Failed")] == [600.0]
    assert not [e for e in sim.events if e["type"] == "Deleted"]
