"""``kubedra explain``'s text, laid out as ``kubectl describe`` lays out an object: ``Key:`` fields aligned, sections
indented under their heading, the scheduler's verdict as the event kube-scheduler records (``FailedScheduling`` or
``Scheduled``) at the end. Printing only: the data is ``-o json``'s, unchanged."""

from __future__ import annotations

from typing import Any

from kubedra.cli.output import stdout_console

KEY_WIDTH = 14  # "Allocated On:" and a space, as kubectl's tab writer aligns the fields of one object
NONE = "<none>"
EVENTS = {"Pending": ("Warning", "FailedScheduling"), "Running": ("Normal", "Scheduled"),
          "Succeeded": ("Normal", "Completed"), "Failed": ("Warning", "Failed")}


def _say(text: str) -> None:
    stdout_console().print(text, highlight=False, markup=False)


def _field(indent: str, key: str, value: object = "") -> None:
    text = f"{indent}{key}:"
    _say(f"{text:<{len(indent) + KEY_WIDTH - 1}} {value}".rstrip() if value != "" else text)


def names_text(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    more = len(names) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def _table(indent: str, header: list[str], rows: list[list[str]]) -> None:
    """Columns as kubectl prints an Events table: a header, a row of dashes, the last column unpadded."""
    grid = [header, ["-" * len(h) for h in header], *rows]
    widths = [max(len(r[i]) for r in grid) for i in range(len(header) - 1)]
    for row in grid:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        _say(f"{indent}  {'  '.join([*cells, row[-1]])}")


def _node_groups(groups: list[dict[str, Any]], limit: int, fits_text: str, indent: str) -> None:
    for group in groups:
        count = group["count"]
        reason = fits_text if group["check"] == "fits" else group["reason"]
        _say(f"{indent}  {count} node{'s' if count != 1 else ''} ({names_text(group['nodes'], limit)}): {reason}")


def _claims(claims: list[dict[str, Any]], indent: str) -> None:
    if not claims:
        _field(indent, "Claims", NONE)
        return
    _field(indent, "Claims")
    _table(indent, ["Claim", "State", "Devices"],
           [[c["claim"], c["state"], ", ".join(c["devices"]) or NONE] for c in claims])


def _gang(gang: dict[str, Any], phase: str, indent: str) -> None:
    quorum = f", minCount {gang['minCount']}" if gang["policy"] == "gang" else ""
    _field(indent, "PodGroup", f"{gang['podGroup']} ({gang['policy']}{quorum}): {gang['memberCount']} members, "
                               f"{gang['bound']} bound")
    if gang["waiting"]:
        _say(f"{indent}  {gang['waiting']}")
    for member in gang["members"] if phase == "Pending" else []:
        _say(f"{indent}  {member['pod']}: {member['outcome']}")


def _event(data: dict[str, Any], indent: str) -> None:
    """The scheduler's verdict as the event kube-scheduler records for it (kubedra predicts, so From is kubedra)."""
    if not data["message"]:
        return
    kind, reason = EVENTS.get(data["phase"], ("Normal", data["phase"]))
    _field(indent, "Events")
    _table(indent, ["Type", "Reason", "From", "Message"], [[kind, reason, "kubedra", data["message"]]])


def print_pod(data: dict[str, Any], limit: int, indent: str = "", title: bool = True) -> None:
    """One pod; ``title`` False: a workload's example pod, under its group (no name, no namespace)."""
    if title:
        namespace, name = _split(data["pod"])
        _field(indent, "Name", name)
        _field(indent, "Namespace", namespace)
    _field(indent, "Status", data["phase"])
    _field(indent, "Node", data["node"] or NONE)
    cluster = data.get("cluster")
    if cluster and (cluster["scheduled"] or cluster["node"]):  # the input carried the cluster's own answer
        _field(indent, "Cluster" if cluster["agrees"] is not False else "Cluster Disagrees", cluster["note"])
    _claims(data["claims"], indent)
    gang = data.get("gang")
    if gang:
        _gang(gang, data["phase"], indent)
    preemption = data.get("preemption")
    if preemption:
        _field(indent, "Preemption", preemption["message"])
        for victim in preemption["victims"]:
            _say(f"{indent}  evicts {victim['pod']} (priority {victim['priority']}) on {victim['node']}")
    if data["groups"]:
        _field(indent, "Nodes", data["summary"])
        _node_groups(data["groups"], limit, "could run it now" if data["phase"] == "Running" else "fits now", indent)
    elif data["phase"] == "Pending" and data["summary"]:
        _field(indent, "Nodes", data["summary"])
    if "whatWouldFit" in data:
        suggestions = data["whatWouldFit"]
        _field(indent, "What Would Make It Fit", "" if suggestions else "nothing that kubedra tries (see explain -h)")
        for suggestion in suggestions:
            _say(f"{indent}  {suggestion['text']} [cost: {suggestion['cost']['text']}]")
    _event(data, indent)


def print_claim(data: dict[str, Any], limit: int) -> None:
    namespace, name = _split(data["claim"])
    _field("", "Name", name)
    _field("", "Namespace", namespace)
    _field("", "State", data["state"])
    _field("", "Allocated On", data["allocatedOn"] or NONE)
    _field("", "Devices", ", ".join(data["devices"]) or NONE)
    _field("", "Reserved For", ", ".join(data["reservedFor"]) or NONE)
    _field("", "Message", data["message"])
    if data["groups"]:
        _field("", "Nodes")
        _node_groups(data["groups"], limit, "the claim fits now", "")
    for pod in data["pods"]:
        _say("")
        _field("", "Pod")
        print_pod(pod, limit, indent="  ")


def print_workload(data: dict[str, Any], limit: int) -> None:
    kind, _, key = data["workload"].partition("/")
    namespace, name = _split(key)
    _field("", "Name", name)
    _field("", "Namespace", namespace)
    _field("", "Kind", kind)
    _field("", "Pods", data["summary"])
    for group in data["groups"]:
        count, explanation = group["count"], group["explanation"]
        pods = names_text([p.split("/", 1)[1] for p in group["pods"]], limit)
        nodes = f" on {names_text(group['nodes'], limit)}" if group["nodes"] else ""
        _say(f"{count} pod{'s' if count != 1 else ''} {group['phase']}{nodes}: {pods}")
        if group["phase"] == "Running":
            continue
        if count > 1:
            _say(f"  For example pod {explanation['pod'].split('/', 1)[1]}:")
        print_pod(explanation, limit, indent="    " if count > 1 else "  ", title=False)
