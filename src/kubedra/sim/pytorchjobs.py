"""Kubeflow PyTorchJob (``kubeflow.org/v1``) as training-operator v1.9.2 (github.com/kubeflow/training-operator@v1.9.2)
runs it, read from ``pkg/apis/kubeflow.org/v1/pytorch_types.go``, ``pytorch_defaults.go`` (``SetDefaults_PyTorchJob``),
``defaulting_utils.go``, ``common_types.go``, ``pkg/webhooks/pytorch/pytorchjob_webhook.go`` (``validatePyTorchJob``),
``pkg/common/util/webhooks.go`` (``ValidateRunPolicy``), ``pkg/controller.v1/pytorch/pytorchjob_controller.go``
(``UpdateJobStatus``, ``IsMasterRole``, ``ControllerName``), ``initcontainer.go`` (``setInitContainer``),
``pkg/controller.v1/common/pod.go`` (``ReconcilePods``, ``createNewPod``), ``job.go`` (``ReconcileJobs``,
``DeletePodsAndServices``), ``util.go`` (``GenGeneralName``), ``pkg/core/pod.go`` (``SetRestartPolicy``),
``pkg/core/job.go`` (``PastActiveDeadline``) and ``pkg/config/config.go``.

**Pods.** Per replica type (``Master``, ``Worker``: the webhook refuses any other key, so the defaulting's camel-casing
never matters) ``replicas`` pods (default 1; the webhook wants the Master's set to exactly 1) named
``<job>-<type lower-cased>-<index>`` (``GenGeneralName``), owned by the PyTorchJob, labelled over the template's
labels with ``training.kubeflow.org/job-name``, ``training.kubeflow.org/operator-name: pytorchjob-controller``,
``training.kubeflow.org/replica-type`` (``master``/``worker``), ``training.kubeflow.org/replica-index`` and, on the
master (without a Master: worker 0, ``IsMasterRole``), ``training.kubeflow.org/job-role: master``. The pod's
``restartPolicy`` is the replica spec's (default ``OnFailure``; ``ExitCode`` gives ``Never``), whatever the template
says. When the job has a Master every worker gets the ``init-pytorch`` init container (``alpine:3.10``, the
operator's ``--pytorch-init-container-image`` default; requests 50m CPU and 10Mi, limits 100m and 20Mi), which counts
in scheduling as any init container. All pods arrive together at the job's ``kubedra.io/start-after`` (the Master
first; the operator walks a Go map, so its order varies) and run for their template's, else the job's,
``kubedra.io/run-for``.

**Completion.** With a Master the job succeeds when the master pod succeeds; without one, when every worker has (with
``elasticPolicy``: when any worker has) -- ``UpdateJobStatus``. Then ``runPolicy.cleanPodPolicy`` (default ``None``:
pods are left to run) deletes the pods still pending or running (``Running``; ``All`` and any other value delete
every pod, the same in a simulation). ``activeDeadlineSeconds`` (from the job's arrival) deletes every pod not done;
kubedra checks it after each simulated instant, so it acts at the first instant at or after the deadline.
``suspend: true`` and a ``runPolicy.managedBy`` other than ``kubeflow.org/training-operator`` (the operator leaves the
job alone) make no pods.

**Checked** against the released operator (``tests/kubeflow``): its pods equal kubedra's, pod by pod.

**Not modelled (noted here, accepted).** The headless Service per pod (not pods), the env vars (``MASTER_ADDR``,
``WORLD_SIZE``, ``PET_*``), the default container port (``pytorchjob-port``, 23456: no hostPort, nothing to schedule),
``backoffLimit`` (kubedra fails no pods), ``ttlSecondsAfterFinished``, status. ``elasticPolicy``: its webhook checks and
its completion rule are kept; the HorizontalPodAutoscaler between ``minReplicas`` and ``maxReplicas`` is not -- the
worker count stays ``replicas``. ``schedulingPolicy`` (``minAvailable``, ``queue``, ``priorityClass``...) fills the
PodGroup of Volcano or scheduler-plugins, made only when the operator runs with ``--gang-scheduler-name``; kube-
scheduler does not read those, and training-operator v1.9.2 makes no Kubernetes Workload/PodGroup, so it changes
nothing here: a PyTorchJob is gang-scheduled in kubedra only through its templates' ``schedulingGroup``, as any pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cluster.gpuslices import stable_uid
from kubedra.cluster.nodepool import Strict
from kubedra.objects.formats import unsupported
from kubedra.objects.model import Container, Int32, Int64, OwnerReference, Pod, ResourceRequirements
from kubedra.objects.validate import validate_pod_spec
from kubedra.sim.jobsets import dns1035, quote
from kubedra.sim.manifests import PodTemplate, _Doc

if TYPE_CHECKING:
    from kubedra.objects.errors import Location
    from kubedra.sim.run import Simulation
    from kubedra.sim.workloads import _Expander

API_VERSION = "kubeflow.org/v1"
VERSION = "training-operator v1.9.2"
MASTER, WORKER = "Master", "Worker"  # PyTorchJobReplicaTypeMaster, PyTorchJobReplicaTypeWorker
ROLES = (MASTER, WORKER)
CONTAINER = "pytorch"  # PyTorchJobDefaultContainerName
CONTROLLER = "pytorchjob-controller"  # controllerName
INIT_IMAGE = "alpine:3.10"  # config.PyTorchInitContainerImageDefault
MANAGERS = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")  # supportedJobControllers
POD_RESTART = ("Always", "OnFailure", "Never")
JOB_NAME, OPERATOR_NAME = "training.kubeflow.org/job-name", "training.kubeflow.org/operator-name"
REPLICA_TYPE, REPLICA_INDEX = "training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"


class SchedulingPolicy(Strict, kw_only=True):
    min_available: Int32 | None = None
    queue: str = ""
    min_resources: dict[str, Any] | None = None
    priority_class: str = ""
    schedule_timeout_seconds: Int32 | None = None


class RunPolicy(Strict, kw_only=True):
    clean_pod_policy: str | None = None
    ttl_seconds_after_finished: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool | None = None
    managed_by: str | None = None


class ElasticPolicy(Strict, kw_only=True):
    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    rdzv_backend: str | None = None
    rdzv_port: Int32 | None = None
    rdzv_host: str | None = None
    rdzv_id: str | None = None
    rdzv_conf: Any = None
    standalone: bool | None = None
    n_proc_per_node: Int32 | None = None
    max_restarts: Int32 | None = None
    metrics: Any = None


class ReplicaSpec(Strict, kw_only=True):
    replicas: Int32 | None = None
    template: PodTemplate | None = None
    restart_policy: str = ""


class PyTorchJobSpec(Strict, kw_only=True):
    run_policy: RunPolicy = msgspec.field(default_factory=RunPolicy)
    elastic_policy: ElasticPolicy | None = None
    pytorch_replica_specs: dict[str, ReplicaSpec | None] | None = None
    nproc_per_node: str | None = None


class PyTorchJobDoc(_Doc, kw_only=True):
    """``kubeflow.org/v1`` PyTorchJob: a master and workers (:mod:`kubedra.sim.pytorchjobs`)."""

    spec: PyTorchJobSpec
    status: Any = None


@dataclass(frozen=True, slots=True)
class PyTorchJobRun:
    """A PyTorchJob during the run: its master's and workers' pod keys, what ends it and what is deleted then."""

    name: str
    namespace: str
    master: tuple[str, ...]
    workers: tuple[str, ...]
    elastic: bool
    clean_pod_policy: str
    deadline_at: float | None  # the job's arrival + activeDeadlineSeconds


def job_problems(doc: PyTorchJobDoc) -> list[tuple[str, str]]:
    """``validatePyTorchJob`` (create): the name, ``ValidateRunPolicy``, ``validateSpec`` and
    ``validatePyTorchReplicaSpecs``, then what the API server refuses in the pods made from each template."""
    name, spec = doc.metadata.name, doc.spec
    out: list[tuple[str, str]] = []
    errors = dns1035(name)
    if errors:
        out.append(("metadata.name", f"Invalid value: {quote(name)}: should match: {','.join(errors)}"))
    manager = spec.run_policy.managed_by
    if manager is not None and manager not in MANAGERS:
        out.append(("spec.runPolicy.managedBy", unsupported(manager, MANAGERS)))
    specs = spec.pytorch_replica_specs
    if spec.elastic_policy is not None:
        if WORKER not in (specs or {}):
            out.append((f"spec.pytorchReplicaSpecs[{WORKER}]", "Required value: must be configured if elastic "
                                                               "policy is used"))
        if spec.elastic_policy.n_proc_per_node is not None and spec.nproc_per_node is not None:
            out.append(("spec.elasticPolicy.nProcPerNode", "Forbidden: must not be used with spec.nprocPerNode"))
    if specs is None:
        out.append(("spec.pytorchReplicaSpecs", "Required value: must be required"))
    for role, replica in (specs or {}).items():
        out += replica_problems(role, replica)
    return out


def replica_problems(role: str, replica: ReplicaSpec | None) -> list[tuple[str, str]]:
    """``validatePyTorchReplicaSpecs`` for one replica type, then the API server's checks of its pods."""
    out: list[tuple[str, str]] = []
    path = f"spec.pytorchReplicaSpecs[{role}]"
    containers = f"{path}.template.spec.containers"
    if role not in ROLES:
        out.append((path, unsupported(role, ROLES)))
    template = replica.template if replica is not None else None
    if template is None or not template.spec.containers:
        out.append((containers, "Required value: must be specified"))
    listed = template.spec.containers if template is not None else []
    out += [(f"{containers}[{i}].image", "Required value: must be required") for i, c in enumerate(listed)
            if not c.image]
    if not any(c.name == CONTAINER for c in listed):
        out.append((containers, f"Required value: must have at least one container with name {CONTAINER}"))
    replicas = replica.replicas if replica is not None else None
    if role == MASTER and replicas != 1:
        out.append((f"{path}.replicas", "Forbidden: must be 1"))
    elif role != MASTER and replicas is not None and replicas < 1:
        out.append((f"{path}.replicas", "Forbidden: must be at least 1"))
    if replica is None or template is None or not listed:
        return out
    if pod_restart_policy(replica) not in POD_RESTART:  # SetRestartPolicy copies it onto the pod: the API refuses it
        out.append((f"{path}.restartPolicy", unsupported(replica.restart_policy, (*POD_RESTART, "ExitCode"))))
    out += validate_pod_spec(template.spec, f"{path}.template.spec", template.metadata.labels)
    return out


def pod_restart_policy(replica: ReplicaSpec) -> str:
    """``setDefaultRestartPolicy`` (``OnFailure``) then ``SetRestartPolicy`` (``ExitCode`` gives ``Never``)."""
    policy = replica.restart_policy or "OnFailure"
    return "Never" if policy == "ExitCode" else policy


def init_container() -> Container:
    """``initContainerTemplate``'s ``init-pytorch`` with the operator's default image."""
    return Container(name="init-pytorch", image=INIT_IMAGE,
                     resources=ResourceRequirements(limits={"cpu": "100m", "memory": "20Mi"},
                                                    requests={"cpu": "50m", "memory": "10Mi"}))


def replica_template(replica: ReplicaSpec, role: str, has_master: bool) -> PodTemplate:
    """The template ``createNewPod`` makes a pod from: the replica's restart policy, workers' init container."""
    template = replica.template
    assert template is not None
    changes: dict[str, Any] = {"restart_policy": pod_restart_policy(replica)}
    if role == WORKER and has_master:  # setInitContainer
        changes["init_containers"] = [*template.spec.init_containers, init_container()]
    return msgspec.structs.replace(template, spec=msgspec.structs.replace(template.spec, **changes))


def job_pods(exp: _Expander, where: Location, name: str, namespace: str, spec: PyTorchJobSpec, *, uid: str) -> list[
        tuple[str, Pod]]:
    """(role, pod) for every pod ``ReconcilePods`` makes, Master first."""
    ref = OwnerReference(api_version=API_VERSION, kind="PyTorchJob", name=name, uid=uid, controller=True,
                         block_owner_deletion=True)
    specs = spec.pytorch_replica_specs or {}
    has_master = MASTER in specs
    out: list[tuple[str, Pod]] = []
    for role in ROLES:
        replica = specs.get(role)
        if replica is None:
            continue
        template = replica_template(replica, role, has_master)
        for index in range(1 if replica.replicas is None else replica.replicas):
            labels = {OPERATOR_NAME: CONTROLLER, JOB_NAME: name.replace("/", "-"), REPLICA_TYPE: role.lower(),
                      REPLICA_INDEX: str(index)}
            if role == MASTER or (not has_master and index == 0):  # IsMasterRole
                labels[JOB_ROLE] = "master"
            pod_name = f"{name}-{role.lower()}-{index}"  # GenGeneralName
            first = exp.taken.get((namespace, pod_name))
            if first is not None:
                exp.bad(where, "metadata.name", f"pod {namespace}/{pod_name} already exists, defined at {first}")
                continue
            exp.taken[namespace, pod_name] = str(where)
            out.append((role, exp.pod(pod_name, namespace, template, labels, ref)))
    return out


def expand_pytorchjob(exp: _Expander, where: Location, doc: PyTorchJobDoc, namespace: str) -> PyTorchJobRun | None:
    """The PyTorchJob's pods, arriving together at its ``kubedra.io/start-after``, and its run (completion, clean-up,
    deadline)."""
    from kubedra.sim.workloads import PodArrival

    name, spec = doc.metadata.name, doc.spec
    for path, message in job_problems(doc):
        exp.bad(where, path, message)
    if exp.problems:
        return None
    specs = {role: r for role, r in (spec.pytorch_replica_specs or {}).items() if r is not None}
    timings = {role: exp.timing(where, doc.metadata, r.template.metadata if r.template else doc.metadata,
                                f"spec.pytorchReplicaSpecs[{role}].template.") for role, r in specs.items()}
    policy = spec.run_policy
    if exp.problems or policy.suspend or (policy.managed_by or MANAGERS[0]) != MANAGERS[0]:
        return None
    uid = doc.metadata.uid or stable_uid("PyTorchJob", namespace, name)
    owner = f"PyTorchJob/{namespace}/{name}"
    pods = job_pods(exp, where, name, namespace, spec, uid=uid)
    for role, pod in pods:
        arrive_at, run_for = timings[role]
        exp.add(arrive_at, PodArrival(pod, arrive_at, run_for, owner))
    keys = {role: tuple(f"{namespace}/{p.metadata.name}" for r, p in pods if r == role) for role in ROLES}
    created = min((t[0] for t in timings.values()), default=0.0)
    deadline = None if policy.active_deadline_seconds is None else created + policy.active_deadline_seconds
    return PyTorchJobRun(name, namespace, keys[MASTER] if MASTER in specs else (), keys[WORKER],
                         spec.elastic_policy is not None, policy.clean_pod_policy or "None", deadline)


class PyTorchJobController:
    """One PyTorchJob during the run: after each instant, whether it has succeeded (``UpdateJobStatus``), and then
    its ``cleanPodPolicy``; past ``activeDeadlineSeconds`` it deletes every pod not done."""

    def __init__(self, sim: Simulation, run: PyTorchJobRun) -> None:
        self.sim = sim
        self.run = run
        self.made = 0

    def succeeded(self) -> bool:
        pods = self.sim.state.pods

        def done(key: str) -> bool:
            record = pods.get(key)
            return record is not None and record.finished_at is not None and not record.deleted

        run = self.run
        if run.master:
            return all(done(k) for k in run.master)
        ended = [done(k) for k in run.workers]
        return bool(ended) and (all(ended) or (run.elastic and any(ended)))

    def step(self) -> bool:
        """Advance; whether the job is still running."""
        from kubedra.sim.run import Event

        sim, run = self.sim, self.run
        subject = f"PyTorchJob {run.namespace}/{run.name}"
        if self.succeeded():
            sim.events.append(Event(sim.now, "Completed", subject, message=f"{subject} is successfully completed."))
            if run.clean_pod_policy != "None":
                self._delete(f"{subject}: succeeded, cleanPodPolicy {run.clean_pod_policy}")
            return False
        if run.deadline_at is not None and sim.now >= run.deadline_at:
            sim.events.append(Event(sim.now, "Failed", subject, message=f"Job {run.name} has failed because it was "
                                                                       "active longer than specified deadline"))
            self._delete(f"{subject}: activeDeadlineSeconds")
            return False
        return True

    def _delete(self, reason: str) -> None:
        """``DeletePodsAndServices``: the pods not done (a finished pod's deletion changes nothing here)."""
        for key in (*self.run.master, *self.run.workers):
            record = self.sim.state.pods.get(key)
            if record is not None:
                self.sim.delete(record, reason, 0.0)
