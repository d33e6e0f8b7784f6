"""Workload expansion: pod names, labels and owners as the controllers set them, timing annotations, Job runs,
determinism under a seed, and every input error with its message."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from kubedra.objects.builder import RawObject
from kubedra.objects.errors import InvalidInputError, Location
from kubedra.objects.load import load_text
from kubedra.objects.model import Container, ObjectMeta, Pod, PodSpec
from kubedra.sim.manifests import LabelSelector, PodTemplate, selector_matches, template_hash
from kubedra.sim.workloads import expand_workloads, is_workload

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


@dataclass
class Raw:
    location: Location
    data: dict[str, Any]


def template(restart: str | None = None, **annotations: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "cuda",
                "resources": {"limits": {"nvidia.com/gpu": "1"}, "claims": [{"name": "gpu"}]},
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
    }
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": "web"}, "annotations": annotations}, "spec": spec}


def apps(
    kind: str, name: str = "web", replicas: int | None = 3, namespace: str | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": template()}
    if replicas is not None:
        spec["replicas"] = replicas
    spec.update(extra)
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def job(name: str = "train", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": template("Never")}
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def expand(*docs: dict[str, Any], seed: int = 0, pods: tuple[Pod, ...] = ()) -> Any:
    return expand_workloads([Raw(Location("w.yaml", i), d) for i, d in enumerate(docs)], pods, seed=seed)


def problems(*docs: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidInputError) as err:
        expand(*docs)
    return [str(p) for p in err.value.problems]


# --------------------------------------------------------------------------------------------------


def test_deployment_pods_are_named_through_their_replicaset() -> None:
    w = expand(apps("Deployment"))
    assert len(w.arrivals) == 3
    assert w.jobs == []
    hash_ = template_hash(_template_struct())
    for a in w.arrivals:
        pod = a.pod
        assert re.fullmatch(rf"web-{hash_}-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.namespace == "default"
        assert pod.metadata.labels == {"app": "web", "pod-template-hash": hash_}
        owner = pod.metadata.owner_references[0]
        assert (owner.api_version, owner.kind, owner.name, owner.controller, owner.block_owner_deletion) == (
            "apps/v1",
            "ReplicaSet",
            f"web-{hash_}",
            True,
            True,
        )
        assert a.owner == "Deployment/default/web"
        assert (a.arrive_at, a.run_for) == (0.0, None)
        assert pod.spec.restart_policy == "Always"
        assert pod.status.phase == "Pending"
    assert len({a.pod.metadata.name for a in w.arrivals}) == 3
    assert len({a.pod.metadata.uid for a in w.arrivals}) == 3


def _template_struct() -> PodTemplate:
    return msgspec.convert(template(), PodTemplate)


def test_template_hash_looks_like_kubernetes_and_follows_the_template() -> None:
    first = template_hash(_template_struct())
    assert re.fullmatch(r"[bcdf456789]{6,10}", first)
    changed = msgspec.convert(template(restart="Always"), PodTemplate)
    assert template_hash(changed) != first


def test_claims_and_extended_resources_are_kept_as_written() -> None:
    pod = expand(apps("Deployment", replicas=1)).arrivals[0].pod
    assert [(c.name, c.resource_claim_template_name) for c in pod.spec.resource_claims] == [("gpu", "one-gpu")]
    container = pod.spec.containers[0]
    assert container.resources.limits == {"nvidia.com/gpu": "1"}
    assert [c.name for c in container.resources.claims] == ["gpu"]


def test_replicaset_pods() -> None:
    w = expand(apps("ReplicaSet", name="cache", replicas=2, namespace="ml"))
    for a in w.arrivals:
        assert re.fullmatch(rf"cache-{SUFFIX}", a.pod.metadata.name)
        assert a.pod.metadata.namespace == "ml"
        assert a.pod.metadata.labels == {"app": "web"}
        assert a.pod.metadata.owner_references[0].name == "cache"
        assert a.owner == "ReplicaSet/ml/cache"


def test_statefulset_pods_have_ordinals() -> None:
    w = expand(apps("StatefulSet", name="db", replicas=3, serviceName="db"))
    assert [a.pod.metadata.name for a in w.arrivals] == ["db-0", "db-1", "db-2"]
    labels = w.arrivals[1].pod.metadata.labels
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert re.fullmatch(r"db-[bcdf456789]+", labels["controller-revision-hash"])
    assert w.arrivals[0].pod.metadata.owner_references[0].kind == "StatefulSet"
    started = expand(apps("StatefulSet", name="db", replicas=2, ordinals={"start": 5}))
    assert [a.pod.metadata.name for a in started.arrivals] == ["db-5", "db-6"]


def test_replicas_default_to_one_and_zero_is_allowed() -> None:
    assert len(expand(apps("Deployment", replicas=None)).arrivals) == 1
    assert expand(apps("Deployment", replicas=0)).arrivals == []


def test_timing_annotations_template_wins_over_workload() -> None:
    doc = apps("Deployment", replicas=1)
    doc["metadata"]["annotations"] = {"kubedra.io/start-after": "10m", "kubedra.io/run-for": "1h"}
    doc["spec"]["template"]["metadata"]["annotations"] = {"kubedra.io/run-for": "1h30m"}
    a = expand(doc).arrivals[0]
    assert (a.arrive_at, a.run_for) == (600.0, 5400.0)
    assert a.pod.metadata.annotations == {"kubedra.io/run-for": "1h30m"}


def test_arrivals_sorted_by_time_then_document_order() -> None:
    late = apps("Deployment", name="late", replicas=1)
    late["metadata"]["annotations"] = {"kubedra.io/start-after": "5m"}
    early = apps("StatefulSet", name="early", replicas=2)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "annotations": {"kubedra.io/start-after": "90s"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    w = expand(late, early, pod)
    assert [(a.pod.metadata.name.split("-")[0], a.arrive_at) for a in w.arrivals] == [
        ("early", 0.0),
        ("early", 0.0),
        ("solo", 90.0),
        ("late", 300.0),
    ]


def test_names_are_deterministic_under_a_seed_and_stable_per_owner() -> None:
    a = [x.pod.metadata.name for x in expand(apps("Deployment"), seed=7).arrivals]
    assert a == [x.pod.metadata.name for x in expand(apps("Deployment"), seed=7).arrivals]
    assert a != [x.pod.metadata.name for x in expand(apps("Deployment"), seed=8).arrivals]
    with_other = expand(apps("ReplicaSet", name="other"), apps("Deployment"), seed=7).arrivals
    assert [x.pod.metadata.name for x in with_other if x.owner.startswith("Deployment")] == a


def test_job_run_counts_and_names() -> None:
    w = expand(job(parallelism=2, completions=5))
    assert w.arrivals == []
    (run,) = w.jobs
    assert (run.name, run.namespace, run.owner, run.parallelism, run.completions, run.suspended) == (
        "train",
        "default",
        "Job/default/train",
        2,
        5,
        False,
    )
    assert len(run.pods) == 5
    for pod in run.pods:
        assert re.fullmatch(rf"train-{SUFFIX}", pod.metadata.name)
        assert pod.spec.restart_policy == "Never"
        labels = pod.metadata.labels
        uid = pod.metadata.owner_references[0].uid
        assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "train"
        assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"] == uid
        assert pod.metadata.owner_references[0].kind == "Job"


def test_job_defaults_work_queue_and_suspend() -> None:
    (single,) = expand(job()).jobs
    assert (single.parallelism, single.completions, len(single.pods)) == (1, 1, 1)
    (queue,) = expand(job(parallelism=3)).jobs
    assert (queue.parallelism, queue.completions, len(queue.pods)) == (3, None, 3)
    (held,) = expand(job(suspend=True, completions=2)).jobs
    assert held.suspended
    assert len(held.pods) == 2


def test_indexed_job() -> None:
    (run,) = expand(job(completions=3, parallelism=3, completionMode="Indexed")).jobs
    for i, pod in enumerate(run.pods):
        assert re.fullmatch(rf"train-{i}-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.annotations["batch.kubernetes.io/job-completion-index"] == str(i)
        assert pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == str(i)


def test_job_timing() -> None:
    doc = job(completions=2)
    doc["spec"]["template"]["metadata"]["annotations"] = {"kubedra.io/start-after": "1m", "kubedra.io/run-for": "250ms"}
    (run,) = expand(doc).jobs
    assert (run.arrive_at, run.run_for) == (60.0, 0.25)


def test_bare_pods_raw_and_modelled() -> None:
    modelled = Pod(metadata=ObjectMeta(name="m", namespace="ml"), spec=PodSpec(containers=[Container(name="c")]))
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "gen-"},
        "spec": {"containers": [{"name": "c"}]},
    }
    w = expand(raw, pods=(modelled,))
    names = [a.pod.metadata.name for a in w.arrivals]
    assert names[0] == "m"
    assert re.fullmatch(rf"gen-{SUFFIX}", names[1])
    assert w.arrivals[0].owner == "Pod/ml/m"
    assert w.arrivals[1].pod.metadata.namespace == "default"
    assert modelled.metadata.uid == ""  # the input is not modified


def test_is_workload() -> None:
    assert is_workload(apps("Deployment"))
    assert is_workload(job())
    assert not is_workload({"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool"})


def test_selector_matches() -> None:
    sel = LabelSelector(match_labels={"app": "web"})
    assert selector_matches(sel, {"app": "web", "x": "y"})
    assert not selector_matches(sel, {"app": "db"})
    exprs = msgspec.convert(
        {
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "old", "operator": "DoesNotExist"},
            ]
        },
        LabelSelector,
    )
    assert selector_matches(exprs, {"tier": "a"})
    assert not selector_matches(exprs, {"tier": "a", "old": "1"})
    assert not selector_matches(exprs, {"tier": "c"})


# --------------------------------------------------------------------------------------------------
# Errors

D = "w.yaml[0]: Deployment/web: "
J = "w.yaml[0]: Job/train: "


def deployment_with(**spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(apps("Deployment"))
    doc["spec"].update(spec)
    return doc


def bad_annotation(key: str, value: str, on_template: bool) -> dict[str, Any]:
    doc = apps("Deployment")
    target = doc["spec"]["template"]["metadata"] if on_template else doc["metadata"]
    target["annotations"] = {key: value}
    return doc


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (deployment_with(replica=2), [D + 'spec.replica: unknown field "spec.replica"']),
        (deployment_with(replicas="2"), [D + 'spec.replicas: Invalid value: "2": must be an integer, not string']),
        (deployment_with(replicas=-1), [D + "spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
        (deployment_with(selector=None), [D + "spec.selector: Required value"]),
        (deployment_with(selector={}), [D + "spec.selector: Invalid value: empty selector is invalid for deployment"]),
        (
            deployment_with(selector={"matchLabels": {"app": "db"}}),
            [D + "spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`"],
        ),
        (
            deployment_with(template={"metadata": {"labels": {"app": "web"}}, "spec": {}}),
            [D + "spec.template.spec.containers: Required value"],
        ),
        (
            deployment_with(template=template("Never")),
            [D + 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
        ),
        (
            {**apps("Deployment"), "apiVersion": "extensions/v1beta1"},
            [D + "apiVersion: unsupported apiVersion 'extensions/v1beta1' for Deployment; use 'apps/v1'"],
        ),
        (
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
            [
                "w.yaml[0]: Service/s: kind: 'Service' is not a workload kubedra expands "
                "(Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, JobSet, LeaderWorkerSet, RayCluster, RayJob, PyTorchJob, TrainJob, Pod)"
            ],
        ),
        ({**apps("Deployment"), "metadata": {}}, ["w.yaml[0]: Deployment: metadata.name: Required value"]),
        (
            bad_annotation("kubedra.io/run-for", "2 hours", True),
            [
                D + 'spec.template.metadata.annotations[kubedra.io/run-for]: time: unknown unit " hours" in duration '
                '"2 hours"; write the duration without spaces, e.g. 1h30m'
            ],
        ),
        (
            bad_annotation("kubedra.io/start-after", "PT10M", False),
            [
                D + 'metadata.annotations[kubedra.io/start-after]: time: invalid duration "PT10M"; '
                "ISO 8601 durations are not accepted, write Go durations such as 10m, 1h30m or 90s"
            ],
        ),
        (
            bad_annotation("kubedra.io/start-after", "-5m", False),
            [D + "metadata.annotations[kubedra.io/start-after]: must not be negative, got '-5m'"],
        ),
        (
            {**job(), "spec": {"template": template()}},
            [J + 'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'],
        ),
        (
            {**job(), "spec": {"template": template("Always")}},
            [
                J + 'spec.template.spec.restartPolicy: Unsupported value: "Always": '
                'supported values: "OnFailure", "Never"'
            ],
        ),
        (
            job(completionMode="Indexed", parallelism=2),
            [J + "spec.completions: Required value: when completion mode is Indexed"],
        ),
        (
            job(completionMode="Sometimes"),
            [J + 'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'],
        ),
        (job(parallelism=-1), [J + "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]),
        (
            job(backoffLimit=3, ttlSecondsAfterFinished=60, podFailurePolicy={"rules": []}, typo=1),
            [J + 'spec.typo: unknown field "spec.typo"'],
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": [{"name": "c"}]}},
            ["w.yaml[0]: Pod: metadata.name: Required value: name or generateName is required"],
        ),
    ],
)
def test_errors(doc: dict[str, Any], expected: list[str]) -> None:
    assert problems(doc) == expected


def test_duplicate_pod_names_and_every_problem_reported() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(InvalidInputError) as err:
        expand(apps("StatefulSet", name="db", replicas=1), pod, deployment_with(replicas=-3))
    assert [str(p) for p in err.value.problems] == [
        "w.yaml[1]: Pod/db-0: metadata.name: pod default/db-0 already exists, defined at w.yaml[0]: StatefulSet/db",
        "w.yaml[2]: Deployment/web: spec.replicas: Invalid value: -3: must be greater than or equal to 0",
    ]


def test_through_the_loader() -> None:
    loaded = load_text(
        """
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml, annotations: {kubedra.io/run-for: 2h}}
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo, annotations: {kubedra.io/start-after: 1x}}
spec: {containers: [{name: c}]}
""",
        source="w.yaml",
    )
    raws = [r for r in loaded.raw if is_workload(r.data)]
    assert all(isinstance(r, RawObject) for r in raws)
    with pytest.raises(InvalidInputError) as err:
        expand_workloads(raws, loaded.of_kind(Pod), locate=loaded.location_of)
    assert [str(p) for p in err.value.problems] == [
        'w.yaml[1]: Pod/solo: metadata.annotations[kubedra.io/start-after]: time: unknown unit "x" in duration "1x"'
    ]
    (run,) = expand_workloads(raws).jobs
    assert (run.namespace, run.run_for, run.completions, len(run.pods)) == ("ml", 7200.0, 4, 4)


# --------------------------------------------------------------------------------------------------
# Read as Kubernetes reads them: numbers as quantities, Go integer ranges, API names, every template checked


def test_numbers_as_quantities_in_every_kind() -> None:
    docs = [apps("Deployment"), apps("ReplicaSet", "rs"), apps("StatefulSet", "db"), job()]
    for doc in docs:
        doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": 1, "cpu": 0.5}
    w = expand(*docs)
    pods = [a.pod for a in w.arrivals] + [p for j in w.jobs for p in j.pods]
    assert {pod.metadata.owner_references[0].kind for pod in pods} == {"ReplicaSet", "StatefulSet", "Job"}
    assert all(p.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1", "cpu": "0.5"} for p in pods)


def test_template_quantities_and_names_are_validated() -> None:
    doc = apps("Deployment", name="Web")
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": -1}
    found = problems(doc)
    assert found[0].startswith('w.yaml[0]: Deployment/Web: metadata.name: Invalid value: "Web": a lowercase RFC 1123')
    assert found[1:] == [
        "w.yaml[0]: Deployment/Web: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: "
        'Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_replica_counts_beyond_int32_and_kubedras_cap() -> None:
    assert problems(apps("Deployment", replicas=2**31), job(parallelism=200_000)) == [
        "w.yaml[0]: Deployment/web: spec.replicas: Invalid value: 2147483648: cannot unmarshal number into Go value "
        "of type int32",
        "w.yaml[1]: Job/train: spec.parallelism: Invalid value: 200000: kubedra expands at most 100000 pods per "
        "workload",
    ]


def cronjob(**template_limits: Any) -> dict[str, Any]:
    spec = job()["spec"]
    spec["template"]["spec"]["containers"][0]["resources"]["limits"] = template_limits
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": spec}},
    }


def test_cronjobs_are_read_and_checked_and_expanded_to_their_controller() -> None:
    expanded = expand(cronjob(**{"nvidia.com/gpu": 1}))
    assert expanded.arrivals == [] and expanded.jobs == []  # their Jobs are made during the run
    (cron,) = expanded.cronjobs
    assert (cron.name, cron.policy, cron.schedule_text) == ("nightly", "Forbid", "0 3 * * *")
    first = cron.sample()
    assert first.name == f"nightly-{(1767225600 + 3 * 3600) // 60}"  # 2026-01-01T03:00:00Z in minutes
    assert problems(cronjob(**{"nvidia.com/gpu": 0.5})) == [
        "w.yaml[0]: CronJob/nightly: spec.jobTemplate.spec.template.spec.containers[0].resources."
        'limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer'
    ]
    typo = cronjob()
    typo["spec"]["jobTemplat"] = typo["spec"].pop("jobTemplate")
    assert problems(typo) == [
        'w.yaml[0]: CronJob/nightly: spec.jobTemplat: unknown field "spec.jobTemplat"',
        "w.yaml[0]: CronJob/nightly: spec.jobTemplate: Required value",
    ]
