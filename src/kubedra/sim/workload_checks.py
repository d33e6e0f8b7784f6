"""The checks a workload gets before it is expanded, as the API server makes them (``pkg/apis/apps/validation``,
``pkg/apis/batch/validation``), and kubedra's timing annotations; each problem names the field.

Kept apart from :mod:`kubedra.sim.workloads` so the expansion reads as the controllers do, not as validation.
"""

from __future__ import annotations

import datetime as dt
import json
import re

from kubedra.cluster.nodepool import at
from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import ObjectMeta
from kubedra.objects.validate import validate_metadata, validate_pod_spec
from kubedra.sim.cron import CronError, Schedule, controller_schedule, load_location, parse_standard
from kubedra.sim.durations import DurationError, parse_duration
from kubedra.sim.manifests import (
    CronJobDoc,
    DaemonSetDoc,
    DeploymentDoc,
    JobDoc,
    LabelSelector,
    PodTemplate,
    ReplicaSetDoc,
    StatefulSetDoc,
    selector_matches,
)

START_AFTER = "kubedra.io/start-after"
SIMULATION_START = "kubedra.io/simulation-start"  # a CronJob's wall clock at simulated time 0 (RFC 3339)
DEFAULT_SIMULATION_START = 1767225600  # 2026-01-01T00:00:00Z, a Thursday
CRONJOB_NAME_MAX = 52  # DNS-1035 label (63) less the 11 characters of "-<minutes since the epoch>"
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
RUN_FOR = "kubedra.io/run-for"
MAX_REPLICAS = 100_000
Document = DeploymentDoc | ReplicaSetDoc | StatefulSetDoc | DaemonSetDoc | JobDoc | CronJobDoc


class WorkloadChecks:
    """Collects problems; the expander inherits these checks."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def bad(self, where: Location, field: str, message: str) -> None:
        self.problems.append(Problem(at(where, field), message))

    def timing(
        self, where: Location, workload: ObjectMeta, template: ObjectMeta, prefix: str, workload_prefix: str = ""
    ) -> tuple[float, float | None]:
        """``kubedra.io/start-after`` and ``kubedra.io/run-for``, the template's before the workload's."""
        values: list[float | None] = []
        for key in (START_AFTER, RUN_FOR):
            text, field = template.annotations.get(key), f"{prefix}metadata.annotations[{key}]"
            if text is None:
                text, field = workload.annotations.get(key), f"{workload_prefix}metadata.annotations[{key}]"
            if text is None:
                values.append(None)
                continue
            try:
                seconds = parse_duration(text)
            except DurationError as err:
                self.bad(where, field, str(err))
                values.append(None)
                continue
            if seconds < 0:
                self.bad(where, field, f"must not be negative, got {text!r}")
            values.append(max(seconds, 0.0))
        return values[0] or 0.0, values[1]

    def check_template(
        self, where: Location, kind: str, template: PodTemplate, restart: tuple[str, ...], prefix: str = "spec."
    ) -> bool:
        ok = True
        if not template.spec.containers:
            self.bad(where, f"{prefix}template.spec.containers", "Required value")
            ok = False
        policy = template.spec.restart_policy
        if kind == "Job" and not policy:
            self.bad(where, f"{prefix}template.spec.restartPolicy",
                     'Required value: valid values: "OnFailure", "Never"')
            ok = False
        elif policy and policy not in restart:
            allowed = ", ".join(f'"{p}"' for p in restart)
            self.bad(where, f"{prefix}template.spec.restartPolicy",
                     f'Unsupported value: "{policy}": supported values: {allowed}')
            ok = False
        return ok

    def count_ok(self, where: Location, field: str, value: int) -> bool:
        """A replica-like count: ``ValidateNonnegativeField``, then kubedra's own cap on what it expands."""
        if value < 0:
            self.bad(where, field, f"Invalid value: {value}: must be greater than or equal to 0")
            return False
        if value > MAX_REPLICAS:
            self.bad(where, field, f"Invalid value: {value}: kubedra expands at most {MAX_REPLICAS} pods per workload")
            return False
        return True

    def selector_ok(self, where: Location, kind: str, selector: LabelSelector | None, labels: dict[str, str]) -> bool:
        """``spec.selector``: required, not empty, and matching the template's labels."""
        if selector is None:
            self.bad(where, "spec.selector", "Required value")
        elif not selector.match_labels and not selector.match_expressions:
            self.bad(where, "spec.selector", f"Invalid value: empty selector is invalid for {kind.lower()}")
        elif not selector_matches(selector, labels):
            self.bad(
                where, "spec.template.metadata.labels", "Invalid value: `selector` does not match template `labels`"
            )
        else:
            return True
        return False

    def clock(self, where: Location, meta: ObjectMeta) -> int | None:
        """The Unix second of simulated time 0 for a CronJob: ``kubedra.io/simulation-start`` (RFC 3339 with a zone,
        whole seconds), default 2026-01-01T00:00:00Z; None after a problem."""
        text = meta.annotations.get(SIMULATION_START)
        if text is None:
            return DEFAULT_SIMULATION_START
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None or "T" not in text.upper():
            self.bad(where, f"metadata.annotations[{SIMULATION_START}]",
                     f"Invalid value: {_quote(text)}: must be an RFC 3339 time with a zone, e.g. 2026-01-01T00:00:00Z")
            return None
        return int(moment.timestamp() // 1)

    def cron_schedule(self, where: Location, doc: CronJobDoc) -> Schedule | None:
        """``validateCronJobSpec`` on create: the name leaves room for the Jobs' suffix, the schedule parses (robfig's
        message) and has no ``TZ``, ``timeZone`` is an IANA name, ``startingDeadlineSeconds`` is not negative,
        ``concurrencyPolicy`` is known. The schedule the controller will step, or None after a problem."""
        spec, ok = doc.spec, True
        if len(doc.metadata.name) > CRONJOB_NAME_MAX:
            self.bad(where, "metadata.name", f"Invalid value: {_quote(doc.metadata.name)}: must be no more than "
                                             f"{CRONJOB_NAME_MAX} characters")
            ok = False
        if not spec.schedule:
            self.bad(where, "spec.schedule", "Required value")
            ok = False
        else:
            try:
                parse_standard(spec.schedule)
            except CronError as err:
                self.bad(where, "spec.schedule", f"Invalid value: {_quote(spec.schedule)}: {err}")
                ok = False
            if "TZ" in spec.schedule:
                self.bad(where, "spec.schedule", f"Invalid value: {_quote(spec.schedule)}: cannot use TZ or CRON_TZ "
                                                 "in schedule, use timeZone field instead")
                ok = False
        deadline = spec.starting_deadline_seconds
        if deadline is not None and deadline < 0:
            self.bad(where, "spec.startingDeadlineSeconds", f"Invalid value: {deadline}: must be greater than or "
                                                            "equal to 0")
            ok = False
        ok = self._time_zone(where, spec.time_zone) and ok
        policy = spec.concurrency_policy
        if policy and policy not in CONCURRENCY_POLICIES:
            allowed = ", ".join(f'"{p}"' for p in CONCURRENCY_POLICIES)
            self.bad(where, "spec.concurrencyPolicy", f"Unsupported value: {_quote(policy)}: supported values: "
                                                      f"{allowed}")
            ok = False
        return controller_schedule(spec.schedule, spec.time_zone) if ok else None

    def _time_zone(self, where: Location, zone: str | None) -> bool:
        """``validateTimeZone``: IANA name syntax, not ``Local``, known to the zone database."""
        if zone is None:
            return True
        message = ""
        if not zone:
            message = "timeZone must be nil or non-empty string"
        elif any(part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part)
                 for part in zone.split("/")):
            message = f"unknown time zone {zone}"
        elif zone.lower() == "local":
            message = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        else:
            try:
                load_location(zone)
            except CronError as err:
                message = str(err)
        if message:
            self.bad(where, "spec.timeZone", f"Invalid value: {_quote(zone)}: {message}")
        return not message

    def check_object(self, where: Location, doc: Document) -> None:
        """The object's metadata and its pod template as the API server validates them."""
        if isinstance(doc, CronJobDoc):
            template, template_path = doc.spec.job_template.spec.template, "spec.jobTemplate.spec.template.spec"
        else:
            template, template_path = doc.spec.template, "spec.template.spec"
        found = [
            *validate_metadata(doc.metadata, label=isinstance(doc, StatefulSetDoc)),
            *validate_pod_spec(template.spec, template_path, template.metadata.labels),
        ]
        for path, message in found:
            self.bad(where, path, message)



def _quote(text: str) -> str:
    """A string as Go's ``%q`` shows it in a field error (close enough: JSON's escapes, non-ASCII kept)."""
    return json.dumps(text, ensure_ascii=False)
