"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

A pod with explicit ``topologySpreadConstraints`` is filtered and scored by PodTopologySpread (kubedra applies only
the system-default spreading). kubedra places such pods as if the field were absent, so where it matters its
placements can differ from kube-scheduler's: the note says which pods. (Volumes, which the volume plugins read, are
not in the model at all yet: the live mirror drops them to keep pods small.)
"""

from __future__ import annotations

from collections.abc import Iterable

from kubedra.objects.model import Pod


def unmodelled_fields(pods: Iterable[Pod]) -> list[str]:
    """One sentence per field some pod sets that the simulation does not read."""
    spread = [f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}" for pod in pods
              if pod.spec.topology_spread_constraints]
    if not spread:
        return []
    return [_sentence(spread, "spec.topologySpreadConstraints", "PodTopologySpread's explicit constraints (kubedra "
                      "applies only the system-default spreading)")]


def _sentence(keys: list[str], field: str, plugins: str) -> str:
    pods = f"{len(keys)} pod{'s' if len(keys) != 1 else ''} (e.g. Pod {keys[0]})"
    return (f"{pods} set {field}, which kubedra does not read yet: kube-scheduler filters and scores them with "
            f"{plugins}, so their placements may differ from kube-scheduler's")
