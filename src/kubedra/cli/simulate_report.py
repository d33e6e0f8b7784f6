"""What ``kubedra simulate`` prints: the pod table (kubectl's columns), the GPU table, the summary lines, and the
other formats (``-o name|json|yaml``) of one run's report."""

from __future__ import annotations

import functools
from typing import Any

from kubedra.cli.output import (
    TABLE_FORMATS,
    Column,
    OutputFormat,
    Table,
    print_data,
    print_lines,
    print_names,
    print_table,
    resource_name,
)


def _pending_line(waited: dict[str, Any], end: str) -> str:
    """The pending-time line: percentiles of the pods that were scheduled; those never scheduled counted apart (a
    "max 0s" beside thousands of pods that never ran would say the opposite of what happened)."""
    never = waited.get("neverScheduled", 0)
    tail = f"; {never} never scheduled (still pending when the run ended at {end})" if never else ""
    if not waited["pods"]:
        return f"Pending time: no pod was scheduled{tail}"
    of = f" of the {waited['pods']} scheduled" if never else ""
    return f"Pending time{of}: p50 {waited['p50']}, p99 {waited['p99']}, max {waited['max']}{tail}"


def duration(seconds: float | None) -> str:
    from kubedra.objects.durations import format_duration

    return "" if seconds is None else format_duration(seconds)


def _by_namespace(line: Any) -> str:
    key: str = line.pod.replace("/", "\0", 1)
    return key


def pod_table(report: Any, *, wide: bool = True) -> Table:
    """One row per pod, by namespace and name; DEVICES are the device names (``gpu-0``, ``gpu-0(share)``).

    ``wide`` false leaves the wide-only cells (CLAIMS, ARRIVED, STARTED, FINISHED) empty: ``-o table`` never prints
    them, and working them out for every pod is a noticeable part of a large run's table."""
    table = Table(
        [
            Column("NAMESPACE"),
            Column("NAME"),
            Column("STATUS"),
            Column("NODE"),
            Column("DEVICES"),
            Column("WAITED"),
            Column("CLAIMS", wide=True),
            Column("ARRIVED", wide=True),
            Column("STARTED", wide=True),
            Column("FINISHED", wide=True),
            Column("REASON"),
        ]
    )
    when = functools.lru_cache(maxsize=None)(duration)  # most pods share their times (arrived at 0s, waited 0s)
    # By namespace, then name: "namespace\0name" orders as the pair does (no name holds a NUL, which sorts first),
    # and one string compares faster than a pair.
    keyed = [(line.pod.split("/", 1), line) for line in sorted(report.pods, key=_by_namespace)]
    if wide:
        table.rows.extend(
            (
                namespace,
                name,
                line.phase,
                line.node,
                ",".join(line.device_names),
                when(line.waited),
                ",".join(line.claims),
                when(line.arrived),
                when(line.started),
                when(line.finished),
                line.reason,
            )
            for (namespace, name), line in keyed
        )
    else:
        table.rows.extend(
            (namespace, name, line.phase, line.node, ",".join(line.device_names), when(line.waited), "", "", "", "",
             line.reason)
            for (namespace, name), line in keyed
        )
    return table


def gpu_table(gpus: dict[str, Any]) -> Table:
    """Physical GPUs per model (the model last: product names have spaces)."""
    table = Table(
        [
            Column("GPUS"),
            Column("IN-USE"),
            Column("WHOLE"),
            Column("MIG"),
            Column("SHARED"),
            Column("PEAK"),
            Column("CAPACITY"),
            Column("MIG-CAPABLE", wide=True),
            Column("DEVICE-PLUGIN", wide=True),
            Column("MODEL"),
        ]
    )
    for m in gpus["models"]:
        table.add(
            *(
                str(m[key])
                for key in ("total", "inUse", "whole", "migPartitioned", "shared", "peakInUse")
            ),
            f"{m['capacityInUse']:g}",
            str(m["migCapable"]),
            str(m["devicePlugin"]),
            m["model"],
        )
    return table


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """What users ask first: how many pods ran or wait, GPUs in use and at peak, how long pods waited."""
    p, c, g, w = summary["pods"], summary["claims"], summary["gpus"], summary["pendingTime"]
    lines = [
        f"Pods: {p['running']} running, {p['succeeded']} succeeded, {p['deleted']} deleted, {p['pending']} pending "
        f"of {p['total']}; claims: {c['allocated']} allocated, {c['pending']} pending"
        + (f"; shares: {s['inUse']} of {s['total']} in use" if (s := summary["shares"])["total"] else ""),
        f"GPUs: {g['inUse']} of {g['total']} in use at the end ({g['whole']} whole, {g['migPartitioned']} "
        f"MIG-partitioned, {g['shared']} shared); capacity in use {g['capacityInUse']:g} GPUs "
        f"({g['capacityInUsePercent']:g}%); peak {g['peakInUse']} at {g['peakTime']}",
        _pending_line(w, summary["simulatedTime"]),
    ]
    if (k := summary.get("kueueAdmission")) is not None:
        never = k["neverAdmitted"]
        lines.append(
            f"Kueue admission wait: {k['admitted']} of {k['queued']} queued workloads admitted, p50 {k['p50']}, "
            f"p99 {k['p99']}, max {k['max']}" + (f" ({k['longest']})" if k["longest"] else "")
            + (f"; {len(never)} never admitted (e.g. {never[0]})" if never else "")
        )
    f = summary.get("fragmentation")
    if f is not None and f["gpus"]:
        lines.append(
            f"Fragmentation: {f['free']} GPUs free, {f['usable']} usable by the {f['pendingPods']} pending pods' "
            f"claims, {f['stranded']} stranded; {f['migPartlyUsed']} MIG GPUs partly used, {f['sharesLeft']} shares "
            f"left on shared GPUs; FGD measure {f['fgd']:g} GPUs ({f['fgdPercent']:g}%)"
        )
    if w["longest"]:
        waiters = ", ".join(
            f"{x['pod']} {x['waited']}{' (still pending)' if x['stillPending'] else ''}" for x in w["longest"]
        )
        lines.append(f"Longest waiters: {waiters}")
    lines.append(f"Simulated time: {summary['simulatedTime']}")
    return lines


def print_report(report: Any, fmt: OutputFormat, headers: bool) -> None:
    """The chosen output: pods, GPUs and the summary as tables; names; or the whole report as JSON or YAML."""
    if fmt is OutputFormat.name:
        pods = sorted(report.pods, key=lambda line: (line.namespace, line.name))
        print_names(resource_name("Pod", line.name) for line in pods)
    elif fmt in TABLE_FORMATS:
        print_table(pod_table(report, wide=fmt is OutputFormat.wide), fmt, headers=headers)
        if headers:  # --no-headers: the pod rows alone, for scripts
            print_lines(["", *gpu_table(report.summary["gpus"]).lines(wide=fmt is OutputFormat.wide), ""])
            print_lines(summary_lines(report.summary))
    else:
        print_data(report.as_document(), fmt)
