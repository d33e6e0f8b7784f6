"""Held-out scenarios for the comparison with kube-scheduler: random GPU clusters and pods, drawn from a seed.

Nodes differ in size (so scores rarely tie), carry GPUs of two models on two PCIe roots, and some are tainted or
labelled; pods ask for cpu and memory, and most for GPUs through templates (count, a model selector, matchAttribute),
a shared claim or KEP-5004's extended resource; some select a pool or tolerate the taint. Every pod's node and devices
and the pending set are compared (``exact: all``), ties included (the real scheduler runs with ``parallelism: 1``,
see ``vs_kube_scheduler``), and every bound pod's scores.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tests.kube.vs_kube_scheduler import DRIVER, Scenario

IMAGE = "registry.k8s.io/pause:3.10"
SIZES = [(4, 16), (8, 32), (12, 48), (16, 64), (24, 96), (32, 128), (48, 192), (64, 256)]  # cpu, GiB


def _devices(rng: random.Random, count: int) -> list[dict[str, Any]]:
    model = rng.choice(["A", "B"])
    return [
        {"name": f"gpu-{i}", "attributes": {"model": {"string": model}, "pcieRoot": {"string": f"root-{i // 2}"}},
         "capacity": {"memory": {"value": rng.choice(["40Gi", "80Gi"])}}}
        for i in range(count)
    ]


def _request(rng: random.Random) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": rng.choice([1, 1, 2])}
    if rng.random() < 0.3:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == '
                                                       f'"{rng.choice(["A", "B"])}"'}}]
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if exactly["count"] == 2 and rng.random() < 0.5:
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/pcieRoot"}]
    return devices


def _node_slices(rng: random.Random, name: str) -> list[dict[str, Any]]:
    """The node's GPUs (none, or 2-8 of one model on PCIe roots of two) as one ResourceSlice."""
    gpus = rng.choice([0, 2, 4, 4, 8])
    if not gpus:
        return []
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
             "spec": {"driver": DRIVER, "nodeName": name,
                      "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                      "devices": _devices(rng, gpus)}}]


def _claim_sources(rng: random.Random, docs: list[dict[str, Any]], *, shared_chance: float) -> tuple[int, bool]:
    """1-3 claim templates t0.. and, with ``shared_chance``, a claim "shared", appended to ``docs``."""
    templates = rng.randint(1, 3)
    docs += [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": f"t{t}"},
              "spec": {"spec": {"devices": _request(rng)}}} for t in range(templates)]
    shared = rng.random() < shared_chance
    if shared:
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared"},
                     "spec": {"devices": _request(rng)}})
    return templates, shared


def random_scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                 "extendedResourceName": "example.com/gpu"},
    }]
    sizes = rng.sample(SIZES, rng.randint(3, 6))
    for i, (cpu, memory) in enumerate(sizes):
        name = f"n{i}"
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "pool": rng.choice(["a", "a", "b"])}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}},
        }
        if rng.random() < 0.2:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        docs.append(node)
        docs += _node_slices(rng, name)
    templates, shared = _claim_sources(rng, docs, shared_chance=0.5)
    for i in range(rng.randint(6, 14)):
        requests = {"cpu": f"{rng.choice([500, 1000, 2000, 3000, 4000, 6000])}m",
                    "memory": f"{rng.choice([1, 2, 4, 8, 16, 24])}Gi"}
        container: dict[str, Any] = {"name": "c", "image": IMAGE, "resources": {"requests": requests}}
        spec: dict[str, Any] = {"containers": [container]}
        roll = rng.random()
        if roll < 0.55:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": f"t{rng.randrange(templates)}"}]
        elif roll < 0.65 and shared:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
        elif roll < 0.75:
            container["resources"]["limits"] = {"example.com/gpu": str(rng.choice([1, 2]))}
        if "resourceClaims" in spec:
            container["resources"]["claims"] = [{"name": "gpu"}]
        if rng.random() < 0.2:
            spec["nodeSelector"] = {"pool": rng.choice(["a", "b"])}
        if rng.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:02d}"}, "spec": spec})
    return Scenario(f"random-{seed}", docs, {"exact": "all"}, f"random GPU cluster, seed {seed}")


# ---------------------------------------------------------------------------------------------- user-shaped

ZONES = ["zone-a", "zone-b", "zone-c"]
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphabet, as controllers' generateName suffixes use


def _suffix(rng: random.Random) -> str:
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(5))


def _pod_shape(rng: random.Random, templates: int, shared: bool) -> dict[str, Any]:
    """A pod spec: cpu and memory, maybe a GPU (template claim, shared claim or extended
    resource), a pool selector, a preferred pool, the taint tolerated."""
    requests = {"cpu": f"{rng.choice([500, 1000, 2000, 3000, 4000, 6000])}m",
                "memory": f"{rng.choice([1, 2, 4, 8, 16, 24])}Gi"}
    container: dict[str, Any] = {"name": "c", "image": IMAGE, "resources": {"requests": requests}}
    spec: dict[str, Any] = {"containers": [container]}
    roll = rng.random()
    if roll < 0.45:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": f"t{rng.randrange(templates)}"}]
    elif roll < 0.5 and shared:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    elif roll < 0.6:
        container["resources"]["limits"] = {"example.com/gpu": str(rng.choice([1, 2]))}
    if "resourceClaims" in spec:
        container["resources"]["claims"] = [{"name": "gpu"}]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"pool": rng.choice(["a", "b"])}
    if rng.random() < 0.2:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.choice([1, 10, 50]),
             "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": [rng.choice("ab")]}]}},
        ]}}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return spec


def random_user_scenario(seed: int, nodes: tuple[int, int] = (3, 8)) -> Scenario:
    """A random GPU cluster in zones, and the pods users' workloads make: ReplicaSets' and StatefulSets' (which the
    system-default PodTopologySpread spreads over hostnames and zones by their controllers' selectors), Jobs' (which it
    does not) and bare pods, interleaved as they would arrive. The owners are in the API with no pods of their own to
    make (``replicas: 0``, ``parallelism: 0``; the test control plane runs no replicaset, statefulset or job
    controller), their pods written as the controllers write them: the template's labels and spec, a controller
    ownerReference (its uid the owner's, see ``vs_kube_scheduler._for_api``), the controllers' names. Every pod's
    node and devices, the pending set and every pending message are compared (``exact: all``, ``messages: true``).
    ``nodes``: how many nodes, at least and at most (beyond 100 the scheduler scores a window of the feasible nodes,
    ``numFeasibleNodesToFind``, from where the last pod's search stopped)."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                 "extendedResourceName": "example.com/gpu"},
    }]
    zones = rng.sample(ZONES, rng.randint(2, 3))
    for i in range(rng.randint(*nodes)):
        cpu, memory = rng.choice(SIZES[:6])  # with repeats: nodes alike in size (one resource class)
        name = f"n{i}"
        labels = {"kubernetes.io/hostname": name, "pool": rng.choice(["a", "a", "b"])}
        if rng.random() < 0.9:
            labels["topology.kubernetes.io/zone"] = rng.choice(zones)
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}},
        }
        taint = rng.random()
        if taint < 0.15:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        elif taint < 0.3:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"}]}
        docs.append(node)
        docs += _node_slices(rng, name)
    templates, shared = _claim_sources(rng, docs, shared_chance=0.4)
    # Each owner: its object, and its pods (names, labels and ownerReference as its controller writes them), all
    # from the one template.
    pods: list[dict[str, Any]] = []
    for kind, count in (("ReplicaSet", rng.randint(1, 3)), ("StatefulSet", rng.randint(0, 2)),
                        ("Job", rng.randint(0, 1))):
        for k in range(count):
            name = {"ReplicaSet": f"web{k}-{rng.randrange(16**8):08x}", "StatefulSet": f"db{k}",
                    "Job": f"train{k}"}[kind]
            spec = _pod_shape(rng, templates, shared)
            if kind == "Job":
                spec["restartPolicy"] = "Never"
                labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
                owner: dict[str, Any] = {
                    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                    "spec": {"parallelism": 0, "template": {"metadata": {"labels": dict(labels)},
                                                            "spec": spec}},
                }
            else:
                labels = {"app": name}
                owner = {
                    "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
                    "spec": {"replicas": 0, "selector": {"matchLabels": dict(labels)},
                             "template": {"metadata": {"labels": dict(labels)}, "spec": spec}},
                }
                if kind == "StatefulSet":
                    owner["spec"]["serviceName"] = name
            docs.append(owner)
            api = "batch/v1" if kind == "Job" else "apps/v1"
            for ordinal in range(rng.randint(2, 6)):
                pod_name = f"{name}-{ordinal}" if kind == "StatefulSet" else f"{name}-{_suffix(rng)}"
                pod_labels = dict(labels)
                if kind == "StatefulSet":
                    pod_labels["statefulset.kubernetes.io/pod-name"] = pod_name
                pods.append({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod_name, "labels": pod_labels, "ownerReferences": [
                        {"apiVersion": api, "kind": kind, "name": name, "uid": "", "controller": True,
                         "blockOwnerDeletion": True}]},
                    "spec": copy.deepcopy(spec),
                })
    for i in range(rng.randint(1, 5)):
        spec = _pod_shape(rng, templates, shared)
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bare-{i}"}, "spec": spec})
    # Arrival order: each workload's pods in order, the workloads interleaved.
    queues: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        refs = pod["metadata"].get("ownerReferences", [{"name": pod["metadata"]["name"]}])
        queues.setdefault(refs[0]["name"], []).append(pod)
    while queues:
        owner_name = rng.choice(sorted(queues))
        docs.append(queues[owner_name].pop(0))
        if not queues[owner_name]:
            del queues[owner_name]
    name = f"user-{seed}" if nodes == (3, 8) else f"user-{seed}-nodes-{nodes[0]}-{nodes[1]}"
    return Scenario(name, docs, {"exact": "all", "messages": True},
                    f"random user-shaped workloads in zones, seed {seed}")


# ---------------------------------------------------------------------------------------------- placement terms

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "rack"
TEMPLATE_HASH = "pod-template-hash"
CACHE = "cache"  # the app other pods' podAffinity reaches for


def _term(rng: random.Random, app: str, keys: Sequence[str], labels: Mapping[str, str]) -> dict[str, Any]:
    """A podAffinityTerm selecting ``app``'s pods over a topology key of ``keys``; sometimes ``matchLabelKeys``
    [pod-template-hash] (a key the pod lacks is ignored), sometimes a namespace selector (every namespace) or
    ``namespaces``."""
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": rng.choice(keys)}
    if TEMPLATE_HASH in labels and rng.random() < 0.4:
        term["matchLabelKeys"] = [TEMPLATE_HASH]
    roll = rng.random()
    if roll < 0.08:
        term["namespaceSelector"] = {}
    elif roll < 0.14:
        term["namespaceSelector"] = {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "Exists"}]}
    elif roll < 0.17:
        term["namespaces"] = ["elsewhere"]  # no pod there: the term matches none
    return term


def _placement(rng: random.Random, spec: dict[str, Any], labels: Mapping[str, str], apps: Sequence[str]) -> None:
    """Pod affinity and anti-affinity, required and preferred, and explicit topologySpreadConstraints onto ``spec``
    (its node affinity kept): anti-affinity toward its own app or another's, affinity toward the cache's pods (for
    the cache's own pods, toward themselves: the first pod lands by its own labels)."""
    app = labels.get("app", "")
    own = [app] if app else []
    affinity = spec.setdefault("affinity", {})
    anti: dict[str, Any] = {}
    if rng.random() < 0.3:
        anti["requiredDuringSchedulingIgnoredDuringExecution"] = [
            _term(rng, rng.choice(own + list(apps)), [HOSTNAME, HOSTNAME, ZONE], labels)]
    if rng.random() < 0.3:
        anti["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice([1, 10, 50, 100]),
             "podAffinityTerm": _term(rng, rng.choice(own + list(apps)), [HOSTNAME, ZONE], labels)}
            for _ in range(rng.randint(1, 2))]
    if anti:
        affinity["podAntiAffinity"] = anti
    near: dict[str, Any] = {}
    if rng.random() < (0.5 if app == CACHE else 0.15):
        near["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(rng, CACHE, [HOSTNAME, ZONE, ZONE], labels)]
    if rng.random() < 0.25:
        near["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice([1, 20, 80]), "podAffinityTerm": _term(rng, CACHE, [HOSTNAME, ZONE], labels)}]
    if near:
        affinity["podAffinity"] = near
    if not affinity:
        del spec["affinity"]
    if app and rng.random() < 0.45:
        constraints = []
        for key in rng.sample([ZONE, HOSTNAME, RACK], rng.randint(1, 2)):
            constraint: dict[str, Any] = {
                "maxSkew": rng.choice([1, 1, 2]), "topologyKey": key,
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchLabels": {"app": app}},
            }
            if constraint["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.25:
                constraint["minDomains"] = rng.randint(2, 4)
            if rng.random() < 0.25:
                constraint["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.25:
                constraint["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
            if TEMPLATE_HASH in labels and rng.random() < 0.3:
                constraint["matchLabelKeys"] = [TEMPLATE_HASH]
            constraints.append(constraint)
        spec["topologySpreadConstraints"] = constraints


def random_placement_scenario(seed: int, nodes: tuple[int, int] = (4, 9)) -> Scenario:
    """A small random GPU cluster in zones (some nodes in racks), and owners' and bare pods with pod affinity and
    anti-affinity (required and preferred, over hostnames and zones), explicit topologySpreadConstraints (over
    zones, hostnames and racks, with their policies, ``minDomains`` and ``matchLabelKeys``) and DRA claims, as
    ``random_user_scenario`` draws them otherwise: InterPodAffinity and PodTopologySpread's explicit constraints
    against the real scheduler on held-out scenarios. Every pod's node and devices, the pending set and every
    pending message are compared (``exact: all``, ``messages: true``).

    The cache's pods (``app: cache``, what podAffinity reaches for) arrive before the others, so most affinity terms
    find their target; a pod whose target arrives after it pends until that pod is bound, and kube-scheduler's
    queueing hint (``scheduler.queueing_hints``) sends it back to the queue then: seeds 0..99 all agree with it
    (17, 60, 65, 84, 87, 93 and 99 did not before kubedra re-queued pods on bindings)."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                 "extendedResourceName": "example.com/gpu"},
    }]
    zones = rng.sample(ZONES, rng.randint(2, 3))
    for i in range(rng.randint(*nodes)):
        cpu, memory = rng.choice(SIZES[1:6])
        name = f"n{i}"
        labels = {HOSTNAME: name, "pool": rng.choice(["a", "a", "b"])}
        if rng.random() < 0.9:
            labels[ZONE] = rng.choice(zones)
        if rng.random() < 0.6:
            labels[RACK] = rng.choice(["r1", "r2", "r3"])
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}},
        }
        taint = rng.random()
        if taint < 0.12:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        elif taint < 0.24:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"}]}
        docs.append(node)
        docs += _node_slices(rng, name)
    templates, shared = _claim_sources(rng, docs, shared_chance=0.3)
    owners: list[tuple[str, str, dict[str, str]]] = []  # kind, name, pod labels
    for k in range(rng.randint(1, 3)):
        template_hash = f"{rng.randrange(16**8):08x}"
        owners.append(("ReplicaSet", f"web{k}-{template_hash}", {"app": f"web{k}", TEMPLATE_HASH: template_hash}))
    if rng.random() < 0.6:
        template_hash = f"{rng.randrange(16**8):08x}"
        owners.append(("ReplicaSet", f"{CACHE}-{template_hash}", {"app": CACHE, TEMPLATE_HASH: template_hash}))
    if rng.random() < 0.4:
        owners.append(("StatefulSet", "db0", {"app": "db0"}))
    apps = sorted({labels["app"] for _, _, labels in owners})
    target = rng.randint(8, 20)
    pods: list[dict[str, Any]] = []
    for kind, name, labels in owners:
        spec = _pod_shape(rng, templates, shared)
        _placement(rng, spec, labels, apps)
        owner: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": spec}},
        }
        if kind == "StatefulSet":
            owner["spec"]["serviceName"] = name
        docs.append(owner)
        for ordinal in range(rng.randint(2, 5)):
            pod_name = f"{name}-{ordinal}" if kind == "StatefulSet" else f"{name}-{_suffix(rng)}"
            pod_labels = dict(labels)
            if kind == "StatefulSet":
                pod_labels["statefulset.kubernetes.io/pod-name"] = pod_name
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name, "labels": pod_labels, "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "", "controller": True,
                     "blockOwnerDeletion": True}]},
                "spec": copy.deepcopy(spec),
            })
    for i in range(max(1, target - len(pods))):
        spec = _pod_shape(rng, templates, shared)
        labels = {"app": rng.choice([CACHE, "solo", "solo", rng.choice(apps)])} if rng.random() < 0.7 else {}
        _placement(rng, spec, labels, apps)
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bare-{i}", "labels": labels},
                     "spec": spec})
    queues: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        refs = pod["metadata"].get("ownerReferences", [{"name": pod["metadata"]["name"]}])
        queues.setdefault(refs[0]["name"], []).append(pod)
    # The cache's pods arrive first (see the docstring: kubedra retries no pending pod when a pod is bound).
    while queues:
        first = [q for q, queued in queues.items() if queued[0]["metadata"]["labels"].get("app") == CACHE]
        owner_name = rng.choice(sorted(first or queues))
        docs.append(queues[owner_name].pop(0))
        if not queues[owner_name]:
            del queues[owner_name]
    name = f"placement-{seed}" if nodes == (4, 9) else f"placement-{seed}-nodes-{nodes[0]}-{nodes[1]}"
    return Scenario(name, docs, {"exact": "all", "messages": True},
                    f"random pod affinity, anti-affinity and spread constraints in zones, seed {seed}")


# ---------------------------------------------------------------------------------------------- preemption

PRIORITIES = [10, 100, 1000]
GPU_CHANCE = 0.3  # a GPU pod is never a preemptor in 1.37 (a DynamicResources failure is unresolvable)


def random_preemption_scenario(seed: int) -> Scenario:
    """A small GPU cluster (2-4 nodes, some without GPUs) and 2-3 PriorityClasses (one rarely
    ``preemptionPolicy: Never``), then workloads from the lowest priority to the highest: Deployments, Jobs,
    StatefulSets (``Parallel``: no kubelet makes a pod Ready for ``OrderedReady``) and bare pods of 2-4 cpu, some
    asking for a GPU through a ResourceClaimTemplate (``GPU_CHANCE``: a pod that fails for a device never preempts in
    1.37, so most ask for cpu and memory only). The lowest-priority workloads (2-4 replicas) fill the cluster; later,
    higher-priority workloads preempt them (17 of seeds 0..29 preempt in kubedra) and the controllers replace their
    victims (``vs_controllers``): every pod compared, canonically renamed, messages included.

    Ties the real run breaks by chance: no kubelet sets ``status.startTime``, so kube-scheduler reads every victim's
    start as "now" (``util.GetPodStartTime``), and where two candidate nodes tie down to ``pickOneNodeForPreemption``'s
    latest-start rule it takes the one its map iteration scores last. kubedra uses the bind times. Seed 13 of an
    earlier draw met that (and a Job victim held by the job-tracking finalizer for a second, so its preemptor, retried,
    went to another node freed meanwhile); such a seed is left out of ``PREEMPTION_SEEDS``.

    Each workload arrives a minute after the one before (``kubedra.io/start-after``; the real run creates the next
    once everything is decided and settled), and every pod has ``terminationGracePeriodSeconds: 0``: a victim
    leaves at once in both runs. The real API server removes such a pod as soon as the scheduler deletes it (no
    kubelet needed; a Job's pod once the Job controller drops its finalizer), as kubedra evicts it at the instant
    of its preemption; with the default 30 s, kubedra's victim would hold its devices for 30 s of simulated time
    while the harness (standing in for the kubelet) removes the real one at once, so a replacement or a later pod
    could fit in the real run where kubedra's still finds the victim.

    A node has one GPU at most. A victim's generated claim is deallocated by the resourceclaim controller after the
    pod is gone, while the scheduler retries the nominated preemptor at once: with another GPU free on the node the
    real preemptor takes that one or the victim's, whichever of the two controllers is first (seed 4 of an earlier
    draw with four GPUs a node: one run gave the preemptor gpu-1, the next gpu-0). kubedra frees the victim's
    devices with the pod. With one GPU a node the preemptor can only have the victim's, in both runs."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }]
    classes = sorted(rng.sample(PRIORITIES, rng.choice([2, 2, 3])))
    for value in classes:
        pc: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                              "metadata": {"name": f"p{value}"}, "value": value}
        if value != classes[0] and rng.random() < 0.05:
            pc["preemptionPolicy"] = "Never"
        docs.append(pc)
    for i in range(rng.randint(2, 4)):
        cpu, memory = rng.choice(SIZES[:3])
        name = f"n{i}"
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                     "status": {"allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}}})
        gpus = rng.choice([0, 1, 1])  # at most one: see the docstring
        if gpus:
            docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": f"{name}-gpus"},
                         "spec": {"driver": DRIVER, "nodeName": name,
                                  "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                  "devices": _devices(rng, gpus)}})
    templates = rng.randint(1, 2)
    docs += [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": f"t{t}"},
              "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                  "deviceClassName": "gpu"}}]}}}} for t in range(templates)]
    count = rng.randint(4, 7)  # the first workloads of the lowest priority (they fill the cluster), then any
    workloads = [(classes[0] if k < count // 2 else rng.choice(classes[1:] or classes), k) for k in range(count)]
    workloads.sort(key=lambda w: w[0])  # lower priorities first
    for minute, (priority, k) in enumerate(workloads):
        kind = rng.choice(["Deployment", "Deployment", "Job", "StatefulSet", "Pod"])
        requests = {"cpu": f"{rng.choice([2000, 2000, 4000])}m", "memory": f"{rng.choice([2, 4, 8])}Gi"}
        container: dict[str, Any] = {"name": "c", "image": IMAGE, "resources": {"requests": requests}}
        spec: dict[str, Any] = {"containers": [container], "priorityClassName": f"p{priority}",
                                "terminationGracePeriodSeconds": 0}
        if rng.random() < GPU_CHANCE:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": f"t{rng.randrange(templates)}"}]
            container["resources"]["claims"] = [{"name": "gpu"}]
        name = {"Deployment": "web", "Job": "train", "StatefulSet": "db", "Pod": "solo"}[kind] + str(k)
        meta: dict[str, Any] = {"name": name, "annotations": {"kubedra.io/start-after": f"{minute}m"}}
        labels = {"app": name}
        replicas = rng.randint(2, 4) if priority == classes[0] else rng.randint(1, 3)  # the low ones fill
        if kind == "Pod":
            docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        elif kind == "Job":
            spec["restartPolicy"] = "Never"
            docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                         "spec": {"parallelism": replicas, "completions": replicas,
                                  "template": {"spec": spec}}})
        else:
            body: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": labels},
                                    "template": {"metadata": {"labels": labels}, "spec": spec}}
            if kind == "StatefulSet":
                body |= {"serviceName": name, "podManagementPolicy": "Parallel"}
            docs.append({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": body})
    return Scenario(f"preempt-{seed}", docs, {"exact": "all", "messages": True},
                    f"random preemption among controllers' pods, seed {seed}")
