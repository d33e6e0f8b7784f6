"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

One at present: a pod's persistentVolumeClaim and generic ``ephemeral`` volumes (``spec.volumes``). kube-scheduler's
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

from kubedra.objects.model import Pod

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
