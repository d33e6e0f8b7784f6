"""Gang scheduling with Workload and PodGroup objects (GenericWorkload), as kube-scheduler v1.37.2's pod-group cycle
runs it: read from the final objects, the events and the report, as a user of ``kubedra simulate`` reads them."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.scenarios import Run, claim_template, job, nodepool, pod, text_of

from kubedra.allocator import Features
from kubedra.objects.load import load_text
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

Doc = dict[str, Any]
GANGS = Features.for_release().with_gates({"GenericWorkload": True})


def run(*documents: Doc, features: Features = GANGS) -> Run:
    scenario = build_scenario(load_text(text_of(*documents)), generic_workload=features.generic_workload,
                              workload_claims=features.workload_resource_claims)
    result = simulate(scenario, Options(features=features))
    run_ = Run(result, build_report(result).as_document())
    run_.notes = scenario.notes  # type: ignore[attr-defined]
    return run_


def pod_group(name: str, min_count: int | None, version: str = "v1beta1", **spec: Any) -> Doc:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": policy, **spec}}


def member(name: str, group: str, **spec: Any) -> Doc:
    return pod(name, template="one-gpu", schedulingGroup={"podGroupName": group}, **spec)


def gang(size: int, group: str = "train", **spec: Any) -> list[Doc]:
    return [member(f"w{i}", group, **spec) for i in range(size)]


def test_a_gang_that_fits_binds_whole_and_its_podgroup_is_initially_scheduled() -> None:
    sim = run(nodepool("n", gpus=4), claim_template("one-gpu"), pod_group("train", 4), *gang(4))
    assert all(sim.phase(f"w{i}") == "Running" for i in range(4))
    status = sim.result.pod_groups["default/train"].status
    assert [(c.type, c.status, c.reason) for c in status.conditions] == [
        ("PodGroupInitiallyScheduled", "True", "Scheduled")
    ]


def test_a_gang_short_of_one_device_binds_nothing_and_each_member_says_why() -> None:
    sim = run(nodepool("n", gpus=3), claim_template("one-gpu"), pod_group("train", 4), *gang(4))
    assert [sim.phase(f"w{i}") for i in range(4)] == ["Pending"] * 4
    assert not any(e["type"] == "Allocated" for e in sim.events)  # every assumption reverted, no claim written
    # The texts kube-scheduler v1.37.2 wrote for these objects (its workload-aware preemption finds no victims).
    condition_message = ("minCount (4) cannot be satisfied: 3 scheduled, 0 remaining, pod group preemption: "
                         "No preemption victims found for incoming preemptor")
    group_message = f"pod group is unschedulable, {condition_message}"
    assert [sim.pending_reason(f"w{i}") for i in range(3)] == [group_message] * 3
    assert sim.pending_reason("w3") == "0/1 nodes are available: 1 cannot allocate all claims."
    condition = sim.result.pod_groups["default/train"].status.conditions[0]
    assert (condition.status, condition.reason, condition.message) == ("False", "Unschedulable", condition_message)


def test_without_the_gate_the_same_pods_are_scheduled_one_by_one_with_a_note() -> None:
    off = Features.for_release()
    sim = run(nodepool("n", gpus=3), claim_template("one-gpu"), pod_group("train", 4), *gang(4), features=off)
    assert [sim.phase(f"w{i}") for i in range(4)] == ["Running"] * 3 + ["Pending"]
    assert any("GenericWorkload=true" in note for note in sim.notes)  # type: ignore[attr-defined]


def test_members_wait_silently_until_min_count_of_them_exist() -> None:
    sim = run(nodepool("n", gpus=8), claim_template("one-gpu"), pod_group("train", 4), *gang(3))
    assert [sim.phase(f"w{i}") for i in range(3)] == ["Pending"] * 3
    assert [e for e in sim.events if e["type"] == "Pending"] == []  # no event, no condition
    assert sim.result.pod_groups["default/train"].status.conditions == []
    assert sim.pending_reason("w0") == "waiting for minCount pods from a gang to appear in scheduling queue"


def test_members_of_a_missing_podgroup_wait_for_it() -> None:
    sim = run(nodepool("n", gpus=8), claim_template("one-gpu"), *gang(2, group="absent"))
    assert sim.phase("w0") == "Pending"
    assert sim.pending_reason("w0") == 'waiting for pod\'s pod group "absent" to appear in scheduling queue'


def test_a_late_member_completes_the_gang_which_then_starts_whole() -> None:
    members = [*gang(3), member("w3", "train")]
    members[3]["metadata"]["annotations"] = {"kubedra.io/start-after": "10m"}
    sim = run(nodepool("n", gpus=4), claim_template("one-gpu"), pod_group("train", 4), *members)
    assert set(sim.times("Pod", "Scheduled").values()) == {600.0}


def test_a_failed_gang_is_retried_and_starts_when_devices_free_up() -> None:
    """The gang, failing at 0 s, is retried at the end of each back-off (2, 5, 10, 19, 36 s, then every 21 s: 20 s
    for 4 members, to the second); the first retry after the blocker ends at 3600 s is at 57 + 169 * 21 s."""
    blocker = pod("blocker", template="one-gpu", run_for="1h", restartPolicy="Never")
    sim = run(nodepool("n", gpus=4), claim_template("one-gpu"), blocker, pod_group("train", 4), *gang(4))
    assert [sim.phase(f"w{i}") for i in range(4)] == ["Running"] * 4
    assert {sim.times("Pod", "Scheduled")[f"w{i}"] for i in range(4)} == {3606.0}


def test_a_basic_group_binds_whatever_fits() -> None:
    sim = run(nodepool("n", gpus=3), claim_template("one-gpu"), pod_group("batch", None), *gang(4, group="batch"))
    assert sorted(sim.phase(f"w{i}") for i in range(4)) == ["Pending"] + ["Running"] * 3


def test_a_member_with_another_priority_is_a_scheduler_error_for_the_whole_group() -> None:
    classes = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 100000}
    members = gang(2)
    members[1]["spec"]["priorityClassName"] = "high"
    sim = run(nodepool("n", gpus=4), claim_template("one-gpu"), classes, pod_group("train", 2), *members)
    condition = sim.result.pod_groups["default/train"].status.conditions[0]
    assert (condition.reason, condition.message) == (
        "SchedulerError",
        "all pods in a single pod group should have the same priority as the pod group's priority, got 100000 and 0",
    )
    assert [sim.phase("w0"), sim.phase("w1")] == ["Pending", "Pending"]


def test_a_v1alpha2_podgroup_is_converted_with_a_warning() -> None:
    old = pod_group("train", 2, version="v1alpha2",
                    podGroupTemplateRef={"workload": {"workloadName": "w", "podGroupTemplateName": "t"}})
    sim = run(nodepool("n", gpus=2), claim_template("one-gpu"), old, *gang(2))
    assert [sim.phase("w0"), sim.phase("w1")] == ["Running", "Running"]
    ref = sim.result.pod_groups["default/train"].spec.workload_ref
    assert ref is not None and (ref.workload_name, ref.template_name) == ("w", "t")
    assert any("v1alpha2 PodGroup" in note for note in sim.notes)  # type: ignore[attr-defined]


def workload(name: str, template: str, min_count: int, job_name: str | None = None) -> Doc:
    spec: Doc = {"podGroupTemplates": [{"name": template, "schedulingPolicy": {"gang": {"minCount": min_count}}}]}
    if job_name:
        spec["controllerRef"] = {"apiGroup": "batch", "kind": "Job", "name": job_name}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": name}, "spec": spec}


def test_a_workload_controlling_a_job_makes_its_podgroup_and_the_jobs_pods_join_it() -> None:
    sim = run(nodepool("n", gpus=3), claim_template("one-gpu"), workload("trainer", "workers", 4, job_name="train"),
              job("train", parallelism=4, completions=4, template="one-gpu"))
    assert "default/trainer-workers" in sim.result.pod_groups
    assert {p["status"]["phase"] for p in sim.pods.values()} == {"Pending"}  # 3 GPUs for a gang of 4
    assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "trainer-workers"} for p in sim.pods.values())


def test_a_135_workload_ref_is_read_as_the_templates_group_with_a_warning() -> None:
    members = [pod(f"w{i}", template="one-gpu", workloadRef={"name": "trainer", "podGroup": "workers"})
               for i in range(2)]
    sim = run(nodepool("n", gpus=2), claim_template("one-gpu"), workload("trainer", "workers", 2), *members)
    assert [sim.phase("w0"), sim.phase("w1")] == ["Running", "Running"]
    assert any("spec.workloadRef" in note for note in sim.notes)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (pod_group("g", 2, schedulingPolicy={"gang": {"minCount": "two"}}), "spec.schedulingPolicy.gang.minCount"),
        (pod_group("g", 2, schedulingPolicyy={}), "spec.schedulingPolicyy"),
        ({**pod_group("g", 2), "apiVersion": "scheduling.k8s.io/v9"}, "apiVersion"),
    ],
)
def test_a_bad_scheduling_object_is_an_error_naming_its_field(doc: Doc, field: str) -> None:
    from kubedra.objects.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(text_of(doc)))
    assert any(p.location.field == field for p in caught.value.problems), caught.value.problems


CLAIMS = GANGS.with_gates({"DRAWorkloadResourceClaims": True})


def shared_member(name: str) -> Doc:
    return pod(name, template="one-gpu", requests={"cpu": "1"}, schedulingGroup={"podGroupName": "train"})


def test_a_topology_constraint_is_dropped_with_a_note() -> None:
    """TopologyAwareWorkloadScheduling (alpha, off in 1.37) is off: the API server drops
    spec.schedulingConstraints (podgroup/strategy.go, dropDisabledFields), so the gang is placed without it, as
    kubedra places it; before, nothing said so."""
    group = pod_group("train", 2, schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]})
    sim = run(nodepool("n", count=2, gpus=1), claim_template("one-gpu"), group,
              *[shared_member(f"w{i}") for i in range(2)])
    notes = [n for n in sim.notes if "schedulingConstraints" in n]  # type: ignore[attr-defined]
    assert notes == ["PodGroup default/train: spec.schedulingConstraints.topology ignored: the "
                     "TopologyAwareWorkloadScheduling feature gate (alpha since Kubernetes 1.36, off by default) is "
                     "off and the API server drops the field; kubedra does not model the gate's placements yet"]


def test_podgroup_claims_with_their_gate_off_are_ignored_with_a_note() -> None:
    """Failed before the fix: the claims were ignored without a word (the gate is off by default in 1.37)."""
    group = pod_group("train", 3, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    sim = run(nodepool("n", count=3, gpus=1), claim_template("one-gpu"), group,
              *[shared_member(f"w{i}") for i in range(3)])
    notes = [n for n in sim.notes if "DRAWorkloadResourceClaims" in n]  # type: ignore[attr-defined]
    assert notes == ["PodGroup default/train: spec.resourceClaims ignored: the DRAWorkloadResourceClaims feature gate"
                     " is off (off by default in Kubernetes 1.37; the API server drops the field); turn it on with"
                     " --feature-gates DRAWorkloadResourceClaims=true"]
    assert not any(c["metadata"]["ownerReferences"][0]["kind"] == "PodGroup" for c in sim.claims.values())
    with_gate = run(nodepool("n", count=3, gpus=1), claim_template("one-gpu"), group,
                    *[shared_member(f"w{i}") for i in range(3)], features=CLAIMS)
    assert not [n for n in with_gate.notes if "DRAWorkloadResourceClaims" in n]  # type: ignore[attr-defined]


def test_a_podgroup_claim_is_one_claim_reserved_for_the_group_and_its_members_land_with_its_device() -> None:
    group = pod_group("train", 3, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    sim = run(nodepool("n", count=3, gpus=1), claim_template("one-gpu"), group,
              *[shared_member(f"w{i}") for i in range(3)], features=CLAIMS)
    names = {p["status"]["resourceClaimStatuses"][0]["resourceClaimName"] for p in sim.pods.values()}
    assert len(names) == 1  # one claim for the group, not one per pod
    name = names.pop()
    assert name.startswith("train-gpu-")
    claim = sim.claims[name]
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"
    assert claim["status"]["reservedFor"] == [
        {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "train",
         "uid": sim.result.pod_groups["default/train"].metadata.uid}
    ]
    assert len({sim.node_of(f"w{i}") for i in range(3)}) == 1  # where the claim's device is
    statuses = sim.result.pod_groups["default/train"].status.resource_claim_statuses
    assert [(s.name, s.resource_claim_name) for s in statuses] == [("gpu", name)]


def test_without_the_claims_gate_each_member_gets_its_own_claim() -> None:
    group = pod_group("train", 3, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    sim = run(nodepool("n", count=3, gpus=1), claim_template("one-gpu"), group,
              *[shared_member(f"w{i}") for i in range(3)])
    names = {p["status"]["resourceClaimStatuses"][0]["resourceClaimName"] for p in sim.pods.values()}
    assert len(names) == 3
    assert len({sim.node_of(f"w{i}") for i in range(3)}) == 3


def test_a_group_claim_is_deallocated_once_every_member_is_done() -> None:
    group = pod_group("train", 2, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    members = [pod(f"w{i}", template="one-gpu", schedulingGroup={"podGroupName": "train"}, restartPolicy="Never",
                   run_for=f"{i + 1}h") for i in range(2)]
    sim = run(nodepool("n", gpus=1), claim_template("one-gpu"), group, *members, features=CLAIMS)
    deallocated = [e for e in sim.events if e["type"] == "Deallocated"]
    assert [e["seconds"] for e in deallocated] == [7200.0]


def test_a_gang_preempts_as_a_group_and_reprieves_what_it_does_not_need() -> None:
    """Workload-aware preemption, as kube-scheduler v1.37.2 did for these objects
    (``tests/kube/scenarios-workloads/gang-preemption``)."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    group = pod_group("train", 2, priorityClassName="high")
    low = [pod("low-0", requests={"cpu": "2"}, nodeName="n-0"), pod("low-1", requests={"cpu": "2"}, nodeName="n-1"),
           pod("low-2", requests={"cpu": "1"}, nodeName="n-1")]
    members = [pod(f"m{i}", requests={"cpu": "3"}, priorityClassName="high", schedulingGroup={"podGroupName": "train"},
                   start_after="1s") for i in range(2)]
    sim = run(nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}), high, group, *low,
              *members)
    preempted = sorted(e["object"] for e in sim.events if e["type"] == "Preempted")
    assert preempted == ["Pod default/low-0", "Pod default/low-1"]
    assert sim.phase("low-2") == "Running"
    assert {sim.node_of("m0"), sim.node_of("m1")} == {"n-0", "n-1"}
    # the group's first retry once the victims' grace is over (31 s): it failed at 1 s and retried at 3, 6, 11, 20 s,
    # then backs off 16 s (under its cap of 10 * sqrt(2) s), to 35 s
    assert {sim.times("Pod", "Scheduled")[m] for m in ("m0", "m1")} == {35.0}
    victim_events = [e["message"] for e in sim.events if e["type"] == "Preempted"]
    uid = sim.result.pod_groups["default/train"].metadata.uid
    assert victim_events == [f"Preempted by podgroup {uid} on node cluster"] * 2


def test_a_gang_finds_no_victims_among_pods_of_its_own_priority() -> None:
    blockers = [pod(f"b{i}", requests={"cpu": "4"}, nodeName=f"n-{i}") for i in range(2)]
    sim = run(nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}), pod_group("train", 2),
              *blockers, *[pod(f"m{i}", requests={"cpu": "3"}, schedulingGroup={"podGroupName": "train"})
                           for i in range(2)])
    assert not any(e["type"] == "Preempted" for e in sim.events)
    condition = sim.result.pod_groups["default/train"].status.conditions[0]
    assert condition.message == ("minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, pod group preemption: "
                                 "No preemption victims found for incoming preemptor")


HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
ALL = {"disruptionMode": {"all": {}}}


def cpu_pod(name: str, cpu: str, node: str | None = None, group: str | None = None, **spec: Any) -> Doc:
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return pod(name, requests={"cpu": cpu}, **spec)


def preempted(sim: Run) -> list[str]:
    return sorted(e["object"].removeprefix("Pod default/") for e in sim.events if e["type"] == "Preempted")


def test_a_pod_preempting_a_member_of_a_disruption_mode_all_group_takes_the_whole_group_so_it_goes_elsewhere() -> None:
    """As kube-scheduler v1.37.2 did (``tests/kube/scenarios-workloads/preemption-disruption-all``): on n-0 the one
    member there costs all three of batch's pods, so n-1's two plain pods are the cheaper victims."""
    nodes = nodepool("n", count=3, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"})
    victims = [cpu_pod("batch-0", "2", "n-0", "batch"), cpu_pod("solo-a", "2", "n-1"), cpu_pod("solo-b", "2", "n-1"),
               cpu_pod("batch-1", "2", "n-2", "batch"), cpu_pod("batch-2", "2", "n-2", "batch")]
    hi = cpu_pod("hi", "3", priorityClassName="high", start_after="1s")
    sim = run(nodes, HIGH, pod_group("batch", 3, **ALL), *victims, hi)
    assert preempted(sim) == ["solo-a", "solo-b"]
    assert sim.node_of("hi") == "n-1"
    single = run(nodes, HIGH, pod_group("batch", 3), *victims, hi)  # disruptionMode single: pod by pod
    assert preempted(single) == ["batch-0"]
    assert single.node_of("hi") == "n-0"


def test_a_gang_preempting_a_disruption_mode_all_group_evicts_all_of_it_or_none() -> None:
    """As kube-scheduler v1.37.2 did (``tests/kube/scenarios-workloads/gang-preemption-disruption-all``)."""
    nodes = nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"})
    victims = [cpu_pod("batch-0", "2", "n-0", "batch"), cpu_pod("batch-1", "1", "n-1", "batch"),
               cpu_pod("solo", "2", "n-1")]
    members = [cpu_pod(f"m{i}", "3", group="train", priorityClassName="high", start_after="1s") for i in range(2)]
    train = pod_group("train", 2, priorityClassName="high")
    sim = run(nodes, HIGH, pod_group("batch", 2, **ALL), train, *victims, *members)
    assert preempted(sim) == ["batch-0", "batch-1", "solo"]
    single = run(nodes, HIGH, pod_group("batch", 2), train, *victims, *members)
    assert preempted(single) == ["batch-0", "solo"]  # batch-1 reprieved on its own
    assert {sim.node_of("m0"), sim.node_of("m1")} == {"n-0", "n-1"}


def test_of_equal_priority_a_group_member_is_more_important_than_a_plain_pod() -> None:
    """``MoreImportantVictim``: group (either mode) over pod before the start time, so the plain pod started earlier
    is the one preempted."""
    nodes = nodepool("n", gpus=None, allocatable={"cpu": "4", "memory": "64Gi"})
    sim = run(nodes, HIGH, pod_group("batch", 1), cpu_pod("plain", "2", "n-0"),
              cpu_pod("member", "2", "n-0", "batch", start_after="1s"),
              cpu_pod("hi", "2", priorityClassName="high", start_after="2s"))
    assert preempted(sim) == ["plain"]
    without = run(nodes, HIGH, pod_group("batch", 1), cpu_pod("plain", "2", "n-0"),
                  cpu_pod("member", "2", "n-0", "batch", start_after="1s"),
                  cpu_pod("hi", "2", priorityClassName="high", start_after="2s"), features=Features.for_release())
    assert preempted(without) == ["member"]  # the gate off: the one started last goes


def test_a_gang_counts_a_victim_already_terminating_and_deletes_it_no_second_time() -> None:
    """v1.37.2's ``selectVictimsOnDomain`` takes every lower-priority unit as a potential victim (``isPreemptionAllowed``
    reads priorities only), one another preemptor's deletion left terminating too; the executor skips a victim
    with a ``deletionTimestamp``. Here ``mid`` preempted ``low-0``; the gang then needs its room and ``low-1``'s."""
    mid = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "mid"}, "value": 500}
    sim = run(nodepool("n", count=2, gpus=None, allocatable={"cpu": "4", "memory": "64Gi"}), HIGH, mid,
              pod_group("train", 2, priorityClassName="high"),
              cpu_pod("low-0", "3", node="n-0"), cpu_pod("low-1", "3", node="n-1"),
              cpu_pod("mid", "3", priorityClassName="mid", start_after="1s"),
              *[cpu_pod(f"m{i}", "3", group="train", priorityClassName="high", start_after="2s") for i in range(2)])
    events = [(e["object"].removeprefix("Pod default/"), e["message"]) for e in sim.events if e["type"] == "Preempted"]
    uid = sim.result.pod_groups["default/train"].metadata.uid
    assert events[:2] == [("low-0", "Preempted by pod default/mid on node n-0"),
                          ("low-1", f"Preempted by podgroup {uid} on node cluster")]
    assert [name for name, _ in events].count("low-0") == 1
    nominated = [e["message"] for e in sim.events if e["type"] == "Nominated" and e["object"] == "PodGroup default/train"]
    assert nominated[0] == "found a placement for podgroup, preempting 2 victims"  # low-0 counted, not deleted again
    assert {sim.node_of("m0"), sim.node_of("m1")} == {"n-0", "n-1"}
