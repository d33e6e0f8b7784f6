"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

Kueue's admission is modelled for batch/v1 Jobs, JobSets, RayJobs and plain Pods (``sim.kueue``); other workloads
naming a LocalQueue are noted (``kueue_queued``).

One field at present: a pod's persistentVolumeClaim and generic ``ephemeral`` volumes (``spec.volumes``).
kube-scheduler's
default profile filters them with VolumeBinding (the claim bound, or bindable on the node: a PersistentVolume's node
affinity, WaitForFirstConsumer provisioning), VolumeZone, VolumeRestrictions (ReadWriteOncePod) and NodeVolumeLimits
(CSI attach limits); kubedra reads no PersistentVolumeClaim, PersistentVolume, StorageClass or CSINode and places
such pods as if they had none of these volumes. The model keeps just these two kinds of volume (``model.Volume``), a
live cluster's slim pods too (``kube.read.slim``), to name the pods that have them. Explicit
``topologySpreadConstraints``, the field listed here before, are read since issue 38
(``scheduler/podtopologyspread.py``). A field kube-scheduler reads that kubedra does not model goes in
``UNMODELLED``: simulate and validate then name the pods that set it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kubedra.objects.model import Pod

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
ADMITTED = ("Job", "JobSet", "RayJob", "Pod")  # the kinds whose Kueue admission is modelled

VOLUME_PLUGINS = ("filters them with VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits (a bound "
                  "PersistentVolume's node affinity and zone, WaitForFirstConsumer binding, ReadWriteOncePod, CSI "
                  "attach limits)")


def _claim_volumes(pod: Pod) -> bool:
    return pod.spec.volumes is not None


# (the field's path, what kube-scheduler does with it, whether a pod sets it)
UNMODELLED: tuple[tuple[str, str, Callable[[Pod], bool]], ...] = (
    ("persistentVolumeClaim or ephemeral volumes (spec.volumes)", VOLUME_PLUGINS, _claim_volumes),
)


def unmodelled_fields(pods: Iterable[Pod], fields: Iterable[tuple[str, str, Callable[[Pod], bool]]] = UNMODELLED,
                      ) -> list[str]:
    """One sentence per field of ``fields`` some pod sets that the simulation does not read."""
    pods = list(pods)
    out = []
    for field, plugins, sets in fields:
        keys = [f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}" for pod in pods if sets(pod)]
        if keys:
            out.append(_sentence(keys, field, plugins))
    return out


def _sentence(keys: list[str], field: str, plugins: str) -> str:
    pods = f"{len(keys)} pod{'s' if len(keys) != 1 else ''} (e.g. Pod {keys[0]})"
    return (f"{pods} set {field}, which kubedra does not read yet: kube-scheduler {plugins}; kubedra places them as "
            f"if they had none, so their placements may differ from kube-scheduler's")


def kueue_queued(documents: Iterable[dict[str, Any]], queues: bool = False) -> list[str]:
    """One sentence where workloads name a Kueue LocalQueue (``kueue.x-k8s.io/queue-name``) and run as if admitted
    on arrival: all of them where the input has no Kueue queue (read as a cluster without Kueue, whose webhooks would
    hold them: a Job, JobSet, TrainJob, RayJob... made suspended, a plain pod gated by ``kueue.x-k8s.io/admission``);
    where it has (``queues``), those of kinds other than batch/v1 Job, JobSet, RayJob and Pod, whose admission
    ``sim.kueue`` models."""
    keys = []
    for doc in documents:
        meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        labels: dict[str, Any] = meta["labels"] if isinstance(meta.get("labels"), dict) else {}
        if KUEUE_QUEUE in labels and not (queues and doc.get("kind") in ADMITTED):
            keys.append(f"{doc.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name')} (queue "
                        f"{labels[KUEUE_QUEUE]})")
    if not keys:
        return []
    many = len(keys) != 1
    them = "them" if many else "it"
    named = (f"{len(keys)} workload{'s' if many else ''} (e.g. {keys[0]}) name{'' if many else 's'} a Kueue "
             f"LocalQueue with {KUEUE_QUEUE}")
    if queues:
        return [f"{named}: kubedra models Kueue's admission for batch/v1 Jobs, JobSets, RayJobs and plain Pods only "
                f"and runs {them} as if admitted on arrival"]
    return [f"{named}, but the input has no Kueue ResourceFlavor, ClusterQueue or LocalQueue: kubedra runs {them} "
            f"as if Kueue were not installed (admitted on arrival); add the queues to model Kueue's admission"]


def kueue_claims(jobs: Iterable[Any], jobsets: Iterable[Any] = ()) -> list[str]:
    """One sentence where a queued Job's or JobSet's pods claim devices through DRA: Kueue counts those devices
    against quota only through its ``deviceClassMappings`` (DRA extended resources), which kubedra does not model."""
    keys = [f"Job {job.namespace}/{job.name}" for job in jobs
            if job.queue is not None and job.pods and job.pods[0].spec.resource_claims]
    keys += [f"JobSet {run.namespace}/{run.name}" for run in jobsets if run.queue is not None
             and any(job.pods and job.pods[0].spec.resource_claims for stage in (run.first, *run.stages)
                     for job in stage)]
    if not keys:
        return []
    return [f"{len(keys)} queued workload{'s' if len(keys) != 1 else ''} (e.g. {keys[0]}) claim devices through DRA "
            f"ResourceClaims: Kueue counts those against quota only through its deviceClassMappings configuration, "
            f"which kubedra does not model; their claims count against no quota here"]
