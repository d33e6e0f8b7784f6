"""A JobSet's restarts, as v0.12.0's controller makes them (``failure_policy.go``: ``restartJobSetActionApplier``,
``restartJobSetAndIgnoreMaxRestartsActionApplier``, ``failurePolicyRecreateAll``; ``jobset_controller.go``:
``getChildJobs``, ``deleteJobs``, ``constructJobsFromTemplate``, ``shouldCreateJob``), for
``sim.jobset_controllers.JobSetController``.

A restart bumps ``status.restarts`` (and ``restartsCountTowardsMax`` for ``RestartJobSet``, not for
``RestartJobSetAndIgnoreMaxRestarts``). Every Job whose ``jobset.sigs.k8s.io/restart-attempt`` is below it is then
*previous*: deleted (foreground: its pods go first, each after its grace period), and made again, under the same
name, with ``restart-attempt`` the new count on the Job and its pods, once ``shouldCreateJob`` finds no Job of that
name left: with ``Recreate``, as soon as that Job's own old pods are gone; with ``BlockingRecreate``, only once
every previous Job is (``constructJobsFromTemplate`` makes none while any is left). The new Job has a new uid and
its pods new names (the same ``<job>-<index>-`` prefix); they arrive when it is made."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import msgspec

from kubedra.cluster.gpuslices import name_suffix, stable_uid
from kubedra.sim.jobsets import PREFIX

if TYPE_CHECKING:
    from kubedra.cluster.state import PodRecord
    from kubedra.sim.run import Simulation
    from kubedra.sim.workloads import JobRun

RESTART_ATTEMPT = PREFIX + "restart-attempt"
UID_KEYS = ("batch.kubernetes.io/controller-uid", "controller-uid")
SUFFIX = 5  # the Job controller's random suffix of a pod's name
RESTART_MESSAGES = {
    "RestartJobSet": "RestartJobSetFailurePolicyAction: applying RestartJobSet failure policy action",
    "RestartJobSetAndIgnoreMaxRestarts": "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction: applying "
                                         "RestartJobSetAndIgnoreMaxRestarts failure policy action",
}


def _marked(marks: dict[str, str], attempt: int) -> dict[str, str]:
    return {**marks, RESTART_ATTEMPT: str(attempt)} if RESTART_ATTEMPT in marks else marks


def restarted(job: JobRun, attempt: int) -> JobRun:
    """``constructJob`` after ``attempt`` restarts: the same Job with ``restart-attempt`` ``attempt`` on it (its pod
    template) and its pods, a new uid, new pod names; made when the controller makes it (no ``start-after``)."""
    uid = stable_uid("Job", job.namespace, job.name, str(attempt))
    pods = []
    for index, pod in enumerate(job.pods):
        meta = pod.metadata
        name = meta.name[:-SUFFIX] + name_suffix("restart", job.owner, str(attempt), str(index))
        labels = {**_marked(meta.labels, attempt), **{key: uid for key in UID_KEYS if key in meta.labels}}
        owners = [msgspec.structs.replace(ref, uid=uid) if ref.kind == "Job" and ref.name == job.name else ref
                  for ref in meta.owner_references]
        meta = msgspec.structs.replace(meta, name=name, uid=stable_uid("Pod", job.namespace, name), labels=labels,
                                       annotations=_marked(meta.annotations, attempt), owner_references=owners)
        pods.append(msgspec.structs.replace(pod, metadata=meta))
    spec = job.spec
    if spec is not None:
        tmeta = spec.template.metadata
        tmeta = msgspec.structs.replace(tmeta, labels=_marked(tmeta.labels, attempt),
                                        annotations=_marked(tmeta.annotations, attempt))
        spec = msgspec.structs.replace(spec, template=msgspec.structs.replace(spec.template, metadata=tmeta))
    return replace(job, pods=tuple(pods), spec=spec, arrive_at=0.0)


class PreviousJobs:
    """The Jobs of earlier restart attempts still being deleted: each one's pods not yet gone, by Job name."""

    def __init__(self, sim: Simulation, blocking: bool) -> None:
        self.sim = sim
        self.blocking = blocking  # BlockingRecreate
        self.left: dict[str, list[PodRecord]] = {}

    def add(self, owners: dict[str, str]) -> None:
        """The Jobs (name -> ``Job/ns/name``) just deleted: their pods made and not finished (terminating now)."""
        by_owner: dict[str, list[PodRecord]] = {owner: [] for owner in owners.values()}
        for record in self.sim.state.pods.values():
            pods = by_owner.get(record.owner)
            if pods is not None and record.finished_at is None:
                pods.append(record)
        for name, owner in owners.items():
            self.left.setdefault(name, []).extend(by_owner[owner])

    def _gone(self, record: PodRecord) -> bool:
        return record.finished_at is not None or self.sim.state.pods.get(record.key) is not record

    def blocks(self, name: str) -> bool:
        """Whether a Job ``name`` of the current attempt cannot be made yet (``shouldCreateJob``, and with
        BlockingRecreate ``constructJobsFromTemplate``): the previous one of that name (any, blocking) is left."""
        for job in list(self.left):
            if all(self._gone(record) for record in self.left[job]):
                del self.left[job]
        return bool(self.left) if self.blocking else name in self.left
