"""What ``kubedra explain`` answers, as data, and its documented JSON shape (``as_dict``)::

    pod:     {"pod": "ns/name", "phase": "Pending|Running|Succeeded", "node": str|null, "message": str,
              "summary": str, "claims": [{"claim", "state", "devices", "reservedFor", "allocatedOn"}],
              "groups": [{"check", "reason", "reasons": [str], "count": int, "nodes": [str], "heldBy": [str]}]}
    claim:   {"claim": "ns/name", "state": "allocated|pending", "devices": [...], "allocatedOn": str,
              "reservedFor": [...], "message": str, "pods": [<pod>...], "groups": [...]}

``check`` is one of ``pod`` (PreFilter: applies to every node), ``node`` (node rules), ``allocation`` (a claim's
existing allocation), ``devices`` (the allocator), ``error`` (input the allocator refuses) or ``fits``. Reasons
name at most 5 claims in the way ("and K more"); ``heldBy`` (only when some) lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubedra.allocator.diagnosis import Issue, users_suffix
from kubedra.objects.model import Pod
from kubedra.scheduler.extended import SPECIAL_CLAIM_IN_MEMORY_NAME

FITS = "fits"
CHECK_ORDER = {FITS: 0, "pod": 1, "error": 2, "node": 3, "allocation": 4, "devices": 5}


@dataclass
class Group:
    """Nodes with the same explanation; ``issues`` carry the claims in the way, merged over the nodes."""

    check: str
    issues: list[Issue]
    nodes: list[str] = field(default_factory=list)
    users: list[dict[str, None]] = field(default_factory=list)

    def reasons(self, labels: dict[str, str] | None = None, max_users: int = 5) -> list[str]:
        out = []
        for issue, users in zip(self.issues, self.users, strict=True):
            subject = _subject(issue, labels or {})
            out.append(subject + issue.text + users_suffix(list(users), issue.users_label, max_users,
                                                                  len(self.nodes)))
        return out


def _subject(issue: Issue, labels: dict[str, str]) -> str:
    if issue.claim.endswith("/" + SPECIAL_CLAIM_IN_MEMORY_NAME):
        resource = labels.get(issue.request.partition("/")[0], issue.request)
        return f"extended resource {resource}: " if issue.request else "extended resources: "
    parts = [f"claim {issue.claim}"] if issue.claim else []
    if issue.request:
        parts.append(f"request {issue.request}")
    return (", ".join(parts) + ": ") if parts else ""


@dataclass
class ClaimLine:
    claim: str
    state: str  # allocated | pending | missing
    devices: list[str] = field(default_factory=list)
    reserved_for: list[str] = field(default_factory=list)
    allocated_on: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "state": self.state, "devices": self.devices,
                "reservedFor": self.reserved_for, "allocatedOn": self.allocated_on}


@dataclass
class PodExplanation:
    pod: str
    phase: str
    node: str
    message: str
    summary: str
    claims: list[ClaimLine]
    groups: list[Group]
    labels: dict[str, str] = field(default_factory=dict)  # special-claim request name -> extended resource
    started_at: float | None = None
    ended_at: float | None = None
    end_reason: str = ""
    cluster: ClusterVerdict | None = None  # what the cluster itself said of the pod, where the input carried it
    gang: dict[str, Any] | None = None  # its PodGroup's state (``explain_groups.gang_section``)
    preemption: dict[str, Any] | None = None  # what preemption does for it (``explain_groups.preemption_section``)

    def as_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"cluster": self.cluster.as_dict()} if self.cluster is not None else {}
        if self.gang is not None:
            extra["gang"] = self.gang
        if self.preemption is not None:
            extra["preemption"] = self.preemption
        return {
            "pod": self.pod,
            "phase": self.phase,
            "node": self.node or None,
            "message": self.message,
            "summary": self.summary,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "endReason": self.end_reason,
            "claims": [c.as_dict() for c in self.claims],
            "groups": [_group_dict(g, self.labels) for g in self.groups],
            **extra,
        }


@dataclass(frozen=True)
class ClusterVerdict:
    """The cluster's own answer for a pod (its ``nodeName`` and ``PodScheduled`` condition, as read from a live
    cluster or a snapshot) beside kubedra's; ``agrees`` is None where the cluster has given no answer yet."""

    node: str
    scheduled: str  # the PodScheduled condition's status: "True", "False" or "" (no condition)
    reason: str
    message: str
    agrees: bool | None
    note: str

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node or None, "scheduled": self.scheduled or None, "reason": self.reason or None,
                "message": self.message or None, "agrees": self.agrees, "note": self.note}


def compare_with_cluster(observed: Pod, explanation: PodExplanation) -> ClusterVerdict:
    """Say where the cluster's own status and kubedra's decision differ instead of hiding it: a pod the cluster's
    scheduler marked Unschedulable that kubedra places, or one bound elsewhere than kubedra has it."""
    condition = next((c for c in observed.status.conditions if c.type == "PodScheduled"), None)
    status, reason, message = (condition.status, condition.reason, condition.message) if condition else ("", "", "")
    bound, ours = observed.spec.node_name, explanation.node
    said = f"{reason}: {message}" if message else reason or "unschedulable"
    if bound:
        agrees = bound == ours
        note = (f"the cluster runs it on {bound}" if agrees else
                f"the cluster runs it on {bound}, kubedra has it on {ours or 'no node'}")
    elif observed.status.phase in ("Succeeded", "Failed"):
        agrees, note = True, f"the cluster reports it {observed.status.phase}"
    elif status == "False":
        agrees = explanation.phase == "Pending"
        note = (f"the cluster's scheduler agrees: {said}" if agrees else
                f"the cluster's scheduler reports {said}, but kubedra finds it fits on {ours}: the cluster may have "
                "changed since the scheduler last tried (it retries on cluster events and after a backoff), or the "
                "scheduler weighs something kubedra does not model")
    else:
        agrees = None
        note = ("the cluster's scheduler has not decided yet (no PodScheduled condition)" +
                (f"; kubedra places it on {ours}" if ours else ""))
    return ClusterVerdict(bound, status, reason, message, agrees, note)


@dataclass
class ClaimExplanation:
    claim: ClaimLine
    message: str
    pods: list[PodExplanation]
    groups: list[Group]

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.claim.as_dict(),
            "message": self.message,
            "pods": [p.as_dict() for p in self.pods],
            "groups": [_group_dict(g, {}) for g in self.groups],
        }


def _group_dict(group: Group, labels: dict[str, str]) -> dict[str, Any]:
    reasons = group.reasons(labels)
    held = list(dict.fromkeys(u for users in group.users for u in users))
    return {"check": group.check, "reason": "; ".join(reasons), "reasons": reasons,
            "count": len(group.nodes), "nodes": group.nodes, **({"heldBy": held} if held else {})}
