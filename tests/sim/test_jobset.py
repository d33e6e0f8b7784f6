"""JobSet (``jobset.x-k8s.io/v1alpha2``, ``kubedra.sim.jobsets``) as its controller expands it, read from ``-o json``
as a user reads it: a driver and two 2-pod worker Jobs of 8 GPUs each on a NodePool — their names, labels, placement
and completion; InOrder startup; suspend; exclusive placement by topology; the webhook's checks; and one of JobSet's
published examples (``site/static/examples/simple/paralleljobs.yaml`` at 08dfbdfd) with only a NodePool added."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from fixtures.scenarios import Run, claim_template, nodepool, pod, pod_spec, run, text_of

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

GPUS8 = {"nvidia.com/gpu": "8"}
PREFIX = "jobset.sigs.k8s.io/"


def replicated(name: str, replicas: int = 1, parallelism: int = 1, *, run_for: str = "10m",
               annotations: dict[str, str] | None = None, **job: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"annotations": {"kubedra.io/run-for": run_for}},
                                "spec": pod_spec(requests=GPUS8, limits=GPUS8)}
    spec = {"parallelism": parallelism, "completions": parallelism, "template": template, **job}
    body: dict[str, Any] = {"spec": spec}
    if annotations:
        body["metadata"] = {"annotations": annotations}
    return {"name": name, "replicas": replicas, "template": body}


def jobset(name: str = "train", *jobs: dict[str, Any], annotations: dict[str, str] | None = None,
           **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    replicated_jobs = list(jobs) or [replicated("driver"), replicated("workers", 2, 2)]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
            "spec": {"replicatedJobs": replicated_jobs, **spec}}


def pool(count: int = 5, **kwargs: Any) -> dict[str, Any]:
    return nodepool("h100", count, gpus=8, model="H100-80GB", device_plugin=True, **kwargs)


def of_job(sim: Run, job: str) -> list[str]:
    return sorted(n for n, p in sim.pods.items() if p["metadata"].get("labels", {}).get("job-name") == job)


def test_replicated_jobs_become_jobs_whose_pods_carry_the_controllers_labels_and_complete() -> None:
    sim = run(pool(), jobset())
    assert len(sim.pods) == 5
    assert [len(of_job(sim, j)) for j in ("train-driver-0", "train-workers-0", "train-workers-1")] == [1, 2, 2]
    worker = of_job(sim, "train-workers-1")[1]
    assert worker.startswith("train-workers-1-1-")  # an Indexed Job's pod (the webhook's default completionMode)
    labels = sim.pods[worker]["metadata"]["labels"]
    assert labels[PREFIX + "jobset-name"] == "train"
    assert labels[PREFIX + "replicatedjob-name"] == "workers"
    assert labels[PREFIX + "replicatedjob-replicas"] == "2"
    assert labels[PREFIX + "job-index"] == "1"
    assert labels[PREFIX + "job-global-index"] == "2"
    assert labels[PREFIX + "global-replicas"] == "3"
    assert labels[PREFIX + "job-key"] == hashlib.sha1(b"default/train-workers-1").hexdigest()
    assert labels["batch.kubernetes.io/job-completion-index"] == "1"
    annotations = sim.pods[worker]["metadata"]["annotations"]
    assert annotations[PREFIX + "jobset-name"] == "train"
    assert sim.pods[worker]["spec"]["restartPolicy"] == "OnFailure"  # the webhook's default
    assert sim.pods[worker]["metadata"]["ownerReferences"][0]["name"] == "train-workers-1"
    nodes = {sim.node_of(name) for name in sim.pods}
    assert len(nodes) == 5  # 8 GPUs each: one pod per node
    assert {sim.phase(name) for name in sim.pods} == {"Succeeded"}
    assert set(sim.times("Pod", "Finished").values()) == {600.0}


def test_pods_claiming_eight_gpus_from_a_template_get_a_whole_node_each() -> None:
    workers = replicated("workers", 2, 2)
    workers["template"]["spec"]["template"]["spec"] = pod_spec(template="eight-gpus")
    sim = run(nodepool("dra", 4, gpus=8, model="H100-80GB"), claim_template("eight-gpus", count=8),
              jobset("train", workers))
    assert len(sim.pods) == 4
    assert len({sim.node_of(name) for name in sim.pods}) == 4
    assert {sim.phase(name) for name in sim.pods} == {"Succeeded"}


def test_pods_wait_for_gpus_when_the_pool_is_short() -> None:
    sim = run(pool(3), jobset())
    assert sorted(sim.times("Pod", "Scheduled").values()) == [0.0, 0.0, 0.0, 600.0, 600.0]


def test_in_order_startup_makes_a_replicated_jobs_jobs_once_the_ones_before_are_ready() -> None:
    first = replicated("driver", annotations=None)
    first["template"]["spec"]["template"]["metadata"]["annotations"]["kubedra.io/start-after"] = "2m"
    sim = run(pool(), jobset("train", first, replicated("workers", 2, 2),
                             startupPolicy={"startupPolicyOrder": "InOrder"}))
    scheduled = {name.rsplit("-", 2)[0]: t for name, t in sim.times("Pod", "Scheduled").items()}
    assert scheduled == {"train-driver-0": 120.0, "train-workers-0": 120.0, "train-workers-1": 120.0}
    created = sim.times("Job", "Created")
    assert created == {"train-workers-0": 120.0, "train-workers-1": 120.0}


def test_in_order_waits_while_the_first_jobs_pods_cannot_run() -> None:
    # One 8-GPU node, held for 5 minutes by another pod: the driver runs 5m-10m, and only then are the workers' Jobs
    # made (InOrder); they run after it. AnyOrder makes them at 0.
    blocker = pod("blocker", run_for="5m", requests=GPUS8, limits=GPUS8)
    jobs = (replicated("driver", run_for="5m"), replicated("workers", 1, 1))
    sim = run(pool(1), blocker, jobset("train", *jobs, startupPolicy={"startupPolicyOrder": "InOrder"}))
    assert sim.times("Job", "Created") == {"train-workers-0": 300.0}
    worker = of_job(sim, "train-workers-0")[0]
    assert sim.timeline(f"Pod {worker}")[-2:] == [(600.0, "Scheduled"), (1200.0, "Finished")]
    any_order = run(pool(1), blocker, jobset("train", *jobs))
    assert any_order.times("Job", "Created") == {}
    assert len(any_order.pods) == 3


def test_suspend_makes_no_pods() -> None:
    sim = run(pool(), jobset(suspend=True))
    assert sim.pods == {}


def test_exclusive_topology_gives_each_job_its_own_domain() -> None:
    racks = [nodepool(f"rack{i}", 2, gpus=8, model="H100-80GB", device_plugin=True, labels={"rack": f"r{i}"})
             for i in range(3)]
    sim = run(*racks, jobset("train", replicated("workers", 3, 2),
                             annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}))
    racks_of = {}
    for job in ("train-workers-0", "train-workers-1", "train-workers-2"):
        pods = of_job(sim, job)
        assert len(pods) == 2
        racks_of[job] = {sim.node_of(p).rsplit("-", 1)[0] for p in pods}
        assert len(racks_of[job]) == 1
    assert len(set.union(*racks_of.values())) == 3


def test_exclusive_followers_are_made_once_their_leader_is_bound_pinned_to_its_domain() -> None:
    # v0.12.0's pod webhook (pkg/webhooks/pod_webhook.go): setExclusiveAffinities on the leader (completion index
    # 0) only; ValidateCreate refuses followers until the leader has a node, setNodeSelector then pins them
    racks = [nodepool(f"rack{i}", 2, gpus=8, model="H100-80GB", device_plugin=True, labels={"rack": f"r{i}"})
             for i in range(2)]
    sim = run(*racks, jobset("train", replicated("workers", 2, 2, completions=4),
                             annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}))
    for job in ("train-workers-0", "train-workers-1"):
        pods = of_job(sim, job)
        assert len(pods) == 4
        leader = next(p for p in pods if p.startswith(f"{job}-0-"))
        rack = sim.pods[leader]["spec"]["nodeName"].rsplit("-", 1)[0].removeprefix("rack")
        assert sim.pods[leader]["spec"]["affinity"]["podAffinity"]
        order = [e["object"].split("/", 1)[1] for e in sim.events if e["object"].startswith("Pod ")]
        bound = order.index(leader)  # its first event: bound at the instant it came
        for follower in (p for p in pods if p != leader):
            spec = sim.pods[follower]["spec"]
            assert spec.get("affinity") is None
            assert spec["nodeSelector"] == {"rack": f"r{rack}"}
            assert order.index(follower) > bound
    events = [e for e in sim.events if e["type"] == "Created" and "followers admitted" in e.get("message", "")]
    assert len(events) == 2


def test_exclusive_followers_never_come_while_the_leader_is_pending() -> None:
    # no node has the topology key: the leader's required affinity fails everywhere, and ValidateCreate refuses
    # its followers for as long ("leader pod not yet scheduled")
    sim = run(pool(), jobset("train", replicated("workers", 1, 2),
                             annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}))
    [leader] = of_job(sim, "train-workers-0")
    assert leader.startswith("train-workers-0-0-") and not sim.node_of(leader)
    assert "didn't match pod affinity rules" in sim.pending_reason(leader)


def test_exclusive_in_order_stage_is_made_during_the_run() -> None:
    racks = [nodepool(f"rack{i}", 2, gpus=8, model="H100-80GB", device_plugin=True, labels={"rack": f"r{i}"})
             for i in range(2)]
    sim = run(*racks, jobset("train", replicated("driver"), replicated("workers", 1, 2),
                             startupPolicy={"startupPolicyOrder": "InOrder"},
                             annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}))
    pods = of_job(sim, "train-workers-0")
    assert len(pods) == 2 and all(sim.node_of(p) for p in pods)
    assert len({sim.node_of(p).rsplit("-", 1)[0] for p in pods}) == 1


def first_seen(sim: Run, prefix: str) -> float:
    return min(e["seconds"] for e in sim.events if e["object"].startswith(f"Pod default/{prefix}"))


def test_success_policy_any_of_the_driver_completes_the_jobset_and_deletes_the_workers() -> None:
    # executeSuccessPolicy (jobset_controller.go), numJobsExpectedToSucceed (success_policy.go): Any wants one
    # succeeded Job of the targets; the finished JobSet's active Jobs are deleted (reconcile: jobSetFinished,
    # deleteJobs)
    sim = run(pool(), jobset("train", replicated("driver", run_for="5m"), replicated("workers", 2, 2, run_for="1h"),
                             successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]}))
    done = [e for e in sim.events if e["object"] == "JobSet default/train"]
    assert [(e["type"], e["seconds"]) for e in done] == [("Completed", 300.0)]
    deleted = sorted(e["object"] for e in sim.events if e["type"] == "Deleted" and e["object"].startswith("Job "))
    assert deleted == ["Job default/train-workers-0", "Job default/train-workers-1"]
    gone = {e["seconds"] for e in sim.events if e["type"] == "Deleted" and e["object"].startswith("Pod ")}
    assert gone == {330.0}  # the workers' four pods leave after their grace period (30s), not after 1h
    assert not any(e["type"] == "Finished" and "workers" in e["object"] for e in sim.events)


def test_success_policy_all_of_targets_waits_for_every_target_job() -> None:
    sim = run(pool(), jobset("train", replicated("driver", run_for="1h"), replicated("workers", 2, 2, run_for="5m"),
                             successPolicy={"operator": "All", "targetReplicatedJobs": ["workers"]}))
    done = [(e["type"], e["seconds"]) for e in sim.events if e["object"] == "JobSet default/train"]
    assert done == [("Completed", 300.0)]
    assert any(e["object"] == "Job default/train-driver-0" and e["type"] == "Deleted" for e in sim.events)


def test_depends_on_complete_makes_the_workers_once_the_driver_succeeded() -> None:
    # reconcileReplicatedJobs skips a replicated job until dependencyReachedStatus (depends_on.go): Complete wants
    # replicas == succeeded Jobs, Ready replicas == ready + succeeded + failed
    workers = replicated("workers", 2, 2, dependsOn=[{"name": "driver", "status": "Complete"}])
    workers["dependsOn"] = workers["template"]["spec"].pop("dependsOn")
    sim = run(pool(), jobset("train", replicated("driver", run_for="5m"), workers))
    assert first_seen(sim, "train-driver-0") == 0.0
    assert first_seen(sim, "train-workers-0") == 300.0 and first_seen(sim, "train-workers-1") == 300.0
    workers["dependsOn"] = [{"name": "driver", "status": "Ready"}]
    sim = run(pool(), jobset("train", replicated("driver", run_for="5m"), workers))
    assert first_seen(sim, "train-workers-0") == 0.0
    made = [e["message"] for e in sim.events if e["type"] == "Created" and e["object"].startswith("Job ")]
    assert made and all("dependsOn driver Ready" in m for m in made)


def test_a_failed_job_fails_the_jobset_and_deletes_the_others() -> None:
    # executeFailurePolicy (failure_policy.go): without a failurePolicy the JobSet fails at the first failed Job;
    # with maxRestarts 0 RestartJobSet fails it too (ReachedMaxRestarts). A preempted pod fails its Job here
    # (backoffLimit 0).
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    for policy, reason in (({}, "FailedJobs"), ({"failurePolicy": {"maxRestarts": 0}}, "ReachedMaxRestarts")):
        js = jobset("train", replicated("workers", 3, 1, run_for="1h", backoffLimit=0), **policy)
        sim = run(pool(3), high, js, pod("urgent", start_after="1m", run_for="10m", requests=GPUS8, limits=GPUS8,
                                         priorityClassName="high"))
        done = [e for e in sim.events if e["object"] == "JobSet default/train"]
        assert [e["type"] for e in done] == ["Failed"] and done[0]["message"].startswith(reason)
        deleted = [e["object"] for e in sim.events if e["type"] == "Deleted" and e["object"].startswith("Job ")]
        assert len(deleted) == 2
        assert not any(e["type"] == "Finished" and "workers" in e["object"] for e in sim.events)


def test_webhook_problems_name_the_field() -> None:
    bad = jobset("x" * 60, replicated("driver"), replicated("driver"),
                 successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]})
    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(text_of(pool(), bad), source="js.yaml"))
    text = str(caught.value)
    assert "spec.replicatedJobs[0].name" in text and "job names generated for this JobSet will exceed 63" in text
    assert 'spec.replicatedJobs[1].name: Duplicate value: {"name":"driver"}' in text
    assert "invalid replicatedJob name 'nope'" in text
    assert "js.yaml" in text and "JobSet/" in text
    # ValidateCreate: dependsOn names this replicated job or one before it
    bad = jobset("js", replicated("driver"), replicated("workers"))
    bad["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "later", "status": "Ready"}]
    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(text_of(pool(), bad), source="js.yaml"))
    assert "spec.replicatedJobs[1].dependsOn: replicatedJob: workers cannot depend on replicatedJob: later" in str(
        caught.value)
    # The published CRD's schema refuses these before any webhook (as the API server does).
    bad = jobset("js", replicated("driver", -1), successPolicy={"operator": "Some"})
    with pytest.raises(InvalidInputError) as caught:
        load_text(text_of(pool(), bad), source="js.yaml")
    text = str(caught.value)
    assert 'spec.successPolicy.operator: Unsupported value: "Some"' in text
    assert "spec.replicatedJobs[0].replicas" not in text  # v0.12.0's CRD sets no minimum (the dev commit's came later)


def test_negative_replicas_are_accepted_and_make_no_jobs() -> None:
    # v0.12.0: no minimum in the CRD, no check in ValidateCreate; createJobs makes none, and globalReplicas,
    # globalJobIndex and groupReplicas sum the count as it is: workers-0's job-global-index is "-1", no label value,
    # so kube-apiserver refuses that Job (as the real controller shows, tests/sigs)
    sim = run(pool(), jobset("train", replicated("driver", -1), replicated("workers", 3, 2)))
    assert sorted({p["metadata"]["labels"]["job-name"] for p in sim.pods.values()}) == [
        "train-workers-1", "train-workers-2"]
    labels = sim.pods[of_job(sim, "train-workers-1")[0]]["metadata"]["labels"]
    assert labels[PREFIX + "global-replicas"] == "2"
    assert labels[PREFIX + "job-global-index"] == "0"
    assert labels[PREFIX + "group-replicas"] == "2"
    # InOrder: allReplicasStarted (replicas == ready + succeeded + failed) never holds, so nothing after is made
    sim = run(pool(), jobset("train", replicated("driver"), replicated("none", -1), replicated("workers", 2, 2),
                             startupPolicy={"startupPolicyOrder": "InOrder"}))
    assert sorted({p["metadata"]["labels"]["job-name"] for p in sim.pods.values()}) == ["train-driver-0"]


def test_simulate_exits_2_and_validate_reports_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "js.yaml"
    path.write_text(text_of(pool(), jobset(startupPolicy={"startupPolicyOrder": "Sideways"})))
    assert main(["simulate", "-f", str(path)]) == 2
    assert "spec.startupPolicy.startupPolicyOrder" in capsys.readouterr().err
    assert main(["validate", "-f", str(path), "-o", "table"]) != 0
    out = capsys.readouterr()
    assert "spec.startupPolicy.startupPolicyOrder" in out.out + out.err


PARALLELJOBS = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: paralleljobs
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        parallelism: 4
        completions: 4
        backoffLimit: 0
        template:
          spec:
            containers:
            - name: sleep
              image: busybox
              command:
                - sleep
              args:
                - 100s
  - name: driver
    template:
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          spec:
            containers:
            - name: sleep
              image: busybox
              command:
                - sleep
              args:
                - 100s
"""


def test_published_paralleljobs_example_simulates() -> None:
    scenario = build_scenario(load_text(text_of(nodepool("cpu", 2, gpus=None)) + "---\n" + PARALLELJOBS))
    assert not [n for n in scenario.notes if "not simulated" in n]
    sim = run(nodepool("cpu", 2, gpus=None), *load_docs(PARALLELJOBS))
    assert len(sim.pods) == 5
    assert {sim.phase(n) for n in sim.pods} == {"Running"}  # no run-for: they run to the end


def load_docs(text: str) -> list[dict[str, Any]]:
    import yaml

    return list(yaml.safe_load_all(text))


def test_network_fields_are_read_with_their_api_names() -> None:
    doc = jobset(network={"enableDNSHostnames": True, "subdomain": "train-net", "publishNotReadyAddresses": False})
    assert len(run(pool(), doc).pods) == 5
    bad = jobset(network={"subdomain": "Not_A_Label"})
    with pytest.raises(InvalidInputError, match=r"spec.network.subdomain: Invalid value: \"Not_A_Label\""):
        build_scenario(load_text(text_of(pool(), bad)))


MIRROR = Path("/work/.mirror/kubernetes-sigs+jobset/repo")
EXAMPLES = ["simple/exclusive-placement", "simple/success-policy", "simple/failure-policy", "simple/group",
            "simple/jobset-with-network", "simple/coordinator", "startup-policy/startup-driver-ready",
            "pytorch/resnet-cifar10/resnet", "pytorch/cnn-mnist/mnist", "tensorflow/mnist"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_published_examples_simulate_when_the_mirror_is_present(example: str) -> None:
    import subprocess

    if not MIRROR.exists():
        pytest.skip(f"no kubernetes-sigs/jobset mirror at {MIRROR}")
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:site/static/examples/{example}.yaml"],
                          capture_output=True, text=True, check=True).stdout
    pool_doc = nodepool("p", 4, gpus=8, model="H100-80GB", device_plugin=True,
                        labels={"cloud.google.com/gke-nodepool": "p"})
    scenario = build_scenario(load_text(text_of(pool_doc) + "---\n" + text))
    assert not [n for n in scenario.notes if "not simulated" in n]
    assert scenario.workloads.all_jobs()


HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def urgent(name: str, at: str) -> dict[str, Any]:
    return pod(name, start_after=at, run_for="10m", requests=GPUS8, limits=GPUS8, priorityClassName="high")


def test_restart_jobset_recreates_every_job_until_max_restarts() -> None:
    # restartJobSetActionApplier, failurePolicyRecreateAll, getChildJobs, constructJobsFromTemplate (v0.12.0; the
    # oracle in tests/sigs): a preempted pod fails its Job (backoffLimit 0); below maxRestarts every Job is deleted
    # and, once its pods are gone (30s grace), made again with restart-attempt 1; the next failure fails the JobSet
    js = jobset("train", replicated("workers", 3, 1, run_for="1h", backoffLimit=0), failurePolicy={"maxRestarts": 1})
    sim = run(pool(3), HIGH, js, urgent("urgent", "1m"))
    done = [(e["type"], e["seconds"]) for e in sim.events if e["object"] == "JobSet default/train"]
    assert done == [("Restarting", 60.0), ("Completed", 4290.0)]  # the third Job's pod waits for urgent's node
    made = [(e["object"], e["seconds"]) for e in sim.events if e["type"] == "Created" and e["object"].startswith("Job ")]
    assert made == [(f"Job default/train-workers-{i}", 90.0) for i in range(3)]
    attempts = {p["metadata"]["labels"][PREFIX + "restart-attempt"] for n, p in sim.pods.items()
                if n.startswith("train-") and p["status"].get("phase") == "Succeeded"}
    assert attempts == {"1"} and len(sim.pods) == 3 + 1  # the deleted pods are not in the output
    sim = run(pool(3), HIGH, js, urgent("urgent", "1m"), urgent("urgent2", "5m"))
    done = [(e["type"], e["seconds"]) for e in sim.events if e["object"] == "JobSet default/train"]
    assert done == [("Restarting", 60.0), ("Failed", 300.0)]
    failed = next(e for e in sim.events if e["object"] == "JobSet default/train" and e["type"] == "Failed")
    assert failed["message"].startswith("ReachedMaxRestarts: ")
    # RestartJobSetAndIgnoreMaxRestarts does not count toward maxRestarts (0 here): it restarts each time
    rule = {"name": "always", "action": "RestartJobSetAndIgnoreMaxRestarts"}
    js = jobset("train", replicated("workers", 3, 1, run_for="1h", backoffLimit=0),
                failurePolicy={"maxRestarts": 0, "rules": [rule]})
    sim = run(pool(3), HIGH, js, urgent("urgent", "1m"), urgent("urgent2", "5m"))
    done = [e["type"] for e in sim.events if e["object"] == "JobSet default/train"]
    assert done == ["Restarting", "Restarting", "Completed"]


def test_blocking_recreate_waits_for_every_previous_job() -> None:
    # Recreate makes each Job again once its own previous one is gone (shouldCreateJob); BlockingRecreate makes none
    # while any previous Job is left (constructJobsFromTemplate). The workers' pods take 120s to go.
    slow = replicated("workers", 2, 1, run_for="1h", backoffLimit=0)
    slow["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 120
    for strategy, driver_at in (("Recreate", 90.0), ("BlockingRecreate", 180.0)):
        js = jobset("train", replicated("driver", run_for="1h", backoffLimit=0), slow,
                    failurePolicy={"maxRestarts": 1, "restartStrategy": strategy})
        sim = run(pool(3), HIGH, js, urgent("urgent", "1m"))
        made = {e["object"]: e["seconds"] for e in sim.events if e["type"] == "Created" and e["object"].startswith(
            "Job ")}
        assert made == {"Job default/train-driver-0": driver_at, "Job default/train-workers-0": 180.0,
                        "Job default/train-workers-1": 180.0}, strategy


def test_restart_job_actions_are_refused_while_their_gate_is_off() -> None:
    # validateFailurePolicy (v0.12.0's webhook; its RestartJob gate is off by default; the oracle in tests/sigs)
    rule = {"name": "one", "action": "RestartJob"}
    with pytest.raises(InvalidInputError, match="not allowed when RestartJob feature gate is disabled"):
        build_scenario(load_text(text_of(pool(), jobset("train", failurePolicy={"maxRestarts": 1, "rules": [rule]}))))
