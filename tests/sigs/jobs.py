"""The comparison the JobSet checks share (``test_vs_jobset_controller``, ``tests/trainer``): kubedra's Jobs and
pods against those the real JobSet and Job controllers made, field by field."""

from __future__ import annotations

from typing import Any

import msgspec
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

JOB_SELECTOR = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name")


def kubedra_jobs(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """kubedra's Jobs by name: (their spec, their pods), every stage's."""
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    return {job.name: (msgspec.to_builtins(job.spec), [msgspec.to_builtins(p) for p in job.pods])
            for job in scenario.workloads.all_jobs()}


def real_jobs(plane: ControlPlane, namespace: str, count: int) -> dict[str, dict[str, Any]]:
    jobs = harness.listed(plane, f"/apis/batch/v1/namespaces/{namespace}/jobs", count, "Jobs")
    return {job["metadata"]["name"]: job for job in jobs}


def real_pods(plane: ControlPlane, namespace: str, job: str, count: int, uid: str = "") -> list[dict[str, Any]]:
    """The pods of the Job ``job`` (of uid ``uid`` where given: a recreated Job's, not its predecessor's)."""
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=job-name%3D{job}"
    if uid:
        path += f",controller-uid%3D{uid}"
    return harness.listed(plane, path, count, f"pods of {job}")


def unify(marks: dict[str, str], *uids: str) -> dict[str, str]:
    """Labels or annotations with the uids (the JobSet's, the Job's: each side has its own) replaced by ``<uid>``."""
    out = {}
    for key, value in marks.items():
        text = value
        for uid in uids:
            text = text.replace(uid, "<uid>")
        out[key] = text
    return out


def pod_shape(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    """What the comparison reads of a pod; its Job's and JobSet's uids (kubedra's are its own) unified."""
    meta = pod["metadata"]
    js_uid = meta.get("labels", {}).get("jobset.sigs.k8s.io/jobset-uid", "")
    return {
        "prefix": meta["name"][:-harness.SUFFIX],
        "labels": unify(meta.get("labels", {}), uid, js_uid),
        "annotations": unify(meta.get("annotations", {}), js_uid),
        **harness.pod_fields(pod),
    }


def job_shape(job: dict[str, Any]) -> dict[str, Any]:
    spec = job["spec"]
    return {k: spec.get(k) for k in ("parallelism", "completions", "completionMode", "backoffLimit", "suspend")}


def compare(plane: ControlPlane, namespace: str, docs: list[dict[str, Any]],
            real: dict[str, dict[str, Any]], ours: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Jobs and their pods, real against kubedra's (``ours``: as ``kubedra_jobs`` gives them, else those of
    ``docs``); the real pods by Job (those of the Job's uid)."""
    ours = kubedra_jobs(docs) if ours is None else ours
    assert sorted(ours) == sorted(real)
    pods_by_job = {}
    for name, job in real.items():
        our_spec, our_pods = ours[name]
        # the Job's pod template carries the controller's marks (labels and annotations)
        template = job["spec"]["template"]["metadata"]
        our_template = our_spec["template"]["metadata"]
        uid = job["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-uid"]
        our_uid = our_template["labels"]["jobset.sigs.k8s.io/jobset-uid"]
        assert unify(template.get("annotations", {}), uid) == unify(our_template.get("annotations", {}), our_uid), name
        # the priority label is the pod webhook's (set on the pod), kubedra writes it on the template
        our_labels = unify({k: v for k, v in our_template.get("labels", {}).items()
                            if k != "jobset.sigs.k8s.io/priority"}, our_uid)
        # less the Job's own selector labels, which kube-apiserver's Job defaulting adds to the template
        labels = {k: v for k, v in template.get("labels", {}).items() if k not in JOB_SELECTOR}
        assert unify(labels, uid) == our_labels, name
        # labelAndAnnotateObject on the Job as on its template (the Job's other labels, its replicated job's
        # template.metadata, are not a pod's: kubedra does not carry them)
        marks = {k: v for k, v in unify(job["metadata"]["labels"], uid).items() if k.startswith("jobset.sigs.k8s.io/")}
        assert marks == {k: v for k, v in our_labels.items() if k.startswith("jobset.sigs.k8s.io/")}, name
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("JobSet", job["metadata"]["labels"][
            "jobset.sigs.k8s.io/jobset-name"], True)
        assert job_shape(job) == {**job_shape({"spec": our_spec}), "backoffLimit": job["spec"]["backoffLimit"],
                                  "suspend": job["spec"].get("suspend")}, name
        pods = real_pods(plane, namespace, name, len(our_pods), job["metadata"]["uid"])
        pods_by_job[name] = pods
        uid = job["metadata"]["uid"]
        our_uid = our_pods[0]["metadata"]["ownerReferences"][0]["uid"]
        real_shapes = sorted((pod_shape(p, uid) for p in pods), key=lambda s: s["prefix"])
        our_shapes = sorted((pod_shape(p, our_uid) for p in our_pods), key=lambda s: s["prefix"])
        assert our_shapes == real_shapes, name
        for pod in pods:  # the DNS names kubedra does not carry: the Job controller's hostname, the subdomain
            index = pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
            assert pod["spec"].get("hostname") == f"{name}-{index}"
            assert pod["spec"].get("subdomain") == job["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]
    return pods_by_job
