"""KubeRay RayJob (``ray.io/v1``) as ray-operator v1.5.0 runs it, read from ``controllers/ray/rayjob_controller.go``
(``constructRayClusterForRayJob``, ``createK8sJobIfNeed``, ``createNewK8sJob``, ``handleShutdownAfterJobFinishes``),
``controllers/ray/common/job.go`` (``GetSubmitterTemplate``, ``GetDefaultSubmitterContainer``),
``controllers/ray/utils/util.go`` (``GenerateRayClusterName``), ``controllers/ray/utils/validation.go``
(``ValidateRayJobMetadata``, ``ValidateRayJobSpec``) and ``apis/ray/v1/rayjob_types.go``.

**Expansion.** ``spec.rayClusterSpec`` becomes the RayCluster ``<rayjob>-<5 chars>`` whose pods are made as
:mod:`kubedra.sim.rayclusters` makes any RayCluster's, at the RayJob's ``kubedra.io/start-after``. With
``submissionMode: K8sJobMode`` (the CRD's default) the controller makes the submitter Job ``<rayjob>`` once the
cluster is ready (kubedra: all its pods running): one pod from ``submitterPodTemplate``, else the default
``ray-job-submitter`` container (the head's image; requests 500m CPU and 200Mi, limits 1 CPU and 1Gi;
``restartPolicy: Never``). Its ``kubedra.io/run-for`` (the RayJob's, or the submitter template's) is how long the
Ray job runs. ``SidecarMode`` adds that container to the head (``restartPolicy: Never``) and makes no Job;
``HTTPMode`` and ``InteractiveMode`` make no Job. ``shutdownAfterJobFinishes: true`` deletes the cluster's pods
``ttlSecondsAfterFinished`` after the submitter Job ends (``handleShutdownAfterJobFinishes``). ``suspend: true``
makes nothing.

**Deadline.** With ``activeDeadlineSeconds`` a RayJob not finished that long after it was created fails with reason
``DeadlineExceeded`` (``checkActiveDeadlineAndUpdateStatusIfNeeded``, checked while Initializing and Running: its
StartTime is set as it leaves New), whether its cluster is still waiting for room or its Ray job is running; it is
never retried (``checkBackoffLimitAndUpdateStatusIfNeeded``). A failed RayJob makes no submitter Job; with
``shutdownAfterJobFinishes`` its cluster's pods are deleted ``ttlSecondsAfterFinished`` later, its submitter Job is
kept (the operator deletes only the RayCluster). The operator notices on its next reconcile (every 3 s at most); kubedra
at the deadline itself. Deadlines are modelled in ``K8sJobMode``, where the submitter Job's end is the Ray job's.

**Not modelled.** ``clusterSelector`` (an existing cluster: refused), retries of a failed Ray job (``backoffLimit``:
kubedra's Ray jobs fail only by their deadline), ``deletionStrategy``, the head Service, the Ray job's own status, a
submitter left running after its cluster was deleted (it runs its ``run-for``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cluster.gpuslices import name_suffix, stable_uid
from kubedra.cluster.nodepool import Strict
from kubedra.objects.formats import unsupported
from kubedra.objects.model import Container, Int32, ObjectMeta, Pod, PodSpec, ResourceRequirements
from kubedra.sim.jobsets import dns1035, quote
from kubedra.sim.manifests import JobSpec, PodTemplate, _Doc
from kubedra.sim.rayclusters import RayClusterDoc, RayClusterSpec, cluster_pods, cluster_problems, expand_raycluster
from kubedra.sim.unmodelled import KUEUE_QUEUE

if TYPE_CHECKING:
    from kubedra.cluster.state import ClusterState
    from kubedra.objects.errors import Location
    from kubedra.sim.run import JobProgress, Simulation
    from kubedra.sim.workloads import JobRun, _Expander

MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
MAX_NAME = 47  # MaxRayJobNameLength


class RayJobSpec(Strict, kw_only=True):
    active_deadline_seconds: Int32 | None = None
    backoff_limit: Int32 | None = 0
    ray_cluster_spec: RayClusterSpec | None = None
    submitter_pod_template: PodTemplate | None = None
    metadata: dict[str, str] = {}
    cluster_selector: dict[str, str] = {}
    submitter_config: Any = None
    managed_by: str | None = None
    deletion_strategy: Any = None
    entrypoint: str = ""
    runtime_env_yaml: str = msgspec.field(default="", name="runtimeEnvYAML")
    job_id: str = ""
    submission_mode: str = "K8sJobMode"
    entrypoint_resources: str = ""
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    ttl_seconds_after_finished: Int32 = 0
    shutdown_after_job_finishes: bool = False
    suspend: bool = False


class RayJobDoc(_Doc, kw_only=True):
    """``ray.io/v1`` RayJob: its RayCluster and submitter Job (:mod:`kubedra.sim.rayjobs`)."""

    spec: RayJobSpec
    status: Any = None


@dataclass(frozen=True, slots=True)
class RayJobRun:
    """A RayJob's submitter Job, made once every pod of its cluster (``cluster``: pod keys) runs; with ``shutdown``
    the cluster's pods are deleted once the Job ends."""

    name: str
    namespace: str
    cluster: tuple[str, ...]
    submitter: JobRun | None
    shutdown: bool
    deadline: float | None = None  # when ``activeDeadlineSeconds`` runs out (from the RayJob's creation)
    ttl: float = 0.0  # ``ttlSecondsAfterFinished``
    # Kueue (``sim.kueue_rayjobs``): the LocalQueue its ``kueue.x-k8s.io/queue-name`` label names; whether it was
    # written suspended; its cluster's pods (made when admitted); when it was created; ``activeDeadlineSeconds``;
    # Kueue's pod sets as (name, count, template's spec): the head, each worker group, the submitter in K8sJobMode
    queue: str | None = None
    held: bool = False
    pods: tuple[Pod, ...] = ()
    created_at: float = 0.0
    active_deadline: float | None = None
    templates: tuple[tuple[str, int, PodSpec], ...] = ()
    own_submitter: bool = False  # ``submitterPodTemplate`` given: Kueue writes the submitter's flavor into it


def rayjob_pods(state: ClusterState, run: RayJobRun) -> list[str]:
    """The keys of a RayJob's pods so far: its cluster's, then its submitter Job's (those the Job owns: retries too)."""
    submitter = [key for key, record in state.pods.items() if record.pod.metadata.namespace == run.namespace
                 and any(o.kind == "Job" and o.name == run.name for o in record.pod.metadata.owner_references)]
    return [*run.cluster, *submitter]


def rayjob_problems(doc: RayJobDoc) -> list[tuple[str, str]]:
    """``ValidateRayJobMetadata`` and ``ValidateRayJobSpec``: (field, message)."""
    name, spec = doc.metadata.name, doc.spec
    out: list[tuple[str, str]] = []
    if len(name) > MAX_NAME:
        out.append(("metadata.name", f"Invalid value: {quote(name)}: RayJob name should be no more than {MAX_NAME} "
                                     "characters"))
    out += [("metadata.name", f"Invalid value: {quote(name)}: {m}") for m in dns1035(name)]
    if spec.ray_cluster_spec is not None:
        out += cluster_problems(name, spec.ray_cluster_spec, prefix="spec.rayClusterSpec.", name_max=0)
    if spec.suspend and not spec.shutdown_after_job_finishes:
        out.append(("spec.suspend", "Invalid value: true: a RayJob with shutdownAfterJobFinishes set to false is not "
                                    "allowed to be suspended"))
    if spec.ttl_seconds_after_finished < 0:
        out.append(("spec.ttlSecondsAfterFinished", f"Invalid value: {spec.ttl_seconds_after_finished}: "
                                                    "TTLSecondsAfterFinished must be a non-negative integer"))
    if spec.cluster_selector:
        out.append(("spec.clusterSelector", "Forbidden: kubedra models a RayJob with its own rayClusterSpec, not one "
                                            "that selects an existing RayCluster"))
    elif spec.ray_cluster_spec is None:
        out.append(("spec.rayClusterSpec", "Required value: one of RayClusterSpec or ClusterSelector must be set"))
    if spec.submission_mode not in MODES:
        out.append(("spec.submissionMode", unsupported(spec.submission_mode, MODES)))
    if spec.submission_mode == "InteractiveMode" and (spec.backoff_limit or 0) > 0:
        out.append(("spec.backoffLimit", "Invalid value: BackoffLimit is incompatible with InteractiveMode"))
    if spec.submission_mode == "SidecarMode" and spec.submitter_pod_template is not None:
        out.append(("spec.submitterPodTemplate", "Forbidden: Currently, SidecarMode doesn't support "
                                                 "SubmitterPodTemplate"))
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        out.append(("spec.activeDeadlineSeconds", f"Invalid value: {spec.active_deadline_seconds}: "
                                                  "activeDeadlineSeconds must be a positive integer"))
    if spec.backoff_limit is not None and spec.backoff_limit < 0:
        out.append(("spec.backoffLimit", f"Invalid value: {spec.backoff_limit}: backoffLimit must be a positive "
                                         "integer"))
    return out


def submitter_template(spec: RayJobSpec, head_image: str) -> PodTemplate:
    """``GetSubmitterTemplate``: the user's, else ``GetDefaultSubmitterContainer`` with ``restartPolicy: Never``."""
    if spec.submitter_pod_template is not None:
        return spec.submitter_pod_template
    container = Container(name="ray-job-submitter", image=head_image,
                          resources=ResourceRequirements(limits={"cpu": "1", "memory": "1Gi"},
                                                         requests={"cpu": "500m", "memory": "200Mi"}))
    return PodTemplate(metadata=ObjectMeta(), spec=PodSpec(containers=[container], restart_policy="Never"))


def expand_rayjob(exp: _Expander, where: Location, doc: RayJobDoc, namespace: str) -> RayJobRun | None:
    """The RayJob's cluster pods (arriving now) and its run (the submitter Job made later)."""
    from kubedra.sim.workloads import PodArrival

    name, spec = doc.metadata.name, doc.spec
    for path, message in rayjob_problems(doc):
        exp.bad(where, path, message)
    cluster_spec = spec.ray_cluster_spec
    queue = doc.metadata.labels.get(KUEUE_QUEUE)
    if exp.problems or cluster_spec is None or (spec.suspend and queue is None):
        return None
    templates = kueue_templates(spec, cluster_spec) if queue is not None else ()
    head = cluster_spec.head_group_spec.template
    image = head.spec.containers[0].image
    template = submitter_template(spec, image)
    if spec.submission_mode == "K8sJobMode":
        exp.check_template(where, "Job", template, ("OnFailure", "Never"), "spec.submitterPodTemplate.")
    if spec.submission_mode == "SidecarMode":  # constructRayClusterForRayJob
        sidecar = submitter_template(spec, image).spec.containers[0]
        head = msgspec.structs.replace(head, spec=msgspec.structs.replace(
            head.spec, containers=[*head.spec.containers, sidecar], restart_policy="Never"))
        cluster_spec = msgspec.structs.replace(cluster_spec, head_group_spec=msgspec.structs.replace(
            cluster_spec.head_group_spec, template=head))
    arrive_at, _ = exp.timing(where, doc.metadata, head.metadata, "spec.rayClusterSpec.headGroupSpec.template.")
    job_timing = exp.timing(where, doc.metadata, template.metadata, "spec.submitterPodTemplate.")
    if exp.problems:
        return None
    cluster = f"{name}-{name_suffix(str(exp.seed), f'RayJob/{namespace}/{name}', 'cluster')}"  # GenerateRayClusterName
    owner = f"RayCluster/{namespace}/{cluster}"
    pods = cluster_pods(exp, cluster, namespace, cluster_spec, stable_uid("RayCluster", namespace, cluster))
    for pod in pods if not spec.suspend else ():  # a queued one written suspended: made once Kueue admits it
        exp.add(arrive_at, PodArrival(pod, arrive_at, None, owner))
    submitter = None
    if spec.submission_mode == "K8sJobMode":
        # createNewK8sJob labels the Job (ray.io/originated-from-cr-name, ...), not its template: the submitter pod
        # has the template's labels and the Job controller's only
        job_spec = JobSpec(parallelism=1, completions=1, template=template, backoff_limit=2)
        submitter = exp.job_run(name, namespace, stable_uid("Job", namespace, name), job_spec, (1, 1, False),
                                timing=(0.0, job_timing[1]))
    deadline = None  # the other modes' Ray job ends where kubedra does not look (a head's container, the dashboard)
    if spec.active_deadline_seconds is not None and submitter is not None:
        deadline = arrive_at + spec.active_deadline_seconds
    return RayJobRun(name, namespace, tuple(f"{namespace}/{p.metadata.name}" for p in pods), submitter,
                     spec.shutdown_after_job_finishes, deadline, float(spec.ttl_seconds_after_finished), queue,
                     spec.suspend, tuple(pods) if queue is not None else (), arrive_at,
                     None if deadline is None else float(spec.active_deadline_seconds or 0), templates,
                     spec.submitter_pod_template is not None)


def kueue_templates(spec: RayJobSpec, cluster: RayClusterSpec) -> tuple[tuple[str, int, PodSpec], ...]:
    """Kueue's pod sets for a RayJob (``raycluster.BuildPodSets``, ``addSubmitterPodSet``), from the spec as written:
    the head (1 pod), each worker group (``replicas``, 1 where null, times ``numOfHosts`` above 1), and in K8sJobMode
    the submitter (1 pod of ``getSubmitterTemplate``: the user's, else the operator's default)."""
    head = cluster.head_group_spec.template
    out = [("head", 1, head.spec)]
    for group in cluster.worker_group_specs:
        count = 1 if group.replicas is None else group.replicas
        out.append((group.group_name, count * group.num_of_hosts if group.num_of_hosts > 1 else count,
                    group.template.spec))
    if spec.submission_mode == "K8sJobMode":
        out.append(("submitter", 1, submitter_template(spec, head.spec.containers[0].image).spec))
    return tuple(out)


def expand_ray(exp: _Expander, where: Location, doc: RayClusterDoc | RayJobDoc, namespace: str) -> None:
    """The dispatch from ``sim.workloads``: a RayCluster's pods, or a RayJob's and its run."""
    if isinstance(doc, RayClusterDoc):
        expand_raycluster(exp, where, doc, namespace)
        return
    run = expand_rayjob(exp, where, doc, namespace)
    if run is not None:
        exp.rayjobs.append(run)


class RayJobController:
    """One RayJob during the run: makes the submitter Job once every cluster pod runs (the cluster is Ready), fails
    it at its deadline, and with ``shutdownAfterJobFinishes`` deletes the cluster's pods once it has ended."""

    def __init__(self, sim: Simulation, run: RayJobRun) -> None:
        self.sim = sim
        self.run = run
        self.made = 0
        self.job: JobProgress | None = None
        self.failed = False
        self.on_end: Callable[[], None] | None = None  # Kueue's: the RayJob finished (Complete or Failed)
        self._key = f"RayJob/{run.namespace}/{run.name}"
        if run.deadline is not None:  # keyed by its time: a RayJob resumed by Kueue has a later one
            sim.wake(run.deadline, f"{self._key}/deadline@{run.deadline}", self._deadline)

    def step(self) -> bool:
        """Advance; whether there is more to do."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        if run.submitter is None or self.failed:
            return False
        if self.job is None:
            records = [sim.state.pods.get(key) for key in run.cluster]
            if not all(r is not None and r.started_at is not None and r.pod.spec.node_name for r in records):
                return True
            sim.events.append(Event(sim.now, "Created", f"Job {run.namespace}/{run.name}",
                                    message=f"RayJob {run.namespace}/{run.name}: submitter Job made once its "
                                            "RayCluster is ready"))
            self.job = sim.start_job(run.submitter)
            self.made += len(run.submitter.pods)
            return run.shutdown or self.on_end is not None  # watched to its end: its quota
        if sim.job_active(self.job):
            return True
        self._finished()
        self._shut_down("shutdownAfterJobFinishes")
        return False

    def _deadline(self) -> None:
        """``activeDeadlineSeconds`` ran out: unless its submitter Job has ended, the RayJob fails, for good."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        if self.failed or (self.job is not None and not sim.job_active(self.job)):
            return  # Complete already, or stopped (suspended by Kueue)
        self.failed = True
        sim.events.append(Event(sim.now, "Failed", f"RayJob {run.namespace}/{run.name}", message=(
            "DeadlineExceeded: the RayJob has passed its activeDeadlineSeconds"
            + ("" if self.job is not None else "; its RayCluster was not ready, no submitter Job was made"))))
        self._finished()
        self._shut_down("shutdownAfterJobFinishes after DeadlineExceeded")

    def _finished(self) -> None:
        if self.on_end is not None:
            self.on_end()

    def _shut_down(self, why: str) -> None:
        """With ``shutdownAfterJobFinishes``: the cluster's pods deleted ``ttlSecondsAfterFinished`` from now."""
        run = self.run
        if not run.shutdown:
            return
        if run.ttl > 0:
            self.sim.wake(self.sim.now + run.ttl, f"{self._key}/shutdown", lambda: self._delete_cluster(why))
        else:
            self._delete_cluster(why)

    def _delete_cluster(self, why: str) -> None:
        run = self.run
        for key in run.cluster:
            record = self.sim.state.pods.get(key)
            if record is not None:
                self.sim.delete(record, f"RayJob {run.namespace}/{run.name}: {why}", 0.0)
