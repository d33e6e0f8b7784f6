"""``simulate(scenario)``: wire the cluster state, the allocator, the device index and the scheduler, then run.

One entry point for the CLI, the tests and the benchmarks, so all three exercise the same path.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from kubedra.allocator import Features
from kubedra.cel import CompileCache
from kubedra.cluster.state import ClusterState, PodRecord, SpecCache, SpreadSources
from kubedra.objects.model import Pod
from kubedra.scheduler.device_index import CapacityRules, DeviceIndex
from kubedra.scheduler.dra import DEFAULT_STEP_BUDGET, AllocatorBackend, seeded_share_ids
from kubedra.scheduler.scheduler import Scheduler
from kubedra.scheduler.scoring import Policy
from kubedra.sim.evictions import Evictions
from kubedra.sim.fragmentation import Sampler
from kubedra.sim.groups import group_key
from kubedra.sim.jobset_controllers import start_job as start_jobset_job
from kubedra.sim.kueue_controller import KueueController
from kubedra.sim.kueue_pods import gated, managed, queued_pods
from kubedra.sim.leaderworkersets import LeaderWorkerController
from kubedra.sim.pytorchjobs import PyTorchJobController
from kubedra.sim.queue import MAX_IN_UNSCHEDULABLE, SchedulingQueue
from kubedra.sim.rayjobs import RayJobController
from kubedra.sim.run import Simulation, SimulationResult
from kubedra.sim.scenario import Scenario

DEFAULT_POLICY = Policy.KUBE_SCHEDULER


@dataclass(frozen=True)
class Options:
    policy: Policy = DEFAULT_POLICY
    seed: int = 0
    features: Features = field(default_factory=Features.for_release)
    fast_path: bool = True  # the device index and reused answers; off = a full search on every node (cross-checks)
    step_budget: int = DEFAULT_STEP_BUDGET
    fragmentation_samples: int = 20  # points of the fragmentation series over the arrivals' span (0: none)
    # kube-scheduler's --pod-max-in-unschedulable-pods-duration (deprecated; 5 minutes), in seconds: how long a pod
    # waits in the unschedulable pool before the periodic flush retries it
    max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE


def _record(
    pod: Pod, arrive_at: float, run_for: float | None, owner: str, *, gangs: bool, specs: SpecCache
) -> PodRecord:
    derived = specs.derived(pod)
    # One requests map per template, as the spec (records never change it in place; a replacement shares it too).
    record = PodRecord(pod=pod, requests=derived.requests, arrive_at=arrive_at, run_for=run_for, owner=owner,
                       derived=derived)
    if gangs and pod.spec.scheduling_group is not None:
        record.group = group_key(pod)
    return record


def prepare(scenario: Scenario, options: Options) -> Simulation:
    """Everything ready to ``run()``; exposed so callers can observe or step the simulation."""
    features = options.features
    state = ClusterState.build(
        nodes=scenario.nodes,
        slices=scenario.slices,
        classes=scenario.classes,
        taint_rules=scenario.taint_rules,
        claims=scenario.claims,
        templates=scenario.templates,
        consumable_capacity=features.consumable_capacity,
    )
    # Inputs with no ReplicaSet, Deployment or StatefulSet at all (pods only: a `kubedra snapshot` carries pods, not
    # their controllers), like a live cluster whose controllers could not be listed, are read as the cluster's pods
    # alone say: a pod's controlling owner exists and selects its own pods. Where the inputs hold controllers, or a
    # live cluster's were read, an owner missing from them does not exist, as the scheduler's informer says.
    controllers = scenario.workloads.controllers or None
    if scenario.cluster_controllers is not None:
        controllers = {**scenario.cluster_controllers, **scenario.workloads.controllers}
    state.spread_sources = SpreadSources(scenario.services, controllers)
    cel = CompileCache(features.cel_options())
    index = (
        DeviceIndex(
            state.devices, state.classes, cel, taint_rules=bool(state.taint_rules),
            shares=CapacityRules(features.fractional_capacity_range)
            if features.consumable_capacity and not (features.lenient_capacity or features.stable) else None,
        )
        if options.fast_path
        else None
    )
    backend = AllocatorBackend(
        features,
        state,
        cel,
        step_budget=options.step_budget,
        share_ids=seeded_share_ids(options.seed),
        reuse_answers=options.fast_path,
    )
    rng = random.Random(options.seed)
    scheduler = Scheduler(state, backend, options.policy, rng, index, extended_resources=features.extended_resource)
    simulation = Simulation(
        state,
        scheduler,
        rng,
        allocator=backend.allocator,
        queue=SchedulingQueue(max_in_unschedulable=options.max_in_unschedulable),
    )
    gangs = features.generic_workload
    simulation.gangs_on = gangs
    if gangs:
        simulation.pod_groups = dict(scenario.groups.pod_groups)
        simulation.workload_claims = features.workload_resource_claims
    priorities = {a.pod.spec.priority or 0 for a in scenario.workloads.arrivals}
    priorities |= {p.spec.priority or 0 for j in scenario.workloads.all_jobs() for p in j.pods}
    priorities |= {p.spec.priority or 0 for c in scenario.workloads.cronjobs for p in c.sample().pods}
    priorities |= {p.spec.priority or 0 for lws in scenario.workloads.leaderworkersets for p in lws.pods()}
    priorities |= {p.spec.priority or 0 for r in scenario.workloads.rayjobs if r.submitter for p in r.submitter.pods}
    if len(priorities) > 1:
        simulation.evictions = Evictions(simulation, scenario.budgets)
    specs = SpecCache()
    kueue = KueueController(simulation, scenario.kueue) if scenario.kueue else None
    queued = _add_arrivals(simulation, scenario, specs, kueue)
    _add_jobs(simulation, scenario, specs, kueue)
    if kueue is not None:
        for pods in queued_pods(queued, len(scenario.workloads.jobs))[0]:
            kueue.hold_pods(pods)
    for cron in scenario.workloads.cronjobs:
        simulation.add_cronjob(cron)
    _add_jobsets(simulation, scenario, specs, kueue)
    for lws in scenario.workloads.leaderworkersets:
        simulation.add_controller(LeaderWorkerController(simulation, lws))
    for ray_job in scenario.workloads.rayjobs:
        if kueue is not None and ray_job.queue is not None:
            kueue.hold_rayjob(ray_job)  # suspended by Kueue's webhook; its cluster made when admitted
        elif not ray_job.held:  # a queued one written suspended, with no Kueue queue, stays suspended
            simulation.add_controller(RayJobController(simulation, ray_job))
    for pytorch_job in scenario.workloads.pytorchjobs:
        simulation.add_controller(PyTorchJobController(simulation, pytorch_job))
    if options.fragmentation_samples > 0:
        simulation.sampler = _sampler(scenario, state, backend, index, options.fragmentation_samples)
    return simulation


def _add_arrivals(simulation: Simulation, scenario: Scenario, specs: SpecCache,
                  kueue: KueueController | None) -> list[tuple[Pod, float]]:
    """The pods that arrive on their own; a plain Pod naming a LocalQueue made with Kueue's scheduling gate where the
    input has Kueue's queues (``sim.kueue_pods``): those returned with their arrival, for their Workloads. A queued
    RayJob's cluster is left out: made when Kueue admits it."""
    held = {key for run in scenario.workloads.rayjobs if kueue is not None and run.queue is not None
            for key in run.cluster}
    queued: list[tuple[Pod, float]] = []
    for arrival in scenario.workloads.arrivals:
        if held and f"{arrival.pod.metadata.namespace}/{arrival.pod.metadata.name}" in held:
            continue
        pod = arrival.pod
        if kueue is not None and arrival.owner.startswith("Pod/") and managed(pod):
            pod = gated(pod)
            queued.append((pod, arrival.arrive_at))
        simulation.add(_record(pod, arrival.arrive_at, arrival.run_for, arrival.owner, gangs=simulation.gangs_on,
                               specs=specs))
    return queued


def _add_jobs(simulation: Simulation, scenario: Scenario, specs: SpecCache, kueue: KueueController | None) -> None:
    """The Jobs made at the start: each added (a suspended one makes no pod), or held for Kueue's admission where it
    names a LocalQueue and the input has Kueue's queues."""
    for job in scenario.workloads.jobs:
        if job.suspended:
            continue
        if kueue is not None and job.queue is not None:
            kueue.hold(job)  # created suspended by Kueue's webhook; started when admitted
            continue
        records = [_record(pod, job.arrive_at, job.run_for, job.owner, gangs=simulation.gangs_on, specs=specs)
                   for pod in job.pods]
        start_jobset_job(simulation, job, records)  # add_job; a JobSet's exclusive-placement Job: its controller


def _add_jobsets(simulation: Simulation, scenario: Scenario, specs: SpecCache, kueue: KueueController | None) -> None:
    """The JobSets whose controller acts during the run; one naming a LocalQueue held for Kueue's admission where the
    input has Kueue's queues, else made now (its Jobs were not among the workload's) unless written suspended."""
    for jobset in scenario.workloads.jobsets:
        if jobset.queue is None:
            simulation.add_jobset(jobset)
        elif kueue is not None:
            kueue.hold_jobset(jobset)  # suspended by Kueue's webhook; its Jobs made when admitted
        elif not jobset.held:  # as if Kueue were not installed
            for job in jobset.first:
                start_jobset_job(simulation, job, [_record(pod, job.arrive_at, job.run_for, job.owner,
                                                           gangs=simulation.gangs_on, specs=specs)
                                                   for pod in job.pods])
            simulation.add_jobset(jobset)


def _sampler(
    scenario: Scenario, state: ClusterState, backend: AllocatorBackend, index: DeviceIndex | None, samples: int
) -> Sampler:
    """Samples spread over the time the workload is known to span (the last arrival plus its run time; a CronJob's
    horizon plus its Jobs' run time), and one at the end of the run."""
    from kubedra.scheduler.claims_fit import ClaimsFit

    ends = [a.arrive_at + (a.run_for or 0.0) for a in scenario.workloads.arrivals]
    ends += [j.arrive_at + (j.run_for or 0.0) for j in scenario.workloads.jobs]
    ends += [(c.until or 0.0) + (c.sample().run_for or 0.0) for c in scenario.workloads.cronjobs]  # its last Job's
    span = max(ends, default=0.0)
    return Sampler(state, ClaimsFit(state, backend.allocator, index), span / samples)


def simulate(
    scenario: Scenario, options: Options = Options(), progress: Callable[[int, int], None] | None = None
) -> SimulationResult:
    """One run, as ``kubedra simulate`` reports it and ``kubedra explain`` explains it (both call this)."""
    return prepare(scenario, options).run(progress)
