"""A simulation that starts from a live cluster's state (``kubedra snapshot``): bound pods stay where they are,
allocated claims stay allocated, claims already made from templates are not made again, finished pods hold nothing."""

from __future__ import annotations

from typing import Any

from kubedra.objects.load import load_text
from kubedra.sim.report import PodLine, Report, build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import simulate

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""

TEMPLATE = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
"""

# What the resourceclaim controller and kube-scheduler left behind for pod "trainer": a claim made from the
# template, allocated gpu-1 (not the first free device, so a fresh allocation would differ), reserved for the pod.
BOUND_TEMPLATE_POD = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: trainer-gpu-x7k2q
  namespace: ml
  generateName: trainer-gpu-
  annotations: {resource.kubernetes.io/pod-claim-name: gpu}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: trainer, uid: uid-trainer, controller: true}]
  finalizers: [resource.kubernetes.io/delete-protection]
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-1}]
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [node-a]}]}]
  reservedFor: [{resource: pods, name: trainer, uid: uid-trainer}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml, uid: uid-trainer}
spec:
  nodeName: node-a
  containers: [{name: c, image: i, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
status:
  phase: Pending
  resourceClaimStatuses: [{name: gpu, resourceClaimName: trainer-gpu-x7k2q}]
"""


def run(text: str) -> Report:
    return build_report(simulate(build_scenario(load_text(text))))


def objects(report: Report, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in report.objects if o["kind"] == kind}


def pod_lines(report: Report) -> dict[str, PodLine]:
    return {p.pod: p for p in report.pods}


def test_a_bound_pod_keeps_its_node_and_the_claim_made_from_its_template() -> None:
    report = run(CLUSTER + TEMPLATE + BOUND_TEMPLATE_POD)
    claims = objects(report, "ResourceClaim")
    assert list(claims) == ["trainer-gpu-x7k2q"]  # no second claim from the template
    claim = claims["trainer-gpu-x7k2q"]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["trainer"]
    pod = objects(report, "Pod")["trainer"]
    assert pod["spec"]["nodeName"] == "node-a"
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "trainer-gpu-x7k2q"}]


def test_a_new_pod_gets_the_device_the_bound_pod_does_not_hold() -> None:
    newcomer = """
---
apiVersion: v1
kind: Pod
metadata: {name: newcomer, namespace: ml}
spec:
  containers: [{name: c, image: i, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
"""
    report = run(CLUSTER + TEMPLATE + BOUND_TEMPLATE_POD + newcomer)
    lines = pod_lines(report)
    assert lines["ml/trainer"].devices == ["gpu.example.com/node-a/gpu-1"]
    assert lines["ml/newcomer"].devices == ["gpu.example.com/node-a/gpu-0"]


def test_a_bound_pod_of_lower_priority_is_preempted_for_cpu_by_a_pending_pod() -> None:
    """DefaultPreemption (kube-scheduler's default profile): the victim goes after its grace period, then the
    preemptor binds where it was nominated."""
    text = CLUSTER + """
---
apiVersion: v1
kind: Pod
metadata: {name: important, namespace: ml}
spec:
  priority: 1000
  containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: ml, uid: uid-running}
spec:
  nodeName: node-a
  containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]
status: {phase: Running}
"""
    lines = pod_lines(run(text))
    assert lines["ml/running"].phase == "Deleted"
    assert (lines["ml/important"].phase, lines["ml/important"].node) == ("Running", "node-a")


def test_a_finished_pod_holds_nothing_and_is_not_run_again() -> None:
    text = CLUSTER + """
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: ml, uid: uid-done}
spec:
  nodeName: node-a
  restartPolicy: Never
  containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: next, namespace: ml}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]
"""
    lines = pod_lines(run(text))
    assert lines["ml/done"].phase == "Succeeded"
    assert (lines["ml/next"].phase, lines["ml/next"].node) == ("Running", "node-a")


# The race a live snapshot can catch (issue 37, item 8): the controller has made pod "waiter"'s claim from the
# template, but its status update naming it has not landed yet. The real controller then finds the claim by owner
# and annotation (``findPodResourceClaim``) instead of making a second.
ORPHANED_CLAIM = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: waiter-gpu-zzghf
  namespace: ml
  generateName: waiter-gpu-
  annotations: {resource.kubernetes.io/pod-claim-name: gpu}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: waiter, uid: uid-waiter, controller: true}]
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
---
apiVersion: v1
kind: Pod
metadata: {name: waiter, namespace: ml, uid: uid-waiter}
spec:
  containers: [{name: c, image: i, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
status: {phase: Pending}
"""


def test_a_claim_made_but_not_yet_in_the_pods_status_is_adopted_not_made_again() -> None:
    """Failed before the fix: a second claim (``waiter-gpu-<random>``) was made from the template, two for one pod."""
    report = run(CLUSTER + TEMPLATE + ORPHANED_CLAIM)
    claims = objects(report, "ResourceClaim")
    assert list(claims) == ["waiter-gpu-zzghf"]
    assert claims["waiter-gpu-zzghf"]["status"]["reservedFor"][0]["name"] == "waiter"
    pod = objects(report, "Pod")["waiter"]
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "waiter-gpu-zzghf"}]
    assert pod_lines(report)["ml/waiter"].devices == ["gpu.example.com/node-a/gpu-0"]


def test_only_a_claim_the_pod_controls_and_annotated_for_its_pod_claim_is_adopted() -> None:
    """``findPodResourceClaim`` skips a claim without the annotation (not a generated one), one made for another pod
    claim, and one controlled by another pod (here: another UID under the same name, a pod recreated)."""
    for change in (
        ("annotations: {resource.kubernetes.io/pod-claim-name: gpu}", "annotations: {}"),
        ("pod-claim-name: gpu}", "pod-claim-name: other}"),
        ("name: waiter, uid: uid-waiter, controller: true", "name: waiter, uid: uid-old-waiter, controller: true"),
        ("uid: uid-waiter, controller: true", "uid: uid-waiter, controller: false"),
    ):
        report = run(CLUSTER + TEMPLATE + ORPHANED_CLAIM.replace(*change))
        made = [name for name in objects(report, "ResourceClaim") if name != "waiter-gpu-zzghf"]
        assert len(made) == 1 and made[0].startswith("waiter-gpu-"), change
        pod = objects(report, "Pod")["waiter"]
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": made[0]}], change
