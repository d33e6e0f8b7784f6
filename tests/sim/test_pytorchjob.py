"""Kubeflow PyTorchJob (``kubeflow.org/v1``, ``kubedra.sim.pytorchjobs``) against training-operator v1.9.2's code: pod
names, labels and counts, the workers' init container, defaults, completion and cleanPodPolicy, the deadline, suspend,
bad input (exit 2 naming the field), the example end to end."""

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
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "pytorchjob.yaml"


def replica(replicas: int | None = 1, run_for: str | None = None, **fields: Any) -> dict[str, Any]:
    spec = pod_spec(limits=GPUS8)
    spec["containers"][0]["name"] = "pytorch"
    template: dict[str, Any] = {"spec": spec}
    if run_for is not None:
        template["metadata"] = {"annotations": {"kubedra.io/run-for": run_for}}
    out: dict[str, Any] = {"template": template, **fields}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def job(name: str = "pj", run_policy: dict[str, Any] | None = None, **specs: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name}, "spec": spec}


def pool(count: int = 4) -> dict[str, Any]:
    return nodepool("h100", count, gpus=8, model="H100-80GB", device_plugin=True)


def deleted(sim: Any) -> list[str]:
    return sorted(e["object"].rsplit("/", 1)[1] for e in sim.events if e["type"] == "Deleted")


def test_names_labels_and_owner_as_create_new_pod_makes_them() -> None:
    # GenGeneralName (common/util.go): "<job>-<lower-cased type>-<index>"; GenLabels (common/job_controller.go):
    # operator-name = controllerName "pytorchjob-controller", job-name; createNewPod (common/pod.go): replica-type
    # (ReconcilePods lower-cases it), replica-index, job-role=master where IsMasterRole (pytorchjob_controller.go);
    # GenOwnerReference: controller and blockOwnerDeletion.
    sim = run(pool(), job(Master=replica(1), Worker=replica(3)))
    assert sorted(sim.pods) == ["pj-master-0", "pj-worker-0", "pj-worker-1", "pj-worker-2"]
    master = sim.pods["pj-master-0"]["metadata"]
    assert {k: v for k, v in master["labels"].items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/job-name": "pj", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master"}
    ref = master["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "kubeflow.org/v1", "PyTorchJob", "pj", True, True)
    worker = sim.pods["pj-worker-2"]["metadata"]["labels"]
    assert worker["training.kubeflow.org/replica-type"] == "worker"
    assert worker["training.kubeflow.org/replica-index"] == "2" and "training.kubeflow.org/job-role" not in worker
    assert len({sim.node_of(n) for n in sim.pods}) == 4


def test_without_a_master_worker_0_has_the_master_role_and_no_init_container() -> None:
    # IsMasterRole (pytorchjob_controller.go): no Master spec -> Worker index 0; setInitContainer (initcontainer.go)
    # skips the init container when there is no Master.
    sim = run(pool(), job(Worker=replica(2)))
    assert sim.pods["pj-worker-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert "training.kubeflow.org/job-role" not in sim.pods["pj-worker-1"]["metadata"]["labels"]
    assert not sim.pods["pj-worker-0"]["spec"].get("initContainers")


def test_workers_get_the_init_pytorch_container_and_restart_policy_defaults() -> None:
    # initContainerTemplate (initcontainer.go) with config.PyTorchInitContainerImageDefault "alpine:3.10": 50m/10Mi
    # requests, 100m/20Mi limits, appended to the template's. setDefaultRestartPolicy (pytorch_defaults.go:
    # PyTorchJobDefaultRestartPolicy OnFailure), SetRestartPolicy (core/pod.go): ExitCode -> Never; the replica's
    # policy overrides the template's. setDefaultReplicas: a Worker without replicas gets 1.
    worker = replica(None, restartPolicy="ExitCode")
    worker["template"]["spec"]["restartPolicy"] = "Always"
    sim = run(pool(), job(Master=replica(1), Worker=worker))
    assert sorted(sim.pods) == ["pj-master-0", "pj-worker-0"]
    assert not sim.pods["pj-master-0"]["spec"].get("initContainers")
    assert sim.pods["pj-master-0"]["spec"]["restartPolicy"] == "OnFailure"
    spec = sim.pods["pj-worker-0"]["spec"]
    assert spec["restartPolicy"] == "Never"
    (init,) = spec["initContainers"]
    assert (init["name"], init["image"]) == ("init-pytorch", "alpine:3.10")
    assert init["resources"] == {"limits": {"cpu": "100m", "memory": "20Mi"},
                                 "requests": {"cpu": "50m", "memory": "10Mi"}}


def test_the_init_container_counts_in_scheduling() -> None:
    # setInitContainer's 50m CPU request is the worker's effective CPU request (its pytorch container asks none):
    # on nodes with 40m CPU the worker of a job with a Master stays pending, that of a job without one runs.
    small = nodepool("small", 2, gpus=8, model="H100-80GB", device_plugin=True,
                     allocatable={"cpu": "40m", "memory": "512Gi"})
    sim = run(small, job(Worker=replica(1)))
    assert sim.phase("pj-worker-0") == "Running"
    master = replica(1)
    master["template"]["spec"]["containers"][0]["resources"] = {}
    sim = run(small, job(Master=master, Worker=replica(1)))
    assert sim.phase("pj-master-0") == "Running" and sim.phase("pj-worker-0") == "Pending"


def test_the_job_succeeds_with_its_master_and_clean_pod_policy_running_deletes_the_rest() -> None:
    # UpdateJobStatus (pytorchjob_controller.go): with a Master, the job succeeds when the master has; ReconcileJobs
    # -> CleanUpResources -> DeletePodsAndServices (common/job.go): Running deletes the pods still running or pending.
    sim = run(pool(), job(run_policy={"cleanPodPolicy": "Running"}, Master=replica(1, "10m"), Worker=replica(2)))
    assert sim.phase("pj-master-0") == "Succeeded"
    assert deleted(sim) == ["pj-worker-0", "pj-worker-1"]
    assert any(e["type"] == "Completed" and e["seconds"] == 600.0 for e in sim.events)


def test_clean_pod_policy_none_is_the_default_and_leaves_workers_running() -> None:
    # SetDefaults_PyTorchJob (pytorch_defaults.go): cleanPodPolicy None; DeletePodsAndServices returns at once.
    sim = run(pool(), job(Master=replica(1, "10m"), Worker=replica(2)))
    assert deleted(sim) == []
    assert sim.phase("pj-worker-0") == "Running"


def test_without_a_master_all_workers_or_with_elastic_policy_any_worker_ends_the_job() -> None:
    # UpdateJobStatus: no Master -> succeeded when expected == 0 (every worker), or ElasticPolicy set and any worker
    # succeeded. cleanPodPolicy All then deletes the rest.
    sim = run(pool(), job(run_policy={"cleanPodPolicy": "All"}, Worker=replica(2, "5m")))
    assert deleted(sim) == [] and {sim.phase(n) for n in sim.pods} == {"Succeeded"}
    fast = replica(1, "5m")
    elastic = job(run_policy={"cleanPodPolicy": "All"}, Worker=replica(3))
    elastic["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 3}
    elastic["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] = fast["template"]["metadata"]
    sim = run(pool(), elastic)
    assert {sim.phase(n) for n in sim.pods} == {"Succeeded"}  # they end together: the same run-for
    assert len(sim.pods) == 3  # the HPA between min and max is not modelled: replicas


def test_active_deadline_deletes_every_pod_not_done() -> None:
    # PastActiveDeadline (core/job.go) from StartTime (the job's first sync: its arrival); DeletePodsAndServices
    # deletes every pod while the job is not finished. kubedra acts at the first instant at or after the deadline:
    # here a bare pod's end at 60s gives one.
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tick", "annotations": {"kubedra.io/run-for": "60s"}},
            "spec": pod_spec(requests={"cpu": "1"})}
    sim = run(pool(), bare, job(run_policy={"activeDeadlineSeconds": 60, "cleanPodPolicy": "None"},
                                Master=replica(1), Worker=replica(1)))
    assert deleted(sim) == ["pj-master-0", "pj-worker-0"]
    assert any(e["type"] == "Failed" and "deadline" in e["message"] for e in sim.events)


@pytest.mark.parametrize("policy", [{"suspend": True}, {"managedBy": "kueue.x-k8s.io/multikueue"}])
def test_suspended_or_externally_managed_job_makes_no_pods(policy: dict[str, Any]) -> None:
    # ReconcileJobs (common/job.go): IsJobSuspended -> no pods; Reconcile (pytorchjob_controller.go):
    # ManagedByExternalController -> the operator skips the job.
    sim = run(pool(), job(run_policy=policy, Master=replica(1), Worker=replica(1)))
    assert sim.pods == {}


def test_malformed_objects_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # validatePyTorchReplicaSpecs (webhooks/pytorch/pytorchjob_webhook.go): Master replicas must be exactly 1 (nil
    # too: the webhook is not preceded by defaulting), Worker at least 1, a container named "pytorch", images, only
    # Master/Worker keys; validateSpec: Worker required with elasticPolicy; ValidateRunPolicy: managedBy.
    path = tmp_path / "pj.yaml"
    bad = job("Bad_Name", run_policy={"managedBy": "me"}, Master=replica(None), Worker=replica(0), Chief=replica(1))
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    path.write_text(text_of(pool(), bad))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "pj.yaml" in err and "PyTorchJob" in err, err
    for text in ('metadata.name: Invalid value: "Bad_Name": should match:',
                 'spec.runPolicy.managedBy: Unsupported value: "me"',
                 "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
                 "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1",
                 "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one "
                 "container with name pytorch",
                 'spec.pytorchReplicaSpecs[Chief]: Unsupported value: "Chief": supported values: "Master", "Worker"'):
        assert text in err, err
    elastic = job(Master=replica(1))
    elastic["spec"]["elasticPolicy"] = {}
    elastic["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "Sometimes"
    path.write_text(text_of(pool(), elastic))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used" in err
    assert 'spec.pytorchReplicaSpecs[Master].restartPolicy: Unsupported value: "Sometimes"' in err, err
    path.write_text(text_of(pool(), job(Master=replica(1, replicaz=2))))
    assert main(["simulate", "-f", str(path)]) == 2
    assert "replicaz" in capsys.readouterr().err


def test_the_example_runs_end_to_end_as_its_header_says() -> None:
    argv = shlex.split(EXAMPLE.read_text().splitlines()[0].removeprefix("# "))
    out = io.StringIO()
    with contextlib.chdir(EXAMPLE.parents[2]), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv[1:], "-o", "json"]) == 0
    report: dict[str, Any] = json.loads(out.getvalue())
    scheduled = {e["object"].rsplit("/", 1)[1]: (e["seconds"], e["node"]) for e in report["events"]
                 if e["type"] == "Scheduled" and e["object"].startswith("Pod training/")}
    assert sorted(scheduled) == ["train-master-0", "train-worker-0", "train-worker-1", "train-worker-2"]
    assert len({node for _, node in scheduled.values()}) == 4
    assert {at for at, _ in scheduled.values()} == {0.0}
    assert any(e["type"] == "Completed" and e["seconds"] == 7200.0 for e in report["events"])
