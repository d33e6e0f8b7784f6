"""Property tests of ``kubedra migrate plan`` on generated clusters (1-4 device-plugin NodePools, 0-2 MIG Nodes, 0-3
Deployments, LeaderWorkerSets or JobSets, with PriorityClasses, and mostly a high-priority Deployment filling the
NodePools' GPUs left: its pods evicted preempt lower-priority ones, the gangs' likeliest).

A MIG Node is labelled as GPU Feature Discovery labels it and advertises what the device plugin does
(:mod:`kubedra.migrate.mig`): with ``nvidia.com/mig.strategy`` ``single`` every GPU holds as many devices of one
profile as fit (mig-parted's ``all-<profile>``), served as ``nvidia.com/gpu`` and counted by ``nvidia.com/gpu.count``;
with ``mixed`` each GPU holds profiles placed one by one where the catalogue's placements leave room, each profile
advertised as ``nvidia.com/mig-<profile>``, ``nvidia.com/gpu`` the whole GPUs and ``nvidia.com/gpu.count`` all of
them. Deployments ask whole GPUs or one MIG device of a profile.

Every wave's placement is checked independently: the wave's mixed cluster is written out as manifests from scratch
(NodePools on the device plugin or on DRA, MIG Nodes as the device plugin advertises them or, switched, without its
resources and with the MIG devices the plan says they publish, each running pod a bare Pod pinned to the node the
plan names) and simulated with ``kubedra.sim`` alone; no pod the plan says runs may be left pending. A LeaderWorkerSet
group or JobSet with a pod evicted or preempted in a wave is in the wave's ``workloads``, every pod of it made again
(or, a JobSet failed, lost). And ``smart`` is never worse than ``naive``: fewer broken budgets, or as many and no more
evictions.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from kubedra.allocator import Features
from kubedra.cluster import catalogue
from kubedra.migrate import waves
from kubedra.migrate.rollout import Cluster, WaveOutcome, read_cluster
from kubedra.objects.load import load_paths
from kubedra.sim.jobsets import PREFIX as JOBSET_PREFIX
from kubedra.sim.leaderworkersets import GROUP_INDEX_KEY as LWS_GROUP
from kubedra.sim.leaderworkersets import NAME_KEY as LWS_NAME
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

FEATURES = Features.for_release("1.37")
MODELS = ("A100-40GB", "H100-80GB")
GPU = "nvidia.com/gpu"
JOBSET_NAME = JOBSET_PREFIX + "jobset-name"
# The MIG-capable models' profiles (a "+me" one takes the GPU's only OFA engine: one a GPU).
PROFILES = {m: catalogue.lookup(m).mig_profiles for m in MODELS}

Pool = tuple[str, int, bool]  # model, GPUs, time-sliced
MigSpec = tuple[str, str, int, tuple[tuple[str, int], ...], int]  # strategy, model, MIG GPUs, devices, whole GPUs
# replicas (a LeaderWorkerSet's: groups of a leader and one worker), resource, count per pod, PDB minAvailable, kind,
# PriorityClass (None: none, priority 0)
Workload = tuple[int, str, int, int | None, str, str | None]
PRIORITIES = {"low": 100, "high": 1000}


ENGINES = ("multiprocessors", "copy_engines", "decoders", "encoders", "jpeg_engines", "ofa_engines")


def whole_gpu(model: str) -> dict[str, int]:
    """What one GPU has of each engine: its whole-GPU (7g) profile's."""
    whole = max(catalogue.lookup(model).mig_profiles, key=lambda p: p.multiprocessors)
    return {engine: getattr(whole, engine) for engine in ENGINES}


def _fit(used: set[int], left: dict[str, int], profile: catalogue.MigProfile) -> bool:
    """Place one device of ``profile`` on a GPU whose memory slices ``used`` are taken and engines ``left`` remain,
    where a placement is free and the engines suffice."""
    if any(left[engine] < getattr(profile, engine) for engine in ENGINES):
        return False
    for start, size in profile.placements:
        slots = set(range(start, start + size))
        if not used & slots:
            used |= slots
            for engine in ENGINES:
                left[engine] -= getattr(profile, engine)
            return True
    return False


def per_gpu(model: str, profile: catalogue.MigProfile) -> int:
    """The most devices of ``profile`` one GPU holds: its placements are intervals, taken by earliest end, as many
    as the GPU's engines allow (one 1g.5gb+me: one OFA engine a GPU)."""
    end, count = -1, 0
    for start, size in sorted(profile.placements, key=lambda p: p[0] + p[1]):
        if start >= end:
            count, end = count + 1, start + size
    engines = whole_gpu(model)
    return min([count, *(engines[e] // getattr(profile, e) for e in ENGINES if getattr(profile, e))])


@st.composite
def mig_node_st(draw: st.DrawFn) -> MigSpec:
    model = draw(st.sampled_from(MODELS))
    profiles = PROFILES[model]
    gpus = draw(st.integers(1, 2))
    if draw(st.booleans()):
        profile = draw(st.sampled_from(profiles))
        return "single", model, gpus, ((profile.name, per_gpu(model, profile) * gpus),), 0
    counts: dict[str, int] = {}
    for _ in range(gpus):  # each GPU: profiles tried in the drawn order, each placed where the GPU has room
        used: set[int] = set()
        left = whole_gpu(model)
        for profile in draw(st.lists(st.sampled_from(profiles), min_size=1, max_size=7)):
            if _fit(used, left, profile):
                counts[profile.name] = counts.get(profile.name, 0) + 1
    return "mixed", model, gpus, tuple(sorted(counts.items())), draw(st.integers(0, 1))


@st.composite
def workload_st(draw: st.DrawFn, profiles: list[str]) -> Workload:
    """Whole GPUs, or one MIG device of a profile: mostly one the cluster's mixed nodes advertise (a single node's
    are ``nvidia.com/gpu``), where it has any."""
    replicas, budget = draw(st.integers(1, 3)), draw(st.sampled_from([None, 1, 2]))
    kind = draw(st.integers(0, 5))
    # priorities: a recreated pod preempts lower-priority ones where it finds no room: the gangs' pods are the
    # likelier victims (none or low), the Deployments' the likelier preemptors
    priority = draw(st.sampled_from([None, None, "low"] if kind < 3 else [None, "low", "high"]))
    if kind == 0:  # a LeaderWorkerSet: groups recreated whole when a pod of theirs is evicted or preempted
        return draw(st.integers(1, 2)), GPU, 1, None, "LeaderWorkerSet", priority
    if kind in (1, 2):  # a JobSet: one evicted or preempted pod fails its Job (backoffLimit 0); no policy fails the
        # JobSet, one restarts it
        return draw(st.integers(1, 2)), GPU, 1, draw(st.sampled_from([None, 0, 1, 2])), "JobSet", priority
    if draw(st.sampled_from([True, False, False] if profiles else [True, False])):
        return replicas, GPU, draw(st.integers(1, 2)), budget, "Deployment", priority
    profile = draw(st.sampled_from(profiles or [p.name for m in MODELS for p in PROFILES[m][:2]]))
    return replicas, f"nvidia.com/mig-{profile}", 1, budget, "Deployment", priority


@st.composite
def cluster_st(draw: st.DrawFn) -> tuple[list[Pool], list[MigSpec], list[Workload]]:
    nodes = draw(st.lists(st.tuples(st.sampled_from(MODELS), st.integers(1, 4), st.booleans()), min_size=1,
                          max_size=4))
    mig_nodes = draw(st.lists(mig_node_st(), min_size=0, max_size=2))
    profiles = sorted({p for strategy, _, _, counts, _ in mig_nodes if strategy == "mixed" for p, _ in counts})
    workloads = draw(st.lists(workload_st(profiles), min_size=0, max_size=3))
    # mostly, high-priority pods filling the NodePools' GPUs the workloads leave: no room to spare in a drain, and the
    # fillers evicted preempt the lower-priority pods elsewhere (the gangs' likeliest)
    if draw(st.sampled_from([True, True, False])):
        gpus = sum(g * (2 if shared else 1) for _, g, shared in nodes)
        asked = sum(r * c * (2 if kind == "LeaderWorkerSet" else 1) for r, res, c, _, kind, _ in workloads if res == GPU)
        if gpus > asked:
            workloads.append((gpus - asked, GPU, 1, None, "Deployment", "high"))
    return nodes, mig_nodes, workloads


def _pool(name: str, model: str, gpus: int, *, plugin: bool, shared: bool) -> dict[str, object]:
    spec: dict[str, object] = {"count": 1, "gpu": {"model": model, "count": gpus}}
    if plugin:
        spec["devicePlugin"] = True
    if shared:
        spec["labels"] = {"nvidia.com/device-plugin.config": "shared"}
    return {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def _mig_node(name: str, spec: MigSpec, *, plugin: bool = True) -> dict[str, object]:
    """The Node as GFD labels it and the device plugin advertises it (``plugin``), or switched: without the device
    plugin's resources."""
    strategy, model, gpus, counts, whole = spec
    product = catalogue.lookup(model).product_name.replace(" ", "-")
    labels = {"kubernetes.io/hostname": name, "nvidia.com/mig.strategy": strategy}
    advertised = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    if strategy == "single":
        ((profile, devices),) = counts
        # GFD's MIG labeler: the product names the profile, the count is the MIG devices'
        labels |= {"nvidia.com/gpu.product": f"{product}-MIG-{profile}", "nvidia.com/gpu.count": str(devices)}
        if plugin:
            advertised[GPU] = str(devices)
    else:
        labels |= {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus + whole)}
        if plugin:
            advertised |= {GPU: str(whole), **{f"nvidia.com/mig-{p}": str(n) for p, n in counts}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": advertised, "capacity": advertised}}


def _container(resource: str, count: int) -> dict[str, object]:
    return {"name": "c", "image": "busybox", "resources": {"limits": {resource: count}}}


def _pod_spec(resource: str, count: int, priority: str | None, **more: object) -> dict[str, object]:
    spec: dict[str, object] = {**more, "containers": [_container(resource, count)]}
    if priority is not None:
        spec["priorityClassName"] = priority
    return spec


def _time_slicing(nodes: list[Pool]) -> list[object]:
    if not any(s for _, _, s in nodes):
        return []
    config = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": GPU, "replicas": 2}]}}}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ts"},
             "data": {"shared": yaml.safe_dump(config)}}]


def _jobset(name: str, replicas: int, resource: str, count: int, max_restarts: int | None,
            priority: str | None) -> dict[str, object]:
    """One replicated job of ``replicas`` Jobs of one pod each that runs until the end (no ``run-for``), its Jobs
    failing at their first pod evicted or preempted."""
    job = {"parallelism": 1, "completions": 1, "backoffLimit": 0,
           "template": {"spec": _pod_spec(resource, count, priority, restartPolicy="Never")}}
    spec: dict[str, object] = {"replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": job}}]}
    if max_restarts is not None:
        spec["failurePolicy"] = {"maxRestarts": max_restarts}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name}, "spec": spec}


def _cluster_docs(nodes: list[Pool], mig_nodes: list[MigSpec], workloads: list[Workload]) -> list[object]:
    docs: list[object] = [_pool(f"n{i}", m, g, plugin=True, shared=s) for i, (m, g, s) in enumerate(nodes)]
    docs += [_mig_node(f"m{j}", spec) for j, spec in enumerate(mig_nodes)]
    docs += _time_slicing(nodes)
    docs += [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
              "value": value} for name, value in PRIORITIES.items()]
    for i, (replicas, resource, count, budget, kind, priority) in enumerate(workloads):
        labels = {"app": f"w{i}"}
        if kind == "JobSet":  # budget: the failure policy's maxRestarts (None: no policy)
            docs.append(_jobset(f"w{i}", replicas, resource, count, budget, priority))
            continue
        if kind == "LeaderWorkerSet":
            template = {"metadata": {"labels": labels}, "spec": _pod_spec(resource, count, priority)}
            docs.append({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind, "metadata": {"name": f"w{i}"},
                         "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 2,
                                                                                 "workerTemplate": template}}})
            continue
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"w{i}"},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels},
                                           "spec": _pod_spec(resource, count, priority)}}})
        if budget is not None:
            docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": f"w{i}"},
                         "spec": {"minAvailable": budget, "selector": {"matchLabels": labels}}})
    return docs


def _pending_from_scratch(path: Path, nodes: list[Pool], mig_nodes: list[MigSpec], cluster: Cluster,
                          switched: set[str], placement: dict[str, str],
                          asks: dict[str, tuple[str, int]]) -> list[str]:
    """The wave's cluster written out and simulated with the simulator alone: the pods left pending. A switched MIG
    node publishes the MIG devices the plan read for it, served by the DeviceClasses the plan adds."""
    docs: list[object] = []
    for i, (model, gpus, shared) in enumerate(nodes):
        node = f"n{i}-0"
        docs.append(_pool(f"n{i}", model, gpus, plugin=node not in switched, shared=shared))
    docs += [_mig_node(f"m{j}", spec, plugin=f"m{j}" not in switched) for j, spec in enumerate(mig_nodes)]
    docs += _time_slicing(nodes)
    for key, node in sorted(placement.items()):
        name = key.split("/", 1)[1]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                     "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                              "containers": [_container(*asks[key])]}})
    path.write_text(yaml.safe_dump_all(docs))
    loaded = load_paths([str(path)])
    scenario = build_scenario(loaded)
    # Time-slicing on the device plugin: the scratch cluster multiplies what the shared nodes advertise itself.
    for j, n in enumerate(scenario.nodes):
        if not n.metadata.name.startswith("n"):
            continue
        index = int(n.metadata.name[1:].split("-")[0])
        if nodes[index][2] and GPU in n.status.allocatable:
            allocatable = {**n.status.allocatable, GPU: str(nodes[index][1] * 2)}
            scenario.nodes[j] = msgspec.structs.replace(
                n, status=msgspec.structs.replace(n.status, allocatable=allocatable, capacity=allocatable))
    names = {c.metadata.name for c in scenario.classes}
    scenario.classes.extend(c for c in cluster.scenario.classes if c.metadata.name not in names)
    scenario.slices.extend(s for j in range(len(mig_nodes)) if f"m{j}" in switched
                           for s in cluster.gpu_nodes[f"m{j}"].slices)
    result = simulate(scenario, Options(features=FEATURES, fragmentation_samples=0))
    return sorted(k for k, r in result.state.pods.items() if r.phase != "Running")


def _plans(tmp: Path, nodes: list[Pool], mig_nodes: list[MigSpec], workloads: list[Workload],
           max_unavailable: int) -> tuple[waves.Plan, waves.Plan, Cluster, dict[str, tuple[str, int]]]:
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(_cluster_docs(nodes, mig_nodes, workloads)))
    loaded = load_paths([str(path)])
    cluster = read_cluster(loaded, build_scenario(loaded))
    asks = {f"default/{a.pod.metadata.name}": next((k, int(v)) for k, v in limits.items())
            for a in cluster.pods for limits in [a.pod.spec.containers[0].resources.limits]}
    naive = waves.naive(cluster, FEATURES, max_unavailable)
    return naive, waves.smart(cluster, FEATURES, max_unavailable, naive), cluster, asks


# Three 2-GPU nodes, four high-priority pods and a gang: draining n0-0, the pods evicted preempt the gang's
EVEN = [("H100-80GB", 2, False)] * 3
FILLER: Workload = (4, GPU, 1, None, "Deployment", "high")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(generated=cluster_st(), max_unavailable=st.integers(1, 2))
@example(generated=(EVEN, [], [(1, GPU, 1, None, "LeaderWorkerSet", None), FILLER]), max_unavailable=1)
@example(generated=(EVEN, [], [(2, GPU, 1, 1, "JobSet", None), FILLER]), max_unavailable=1)
def test_no_wave_that_fits_leaves_a_pod_pending(tmp_path: Path, generated: tuple[list[Pool], list[MigSpec],
                                                                                  list[Workload]],
                                                 max_unavailable: int) -> None:
    nodes, mig_nodes, workloads = generated
    naive, smart, cluster, asks = _plans(tmp_path, nodes, mig_nodes, workloads, max_unavailable)
    groups = {f"default/{p.pod.metadata.name}": f"LeaderWorkerSet/default/{labels[LWS_NAME]} group {labels[LWS_GROUP]}"
              for p in cluster.pods if LWS_NAME in (labels := p.pod.metadata.labels)}
    jobsets = {f"default/{p.pod.metadata.name}": f"JobSet/default/{labels[JOBSET_NAME]}"
               for p in cluster.pods if JOBSET_NAME in (labels := p.pod.metadata.labels)}
    max_restarts = {f"JobSet/default/w{i}": w[3] for i, w in enumerate(workloads) if w[4] == "JobSet"}
    assert set(cluster.gpu_nodes) == {f"n{i}-0" for i in range(len(nodes))} | {f"m{j}" for j in range(len(mig_nodes))}
    for plan in (naive, smart):
        switched: set[str] = set()
        hits: dict[str, list[str]] = {}  # JobSet -> what each wave that evicted a pod of it did
        for wave in plan.waves:
            switched |= set(wave.switching)
            pending = _pending_from_scratch(tmp_path / "wave.yaml", nodes, mig_nodes, cluster, switched,
                                            wave.placement, asks)
            assert pending == [], (plan.order, wave.switching, pending)
            assert set(wave.placement).isdisjoint(wave.waiting)
            if wave.preempted:
                event("a pod preempted")
            _check_groups(wave, groups)
            _check_jobsets(wave, jobsets, hits)
        # JobSet v0.12.0's executeFailurePolicy: each Job failed (backoffLimit 0: its pod evicted or preempted) fails a
        # JobSet with no failurePolicy; with one, RestartJobSet restarts it maxRestarts times, then it fails
        # (ReachedMaxRestarts)
        for jobset, actions in hits.items():
            limit = max_restarts[jobset]
            expected = ["failed"] if limit is None else ["restarted"] * min(len(actions), limit) + ["failed"]
            assert actions == expected[:len(actions)], (plan.order, jobset, actions)
        assert switched == set(cluster.gpu_nodes)


def _check_groups(wave: WaveOutcome, groups: dict[str, str]) -> None:
    """LWS v0.9.0's default RecreateGroupOnPodRestart (and the leader owning its workers): a group with a pod evicted
    or preempted (a deleted pod either way) has every pod evicted, preempted or deleted, and made again."""
    hit = set(wave.evicted) | set(wave.preempted)
    for group in sorted({groups[k] for k in hit if k in groups}):
        members = {k for k, g in groups.items() if g == group}
        assert members <= hit | set(wave.recreated), (wave.switching, group)
        assert members <= set(wave.placement) | set(wave.waiting), (wave.switching, group)
        assert group in wave.workloads and wave.workloads[group].action == "recreated", (wave.switching, group)
        preempted = sum(1 for k in members if k in wave.preempted)
        assert (wave.workloads[group].preempted > 0) == (preempted > 0), (wave.switching, group)
        if preempted:
            event("a LeaderWorkerSet group recreated for a pod preempted")
    assert {g for g in wave.workloads if g.startswith("LeaderWorkerSet/")} <= {groups[k] for k in hit if k in groups}


def _check_jobsets(wave: WaveOutcome, jobsets: dict[str, str], hits: dict[str, list[str]]) -> None:
    """A JobSet with a pod evicted or preempted restarts with every pod made again, or fails with none left placed
    and every pod lost; one failed in an earlier wave has no pod placed. ``hits``: each restart and failure, in
    order (a wave's preemptions may restart a JobSet more than once)."""
    failed = {js for js, actions in hits.items() if "failed" in actions}
    hit = set(wave.evicted) | set(wave.preempted)
    touched = sorted({jobsets[k] for k in hit if k in jobsets})
    assert touched == sorted(js for js in wave.workloads if js.startswith("JobSet/")), (wave.switching, touched)
    for jobset in touched:
        assert jobset not in failed, (wave.switching, jobset)
        members = {k for k, js in jobsets.items() if js == jobset}
        group = wave.workloads[jobset]
        restarts = group.why.count("RestartJobSet: ")
        hits.setdefault(jobset, []).extend(["restarted"] * restarts + (["failed"] if group.action == "failed" else []))
        event(f"a JobSet {group.action}" + (" for a pod preempted" if group.preempted else ""))
        assert (group.preempted > 0) == any(k in wave.preempted for k in members), (wave.switching, jobset)
        if group.action == "restarted":
            assert members <= hit | set(wave.recreated), (wave.switching, jobset)
            assert members <= set(wave.placement) | set(wave.waiting), (wave.switching, jobset)
        else:
            assert group.action == "failed", (wave.switching, jobset, group.action)
            assert members <= set(wave.lost), (wave.switching, jobset)
    for jobset in failed | {js for js, actions in hits.items() if actions[-1] == "failed"}:
        placed = sorted(k for k in wave.placement if jobsets.get(k) == jobset)
        assert placed == [], (wave.switching, jobset, placed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(generated=cluster_st(), max_unavailable=st.integers(1, 2))
def test_smart_is_never_worse_than_naive(tmp_path: Path, generated: tuple[list[Pool], list[MigSpec], list[Workload]],
                                         max_unavailable: int) -> None:
    """Smart's order of costs: budgets broken, then LeaderWorkerSet groups recreated, then pods disrupted."""
    naive, smart, _, _ = _plans(tmp_path, *generated, max_unavailable)
    disrupted = [sum(w.disrupted for w in p.waves) for p in (smart, naive)]
    assert (smart.breaks, smart.restarted, disrupted[0]) <= (naive.breaks, naive.restarted, disrupted[1])
