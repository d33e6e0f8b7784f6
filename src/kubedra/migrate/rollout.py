"""The cluster a rollout switches, and the runs a wave is simulated with: device-plugin nodes moved to DRA, their pods
evicted (:mod:`kubedra.migrate.drain` runs a wave).

The input is the cluster as manifests or read live: NodePools with ``devicePlugin: true`` and plain Nodes advertising
``nvidia.com/gpu`` with GPU Feature Discovery's labels are the nodes to switch (their GPU model tells what the DRA
driver will publish for them), other nodes stay as they are, and the running workloads are
Deployments, StatefulSets, ReplicaSets, Jobs and bare Pods. The device plugin's time-slicing ConfigMap, when present,
multiplies what an unswitched node advertises (``replicas`` per GPU); a switched node publishes whole GPUs, which
pods asking ``nvidia.com/gpu`` get through the DeviceClass's ``extendedResourceName`` (KEP-5004).

A wave is simulated with the library (:func:`kubedra.sim.simulate.simulate`): the pods left running stay on their
node, carried from the run before as they run there (``spec.nodeName``, their status and allocated claims: the
simulator binds such a pod without a scheduling cycle), then the evicted pods their controllers recreate and the pods
already waiting arrive and are scheduled as kube-scheduler would: first while the switching nodes are cordoned (the
controllers recreate a pod as soon as it is evicted, and a pod bound then stays where it landed), then, for those
still pending, on the switched and uncordoned nodes. Bare pods evicted are lost. Every pod keeps its own priority and
``preemptionPolicy``, so a recreated pod preempts lower-priority running pods where kube-scheduler would; the victims
are reported, a controller's recreated (the simulator's controllers make the replacement from the victim's spec:
carried bound rather than pinned with a ``kubernetes.io/hostname`` selector, a kept pod has no pin for its
replacement to inherit), a bare pod's lost. A replacement is reported under its victim's key: the plan follows each
pod of the cluster as read.

The nodes to switch are read by :mod:`kubedra.migrate.gpunodes` (MIG nodes by :mod:`kubedra.migrate.mig`). A cluster
read live keeps its pods where they run (``Cluster.observed``): the plan starts from there instead of simulating the
start.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from kubedra.cluster.nodepool import expand_nodepools, is_nodepool
from kubedra.migrate.gpunodes import GpuNode, labelled_gpu_node, plugin_replicas, plugin_resource, replicas_for, scaled
from kubedra.migrate.group_restarts import GroupWave, lws_policies
from kubedra.migrate.job_failures import JobCount, JobWave
from kubedra.migrate.lws_waves import split, unmade, worker_arrivals
from kubedra.migrate.mig import mig_classes
from kubedra.migrate.ray_restarts import RayJobPods, running_rayjobs
from kubedra.migrate.ray_waves import unsubmitted
from kubedra.objects.builder import Loaded
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.model import Node, Pod, ResourceClaim
from kubedra.sim.budgets import PodDisruptionBudget
from kubedra.sim.leaderworkersets import LeaderWorkerSetRun
from kubedra.sim.manifests import selector_matches
from kubedra.sim.rayjobs import RayJobRun
from kubedra.sim.scenario import Scenario
from kubedra.sim.workloads import DEFAULT_NAMESPACE, PodArrival, Workloads

HOSTNAME = "kubernetes.io/hostname"
RECREATED_AT = 1.0  # evicted and waiting pods come after the pods that stay are bound again


@dataclass(frozen=True)
class _Raw:
    location: Location
    data: dict[str, Any]


@dataclass
class Cluster:
    """What a plan switches: the scenario as read, its device-plugin nodes and the pods running at the start."""

    scenario: Scenario
    gpu_nodes: dict[str, GpuNode]
    other_nodes: list[Node]
    pods: list[PodArrival]  # in arrival order
    notes: list[str] = field(default_factory=list)
    observed: dict[str, str] | None = None  # pod key -> node where it runs (a live cluster); None: simulate the start
    lws_policies: dict[str, str] = field(default_factory=dict)  # LeaderWorkerSet -> its restartPolicy
    rayjobs: dict[str, RayJobPods] = field(default_factory=dict)  # the RayJobs running (``ray_restarts``)


@dataclass
class WaveOutcome:
    """One wave simulated: where each pod runs afterwards, and what it cost."""

    switching: tuple[str, ...]
    evicted: list[str]  # pod keys
    lost: list[str]  # bare pods among them: nothing recreates them
    placement: dict[str, str]  # pod key -> node, the pods running after the wave
    moved: dict[str, str]  # evicted pods landed again -> node
    waiting: dict[str, str]  # pod key -> why it is pending
    budgets: list[dict[str, Any]]  # PDBs the drain or the wave takes below what they ask
    preempted: dict[str, str] = field(default_factory=dict)  # pod key -> "by <pod> on <node>": victims in the wave
    held: dict[str, Held] = field(default_factory=dict, repr=False)  # the running pods bound, for the next wave
    jobs: dict[str, JobWave] = field(default_factory=dict)  # Job owner -> what the wave's evictions cost it
    failures: dict[str, JobCount] = field(default_factory=dict, repr=False)  # every Job's count, for the next wave
    job_lost: list[str] = field(default_factory=list)  # pods lost with their failed Job (evicted or not)
    # LeaderWorkerSet groups, JobSets and RayJobs the wave restarts or fails (``group_restarts``, ``ray_restarts``;
    # a RayJob that keeps running too), and the pods not evicted that they delete and make again
    workloads: dict[str, GroupWave] = field(default_factory=dict)
    recreated: list[str] = field(default_factory=list)
    lost_why: dict[str, str] = field(default_factory=dict)  # a lost pod -> why, where it is no bare pod's or Job's

    @property
    def restarts(self) -> int:
        """The workloads that lose their progress in the wave: not a RayJob that keeps running, nor one failed in an
        earlier wave that loses more pods (``ray_restarts``)."""
        return sum(1 for g in self.workloads.values() if g.action not in ("running", "lost"))

    @property
    def breaks(self) -> int:
        return len(self.budgets)

    @property
    def disrupted(self) -> int:
        """Pods evicted or preempted, those a failed Job deleted, and those recreated with their group or JobSet."""
        gone = set(self.lost) | set(self.recreated)
        return len(self.evicted) + len(self.preempted) + len(gone - set(self.evicted) - set(self.preempted))


def read_cluster(loaded: Loaded, scenario: Scenario) -> Cluster:
    """The cluster to switch. Raises InvalidInputError naming file, object and field where the input cannot be
    planned (no device-plugin node, or a Node advertising nvidia.com/gpu without GPU Feature Discovery's labels)."""
    problems: list[Problem] = []
    notes: list[str] = []
    replicas = plugin_replicas(loaded)
    gpu_nodes: dict[str, GpuNode] = {}
    for raw in loaded.raw:
        if not is_nodepool(raw.data) or not (raw.data.get("spec") or {}).get("devicePlugin"):
            continue
        data = copy.deepcopy(raw.data)
        data["spec"].pop("devicePlugin")
        plugin_nodes, _ = expand_nodepools([raw])
        dra_nodes, dra_slices = expand_nodepools([_Raw(raw.location, data)])
        for plugin, dra in zip(plugin_nodes, dra_nodes, strict=True):
            name = plugin.metadata.name
            times = replicas_for(plugin.metadata.labels, replicas)
            slices = tuple(s for s in dra_slices if s.spec.node_name == name)
            gpu_nodes[name] = GpuNode(name, str(data["metadata"]["name"]), scaled(plugin, times), dra, slices, times)
        shared = max((g.replicas for g in gpu_nodes.values() if g.pool == data["metadata"]["name"]), default=1)
        if shared > 1:
            notes.append(f"NodePool {data['metadata']['name']}: time-slicing shares each GPU among {shared} pods on "
                         "the device plugin; a switched node gives each nvidia.com/gpu a whole GPU (DRA shares per "
                         "claim, not node-wide)")
    for node in loaded.of_kind(Node):
        if any(plugin_resource(k) for k in node.status.allocatable):
            labelled = labelled_gpu_node(node, loaded.location_of(node), replicas, problems, notes)
            if labelled is not None:
                gpu_nodes[labelled.name] = labelled
    if not gpu_nodes and not problems:
        problems.append(Problem(Location(), "no NodePool with spec.devicePlugin: true and no Node advertising "
                                "nvidia.com/gpu: nothing to switch to DRA"))
    if problems:
        raise InvalidInputError(problems)
    scenario = mig_classes(scenario, gpu_nodes, notes)
    workloads = scenario.workloads
    pods = [replace(a, arrive_at=0.0, run_for=None) for a in workloads.arrivals]
    pods.extend(worker_arrivals(workloads.leaderworkersets))  # made by their pod controller in each run (``lws_waves``)
    started = [job for run in workloads.jobsets if run.queue is None for stage in run.stages for job in stage]
    for job in [*workloads.jobs, *started]:  # a running JobSet has made its later replicated jobs' Jobs too
        if not job.suspended:  # the Job's running pods: as many as its parallelism
            pods.extend(PodArrival(p, 0.0, None, job.owner) for p in job.pods[: job.parallelism])
    rayjobs, submitters = running_rayjobs(loaded, workloads)
    pods.extend(submitters)  # a running RayJob's submitter Job runs its pod (its cluster's pods are arrivals)
    skipped = [kind for kind, items in (
        ("JobSets queued by Kueue", [r for r in workloads.jobsets if r.queue]),
        ("RayJobs queued by Kueue", [r for r in workloads.rayjobs if r.queue])) if items]
    if skipped:
        notes.append(f"{', '.join(skipped)}: not planned yet (noted, not moved in a wave)")
    others = [n for n in scenario.nodes if n.metadata.name not in gpu_nodes]
    return Cluster(scenario, gpu_nodes, others, pods, notes, lws_policies=lws_policies(loaded), rayjobs=rayjobs)


def pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or DEFAULT_NAMESPACE}/{pod.metadata.name}"


@dataclass(frozen=True)
class Held:
    """A pod running at the end of a run, as the next run takes it: the pod bound (``spec.nodeName``, its status
    naming its claims and, where DRA serves its ``nvidia.com/gpu``, its ``extendedResourceClaimStatus``) and the
    claims it holds, allocated. The simulator binds such a pod where it is without a scheduling cycle, as
    kube-scheduler never sees an assigned pod."""

    pod: Pod
    claims: tuple[ResourceClaim, ...] = ()


@dataclass
class Ran:
    """One simulation read per pod of the plan (a pod is known by its key in ``Cluster.pods``: a controller's
    replacement for a preemption victim takes the victim's place)."""

    status: dict[str, tuple[str, str]]  # pod -> (node, "") running, ("", reason) otherwise
    held: dict[str, Held]  # the running pods, to carry into the next run
    preempted: dict[str, str]  # pod -> "by <pod> on <node>": a victim of preemption in this run
    unreplaced: set[str]  # victims whose controller the run did not recreate (bare pods, Jobs' pods)


def _pinned(arrival: PodArrival, node: str) -> PodArrival:
    spec = msgspec.structs.replace(arrival.pod.spec, node_selector={**arrival.pod.spec.node_selector, HOSTNAME: node})
    return replace(arrival, pod=msgspec.structs.replace(arrival.pod, spec=spec))


def kept_arrival(arrival: PodArrival, node: str, held: Held | None) -> PodArrival:
    """A pod that stays on ``node``: bound there as the last run left it (``held``), or, where only its node is
    known, bound by ``spec.nodeName`` (a pod with no claims: on a device-plugin node ``nvidia.com/gpu`` is the
    node's allocatable). A pod with claims and no allocation to carry is pinned to the node instead and scheduled
    first; were it preempted, its controller's replacement would inherit the pin (no such pod comes from a plan's
    own runs, only from a placement given without them).

    Bound rather than pinned, a kept pod preempted during the wave is replaced by its controller from its own spec,
    free to land anywhere, as the real controller's replacement is."""
    if held is not None:
        return replace(arrival, pod=held.pod, arrive_at=0.0)
    if arrival.pod.spec.resource_claims:
        return _pinned(arrival, node)
    spec = msgspec.structs.replace(arrival.pod.spec, node_name=node)
    return replace(arrival, pod=msgspec.structs.replace(arrival.pod, spec=spec), arrive_at=0.0)


def mixed(cluster: Cluster, switched: set[str], arrivals: list[PodArrival], cordoned: set[str] | None = None,
          held: Sequence[Held] = (), *, leaderworkersets: Sequence[LeaderWorkerSetRun] = (),
          rayjobs: Sequence[RayJobRun] = ()) -> Scenario:
    """The cluster with ``switched`` on DRA and every other device-plugin node as it is, running ``arrivals``;
    ``cordoned`` nodes are left out (being drained: nothing lands there); ``held``: the claims the bound pods hold,
    allocated (in place of the scenario's claims of those names), reserved for those pods only. Each pod keeps its
    own ``preemptionPolicy``: a recreated pod preempts lower-priority running pods as kube-scheduler has it do;
    ``leaderworkersets``: the groups whose workers the LWS pod controller makes in the run (``lws_waves``);
    ``rayjobs``: the retried RayJobs whose submitter Job the RayJob controller makes in the run (``ray_waves``)."""
    nodes = [*cluster.other_nodes]
    slices = list(cluster.scenario.slices)
    for name, gpu in cluster.gpu_nodes.items():
        if name in (cordoned or set()):
            continue
        nodes.append(gpu.dra if name in switched else gpu.plugin)
        if name in switched:
            slices.extend(gpu.slices)
    claims = {(c.metadata.namespace, c.metadata.name): c for c in cluster.scenario.claims}
    uids = {h.pod.metadata.uid for h in held}
    for h in held:
        for claim in h.claims:
            reserved = [r for r in claim.status.reserved_for if r.uid in uids]
            status = msgspec.structs.replace(claim.status, reserved_for=reserved)
            claims[(claim.metadata.namespace, claim.metadata.name)] = msgspec.structs.replace(claim, status=status)
    return replace(cluster.scenario, nodes=nodes, slices=slices, claims=list(claims.values()), workloads=Workloads(
        arrivals=arrivals, controllers=cluster.scenario.workloads.controllers, leaderworkersets=list(leaderworkersets),
        rayjobs=list(rayjobs)))


def simulated(scenario: Scenario, features: Any, known: dict[str, str]) -> Ran:
    """Simulate ``scenario``; ``known``: the key each arrival has -> the plan's pod it is. A controller's
    replacement for a victim is the victim's pod (the ``Created`` event names the victim it replaces); a victim's
    preemptor is the pod nominated right after it. A LeaderWorkerSet's worker the run was to make and did not (its
    leader never ran) waits for it (``lws_waves``), as does a retried RayJob's submitter its cluster (``ray_waves``)."""
    from kubedra.sim.replacements import REPLACING
    from kubedra.sim.simulate import Options, simulate

    result = simulate(scenario, Options(features=features, fragmentation_samples=0))
    ident = dict(known)
    victims: list[tuple[str, str]] = []
    preempted: dict[str, str] = {}
    for event in result.events:
        if not event.object.startswith("Pod "):
            continue
        key = event.object.removeprefix("Pod ")
        if event.type == "Created" and REPLACING in event.message:
            victim = event.message.rsplit(REPLACING, 1)[1]
            ident[key] = ident.get(victim, victim)
        elif event.type == "Preempted":
            victims.append((key, event.node))
        elif event.type == "Nominated":
            for victim, node in victims:
                preempted[ident.get(victim, victim)] = f"by {ident.get(key, key)} on {node}"
            victims = []
    status: dict[str, tuple[str, str]] = {}
    held: dict[str, Held] = {}
    ended: set[str] = set()
    for key, record in result.state.pods.items():
        pod = ident.get(key, key)
        if record.phase == "Running":
            status[pod] = (record.pod.spec.node_name, "")
            claims = (result.state.claims.get(k) for k in record.claim_keys)
            held[pod] = Held(record.pod, tuple(c for c in claims if c is not None))
            ended.discard(pod)
        elif pod not in held:  # the victim's record comes before its replacement's
            status[pod] = ("", record.pending_reason or record.end_reason or record.phase)
            if record.deleted:
                ended.add(pod)
            else:
                ended.discard(pod)
    waits = {**unmade(scenario.workloads.leaderworkersets), **unsubmitted(scenario.workloads.rayjobs)}
    status.update({k: ("", why) for k, why in waits.items() if k not in status})
    return Ran(status, held, preempted, ended & set(preempted))


def run(scenario: Scenario, features: Any) -> dict[str, tuple[str, str]]:
    """pod key -> (node, "") for the pods running at the end, ("", reason) for the others."""
    return simulated(scenario, features, {}).status


def covered(budget: PodDisruptionBudget, pod: Pod) -> bool:
    """The budget's namespace and selector (a nil or empty selector covers no pod, as the eviction API reads it)."""
    selector = budget.spec.selector
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return False
    same = (pod.metadata.namespace or DEFAULT_NAMESPACE) == (budget.metadata.namespace or DEFAULT_NAMESPACE)
    return same and selector_matches(selector, pod.metadata.labels)


def _desired(value: int | str, expected: int, *, max_unavailable: bool) -> int:
    if isinstance(value, str):
        number = int(value.removesuffix("%") or 0)
        scaled = -(-number * expected // 100)
    else:
        scaled = value
    return expected - scaled if max_unavailable else scaled


def budget_findings(cluster: Cluster, running: set[str], draining: set[str], after: set[str]) -> list[dict[str, Any]]:
    """Each PDB below its desired count while the nodes drain (``draining``: the pods running then, the evicted ones
    recreated on other nodes; ``kubectl drain`` waits for those, and blocks for good where they cannot run), or
    after the wave."""
    pods = {pod_key(a.pod): a.pod for a in cluster.pods}
    out = []
    for budget in cluster.scenario.budgets:
        keys = [k for k, p in pods.items() if covered(budget, p)]
        spec = budget.spec
        value = spec.min_available if spec.min_available is not None else spec.max_unavailable or 0
        desired = _desired(value, len(keys), max_unavailable=spec.min_available is None)
        healthy = sum(1 for k in keys if k in running)
        during = sum(1 for k in keys if k in draining)
        later = sum(1 for k in keys if k in after)
        if during < desired or later < desired:
            name = f"{budget.metadata.namespace or DEFAULT_NAMESPACE}/{budget.metadata.name}"
            out.append({"budget": name, "desired": desired, "healthy": healthy, "duringDrain": during,
                        "after": later, "losesQuorum": during == 0 and healthy > 0})
    return out


def begin(cluster: Cluster, features: Any) -> Ran:
    """The cluster before any switch: every pod scheduled on the device plugin; where the placement was observed
    (a live cluster), the running pods stay on their nodes (bound there) and only the others (pending, or added from
    files) are scheduled."""
    if cluster.observed is None:
        made, groups = split(cluster.scenario.workloads.leaderworkersets, {pod_key(a.pod) for a in cluster.pods}, {})
        arrivals = [a for a in cluster.pods if pod_key(a.pod) not in made]
        return simulated(mixed(cluster, set(), arrivals, leaderworkersets=groups), features, {})
    arrivals, known = [], {}
    for arrival in cluster.pods:
        key = pod_key(arrival.pod)
        node = cluster.observed.get(key)
        arrivals.append(kept_arrival(arrival, node, None) if node is not None
                        else replace(arrival, arrive_at=RECREATED_AT))
        known[pod_key(arrivals[-1].pod)] = key
    return simulated(mixed(cluster, set(), arrivals), features, known)


def start(cluster: Cluster, features: Any) -> dict[str, tuple[str, str]]:
    """:func:`begin`'s pods: key -> (node, "") running, ("", reason) otherwise."""
    return begin(cluster, features).status
