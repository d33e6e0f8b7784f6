"""JobSet (``jobset.x-k8s.io/v1alpha2``) as the JobSet controller and its webhooks act, read from
kubernetes-sigs/jobset at 08dfbdfd (v0.13.0-devel): ``api/jobset/v1alpha2/jobset_types.go``,
``pkg/controllers/jobset_controller.go`` (``constructJob``, ``labelAndAnnotateObject``, ``reconcileReplicatedJobs``),
``pkg/webhooks/jobset_webhook.go`` (defaults, ``ValidateCreate``) and ``pod_webhook.go`` (exclusive placement).
Users run the release, v0.12.0: its CRD is the one vendored (the dev commit's adds ``minimum: 0`` on a replicated
job's ``replicas``), and the Jobs' and pods' names, labels, annotations, owners, hostnames and subdomains, the leader's
exclusive-placement affinities, the followers' node selectors and InOrder's order of creation are checked against
the v0.12.0 controller (``tests/sigs``).

**Negative replicas.** v0.12.0's CRD sets no minimum and its webhook no check: a replicated job with ``replicas < 0``
makes no Job, and the counts the controller writes sum it as it is (``globalReplicas``, ``globalJobIndex``,
``groupReplicas``, ``groupJobIndex``); a Job whose count comes out negative (``"-1"``) is no label value, so
kube-apiserver refuses it and the controller retries it for ever: kubedra makes no such Job. InOrder stops at such a
replicated job (``allReplicasStarted`` asks ``replicas == ready + succeeded + failed``).

**Expansion.** Each ``spec.replicatedJobs[i]`` makes ``replicas`` Jobs ``<jobset>-<replicatedJob>-<index>``, each
run as kubedra runs any Job (parallelism, completions, restartPolicy, the template's ``kubedra.io/run-for``). The
webhook's defaults apply first: ``completionMode: Indexed`` and ``restartPolicy: OnFailure`` where unset,
``successPolicy.operator: All``, ``startupPolicy: AnyOrder``. Jobs and their pods get the controller's labels and
annotations (``jobset.sigs.k8s.io/jobset-name``, ``jobset-uid``, ``replicatedjob-name``, ``replicatedjob-replicas``,
``global-replicas``, ``job-index``, ``job-global-index``, ``job-key`` (SHA-1 of ``<namespace>/<job>``),
``group-name``, ``group-replicas``, ``job-group-index``, ``restart-attempt`` 0). kubedra's pod model has no
``hostname``/``subdomain``: the DNS hostnames (``<job>-<index>`` under subdomain ``<jobset>``) are not carried.

**Startup.** ``AnyOrder``: every Job is made when the JobSet is (its ``kubedra.io/start-after``). ``InOrder``: a
replicated job's Jobs are made only once each Job of the one before is ready (its running plus succeeded pods reach
``min(parallelism, completions)``), as ``reconcileReplicatedJobs`` waits. ``spec.suspend``: its Jobs are made
suspended, so no pod is made.

**Exclusive placement.** ``alpha.jobset.sigs.k8s.io/exclusive-topology: <key>`` on the JobSet or a replicated job's
template, as v0.12.0's pod webhook (``pkg/webhooks/pod_webhook.go``) does it: the leader pod (completion index 0)
gets required pod affinity to its own ``job-key`` and anti-affinity to other Jobs' ``job-key`` (same
``jobset.sigs.k8s.io/priority``) over ``<key>`` (``setExclusiveAffinities``); the followers are made once the leader
is bound (``ValidateCreate`` refuses them before, the Job controller retries), each pinned by
``nodeSelector: {<key>: <leader's node's value>}`` (``setNodeSelector``): ``ExclusiveJobController`` in
``sim.jobset_controllers``. The
node-selector strategy (``alpha.jobset.sigs.k8s.io/node-selector``) is not modelled, nor a leader replaced after
preemption before its followers are made (they keep waiting on the first).

**During the run** (``JobSetController`` in ``sim.jobset_controllers``, ``reconcile`` in ``jobset_controller.go``),
after each instant: a failed Job (kubedra's Jobs fail only when deleted pods pass ``backoffLimit`` or match a
``FailJob`` rule) ends the JobSet as ``executeFailurePolicy`` decides: ``Failed`` without a ``failurePolicy``; with
one, the first rule that applies (``ruleIsApplicable``) acts, ``RestartJobSet`` where none does: ``FailJobSet``
fails it, ``RestartJobSet`` restarts it below ``maxRestarts`` and fails it there (``ReachedMaxRestarts``),
``RestartJobSetAndIgnoreMaxRestarts`` restarts it uncounted. A restart deletes every Job and makes it again with the
next ``restart-attempt`` (``Recreate``/``BlockingRecreate``: ``sim.jobset_restarts``). Else enough succeeded Jobs
complete it (``executeSuccessPolicy``). A finished JobSet's active Jobs are deleted with their pods (``deleteJobs``),
and no more are made. ``dependsOn``: a replicated job's Jobs are made once ``dependencyReachedStatus`` holds. Checked
against the v0.12.0 controller (``tests/sigs``): restarts' Jobs and pods, ``status.restarts``, the final condition.

**Not modelled.** ``RestartJob``/``RestartJobAndIgnoreMaxRestarts`` (v0.12.0's webhook refuses them while its
``RestartJob`` gate is off, the default: kubedra too). Coordinator, TTL, volume claim policies and ``managedBy``
are read and ignored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cluster.gpuslices import stable_uid
from kubedra.objects.formats import unsupported
from kubedra.objects.model import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Pod,
    PodAffinity,
    PodAffinityTerm,
)
from kubedra.sim.manifests import JobSetDoc, JobSpec, ReplicatedJob

if TYPE_CHECKING:
    from kubedra.sim.workloads import JobRun

API_VERSION = "jobset.x-k8s.io/v1alpha2"
PREFIX = "jobset.sigs.k8s.io/"
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY_KEY = "alpha.jobset.sigs.k8s.io/node-selector"
JOB_KEY = PREFIX + "job-key"
PRIORITY_KEY = PREFIX + "priority"
DNS1035_MAX = 63
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
               "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
SUCCESS_OPERATORS = ("All", "Any")
STARTUP_ORDERS = ("AnyOrder", "InOrder")
RESTART_STRATEGIES = ("Recreate", "BlockingRecreate", "InPlaceRestart")
MAX_INT32 = 2**31 - 1


def dns1035(value: str) -> list[str]:
    """``validation.IsDNS1035Label``'s messages."""
    out = []
    if len(value) > DNS1035_MAX:
        out.append(f"must be no more than {DNS1035_MAX} characters")
    if not _DNS1035.fullmatch(value):
        out.append(DNS1035_MSG)
    return out


def int32(value: int) -> int:
    """``value`` wrapped as Go's int32 arithmetic wraps it."""
    return (value + 2**31) % 2**32 - 2**31


def job_key(namespace: str, job: str) -> str:
    """``jobHashKey``: SHA-1 of ``<namespace>/<job>``, hex."""
    return hashlib.sha1(f"{namespace}/{job}".encode()).hexdigest()  # noqa: S324 - the controller's label value


def quote(text: object) -> str:
    return json.dumps(text, ensure_ascii=False)


def webhook_problems(name: str, spec: Any, raw_spec: dict[str, Any]) -> list[tuple[str, str]]:
    """``ValidateCreate`` and the CRD's schema on a JobSet spec (after the webhook's defaults): (field, message)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    raw_jobs = raw_spec.get("replicatedJobs") or []
    if not spec.replicated_jobs:
        out.append(("spec.replicatedJobs", "Required value: a JobSet needs at least one replicated job"))
    for i, rjob in enumerate(spec.replicated_jobs):
        path = f"spec.replicatedJobs[{i}]"
        if not rjob.name:
            out.append((f"{path}.name", "Required value"))
            continue
        if rjob.name in seen:
            out.append((f"{path}.name", f'Duplicate value: {{"name":{quote(rjob.name)}}}'))
        seen.add(rjob.name)
        if i == 0 and rjob.depends_on:
            out.append((f"{path}.dependsOn", "DependsOn can't be set for the first ReplicatedJob"))
        out += [(f"{path}.dependsOn", f"replicatedJob: {rjob.name} cannot depend on replicatedJob: {dep.get('name')}")
                for dep in rjob.depends_on or [] if dep.get("name") not in seen]  # this one or one before it
        raw = ((raw_jobs[i] if i < len(raw_jobs) else {}).get("template") or {}).get("spec") or {}
        out += _replicated_problems(name, path, rjob, raw.get("completionMode", "Indexed") == "Indexed")
    return out + _policy_problems(spec, seen)


def _dns(field: str, value: str, too_long: str, shown: str | None = None) -> list[tuple[str, str]]:
    """IsDNS1035Label's messages for ``value`` at ``field``, the length one replaced by the webhook's own."""
    return [(field, f"Invalid value: {quote(value if shown is None else shown)}: "
                    f"{too_long if 'no more than' in message else message}") for message in dns1035(value)]


def _replicated_problems(name: str, path: str, rjob: Any, indexed: bool) -> list[tuple[str, str]]:
    """One replicated job's checks: the product of replicas and parallelism, the group name, and the longest Job
    and pod names it makes as DNS-1035 labels."""
    out: list[tuple[str, str]] = []
    parallelism = 1 if rjob.template.spec.parallelism is None else rjob.template.spec.parallelism
    if parallelism * rjob.replicas > MAX_INT32:
        out.append((f"{path}.replicas", f"the product of replicas and parallelism must not exceed {MAX_INT32} "
                                        f"for replicatedJob '{rjob.name}'"))
    out += _dns(f"{path}.groupName", rjob.group_name,
                ".spec.replicatedJob[].groupName is too long, must be less than 63 characters")
    longest_job = f"{name}-{rjob.name}-{int32(rjob.replicas - 1)}"  # int32 arithmetic: 0 replicas give "-1"
    out += _dns(f"{path}.name", longest_job,
                "JobSet name is too long, job names generated for this JobSet will exceed 63 characters")
    completions = rjob.template.spec.completions
    if indexed and completions is not None:
        longest_pod = f"{longest_job}-{int32(completions - 1)}-abcde"
        out += _dns(f"{path}.name", longest_pod,
                    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters",
                    shown=longest_job)
    return out


def _policy_problems(spec: Any, names: set[str]) -> list[tuple[str, str]]:
    """The network subdomain, success, startup and failure policies."""
    out: list[tuple[str, str]] = []
    network = spec.network
    if network is not None and network.subdomain:
        out += _dns("spec.network.subdomain", network.subdomain,
                    ".spec.network.subdomain is too long, must be less than 63 characters")
    success = spec.success_policy
    if success is not None:
        if success.operator not in SUCCESS_OPERATORS:
            out.append(("spec.successPolicy.operator", unsupported(success.operator, SUCCESS_OPERATORS)))
        out += [("spec.successPolicy.targetReplicatedJobs",
                 f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs")
                for target in success.target_replicated_jobs if target not in names]
    startup = spec.startup_policy
    if startup is not None:
        if startup.startup_policy_order not in STARTUP_ORDERS:
            out.append(("spec.startupPolicy.startupPolicyOrder",
                        unsupported(startup.startup_policy_order, STARTUP_ORDERS)))
        elif startup.startup_policy_order == "InOrder" and any(r.depends_on for r in spec.replicated_jobs):
            out.append(("spec", "StartupPolicy and DependsOn APIs are mutually exclusive"))
    failure = spec.failure_policy
    if failure is not None:
        if failure.restart_strategy not in RESTART_STRATEGIES:
            out.append(("spec.failurePolicy.restartStrategy",
                        unsupported(failure.restart_strategy, RESTART_STRATEGIES)))
        elif failure.restart_strategy == "InPlaceRestart":
            out.append(("spec.failurePolicy.restartStrategy", "InPlaceRestart restart strategy cannot be set when "
                                                              "InPlaceRestart feature gate is disabled"))
        if any(rule.get("action") in ("RestartJob", "RestartJobAndIgnoreMaxRestarts") for rule in failure.rules or ()):
            out.append(("spec.failurePolicy.rules", "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy "
                                                    "actions are not allowed when RestartJob feature gate is disabled"))
        if failure.max_restarts < 0:
            out.append(("spec.failurePolicy.maxRestarts",
                        f"Invalid value: {failure.max_restarts}: should be greater than or equal to 0"))
    return out


def exclusive_affinity(affinity: Affinity | None, labels: dict[str, str], topology_key: str) -> Affinity:
    """``setExclusiveAffinities``: required affinity to the pod's own ``job-key`` and anti-affinity to any other
    Job's (of the same ``jobset.sigs.k8s.io/priority``) over ``topology_key``, added to what the pod has."""
    own = labels[JOB_KEY]
    same = LabelSelectorRequirement(key=JOB_KEY, operator="In", values=[own])
    together = PodAffinityTerm(
        label_selector=LabelSelector(match_expressions=[same]),
        topology_key=topology_key, namespace_selector=LabelSelector())
    apart = PodAffinityTerm(
        label_selector=LabelSelector(match_expressions=[
            LabelSelectorRequirement(key=JOB_KEY, operator="Exists"),
            LabelSelectorRequirement(key=JOB_KEY, operator="NotIn", values=[own]),
            LabelSelectorRequirement(key=PRIORITY_KEY, operator="In", values=[labels.get(PRIORITY_KEY, "")]),
        ]),
        topology_key=topology_key, namespace_selector=LabelSelector())
    return with_required_terms(affinity, together, apart)


def with_required_terms(affinity: Affinity | None, together: PodAffinityTerm, apart: PodAffinityTerm) -> Affinity:
    """``affinity`` with ``together`` added to its required podAffinity and ``apart`` to its required
    podAntiAffinity, as the exclusive-placement webhooks (JobSet's, LeaderWorkerSet's) add them."""
    base = affinity or Affinity()
    pod_affinity = base.pod_affinity or PodAffinity()
    anti = base.pod_anti_affinity or PodAffinity()
    return msgspec.structs.replace(
        base,
        pod_affinity=msgspec.structs.replace(pod_affinity, required_during_scheduling_ignored_during_execution=[
            *pod_affinity.required_during_scheduling_ignored_during_execution, together]),
        pod_anti_affinity=msgspec.structs.replace(anti, required_during_scheduling_ignored_during_execution=[
            *anti.required_during_scheduling_ignored_during_execution, apart]),
    )


@dataclass(frozen=True, slots=True)
class JobSetRun:
    """A JobSet whose controller acts during the run (``sim.jobset_controllers.JobSetController``): ``first`` are
    the Jobs made when
    it is (among the workload's Jobs); ``stages`` the Jobs made later, one replicated job's each, in order
    (``startupPolicy: InOrder``: each once the one before is ready) or, where ``waits`` is given (one entry per
    stage), once the stage's ``dependsOn`` (replicated job, ``Ready``/``Complete``) is reached. ``replicas``: every
    replicated job's count; ``success``: the success policy's operator and targets; ``failure``: the failure
    policy's ``maxRestarts`` and rules, None without one; ``restart_strategy``: its ``restartStrategy``."""

    name: str
    namespace: str
    stages: tuple[tuple[JobRun, ...], ...]
    first: tuple[JobRun, ...]
    waits: tuple[tuple[tuple[str, str], ...], ...] = ()
    replicas: tuple[tuple[str, int], ...] = ()
    success: tuple[str, tuple[str, ...]] = ("All", ())
    failure: tuple[int, tuple[dict[str, Any], ...]] | None = None
    restart_strategy: str = "Recreate"
    # Kueue (``sim.kueue_controller``): the LocalQueue its ``kueue.x-k8s.io/queue-name`` label names; then ``first``
    # is not among the workload's Jobs but made on admission, ``held`` says it was written suspended (made so
    # without Kueue's queues), and ``created_at`` is when its Workload is created (its own ``start-after``)
    queue: str | None = None
    held: bool = False
    created_at: float = 0.0

    @property
    def owner(self) -> str:
        return f"JobSet/{self.namespace}/{self.name}"


class JobSetCounts:
    """The counts ``labelAndAnnotateObject`` writes: every replicated job's replicas, per group and before each, summed
    as ``globalReplicas``, ``groupReplicas``, ``globalJobIndex`` and ``groupJobIndex`` sum them (a negative one, which
    v0.12.0 accepts and makes no Job of, counts as it is)."""

    def __init__(self, replicated: Sequence[ReplicatedJob]) -> None:
        self.total = sum(r.replicas for r in replicated)
        self.groups: dict[str, int] = {}
        self.before: dict[str, tuple[int, int]] = {}  # replicated job -> (global, in its group) index of its Job 0
        done = 0
        for rjob in replicated:
            self.before.setdefault(rjob.name, (done, self.groups.get(rjob.group_name, 0)))
            self.groups[rjob.group_name] = self.groups.get(rjob.group_name, 0) + rjob.replicas
            done += rjob.replicas

    def marks(self, doc: JobSetDoc, namespace: str, rjob: ReplicatedJob, index: int) -> dict[str, str]:
        """The labels (and, the same, annotations) of Job ``index`` of ``rjob`` and of its pods."""
        name = doc.metadata.name
        job_name = f"{name}-{rjob.name}-{index}"
        global_before, group_before = self.before[rjob.name]
        return {
            PREFIX + "jobset-name": name,
            PREFIX + "jobset-uid": doc.metadata.uid or stable_uid("JobSet", namespace, name),
            PREFIX + "replicatedjob-name": rjob.name,
            PREFIX + "restart-attempt": "0",
            PREFIX + "replicatedjob-replicas": str(rjob.replicas),
            PREFIX + "global-replicas": str(self.total),
            PREFIX + "job-index": str(index),
            JOB_KEY: job_key(namespace, job_name),
            PREFIX + "job-global-index": str(global_before + index),
            PREFIX + "group-name": rjob.group_name,
            PREFIX + "group-replicas": str(self.groups[rjob.group_name]),
            PREFIX + "job-group-index": str(group_before + index),
        }


def jobset_runs(name: str, namespace: str, spec: Any, stages: list[tuple[JobRun, ...]],
                refused: set[int]) -> tuple[tuple[JobRun, ...], JobSetRun | None]:
    """The Jobs made when the JobSet is, and its controller's run (None where it has nothing to do during the run).
    InOrder makes each replicated job's Jobs in turn, stopping at one whose count is negative (which v0.12.0 accepts,
    making no Job) or one of whose Jobs was refused (``refused``): ``allReplicasStarted`` asks ``replicas == ready +
    succeeded + failed``, never so there. ``dependsOn``: a replicated job's Jobs wait for their dependencies."""
    rjobs = spec.replicated_jobs
    in_order = spec.startup_policy is not None and spec.startup_policy.startup_policy_order == "InOrder"
    if spec.suspend:
        return tuple(job for stage in stages for job in stage), None
    later: list[tuple[JobRun, ...]] = []
    waits: list[tuple[tuple[str, str], ...]] = []
    if in_order:
        stuck = [i for i, rjob in enumerate(rjobs) if rjob.replicas < 0 or i in refused]
        stages = stages[:stuck[0] + 1] if stuck else stages
        first, later = stages[0], list(stages[1:])
    else:
        made: list[JobRun] = []
        for rjob, stage in zip(rjobs, stages, strict=True):
            needs = tuple((str(d.get("name", "")), str(d.get("status", ""))) for d in rjob.depends_on or [])
            if needs:
                later.append(stage)
                waits.append(needs)
            else:
                made += stage
        first = tuple(made)
    success = spec.success_policy
    policy = (success.operator, tuple(success.target_replicated_jobs)) if success is not None else ("All", ())
    failure = spec.failure_policy
    run = JobSetRun(name, namespace, tuple(later), first, tuple(waits),
                    tuple((rjob.name, rjob.replicas) for rjob in rjobs), policy,
                    (failure.max_restarts, tuple(failure.rules or ())) if failure is not None else None,
                    failure.restart_strategy if failure is not None else "Recreate")
    return first, run if later or len(first) > 1 or failure is not None else None


def jobset_defaults(spec: JobSpec, mode_set: bool) -> JobSpec:
    """The JobSet webhook's defaults on a replicated job's Job: ``completionMode: Indexed`` where it was not written,
    ``restartPolicy: OnFailure`` where empty."""
    if not mode_set:
        spec = msgspec.structs.replace(spec, completion_mode="Indexed")
    if not spec.template.spec.restart_policy:
        pod_spec = msgspec.structs.replace(spec.template.spec, restart_policy="OnFailure")
        spec = msgspec.structs.replace(spec, template=msgspec.structs.replace(spec.template, spec=pod_spec))
    return spec


def jobset_job(spec: JobSpec, marks: dict[str, str], exclusive: str | None, suspended: bool) -> JobSpec:
    """``constructJob``'s Job spec: the marks on the pod template (its pods get ``jobset.sigs.k8s.io/priority`` from
    the pod webhook), the exclusive-topology annotation where asked for (the pod webhook acts on it: ``leader_pods``),
    suspended with the JobSet."""
    meta = spec.template.metadata
    pod_spec = spec.template.spec
    labels = {**meta.labels, **marks, PRIORITY_KEY: str(pod_spec.priority or 0)}
    annotations = {**meta.annotations, **marks}
    if exclusive is not None:
        annotations[EXCLUSIVE_KEY] = exclusive
    meta = msgspec.structs.replace(meta, labels=labels, annotations=annotations)
    template = msgspec.structs.replace(spec.template, metadata=meta, spec=pod_spec)
    return msgspec.structs.replace(spec, template=template, suspend=suspended)


COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def is_leader(pod: Pod) -> bool:
    """``placement.IsLeaderPod``: completion index 0 (a NonIndexed Job's pods have none: all are followers)."""
    return pod.metadata.annotations.get(COMPLETION_INDEX) == "0"


def leader_pods(pods: Sequence[Pod], topology_key: str) -> tuple[Pod, ...]:
    """``podWebhook.patchPod`` on the leader: ``setExclusiveAffinities``; followers are left for
    ``sim.jobset_controllers.ExclusiveJobController`` (``setNodeSelector``, once the leader is scheduled)."""
    return tuple(msgspec.structs.replace(pod, spec=msgspec.structs.replace(
        pod.spec, affinity=exclusive_affinity(pod.spec.affinity, pod.metadata.labels, topology_key)))
        if is_leader(pod) else pod for pod in pods)

