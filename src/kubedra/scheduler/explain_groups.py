"""``explain``'s answers for gangs and preemption: why a PodGroup's member waits, and which pods a preemption would
evict — or why it cannot (a DRA failure is UnschedulableAndUnresolvable in 1.37: no preemption frees devices).

Read from the run's own decisions (the group's latest pod-group cycle, the pod's latest PostFilter answer), so the
explanation says what the simulation did. Pure: records in, data out.

Documented JSON shape (keys of ``explain pod -o json``, present only when they apply)::

    gang:       {"podGroup": "ns/name", "policy": "gang|basic", "minCount": int, "memberCount": int, "bound": int,
                 "condition": {"type", "status", "reason", "message"} | null, "waiting": str,
                 "members": [{"pod", "outcome"}]}
    preemption: {"possible": bool, "node": str, "victims": [{"pod", "priority", "node"}], "message": str}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubedra.cluster.state import PodRecord
from kubedra.objects.scheduling import PodGroup
from kubedra.scheduler.gangs import GroupOutcome
from kubedra.scheduler.preemption import DRA_NOT_FREED, Preemption, priority_of

DEVICE_REASONS = ("cannot allocate all claims", "resourceclaim not available on the node", "timed out trying")


def gang_section(
    key: str, group: PodGroup | None, members: Sequence[PodRecord], cycle: GroupOutcome | None
) -> dict[str, Any]:
    """The member's PodGroup: its policy and quorum, how many members exist and run, and the latest cycle's verdict
    per member (which fitted, which did not and why)."""
    bound = sum(1 for r in members if r.started_at is not None and r.finished_at is None)
    live = [r for r in members if r.finished_at is None]
    section: dict[str, Any] = {
        "podGroup": key,
        "policy": "gang" if group is not None and group.is_gang else "basic",
        "minCount": group.min_count if group is not None else None,
        "memberCount": len(live),
        "bound": bound,
        "condition": None,
        "waiting": "",
        "members": [],
    }
    if group is None:
        section["waiting"] = f"PodGroup {key} does not exist: its pods wait in PreEnqueue until it is created"
        return section
    if group.status.conditions:
        c = group.status.conditions[0]
        section["condition"] = {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
    waiting_members = any(r.started_at is None for r in live)  # PreEnqueue holds unscheduled members only
    if group.is_gang and waiting_members and len(live) < group.min_count:
        section["waiting"] = (f"{len(live)} of minCount {group.min_count} members exist: they wait in PreEnqueue "
                              "(no event, no condition) until the rest are created")
    if cycle is not None:
        failures = cycle.failures
        for pod in cycle.tried:
            node = cycle.fitted.get(pod)
            outcome = failures.get(pod)
            if node is not None:
                text = f"fits on {node}" + ("" if cycle.scheduled else ", held back with the group")
            else:
                text = outcome.message if outcome is not None else "not tried"
            section["members"].append({"pod": pod, "outcome": text})
        if not cycle.scheduled and not section["waiting"]:
            section["waiting"] = (f"{cycle.message}: in its last cycle {len(cycle.fitted)} of {len(cycle.tried)} "
                                  "queued members fitted together on one snapshot; the group is retried when the "
                                  "cluster changes")
    return section


def gang_summary(summary: str, record: PodRecord, cycle: GroupOutcome | None) -> str:
    """A waiting member's node count describes the pod alone; a gang binds all together or none, so where its
    latest cycle failed the count must not read as "it can run now"."""
    if record.started_at is not None or record.finished_at is not None or cycle is None or cycle.scheduled:
        return summary
    alone = summary.replace("can run the pod now", "could run this pod alone")
    return f"{alone}; its group cannot start: {cycle.message}"


def preemption_section(answer: Preemption | None, record: PodRecord, pending_reason: str) -> dict[str, Any] | None:
    """Which pods the pod's preemption evicts (or evicted), or why preemption cannot help it."""
    if answer is None:
        if record.started_at is not None or not pending_reason:
            return None
        if any(reason in pending_reason for reason in DEVICE_REASONS):
            return {"possible": False, "node": "", "victims": [],
                    "message": f"{DRA_NOT_FREED}: the DynamicResources failure is UnschedulableAndUnresolvable"}
        return None
    if answer.found:
        return {
            "possible": True,
            "node": answer.node,
            "victims": [{"pod": v.key, "priority": priority_of(v), "node": answer.node} for v in answer.victims],
            "message": (f"preempted {len(answer.victims)} pod(s) on {answer.node}; the pod was nominated there and "
                        "bound once they were gone") if record.started_at is not None else (
                f"preempting {len(answer.victims)} pod(s) on {answer.node}; the pod is nominated there and binds "
                "once they are gone"),
        }
    message = answer.message
    if any(reason.startswith(DEVICE_REASONS) for reason in answer.unresolvable):
        message = f"{message} {DRA_NOT_FREED}."
    return {"possible": False, "node": "", "victims": [], "message": message}
