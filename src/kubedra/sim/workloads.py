"""Workloads users write (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, JobSet, LeaderWorkerSet,
RayCluster, RayJob, PyTorchJob, Pod) expanded into the pods controllers create.

Names follow the controllers: a Deployment's pods are ``<name>-<pod-template-hash>-<5 chars>`` (through its
ReplicaSet ``<name>-<hash>``; the hash is an FNV-32a of the template, shaped like Kubernetes' but not
byte-identical), a ReplicaSet's ``<name>-<5 chars>``, a StatefulSet's ``<name>-<ordinal>``, a Job's
``<name>-<5 chars>`` (``<name>-<index>-<5 chars>`` when Indexed), a DaemonSet's ``<name>-<5 chars>``, one per
node it should run on (:mod:`kubedra.sim.daemonsets`). The 5 characters come from the
Kubernetes name alphabet, derived from ``seed``, the owner and an attempt counter, so runs repeat and one
workload's names do not shift when another is added.

Timing comes from annotations on the pod template or, failing that, the workload: ``kubedra.io/start-after``
(arrival offset, default 0) and ``kubedra.io/run-for`` (run time, default: runs until the end). A Job is
returned as a :class:`JobRun` - its pods in creation order, at most ``parallelism`` running at once - since
when each starts depends on when earlier ones finish. Pods of long-running controllers (restartPolicy
Always) with ``run-for`` are removed after that time, as a scale-down would.

A CronJob is returned as a :class:`CronJobRun`: its schedule, policies and a maker of the Job for each scheduled
time; :mod:`kubedra.sim.cronjobs` runs its controller during the simulation. Its wall clock (simulated time 0 is its
``kubedra.io/simulation-start``, default 2026-01-01T00:00:00Z), its creation (its own ``kubedra.io/start-after``) and
its horizon (its own ``kubedra.io/run-for``; else the other workloads' known span; else a day) are documented there.

A JobSet (``jobset.x-k8s.io/v1alpha2``) is expanded into its Jobs ``<jobset>-<replicatedJob>-<index>``, each a
:class:`JobRun`; the replicated jobs made later (``startupPolicy: InOrder``, ``dependsOn``) are a :class:`JobSetRun`
whose controller (:mod:`kubedra.sim.jobsets`) makes them during the run, and ends the JobSet by its success and
failure policies. A LeaderWorkerSet
(``leaderworkerset.x-k8s.io/v1``) is expanded into leader pods ``<lws>-<group>`` and workers
``<lws>-<group>-<worker>``; where workers wait on their leader (LeaderReady, exclusive placement) they are a
:class:`LeaderWorkerSetRun` whose controller (:mod:`kubedra.sim.leaderworkersets`) makes them during the run.
KubeRay's RayCluster and RayJob (``ray.io/v1``) are expanded by :mod:`kubedra.sim.rayclusters` and
:mod:`kubedra.sim.rayjobs`; Kubeflow's PyTorchJob (``kubeflow.org/v1``) by :mod:`kubedra.sim.pytorchjobs`.

Pods of one workload share their template's lists (containers, resourceClaims): treat them as immutable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from kubedra.cluster.gpuslices import name_suffix, stable_uid
from kubedra.cluster.nodepool import RawLike, convert_strict, object_location
from kubedra.cluster.state import Requirement
from kubedra.objects.errors import InvalidInputError, Location
from kubedra.objects.model import Node, ObjectMeta, OwnerReference, Pod, PodSpec, PodStatus
from kubedra.objects.validate import validate_metadata, validate_pod_spec
from kubedra.objects.validate_scheduling import label_value
from kubedra.sim.cron import Schedule
from kubedra.sim.daemonsets import TEMPLATE_GENERATION, daemon_specs
from kubedra.sim.jobsets import API_VERSION as JOBSET_API_VERSION
from kubedra.sim.jobsets import (
    EXCLUSIVE_KEY,
    JobSetCounts,
    JobSetRun,
    jobset_defaults,
    jobset_job,
    jobset_runs,
    leader_pods,
)
from kubedra.sim.jobsets import webhook_problems as jobset_problems
from kubedra.sim.leaderworkersets import API_VERSION as LWS_API_VERSION
from kubedra.sim.leaderworkersets import LeaderWorkerSetDoc, LeaderWorkerSetRun, expand_leaderworkerset
from kubedra.sim.manifests import (
    DOCUMENTS,
    AppsSpec,
    CronJobDoc,
    DaemonSetDoc,
    DeploymentDoc,
    JobDoc,
    JobSetDoc,
    JobSpec,
    LabelSelector,
    PodTemplate,
    ReplicaSetDoc,
    StatefulSetDoc,
    template_hash,
)
from kubedra.sim.pytorchjobs import API_VERSION as KUBEFLOW_API_VERSION
from kubedra.sim.pytorchjobs import PyTorchJobDoc, PyTorchJobRun, expand_pytorchjob
from kubedra.sim.rayclusters import API_VERSION as RAY_API_VERSION
from kubedra.sim.rayclusters import RayClusterDoc
from kubedra.sim.rayjobs import RayJobDoc, RayJobRun, expand_ray
from kubedra.sim.trainjob_admission import expand_trainjob, training_runtimes
from kubedra.sim.trainjobs import API_VERSION as TRAINER_API_VERSION
from kubedra.sim.trainjobs import RUNTIME_KINDS
from kubedra.sim.unmodelled import KUEUE_QUEUE
from kubedra.sim.workload_checks import RUN_FOR, START_AFTER, WorkloadChecks

DEFAULT_NAMESPACE = "default"
DEFAULT_CRON_HORIZON = 86400.0  # a CronJob's schedules stop a day after its creation when nothing else bounds the run
MAX_CRON_JOBS = 10_000  # Jobs one CronJob may schedule in a run
MAX_SHARED_LABELS = 4096  # label maps shared by replicas (``Expansion.pod``); beyond that it starts over
WORKLOAD_KINDS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "JobSet": JOBSET_API_VERSION,
    "LeaderWorkerSet": LWS_API_VERSION,
    "RayCluster": RAY_API_VERSION,
    "RayJob": RAY_API_VERSION,
    "PyTorchJob": KUBEFLOW_API_VERSION,
    "TrainJob": TRAINER_API_VERSION,
    "ClusterTrainingRuntime": TRAINER_API_VERSION,  # what TrainJobs reference: read, not expanded
    "TrainingRuntime": TRAINER_API_VERSION,
    "Pod": "v1",
}
CUSTOM_DOCUMENTS: dict[str, type[LeaderWorkerSetDoc | RayClusterDoc | RayJobDoc | PyTorchJobDoc]] = {
    "LeaderWorkerSet": LeaderWorkerSetDoc, "RayCluster": RayClusterDoc, "RayJob": RayJobDoc,
    "PyTorchJob": PyTorchJobDoc}


@dataclass(frozen=True, slots=True)
class PodArrival:
    """A pod that appears at ``arrive_at`` seconds and runs ``run_for`` seconds (None: until the end)."""

    pod: Pod
    arrive_at: float
    run_for: float | None
    owner: str  # "Deployment/default/web", "Pod/default/trainer"


@dataclass(frozen=True, slots=True)
class JobRun:
    """A Job: ``pods`` in creation order; the first ``min(parallelism, len(pods))`` start at ``arrive_at``, each
    later one when a running pod succeeds. ``completions`` None is a work queue: done when any pod succeeds."""

    name: str
    namespace: str
    owner: str
    arrive_at: float
    run_for: float | None
    parallelism: int
    completions: int | None
    pods: tuple[Pod, ...]
    suspended: bool = False
    spec: JobSpec | None = None  # as read: ``sim.replacements`` reads what a deleted pod costs the Job
    exclusive: str | None = None  # a JobSet's exclusive placement: its topology key (``sim.jobsets``)
    queue: str | None = None  # the Kueue LocalQueue its ``kueue.x-k8s.io/queue-name`` label names (``sim.kueue``)


@dataclass(frozen=True, slots=True)
class CronJobRun:
    """A CronJob as its controller sees it (:mod:`kubedra.sim.cronjobs` runs it): created at ``created_at``, it
    schedules Jobs until ``until`` (simulated seconds); ``origin`` is the Unix time of simulated time 0, and
    ``make_job(scheduled)`` the Job for a scheduled Unix time (the same one each time it is asked)."""

    name: str
    namespace: str
    uid: str
    schedule: Schedule
    schedule_text: str
    time_zone: str
    created_at: float
    until: float | None  # None until ``expand_workloads`` puts the default horizon in
    origin: int
    policy: str  # Allow | Forbid | Replace
    deadline: int | None  # startingDeadlineSeconds
    suspended: bool
    make_job: Callable[[int], JobRun]
    where: Location = field(default_factory=Location)

    @property
    def owner(self) -> str:
        return f"CronJob/{self.namespace}/{self.name}"

    def sample(self) -> JobRun:
        """Its first Job (or the one it would make at its creation): what its Jobs' pods look like."""
        times = self.activations(1)
        return self.make_job(times[0] if times else self.origin + int(self.created_at // 1))

    def activations(self, limit: int) -> list[int]:
        """Its scheduled times (Unix seconds) from its creation to ``until``, at most ``limit`` of them."""
        end = self.origin + (self.until or 0.0)
        times: list[int] = []
        t: float = self.origin + self.created_at
        while len(times) < limit:
            found = self.schedule.next(t)
            if found is None or found > end:
                break
            times.append(found)
            t = found
        return times


@dataclass(frozen=True, slots=True)
class Workloads:
    arrivals: list[PodArrival] = field(default_factory=list)
    jobs: list[JobRun] = field(default_factory=list)
    cronjobs: list[CronJobRun] = field(default_factory=list)
    jobsets: list[JobSetRun] = field(default_factory=list)  # InOrder JobSets' Jobs after their first replicated job
    # LeaderWorkerSets whose workers wait on their leader (LeaderReady, exclusive placement)
    leaderworkersets: list[LeaderWorkerSetRun] = field(default_factory=list)
    rayjobs: list[RayJobRun] = field(default_factory=list)  # RayJobs' submitter Jobs, made once their cluster is ready
    pytorchjobs: list[PyTorchJobRun] = field(default_factory=list)  # PyTorchJobs' completion, clean-up, deadline
    # The ReplicaSets (a Deployment's too) and StatefulSets that exist, (namespace, kind, name) -> their selector's
    # requirements: what the system-default spreading's selector takes from a pod's controller.
    controllers: dict[tuple[str, str, str], tuple[Requirement, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what an expansion does not model (a TrainJob's MPI policy)

    def all_jobs(self) -> list[JobRun]:
        """The Jobs made at the start, those JobSets make later and those of JobSets Kueue admits."""
        return [*self.jobs, *(job for run in self.jobsets for stage in (run.first,) * (run.queue is not None)
                              + run.stages for job in stage)]


def selector_requirements(
    selector: LabelSelector | None, extra: dict[str, str] | None = None
) -> tuple[Requirement, ...]:
    """A workload's ``spec.selector`` (plus ``extra`` matchLabels) as requirements, sorted."""
    if selector is None:
        return ()
    pairs = {**selector.match_labels, **(extra or {})}
    out: set[Requirement] = {(k, "In", (v,)) for k, v in pairs.items()}
    out |= {(r.key, r.operator, tuple(sorted(set(r.values)))) for r in selector.match_expressions}
    return tuple(sorted(out))


def is_workload(data: dict[str, Any]) -> bool:
    """Whether a raw document is a kind this module expands."""
    return data.get("kind") in WORKLOAD_KINDS


# --------------------------------------------------------------------------------------------------
# Expansion


class _Expander(WorkloadChecks):
    def __init__(self, seed: int, nodes: Sequence[Node] = ()) -> None:
        super().__init__()
        self.seed = seed
        self.nodes = nodes
        self.arrivals: list[tuple[float, int, PodArrival]] = []
        self.jobs: list[tuple[float, int, JobRun]] = []
        self.cronjobs: list[CronJobRun] = []
        self.jobsets: list[JobSetRun] = []
        self.leaderworkersets: list[LeaderWorkerSetRun] = []
        self.rayjobs: list[RayJobRun] = []
        self.pytorchjobs: list[PyTorchJobRun] = []
        self.runtimes: dict[tuple[str, str, str], dict[str, Any]] = {}  # (kind, namespace, name) -> runtime
        self.notes: list[str] = []
        self.controllers: dict[tuple[str, str, str], tuple[Requirement, ...]] = {}
        self.taken: dict[tuple[str, str], str] = {}  # (namespace, pod name) -> where it comes from
        self.attempts: dict[str, int] = {}
        self.sequence = 0
        # One pod spec per template, shared by its replicas (pod specs are never changed in place: a bind or an
        # update replaces them), so what is derived from a spec is worked out once per template.
        self._specs: dict[int, tuple[PodSpec, PodSpec]] = {}
        # Likewise one labels map per (template labels, controller labels) and one owner list per owner reference:
        # a pod's labels and owners are never changed in place either (its annotations are: a Job's index).
        self._labels: dict[tuple[int, int], tuple[dict[str, str], dict[str, str], dict[str, str]]] = {}
        self._owners: dict[int, tuple[OwnerReference, list[OwnerReference]]] = {}

    def unique(self, namespace: str, prefix: str, owner: str) -> str:
        """``prefix`` + 5 name characters drawn from (seed, owner, attempt), free in the namespace."""
        while True:
            attempt = self.attempts.get(owner, 0)
            self.attempts[owner] = attempt + 1
            name = prefix + name_suffix(str(self.seed), owner, str(attempt))
            if (namespace, name) not in self.taken:
                self.taken[namespace, name] = owner
                return name

    def pod(
        self, name: str, namespace: str, template: PodTemplate, labels: dict[str, str], owner: OwnerReference | None
    ) -> Pod:
        shared = self._specs.get(id(template.spec))
        if shared is None or shared[0] is not template.spec:
            prepared = msgspec.structs.replace(template.spec, node_name="",
                                               restart_policy=template.spec.restart_policy or "Always")
            shared = self._specs[id(template.spec)] = (template.spec, prepared)
        spec = shared[1]
        annotations = dict(template.metadata.annotations)
        base = template.metadata.labels
        merged = self._labels.get((id(base), id(labels)))
        if merged is None or merged[0] is not base or merged[1] is not labels:
            if len(self._labels) >= MAX_SHARED_LABELS:  # a StatefulSet's or a Job's pods each have labels of their own
                self._labels.clear()
            merged = self._labels[id(base), id(labels)] = (base, labels, {**base, **labels})  # held: ids stay unique
        owners: list[OwnerReference] = []
        if owner:
            shared_owners = self._owners.get(id(owner))
            if shared_owners is None or shared_owners[0] is not owner:
                shared_owners = self._owners[id(owner)] = (owner, [owner])
            owners = shared_owners[1]
        return Pod(
            metadata=ObjectMeta(
                name=name,
                namespace=namespace,
                uid=stable_uid("Pod", namespace, name),
                labels=merged[2],
                annotations=annotations,
                owner_references=owners,
            ),
            spec=spec,
            status=PodStatus(phase="Pending"),
        )

    def add(self, arrive_at: float, arrival: PodArrival) -> None:
        self.arrivals.append((arrive_at, self.sequence, arrival))
        self.sequence += 1

    def replicas(self, where: Location, kind: str, spec: AppsSpec) -> int | None:
        replicas = 1 if spec.replicas is None else spec.replicas
        ok = self.count_ok(where, "spec.replicas", replicas)
        ok = self.selector_ok(where, kind, spec.selector, spec.template.metadata.labels) and ok
        ordinals = getattr(spec, "ordinals", None)
        if ordinals is not None and ordinals.start < 0:
            start = ordinals.start
            self.bad(where, "spec.ordinals.start", f"Invalid value: {start}: must be greater than or equal to 0")
            ok = False
        ok = self.check_template(where, kind, spec.template, ("Always",)) and ok
        return replicas if ok else None

    def apps(self, where: Location, doc: DeploymentDoc | ReplicaSetDoc | StatefulSetDoc, namespace: str) -> None:
        kind, name, spec = doc.kind, doc.metadata.name, doc.spec
        replicas = self.replicas(where, kind, spec)
        arrive_at, run_for = self.timing(where, doc.metadata, spec.template.metadata, "spec.template.")
        if replicas is None:
            return
        uid = doc.metadata.uid or stable_uid(kind, namespace, name)
        owner_name = f"{kind}/{namespace}/{name}"
        if isinstance(doc, StatefulSetDoc):
            self.controllers[namespace, "StatefulSet", name] = selector_requirements(spec.selector)
            self.statefulset(where, doc, namespace, uid, (arrive_at, run_for))
            return
        labels: dict[str, str] = {}
        rs_name, rs_uid = name, uid
        if isinstance(doc, DeploymentDoc):
            hash_ = template_hash(spec.template)
            rs_name, labels = f"{name}-{hash_}", {"pod-template-hash": hash_}
            rs_uid = stable_uid("ReplicaSet", namespace, rs_name)
        # the Deployment controller's ReplicaSet selects its pod-template-hash too
        self.controllers[namespace, "ReplicaSet", rs_name] = selector_requirements(spec.selector, labels)
        ref = OwnerReference(
            api_version="apps/v1",
            kind="ReplicaSet",
            name=rs_name,
            uid=rs_uid,
            controller=True,
            block_owner_deletion=True,
        )
        for _ in range(replicas):
            pod = self.pod(self.unique(namespace, f"{rs_name}-", owner_name), namespace, spec.template, labels, ref)
            self.add(arrive_at, PodArrival(pod, arrive_at, run_for, owner_name))

    def statefulset(
        self, where: Location, doc: StatefulSetDoc, namespace: str, uid: str, timing: tuple[float, float | None]
    ) -> None:
        name, spec = doc.metadata.name, doc.spec
        start = spec.ordinals.start if spec.ordinals else 0
        revision = f"{name}-{template_hash(spec.template)}"
        ref = OwnerReference(
            api_version="apps/v1", kind="StatefulSet", name=name, uid=uid, controller=True, block_owner_deletion=True
        )
        for ordinal in range(start, start + (1 if spec.replicas is None else spec.replicas)):
            pod_name = f"{name}-{ordinal}"
            first = self.taken.get((namespace, pod_name))
            if first is not None:
                self.bad(where, "metadata.name", f"pod {namespace}/{pod_name} already exists, defined at {first}")
                return
            self.taken[namespace, pod_name] = str(where)
            labels = {
                "apps.kubernetes.io/pod-index": str(ordinal),
                "controller-revision-hash": revision,
                "statefulset.kubernetes.io/pod-name": pod_name,
            }
            pod = self.pod(pod_name, namespace, spec.template, labels, ref)
            self.add(timing[0], PodArrival(pod, timing[0], timing[1], f"StatefulSet/{namespace}/{name}"))

    def daemonset(self, where: Location, doc: DaemonSetDoc, namespace: str, host_network: object) -> None:
        """A pod per node the controller would run one on, labelled and owned as it does."""
        name, spec = doc.metadata.name, doc.spec
        ok = self.selector_ok(where, "DaemonSet", spec.selector, spec.template.metadata.labels)
        ok = self.check_template(where, "DaemonSet", spec.template, ("Always",)) and ok
        arrive_at, run_for = self.timing(where, doc.metadata, spec.template.metadata, "spec.template.")
        if not ok:
            return
        uid = doc.metadata.uid or stable_uid("DaemonSet", namespace, name)
        ref = OwnerReference(
            api_version="apps/v1", kind="DaemonSet", name=name, uid=uid, controller=True, block_owner_deletion=True
        )
        revision = template_hash(spec.template)
        labels = {"controller-revision-hash": revision, "pod-template-generation": TEMPLATE_GENERATION}
        owner = f"DaemonSet/{namespace}/{name}"
        for _, pod_spec in daemon_specs(spec.template.spec, host_network is True, self.nodes):
            template = msgspec.structs.replace(spec.template, spec=pod_spec)
            pod = self.pod(self.unique(namespace, f"{name}-", owner), namespace, template, labels, ref)
            self.add(arrive_at, PodArrival(pod, arrive_at, run_for, owner))

    def job(self, where: Location, doc: JobDoc, namespace: str) -> None:
        name, spec = doc.metadata.name, doc.spec
        shape = self.job_shape(where, spec, "spec.")
        arrive_at, run_for = self.timing(where, doc.metadata, spec.template.metadata, "spec.template.")
        if shape is None:
            return
        uid = doc.metadata.uid or stable_uid("Job", namespace, name)
        run = self.job_run(name, namespace, uid, spec, shape, timing=(arrive_at, run_for))
        if KUEUE_QUEUE in doc.metadata.labels:
            run = replace(run, queue=doc.metadata.labels[KUEUE_QUEUE])
        self.jobs.append((arrive_at, self.sequence, run))
        self.sequence += 1

    def job_shape(self, where: Location, spec: JobSpec, prefix: str) -> tuple[int, int | None, bool] | None:
        """A Job spec's parallelism, completions and whether it is Indexed, checked as the API server does (fields
        under ``prefix``); None after a problem."""
        ok = self.check_template(where, "Job", spec.template, ("OnFailure", "Never"), prefix)
        parallelism = 1 if spec.parallelism is None else spec.parallelism
        completions = spec.completions
        if spec.parallelism is None and completions is None:
            completions = 1
        for field_, value in (("parallelism", parallelism), ("completions", completions)):
            if value is not None and not self.count_ok(where, prefix + field_, value):
                ok = False
        indexed = spec.completion_mode == "Indexed"
        if spec.completion_mode not in ("NonIndexed", "Indexed"):
            self.bad(
                where,
                f"{prefix}completionMode",
                f'Unsupported value: "{spec.completion_mode}": supported values: "NonIndexed", "Indexed"',
            )
            ok = False
        elif indexed and completions is None:
            self.bad(where, f"{prefix}completions", "Required value: when completion mode is Indexed")
            ok = False
        return (parallelism, completions, indexed) if ok else None

    def job_run(
        self,
        name: str,
        namespace: str,
        uid: str,
        spec: JobSpec,
        shape: tuple[int, int | None, bool],
        *,
        timing: tuple[float, float | None],
    ) -> JobRun:
        """The Job's pods, named and labelled as the Job controller makes them."""
        parallelism, completions, indexed = shape
        ref = OwnerReference(
            api_version="batch/v1", kind="Job", name=name, uid=uid, controller=True, block_owner_deletion=True
        )
        base = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        pods = []
        for i in range(parallelism if completions is None else completions):
            labels, prefix = dict(base), f"{name}-"
            if indexed:
                labels["batch.kubernetes.io/job-completion-index"], prefix = str(i), f"{name}-{i}-"
            pod = self.pod(
                self.unique(namespace, prefix, f"Job/{namespace}/{name}"), namespace, spec.template, labels, ref
            )
            if indexed:
                pod.metadata.annotations["batch.kubernetes.io/job-completion-index"] = str(i)
            pods.append(pod)
        return JobRun(
            name,
            namespace,
            f"Job/{namespace}/{name}",
            timing[0],
            timing[1],
            parallelism,
            completions,
            tuple(pods),
            spec.suspend,
            spec,
        )

    def cronjob(self, where: Location, doc: CronJobDoc, namespace: str) -> None:
        """A CronJob: its schedule and policies, and a maker of the Job for each scheduled time (run by
        :mod:`kubedra.sim.cronjobs`)."""
        name, spec = doc.metadata.name, doc.spec
        schedule = self.cron_schedule(where, doc)
        template = spec.job_template
        shape = self.job_shape(where, template.spec, "spec.jobTemplate.spec.")
        timing = self.timing(where, template.metadata, template.spec.template.metadata,
                             "spec.jobTemplate.spec.template.", "spec.jobTemplate.")
        created_at, until = self.timing(where, doc.metadata, doc.metadata, "")
        origin = self.clock(where, doc.metadata)
        if schedule is None or shape is None or origin is None:
            return
        uid = doc.metadata.uid or stable_uid("CronJob", namespace, name)
        made: dict[int, JobRun] = {}

        def make_job(scheduled: int) -> JobRun:
            """The Job for ``scheduled`` (Unix seconds): ``<cronjob>-<minutes since the epoch>``, as
            ``getJobFromTemplate2`` names it; its pods arrive ``start-after`` (the template's) after it is made."""
            run = made.get(scheduled)
            if run is None:
                job_name = f"{name}-{scheduled // 60}"
                run = self.job_run(job_name, namespace, stable_uid("Job", namespace, job_name), template.spec,
                                   shape, timing=timing)
                made[scheduled] = run
            return run

        self.cronjobs.append(CronJobRun(
            name=name,
            namespace=namespace,
            uid=uid,
            schedule=schedule,
            schedule_text=spec.schedule,
            time_zone=spec.time_zone or "UTC",
            created_at=created_at,
            until=until,
            origin=origin,
            policy=spec.concurrency_policy or "Allow",
            deadline=spec.starting_deadline_seconds,
            suspended=bool(spec.suspend),
            make_job=make_job,
            where=where,
        ))

    def jobset(self, where: Location, doc: JobSetDoc, namespace: str, raw_spec: dict[str, Any]) -> None:
        """A JobSet's Jobs as the JobSet controller makes them (:mod:`kubedra.sim.jobsets`), after its webhook's
        defaults and checks."""
        name, spec = doc.metadata.name, doc.spec
        for path, message in [*jobset_problems(name, spec, raw_spec), *validate_metadata(doc.metadata)]:
            self.bad(where, path, message)
        created_at, _ = self.timing(where, doc.metadata, doc.metadata, "")  # its own; a template's come first
        queue = doc.metadata.labels.get(KUEUE_QUEUE)
        if queue is not None:  # Kueue suspends it until admitted, then resumes it: expanded as resumed
            spec = msgspec.structs.replace(spec, suspend=False)
        in_order = spec.startup_policy is not None and spec.startup_policy.startup_policy_order == "InOrder"
        raw_jobs = raw_spec.get("replicatedJobs") or []
        counts = JobSetCounts(spec.replicated_jobs)
        stages: list[tuple[JobRun, ...]] = []
        refused: set[int] = set()  # stages with a Job never made
        for i, rjob in enumerate(spec.replicated_jobs):
            prefix = f"spec.replicatedJobs[{i}].template.spec."
            raw_job = ((raw_jobs[i] if i < len(raw_jobs) else {}).get("template") or {}).get("spec") or {}
            job_spec = jobset_defaults(rjob.template.spec, "completionMode" in raw_job)
            shape = self.job_shape(where, job_spec, prefix)
            for path, message in validate_pod_spec(job_spec.template.spec, prefix + "template.spec",
                                                   job_spec.template.metadata.labels):
                self.bad(where, path, message)
            template_meta = job_spec.template.metadata
            start, run_for = self.timing(where, doc.metadata, template_meta, prefix + "template.")
            own = start if START_AFTER in template_meta.annotations else 0.0  # a later InOrder stage's delay
            if shape is None or self.problems:
                continue
            exclusive = rjob.template.metadata.annotations.get(EXCLUSIVE_KEY, doc.metadata.annotations.get(
                EXCLUSIVE_KEY))
            jobs = []
            for index in range(rjob.replicas):
                job_name = f"{name}-{rjob.name}-{index}"
                marks = counts.marks(doc, namespace, rjob, index)
                if any(label_value(value) for value in marks.values()):
                    # a count summed with a negative replicas ("-1") is no label value: kube-apiserver refuses
                    # the Job, and createJobs retries it for ever (v0.12.0, checked in tests/sigs)
                    refused.add(len(stages))
                    continue
                one = jobset_job(job_spec, marks, exclusive, bool(spec.suspend))
                later = (in_order and stages) or (rjob.depends_on and not spec.suspend)  # its controller makes it
                delay = own if later else start
                job = self.job_run(job_name, namespace, stable_uid("Job", namespace, job_name), one, shape,
                                   timing=(delay, run_for))
                if exclusive is not None:
                    job = replace(job, pods=leader_pods(job.pods, exclusive), exclusive=exclusive)
                jobs.append(job)
            stages.append(tuple(jobs))
        if self.problems or not stages:
            return
        first, run = jobset_runs(name, namespace, spec, stages, refused)
        if queue is not None:  # one Kueue Workload: its Jobs made when admitted (``sim.kueue_controller``)
            run = replace(run or JobSetRun(name, namespace, (), first, replicas=tuple(
                (rjob.name, rjob.replicas) for rjob in spec.replicated_jobs)), queue=queue,
                held=bool(doc.spec.suspend), created_at=created_at)
            self.jobsets.append(run)
            return
        for job in first:
            self.jobs.append((job.arrive_at, self.sequence, job))
            self.sequence += 1
        if run is not None:
            self.jobsets.append(run)

    def custom(self, where: Location, doc: LeaderWorkerSetDoc | RayClusterDoc | RayJobDoc | PyTorchJobDoc,
               namespace: str) -> None:
        """The custom resources expanded here or in their own module (KubeRay's: :mod:`kubedra.sim.rayjobs`)."""
        if isinstance(doc, LeaderWorkerSetDoc):
            expand_leaderworkerset(self, where, doc, namespace)
        elif isinstance(doc, PyTorchJobDoc):
            run = expand_pytorchjob(self, where, doc, namespace)
            if run is not None:
                self.pytorchjobs.append(run)
        else:
            expand_ray(self, where, doc, namespace)

    def bare(self, where: Location, pod: Pod) -> None:
        meta = pod.metadata
        namespace = meta.namespace or DEFAULT_NAMESPACE
        name = meta.name
        if not name and not meta.generate_name:
            self.bad(where, "metadata.name", "Required value: name or generateName is required")
            return
        if not name:
            name = self.unique(namespace, meta.generate_name, f"Pod/{namespace}/{meta.generate_name}")
        elif (namespace, name) in self.taken:
            first = self.taken[namespace, name]
            self.bad(where, "metadata.name", f"pod {namespace}/{name} already exists, defined at {first}")
            return
        self.taken.setdefault((namespace, name), str(where))
        arrive_at, run_for = self.timing(where, meta, meta, "")
        spec = msgspec.structs.replace(pod.spec)
        if not spec.restart_policy:
            spec.restart_policy = "Always"
        new_meta = msgspec.structs.replace(
            meta, name=name, namespace=namespace, uid=meta.uid or stable_uid("Pod", namespace, name)
        )
        status = msgspec.structs.replace(pod.status, phase=pod.status.phase or "Pending")
        out = Pod(metadata=new_meta, spec=spec, status=status)
        self.add(arrive_at, PodArrival(out, arrive_at, run_for, f"Pod/{namespace}/{name}"))

    def direct(self, kind: str, raw: RawLike, where: Location) -> bool:
        """The kinds expanded from the raw document itself: a Pod, a TrainJob; a training runtime is only read (by
        the TrainJobs naming it: ``expand_workloads`` indexes them first). False for the others."""
        if kind == "Pod":
            pod = convert_strict(raw.data, Pod, where, self.problems)
            if pod is not None:
                self.bare(where, pod)
            return True
        if kind == "TrainJob":
            expand_trainjob(self, where, raw.data)
            return True
        return kind in RUNTIME_KINDS

    def raw(self, raw: RawLike) -> None:
        kind = raw.data.get("kind")
        where = object_location(raw, str(kind or "object"))
        versions = WORKLOAD_KINDS
        if kind not in versions:
            expanded = ", ".join(k for k in WORKLOAD_KINDS if k not in RUNTIME_KINDS)
            self.bad(where, "kind", f"{kind!r} is not a workload kubedra expands ({expanded})")
            return
        if raw.data.get("apiVersion") != versions[kind]:
            self.bad(
                where,
                "apiVersion",
                f"unsupported apiVersion {raw.data.get('apiVersion')!r} for {kind}; use {versions[kind]!r}",
            )
            return
        if self.direct(str(kind), raw, where):
            return
        doc = convert_strict(raw.data, CUSTOM_DOCUMENTS.get(str(kind)) or DOCUMENTS[kind], where, self.problems)
        if doc is None:
            return
        if not doc.metadata.name:
            self.bad(where, "metadata.name", "Required value")
            return
        namespace = doc.metadata.namespace or DEFAULT_NAMESPACE
        if isinstance(doc, LeaderWorkerSetDoc | RayClusterDoc | RayJobDoc | PyTorchJobDoc):
            self.custom(where, doc, namespace)
            return
        if isinstance(doc, JobSetDoc):
            self.jobset(where, doc, namespace, raw.data.get("spec") or {})
            return
        assert isinstance(doc, DeploymentDoc | ReplicaSetDoc | StatefulSetDoc | DaemonSetDoc | JobDoc | CronJobDoc)
        self.check_object(where, doc)
        if isinstance(doc, CronJobDoc):
            self.cronjob(where, doc, namespace)
        elif isinstance(doc, JobDoc):
            self.job(where, doc, namespace)
        elif isinstance(doc, DaemonSetDoc):  # hostNetwork is not modelled; it adds a toleration
            self.daemonset(where, doc, namespace, (raw.data["spec"]["template"].get("spec") or {}).get("hostNetwork"))
        else:
            assert isinstance(doc, DeploymentDoc | ReplicaSetDoc | StatefulSetDoc)
            self.apps(where, doc, namespace)


def expand_workloads(
    raw_objects: Iterable[RawLike],
    pods: Iterable[Pod] = (),
    *,
    seed: int = 0,
    locate: Callable[[object], Location] | None = None,
    nodes: Sequence[Node] = (),
) -> Workloads:
    """Pods and JobRuns for every workload, arrivals sorted by (arrive_at, input order, replica).

    ``raw_objects`` are the loader's raw documents of the kinds in WORKLOAD_KINDS; ``pods`` are Pods the loader
    already modelled (bare pods, taken before the raw documents); ``locate`` (``Loaded.location_of``) names
    their files in problems; ``nodes`` are those a DaemonSet's controller sees when it arrives. Raises
    InvalidInputError listing every problem.
    """
    expander = _Expander(seed, nodes)
    raw_objects = list(raw_objects)
    expander.runtimes = training_runtimes(raw_objects)
    for pod in pods:
        name = pod.metadata.name or pod.metadata.generate_name
        where = locate(pod) if locate is not None else Location()
        expander.bare(Location(where.file, where.document, f"Pod/{name}"), pod)
    for raw in raw_objects:
        expander.raw(raw)
    arrivals = [a for _, _, a in sorted(expander.arrivals, key=lambda t: (t[0], t[1]))]
    jobs = [j for _, _, j in sorted(expander.jobs, key=lambda t: (t[0], t[1]))]
    cronjobs = [_bounded(c, known_span(arrivals, jobs), expander) for c in expander.cronjobs]
    if expander.problems:
        raise InvalidInputError(expander.problems)
    return Workloads(arrivals, jobs, cronjobs, expander.jobsets, expander.leaderworkersets, expander.rayjobs,
                     expander.pytorchjobs, expander.controllers, expander.notes)


def known_span(arrivals: Iterable[PodArrival], jobs: Iterable[JobRun]) -> float:
    """When the workload is known to end: the last arrival plus its run time (a Job: its first pods')."""
    ends = [a.arrive_at + (a.run_for or 0.0) for a in arrivals]
    ends += [j.arrive_at + (j.run_for or 0.0) for j in jobs]
    return max(ends, default=0.0)


def _bounded(cron: CronJobRun, span: float, checks: WorkloadChecks) -> CronJobRun:
    """The CronJob with its horizon: its own ``run-for``, else the other workloads' known span, else a day; a
    problem where it would make more Jobs than kubedra simulates."""
    until = cron.created_at + cron.until if cron.until is not None else (
        span if span > cron.created_at else cron.created_at + DEFAULT_CRON_HORIZON)
    cron = replace(cron, until=until)
    if not cron.suspended and len(cron.activations(MAX_CRON_JOBS + 1)) > MAX_CRON_JOBS:
        checks.bad(cron.where, "spec.schedule",
                   f"Invalid value: {json.dumps(cron.schedule_text)}: schedules more than {MAX_CRON_JOBS} Jobs by "
                   f"{until:g}s of simulated time; kubedra simulates at most {MAX_CRON_JOBS} per CronJob (set "
                   f"{RUN_FOR} on the CronJob to stop it sooner)")
    return cron
