"""Resources pods ask for that no node publishes.

kube-scheduler answers such a pod "Insufficient cpu" on every node, which reads as a shortage; in a scenario it is
nearly always an omission (a NodePool whose ``spec.allocatable`` names no cpu, no node publishing
``ephemeral-storage``), so ``simulate`` and ``validate`` say it once per resource before the run. Extended resources
that DRA serves (a DeviceClass's ``extendedResourceName``, or ``deviceclass.resource.kubernetes.io/<class>``) are
published by ResourceSlices, not by nodes, and are left out. Pure: objects in, sentences out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kubedra.cluster.state import SpecCache
from kubedra.objects.model import DeviceClass, Node, Pod
from kubedra.objects.quantity import Quantity, QuantityError
from kubedra.sim.workloads import Workloads

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"


def unpublished_requests(nodes: Sequence[Node], classes: Iterable[DeviceClass], pods: Iterable[Pod]) -> list[str]:
    """One sentence per resource that some pod requests (a non-zero amount) and no node publishes, naming how many
    pods ask for it and the first of them. Nothing where there are no nodes at all (that has its own note)."""
    if not nodes:
        return []
    published: set[str] = set()
    for node in nodes:
        published.update(name for name, text in node.status.allocatable.items() if _positive(str(text)))
    served = {c.spec.extended_resource_name for c in classes if c.spec.extended_resource_name}
    asking: dict[str, list[str]] = {}
    specs = SpecCache()  # replicas of one template share their spec: sum it once
    for pod in pods:
        for name, amount in specs.derived(pod).requests.items():
            if amount.is_zero() or name in published or name in served or name.startswith(IMPLICIT_PREFIX):
                continue
            asking.setdefault(name, []).append(f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}")
    return [
        f"{len(keys)} pod{'s ask' if len(keys) != 1 else ' asks'} for {name} (e.g. Pod {keys[0]}), which no node "
        f"publishes: {'they stay' if len(keys) != 1 else 'it stays'} pending (Insufficient {name}); give the "
        f"NodePool spec.allocatable.{name} or the Node status.allocatable.{name}"
        for name, keys in sorted(asking.items())
    ]


def _positive(text: str) -> bool:
    try:
        return Quantity.parse(text).sign() > 0
    except QuantityError:
        return True  # refused elsewhere, naming the field; not this note's to report


def workload_pods(workloads: Workloads) -> Iterable[Pod]:
    """Every pod a scenario will create: the arrivals, each Job's pods and a CronJob's first Job's."""
    yield from (arrival.pod for arrival in workloads.arrivals)
    for job in workloads.all_jobs():
        yield from job.pods
    for cron in workloads.cronjobs:  # one Job stands for all: they share the template
        yield from cron.sample().pods
