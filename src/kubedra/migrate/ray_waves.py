"""A retried RayJob's new submitter Job, through a wave's runs.

ray-operator v1.5.0 (``rayjob_controller.go``, ``JobDeploymentStatusInitializing``) makes the submitter Job
(``createK8sJobIfNeed``) only once its RayCluster's ``Status.State`` is ``Ready``: ``calculateStatus`` sets it when
the cluster has its head and every desired worker and ``CheckAllPodsRunning`` holds. A RayJob a wave retries
(``ray_restarts``: ``Retrying`` deletes its cluster and submitter Job and makes them again from ``New``) so has its new
submitter's pod come after its new cluster runs, not with it. In each run, that pod is not an arrival: the RayJob is
handed to the simulator's :class:`kubedra.sim.rayjobs.RayJobController`, which makes the Job once every cluster pod
runs (the pod keeps its key: the Job makes its pod of the same name). Once it has run, it is a pod like any other (a
Job's pod made again after its back-off, were it evicted or preempted later).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from kubedra.sim.rayjobs import RayJobRun


def submitter_key(run: RayJobRun) -> str | None:
    """The plan's key of the RayJob's submitter pod (its Job's first), None without a submitter Job."""
    if run.submitter is None or not run.submitter.pods:
        return None
    return f"{run.namespace}/{run.submitter.pods[0].metadata.name}"


def split(runs: Iterable[RayJobRun], retried: Collection[str], pending: Collection[str]
          ) -> tuple[set[str], list[RayJobRun]]:
    """Of the ``pending`` pod keys, the submitter pods of the ``retried`` RayJobs (``RayJob/<namespace>/<name>``),
    and those RayJobs as the run's controller takes them: the Job's one pod, running on with the plan's pods (no
    ``run-for``), no deadline, no shutdown (the RayJob is retried, not finished)."""
    held: set[str] = set()
    out: list[RayJobRun] = []
    for run in runs:
        key = submitter_key(run)
        if run.submitter is None or key is None or key not in pending \
                or f"RayJob/{run.namespace}/{run.name}" not in retried:
            continue
        held.add(key)
        job = replace(run.submitter, arrive_at=0.0, run_for=None, parallelism=1, completions=1,
                      pods=run.submitter.pods[:1])
        out.append(replace(run, submitter=job, shutdown=False, deadline=None, queue=None, held=False))
    return held, out


def unsubmitted(runs: Iterable[RayJobRun]) -> dict[str, str]:
    """Each submitter pod a run was to make -> why it is not there unless made: its cluster was not Ready."""
    return {key: f"not made yet: RayJob {run.namespace}/{run.name} makes its submitter Job once its RayCluster is "
                 "Ready (head and workers running)"
            for run in runs if (key := submitter_key(run)) is not None}
