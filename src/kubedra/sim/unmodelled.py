"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

A pod with explicit ``topologySpreadConstraints`` is filtered and scored by PodTopologySpread (kubedra applies only
the system-default spreading); a pod with a PersistentVolumeClaim or generic ephemeral volume goes through
VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits. kubedra places such pods as if those fields were
absent, so where they matter its placements can differ from kube-scheduler's: the note says which pods.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubedra.objects.model import Pod


def unmodelled_fields(pods: Iterable[Pod]) -> list[str]:
    """One sentence per field some pod sets that the simulation does not read."""
    spread: list[str] = []
    volumes: list[str] = []
    for pod in pods:
        key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        if pod.spec.topology_spread_constraints:
            spread.append(key)
        if any("persistentVolumeClaim" in v or "ephemeral" in v for v in pod.spec.volumes):
            volumes.append(key)
    notes = []
    if spread:
        notes.append(_sentence(spread, "spec.topologySpreadConstraints", "PodTopologySpread's explicit constraints "
                               "(kubedra applies only the system-default spreading)"))
    if volumes:
        notes.append(_sentence(volumes, "persistentVolumeClaim or ephemeral volumes", "the volume plugins "
                               "(VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits)"))
    return notes


def _sentence(keys: list[str], field: str, plugins: str) -> str:
    pods = f"{len(keys)} pod{'s' if len(keys) != 1 else ''} (e.g. Pod {keys[0]})"
    return (f"{pods} set {field}, which kubedra does not read yet: kube-scheduler filters and scores them with "
            f"{plugins}, so their placements may differ from kube-scheduler's")
