"""KubeRay RayJobs admitted by Kueue, as Kueue v0.17.0's ``rayjob`` integration admits them
(``pkg/controller/jobs/rayjob/rayjob_controller.go``, ``pkg/controller/jobs/raycluster/common.go``).

Pure: the Workload of a RayJob and the RayJob as Kueue resumes it; ``sim.kueue_controller`` holds it and starts it.

- Pod sets (``PodSets``: ``raycluster.BuildPodSets`` then ``addSubmitterPodSet``): ``head`` (1 pod of the head
  group's template), one per worker group named after it (``replicas``, 1 where null, times ``numOfHosts`` above 1,
  of its template, whatever the operator's clamping to min/max later makes), and in K8sJobMode ``submitter`` (1 pod
  of ``getSubmitterTemplate``: the user's ``submitterPodTemplate``, else the operator's default container). The
  requests are the templates' as written: not the autoscaler or a SidecarMode submitter the operator adds to the
  head, nor the workers' ``wait-gcs-ready`` init container.
- Priority: the first pod set's template naming a priorityClassName (``ExtractPriority``).
- Resumed (``RunWithPodSetsInfo``): ``suspend`` false, each pod set's flavors' node labels and tolerations merged into
  its template (``UpdateRayClusterSpecToRunWithPodSetsInfo``; the submitter's by ``podset.Merge``, kept only in a
  ``submitterPodTemplate`` the RayJob has: a default one is made anew and dropped), so the cluster's head and workers
  (and such a submitter) carry them; ray-operator then makes the cluster (now) and the submitter Job
  once it is ready. ray-operator sets the RayJob's StartTime as it leaves ``New`` after the resume
  (``initRayJobStatusIfNeed``: its suspension cleared the cluster name), so ``activeDeadlineSeconds`` counts from the
  admission.
- Finished (``Finished``): Complete or Failed, i.e. its submitter Job ended or its deadline failed it; its quota is
  free again then.
"""

from __future__ import annotations

from dataclasses import replace

from kubedra.objects.model import Pod, Toleration
from kubedra.sim.kueue import Admission, PodSet, Workload
from kubedra.sim.kueue_objects import units
from kubedra.sim.rayclusters import HEAD_GROUP
from kubedra.sim.rayjobs import RayJobRun

GROUP = "ray.io/group"


def rayjob_pod_sets(run: RayJobRun) -> tuple[PodSet, ...]:
    """The RayJob's pod sets (``PodSets``), each ``count`` pods of its template's requests in Kueue's units."""
    from kubedra.cluster.usage import pod_requests

    out = []
    for name, count, spec in run.templates:
        requests = {r: units(r, q) for r, q in pod_requests(Pod(spec=spec)).items()}
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
        out.append(PodSet(name, count, requests, dict(spec.node_selector), required, tuple(spec.tolerations)))
    return tuple(out)


def rayjob_workload(run: RayJobRun, order: int) -> Workload:
    """The RayJob's Workload: its priority the first of its pods (head, workers, submitter) whose template names a
    priorityClassName, else 0."""
    pods = [*run.pods, *(run.submitter.pods if run.submitter is not None else ())]
    classed = [pod.spec.priority or 0 for pod in pods if pod.spec.priority_class_name]
    assert run.queue is not None
    return Workload(f"RayJob {run.namespace}/{run.name}", run.namespace, run.queue, classed[0] if classed else 0,
                    run.created_at, order, rayjob_pod_sets(run))


def _merged(pod: Pod, labels: dict[str, str], tolerations: tuple[Toleration, ...]) -> Pod:
    from kubedra.sim.kueue_controller import merged

    return merged((pod,), labels, tolerations)[0]


def admitted_rayjob(run: RayJobRun, admission: Admission, now: float) -> tuple[tuple[Pod, ...], RayJobRun]:
    """The cluster's pods as the operator makes them once the RayJob is resumed, each with its pod set's node selector
    and tolerations (the head's pod set is the first, a worker group's the one named after it), and the run with its
    deadline counted from ``now`` and its submitter's template given the ``submitter`` pod set's where the RayJob has
    a ``submitterPodTemplate``: ``getSubmitterTemplate`` returns a new default one otherwise, and what ``podset.Merge``
    writes into it is lost (the operator builds the submitter from its own default)."""
    given = {ps.name: (labels, tolerations) for ps, labels, tolerations
             in zip(admission.workload.pod_sets, admission.node_selectors, admission.tolerations, strict=True)}
    pods = []
    for pod in run.pods:
        group = pod.metadata.labels.get(GROUP, HEAD_GROUP)
        pods.append(_merged(pod, *given.get("head" if group == HEAD_GROUP else group, ({}, ()))))
    submitter = run.submitter
    if submitter is not None and run.own_submitter:
        labels, tolerations = given.get("submitter", ({}, ()))
        submitter = replace(submitter, pods=tuple(_merged(p, labels, tolerations) for p in submitter.pods))
    deadline = None if run.active_deadline is None else now + run.active_deadline
    return tuple(pods), replace(run, pods=tuple(pods), submitter=submitter, deadline=deadline)
