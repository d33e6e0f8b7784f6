"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

Kueue's admission is not modelled either: workloads naming a LocalQueue are noted (``kueue_queued``).

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


def kueue_queued(documents: Iterable[dict[str, Any]]) -> list[str]:
    """One sentence where workloads name a Kueue LocalQueue (``kueue.x-k8s.io/queue-name``): Kueue's webhooks hold
    them (a Job, JobSet, TrainJob, RayJob... made suspended, a plain pod gated by ``kueue.x-k8s.io/admission``) until
    their ClusterQueue admits them within its quota; kubedra does not model that admission."""
    keys = []
    for doc in documents:
        meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        labels: dict[str, Any] = meta["labels"] if isinstance(meta.get("labels"), dict) else {}
        if KUEUE_QUEUE in labels:
            keys.append(f"{doc.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name')} (queue "
                        f"{labels[KUEUE_QUEUE]})")
    if not keys:
        return []
    many = len(keys) != 1
    return [f"{len(keys)} workload{'s' if many else ''} (e.g. {keys[0]}) name{'' if many else 's'} a Kueue LocalQueue "
            f"with {KUEUE_QUEUE}: Kueue would hold {'them' if many else 'it'} until its ClusterQueue admits "
            f"{'them' if many else 'it'} within quota; kubedra does not model Kueue's admission and runs "
            f"{'them' if many else 'it'} as if admitted on arrival"]
