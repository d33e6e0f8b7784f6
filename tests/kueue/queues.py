"""Kueue's queueing objects as ``tests/kueue``'s checks make them, for the real controller and for kubedra alike."""

from __future__ import annotations

from typing import Any

MODULE = "sigs.k8s.io/kueue"
V1B2 = "kueue.x-k8s.io/v1beta2"
QUEUE = "kueue.x-k8s.io/queue-name"
JOBSET_MODULE = "sigs.k8s.io/jobset"  # the version Kueue's go.mod requires: its CRD, for the jobset integration
RAY_MODULE = "github.com/ray-project/kuberay/ray-operator"  # Kueue's version: its RayCluster and RayJob CRDs


def flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {"nodeLabels": labels}}


def queues(prefix: str, namespace: str, flavors: list[tuple[str, str]], strategy: str, cohort: str | None = None,
           queue: str = "lq", flavor_prefix: str | None = None) -> list[dict[str, Any]]:
    """A ClusterQueue ``<prefix>`` (one group: cpu and nvidia.com/gpu; ``flavors``: (name, GPU quota)), in
    ``cohort`` if given, and a LocalQueue ``queue`` for it in ``namespace``; the flavors are made unless
    ``flavor_prefix`` names another ClusterQueue's."""
    own = flavor_prefix is None
    flavor_prefix = prefix if flavor_prefix is None else flavor_prefix
    group = {"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
        {"name": f"{flavor_prefix}-{name}", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                          {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
        for name, gpus in flavors]}
    spec = {"namespaceSelector": {}, "queueingStrategy": strategy, "resourceGroups": [group]}
    return [
        *(flavor(f"{flavor_prefix}-{name}", {"pool": name}) for name, _ in flavors if own),
        {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": prefix},
         "spec": {**spec, **({"cohortName": cohort} if cohort else {})}},
        {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": queue, "namespace": namespace},
         "spec": {"clusterQueue": prefix}},
    ]
