"""The apps/v1 and batch/v1 documents kubedra expands, read strictly: every field Kubernetes defines is accepted
(those kubedra does not use are ignored), anything else is an error naming the field, as with
``kubectl --validate=strict``. Also the two controller helpers they need: label selectors and the template hash.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from kubedra.cluster.nodepool import Strict
from kubedra.objects.model import Int32, Int64, ObjectMeta, PodSpec

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


class SelectorRequirement(Strict, kw_only=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(Strict, kw_only=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[SelectorRequirement] = []


class PodTemplate(Strict, kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec


class AppsSpec(Strict, kw_only=True):
    replicas: Int32 | None = None
    selector: LabelSelector | None = None
    template: PodTemplate
    min_ready_seconds: Any = None
    revision_history_limit: Any = None


class DeploymentSpec(AppsSpec, kw_only=True):
    strategy: Any = None
    paused: Any = None
    progress_deadline_seconds: Any = None


class ReplicaSetSpec(AppsSpec, kw_only=True):
    pass


class Ordinals(Strict, kw_only=True):
    start: Int32 = 0


class StatefulSetSpec(AppsSpec, kw_only=True):
    service_name: Any = None
    volume_claim_templates: Any = None
    pod_management_policy: Any = None
    update_strategy: Any = None
    persistent_volume_claim_retention_policy: Any = None
    ordinals: Ordinals | None = None


class DaemonSetSpec(Strict, kw_only=True):
    selector: LabelSelector | None = None
    template: PodTemplate
    update_strategy: Any = None
    min_ready_seconds: Any = None
    revision_history_limit: Any = None


class JobSpec(Strict, kw_only=True):
    parallelism: Int32 | None = None
    completions: Int32 | None = None
    completion_mode: str = "NonIndexed"
    suspend: bool = False
    template: PodTemplate
    selector: Any = None
    manual_selector: Any = None
    active_deadline_seconds: Any = None
    backoff_limit: Any = None
    backoff_limit_per_index: Any = None
    max_failed_indexes: Any = None
    pod_failure_policy: Any = None
    success_policy: Any = None
    ttl_seconds_after_finished: Any = None
    pod_replacement_policy: Any = None
    managed_by: Any = None


class JobTemplate(Strict, kw_only=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec


class CronJobSpec(Strict, kw_only=True):
    schedule: str
    job_template: JobTemplate
    time_zone: str | None = None
    starting_deadline_seconds: Int64 | None = None
    concurrency_policy: str | None = None  # the API server's default: Allow
    suspend: bool | None = None
    successful_jobs_history_limit: Any = None
    failed_jobs_history_limit: Any = None


class _Doc(Strict, kw_only=True):
    api_version: str
    kind: str
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: Any = None


class DeploymentDoc(_Doc, kw_only=True):
    spec: DeploymentSpec


class ReplicaSetDoc(_Doc, kw_only=True):
    spec: ReplicaSetSpec


class StatefulSetDoc(_Doc, kw_only=True):
    spec: StatefulSetSpec


class DaemonSetDoc(_Doc, kw_only=True):
    spec: DaemonSetSpec


class JobDoc(_Doc, kw_only=True):
    spec: JobSpec


class CronJobDoc(_Doc, kw_only=True):
    """Read, checked as the API server checks it, and run by the CronJob controller (:mod:`kubedra.sim.cronjobs`)."""

    spec: CronJobSpec


class ReplicatedJob(Strict, kw_only=True):
    name: str = ""
    group_name: str = "default"  # the CRD's default
    template: JobTemplate
    replicas: Int32 = 1  # the CRD's default
    depends_on: Any = None


class JobSetNetwork(Strict, kw_only=True):
    enable_dns_hostnames: bool | None = msgspec.field(default=None, name="enableDNSHostnames")  # webhook: true
    subdomain: str = ""
    publish_not_ready_addresses: bool | None = None


class JobSetSuccessPolicy(Strict, kw_only=True):
    operator: str = "All"
    target_replicated_jobs: list[str] = []


class JobSetStartupPolicy(Strict, kw_only=True):
    startup_policy_order: str = "AnyOrder"


class JobSetFailurePolicy(Strict, kw_only=True):
    max_restarts: Int32 = 0
    restart_strategy: str = "Recreate"
    rules: Any = None


class JobSetSpec(Strict, kw_only=True):
    replicated_jobs: list[ReplicatedJob] = []
    network: JobSetNetwork | None = None
    success_policy: JobSetSuccessPolicy | None = None
    failure_policy: JobSetFailurePolicy | None = None
    startup_policy: JobSetStartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Any = None
    managed_by: str | None = None
    ttl_seconds_after_finished: Any = None
    volume_claim_policies: Any = None


class JobSetDoc(_Doc, kw_only=True):
    """``jobset.x-k8s.io/v1alpha2`` JobSet: expanded into its Jobs as the JobSet controller makes them
    (:mod:`kubedra.sim.jobsets`)."""

    spec: JobSetSpec


DOCUMENTS: dict[str, type[_Doc]] = {
    "Deployment": DeploymentDoc,
    "ReplicaSet": ReplicaSetDoc,
    "StatefulSet": StatefulSetDoc,
    "DaemonSet": DaemonSetDoc,
    "Job": JobDoc,
    "CronJob": CronJobDoc,
    "JobSet": JobSetDoc,
}


def selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels and every matchExpression must hold."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        present = req.key in labels
        ok = {
            "In": present and labels.get(req.key) in req.values,
            "NotIn": not present or labels.get(req.key) not in req.values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(req.operator, False)
        if not ok:
            return False
    return True


def template_hash(template: PodTemplate) -> str:
    """``pod-template-hash``: FNV-32a of the template, encoded as ``rand.SafeEncodeString`` does."""
    data = json.dumps(msgspec.to_builtins(template), sort_keys=True, separators=(",", ":")).encode()
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(NAME_ALPHABET[ord(c) % len(NAME_ALPHABET)] for c in str(h))
