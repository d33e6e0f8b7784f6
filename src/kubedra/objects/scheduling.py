"""scheduling.k8s.io objects the simulator reads: PriorityClass (v1), Workload and PodGroup (v1beta1, 1.37).

Shaped as ``k8s.io/api/scheduling/v1beta1`` (``types.go``); unknown fields are errors, as with
``kubectl --validate=strict``. 1.36 served Workload and PodGroup as ``v1alpha2``, whose PodGroup named its template
in ``spec.podGroupTemplateRef.workload`` (``workloadName``, ``podGroupTemplateName``); those documents are
converted to v1beta1 with a warning. Admission's defaults are applied where the scheduler reads them:
``spec.priority`` from ``priorityClassName`` (else 0) and ``disruptionMode: {single: {}}``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubedra.objects.model import Condition, Int32, ObjectMeta
from kubedra.objects.model import Spec as Strict

GROUP = "scheduling.k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1ALPHA2 = f"{GROUP}/v1alpha2"
GANG_KINDS = ("Workload", "PodGroup")
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
"""The API server's built-in classes (``pkg/apis/scheduling``: SystemCriticalPriority and +1000)."""


class PriorityClass(Strict, kw_only=True):
    api_version: str = f"{GROUP}/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: Int32
    global_default: bool = False
    description: str = ""
    preemption_policy: str | None = None  # PreemptLowerPriority (default) | Never


class Empty(Strict, kw_only=True):
    """``basic: {}``, ``single: {}``, ``all: {}``."""


class GangSchedulingPolicy(Strict, kw_only=True):
    min_count: Int32


class PodGroupSchedulingPolicy(Strict, kw_only=True):
    basic: Empty | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(Strict, kw_only=True):
    key: str


class PodGroupSchedulingConstraints(Strict, kw_only=True):
    topology: list[TopologyConstraint] = []


class PodGroupResourceClaim(Strict, kw_only=True):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class DisruptionMode(Strict, kw_only=True):
    single: Empty | None = None
    all: Empty | None = None


class PodGroupTemplate(Strict, kw_only=True):
    name: str
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class TypedLocalObjectReference(Strict, kw_only=True):
    api_group: str = ""
    kind: str
    name: str


class WorkloadSpec(Strict, kw_only=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate]
    composite_pod_group_templates: list[Any] = []


class Workload(Strict, kw_only=True):
    api_version: str = V1BETA1
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec


class WorkloadReference(Strict, kw_only=True):
    workload_name: str
    template_name: str


class PodGroupSpec(Strict, kw_only=True):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class PodGroupResourceClaimStatus(Strict, kw_only=True):
    name: str
    resource_claim_name: str | None = None


class PodGroupStatus(Strict, kw_only=True):
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(Strict, kw_only=True):
    api_version: str = V1BETA1
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)

    @property
    def min_count(self) -> int:
        """The gang's quorum; a basic group (or none given) schedules pod by pod: 1 (``getMinCount``)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang is not None else 1

    @property
    def is_gang(self) -> bool:
        return self.spec.scheduling_policy.gang is not None


def from_v1alpha2(kind: str, data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A 1.36 ``v1alpha2`` Workload or PodGroup as v1beta1, and what was rewritten (field paths)."""
    body = {**data, "apiVersion": V1BETA1}
    changes: list[str] = ["apiVersion"]
    if kind != "PodGroup":
        return body, changes
    spec = data.get("spec")
    if isinstance(spec, dict) and "podGroupTemplateRef" in spec:
        spec = dict(spec)
        ref = spec.pop("podGroupTemplateRef")
        workload = ref.get("workload") if isinstance(ref, dict) else None
        if isinstance(workload, dict):
            spec["workloadRef"] = {
                "workloadName": workload.get("workloadName", ""),
                "templateName": workload.get("podGroupTemplateName", ""),
            }
        changes.append("spec.podGroupTemplateRef")
        body["spec"] = spec
    return body, changes
