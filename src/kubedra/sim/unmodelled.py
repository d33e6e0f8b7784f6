"""Fields kube-scheduler reads that kubedra does not model yet: said once per field, never silently ignored.

None at present: explicit ``topologySpreadConstraints``, the last, are read since issue 38
(``scheduler/podtopologyspread.py``). A field kube-scheduler reads that a later release adds, before kubedra models
it, goes in ``UNMODELLED``: simulate and validate then name the pods that set it. (Volumes, which the volume plugins
read, are not in the model at all yet: the live mirror drops them to keep pods small.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubedra.objects.model import Pod

# (the field's path, the plugins that read it, whether a pod sets it)
UNMODELLED: tuple[tuple[str, str, Callable[[Pod], bool]], ...] = ()


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
    return (f"{pods} set {field}, which kubedra does not read yet: kube-scheduler filters and scores them with "
            f"{plugins}, so their placements may differ from kube-scheduler's")
