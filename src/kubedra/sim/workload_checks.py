"""The checks a workload gets before it is expanded, as the API server makes them (``pkg/apis/apps/validation``,
``pkg/apis/batch/validation``), and kubedra's timing annotations; each problem names the field.

Kept apart from :mod:`kubedra.sim.workloads` so the expansion reads as the controllers do, not as validation.
"""

from __future__ import annotations

from kubedra.cluster.nodepool import at
from kubedra.objects.errors import Location, Problem
from kubedra.objects.model import ObjectMeta
from kubedra.objects.validate import validate_metadata, validate_pod_spec
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
        self, where: Location, workload: ObjectMeta, template: ObjectMeta, prefix: str
    ) -> tuple[float, float | None]:
        """``kubedra.io/start-after`` and ``kubedra.io/run-for``, the template's before the workload's."""
        values: list[float | None] = []
        for key in (START_AFTER, RUN_FOR):
            text, field = template.annotations.get(key), f"{prefix}metadata.annotations[{key}]"
            if text is None:
                text, field = workload.annotations.get(key), f"metadata.annotations[{key}]"
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

    def check_template(self, where: Location, kind: str, template: PodTemplate, restart: tuple[str, ...]) -> bool:
        ok = True
        if not template.spec.containers:
            self.bad(where, "spec.template.spec.containers", "Required value")
            ok = False
        policy = template.spec.restart_policy
        if kind == "Job" and not policy:
            self.bad(where, "spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"')
            ok = False
        elif policy and policy not in restart:
            allowed = ", ".join(f'"{p}"' for p in restart)
            self.bad(
                where, "spec.template.spec.restartPolicy", f'Unsupported value: "{policy}": supported values: {allowed}'
            )
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

