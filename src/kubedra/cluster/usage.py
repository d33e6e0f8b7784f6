"""What pods ask of a node and what the pods bound to a node have asked, as the cluster state keeps it.

Owned by the cluster state (``ClusterState.usage``, ``PodRecord``); the scheduler's checks and scorers read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import msgspec

from kubedra.objects.model import Container, Pod
from kubedra.objects.quantity import Quantity

ZERO = Quantity.parse("0")


def _sum_containers(containers: Iterable[Container]) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for container in containers:
        for name, text in _effective_requests(container).items():
            total[name] = total.get(name, ZERO) + Quantity.parse(text)
    return total


def _effective_requests(container: Container) -> Mapping[str, str]:
    """Requests, defaulted from limits as the API server does when a request is absent."""
    merged = dict(container.resources.limits)
    merged.update(container.resources.requests)
    return merged


def _pod_level_supported(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and huge pages can be asked for by the pod as a whole."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_level_requests(pod: Pod, containers: Mapping[str, Quantity]) -> dict[str, Quantity]:
    """The pod-level requests the scheduler applies (PodLevelResources, on since 1.34), after the API server's
    defaulting: written requests; where pod-level limits are set, a missing cpu or memory request is the containers'
    aggregate (``containers``), else the pod-level limit. Only the supported resources; empty without
    ``spec.resources``."""
    resources = pod.spec.resources
    if resources is None:
        return {}
    found = {name: Quantity.parse(text) for name, text in resources.requests.items() if _pod_level_supported(name)}
    if resources.limits:
        for name in ("cpu", "memory"):  # overcommittable: huge pages are not defaulted from the containers
            if name not in found and name in containers:
                found[name] = containers[name]
        for name, text in resources.limits.items():
            if name not in found and _pod_level_supported(name):
                found[name] = Quantity.parse(text)
    return found


def pod_requests(pod: Pod) -> dict[str, Quantity]:
    """What the pod asks of a node, as ``resourcehelper.PodRequests`` sums it: its containers'
    (``container_requests``), the pod-level requests in their place where it has them, plus its overhead."""
    total = container_requests(pod)
    if pod.spec.resources is not None:  # the pod's own requests stand for its containers' (``PodRequests``)
        total.update(pod_level_requests(pod, total))
    for name, text in pod.spec.overhead.items():
        total[name] = total.get(name, ZERO) + Quantity.parse(text)
    return total


def container_requests(pod: Pod) -> dict[str, Quantity]:
    """``AggregateContainerRequests``: app containers and sidecars (init containers with ``restartPolicy: Always``)
    added up; a plain init container counts with the sidecars started before it; the larger of the two."""
    total = _sum_containers(pod.spec.containers)
    sidecars: dict[str, Quantity] = {}
    peak: dict[str, Quantity] = {}
    for init in pod.spec.init_containers:
        asked = {name: Quantity.parse(text) for name, text in _effective_requests(init).items()}
        if init.restart_policy == "Always":
            for name, want in asked.items():
                total[name] = total.get(name, ZERO) + want
                sidecars[name] = sidecars.get(name, ZERO) + want
            running = dict(sidecars)
        else:
            running = dict(asked)
            for name, want in sidecars.items():
                running[name] = running.get(name, ZERO) + want
        for name, want in running.items():
            if want > peak.get(name, ZERO):
                peak[name] = want
    for name, want in peak.items():
        if want > total.get(name, ZERO):
            total[name] = want
    return total


# kube-scheduler's defaults for a container that requests no cpu or memory (schedutil.DefaultMilliCPURequest and
# DefaultMemoryRequest), used where scoring counts "non-zero" requests.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


class ScoringRequests(msgspec.Struct, frozen=True, gc=False):
    """A pod's cpu (milli) and memory (bytes) as kube-scheduler's scorers count them: as requested, and "non-zero"
    (each container that requests no cpu or memory counted at 100m / 200Mi), both the way ``resourcehelper.PodRequests``
    sums containers, sidecars, init containers and overhead."""

    milli_cpu: int = 0
    memory: int = 0
    nonzero_milli_cpu: int = 0
    nonzero_memory: int = 0
    # A frozen struct, not a frozen dataclass: one is made per bind and unbind, and a struct is built without a
    # per-field ``object.__setattr__``.
    # (``NodeUsage`` sums them in place of operators: it is the one place that adds them, once per bind.)


NO_REQUESTS = ScoringRequests()


def _container_amounts(container: Container) -> tuple[int, int, int, int]:
    requests = _effective_requests(container)
    cpu, memory = requests.get("cpu"), requests.get("memory")
    milli = Quantity.parse(cpu).milli_value() if cpu is not None else 0
    mem = Quantity.parse(memory).value() if memory is not None else 0
    # "Missing" means absent: a request written as "0" stays 0 (NonMissingContainerRequests).
    return (
        milli,
        mem,
        milli if cpu is not None else DEFAULT_MILLI_CPU_REQUEST,
        mem if memory is not None else DEFAULT_MEMORY_REQUEST,
    )


def scoring_requests(pod: Pod, *, incoming: bool = False) -> ScoringRequests:
    """See ``ScoringRequests``: containers summed; a sidecar (init container with restartPolicy Always) adds to the
    sum and to every later init container; the pod needs the larger of the sum and any init container's peak.
    Pod-level cpu and memory stand for the containers' in a node's sums and in BalancedAllocation; ``incoming``: the
    pod as NodeResourcesFit's scorer reads the pod being scheduled, whose "non-zero" requests v1.37.2 counts from its
    containers only (that scorer is built without the PodLevelResources flag; the real scheduler's scores show it)."""
    total = [0, 0, 0, 0]
    for container in pod.spec.containers:
        for i, amount in enumerate(_container_amounts(container)):
            total[i] += amount
    sidecars = [0, 0, 0, 0]
    init_peak = [0, 0, 0, 0]
    for init in pod.spec.init_containers:
        amounts = _container_amounts(init)
        if init.restart_policy == "Always":
            for i, amount in enumerate(amounts):
                total[i] += amount
                sidecars[i] += amount
            use = sidecars
        else:
            use = [a + s for a, s in zip(amounts, sidecars, strict=True)]
        init_peak = [max(p, u) for p, u in zip(init_peak, use, strict=True)]
    total = [max(t, p) for t, p in zip(total, init_peak, strict=True)]
    if pod.spec.resources is not None:  # pod-level cpu and memory replace the containers', "non-zero" ones too
        level = pod_level_requests(pod, container_requests(pod))
        if "cpu" in level:
            total[0] = level["cpu"].milli_value()
            total[2] = total[2] if incoming else total[0]
        if "memory" in level:
            total[1] = level["memory"].value()
            total[3] = total[3] if incoming else total[1]
    cpu, memory = pod.spec.overhead.get("cpu"), pod.spec.overhead.get("memory")
    if cpu is not None:
        extra = Quantity.parse(cpu).milli_value()
        total[0] += extra
        total[2] += extra
    if memory is not None:
        extra = Quantity.parse(memory).value()
        total[1] += extra
        total[3] += extra
    return ScoringRequests(*total)


HostPort = tuple[str, str, int]  # (host IP, protocol, port), as kube-scheduler's HostPortInfo keys them
BIND_ALL = "0.0.0.0"  # noqa: S104  (a key of HostPortInfo, nothing binds to it)


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """``GetHostPorts``: the host ports of the app containers and of the sidecars (init containers with
    ``restartPolicy: Always``, which run as long as the pod), an empty IP read as 0.0.0.0 and protocol as TCP."""
    containers = [*(c for c in pod.spec.init_containers if c.restart_policy == "Always"), *pod.spec.containers]
    return tuple((p.host_ip or BIND_ALL, p.protocol or "TCP", p.host_port)
                 for c in containers for p in c.ports if p.host_port > 0)


def ports_conflict(wanted: tuple[HostPort, ...], used: Mapping[HostPort, int]) -> bool:
    """``HostPortInfo.CheckConflict`` for each wanted port: 0.0.0.0 conflicts with the port on any IP; a given IP
    with the same IP or 0.0.0.0."""
    for ip, protocol, port in wanted:
        if ip == BIND_ALL:
            if any(u_protocol == protocol and u_port == port for _, u_protocol, u_port in used):
                return True
        elif (BIND_ALL, protocol, port) in used or (ip, protocol, port) in used:
            return True
    return False


MAX_SUMS = 4096  # sums remembered (``Sums``); beyond that it starts over


class Sums:
    """Node totals reached before, by the identity of the terms: a workload's pods add the same requests to nodes
    that already hold the same totals (those reached on another node first), so the sum is most often one worked
    out already. Quantities and scoring requests are immutable: a sum is shared by the nodes that reach it."""

    __slots__ = ("_quantities", "_scoring")

    def __init__(self) -> None:
        # (id(total), id(amount), sign) -> (total, amount, the result): both terms held, so their ids stay unique
        self._quantities: dict[tuple[int, int, int], tuple[Quantity, Quantity, Quantity]] = {}
        self._scoring: dict[tuple[int, int, int], tuple[ScoringRequests, ScoringRequests, ScoringRequests]] = {}

    def quantity(self, total: Quantity, amount: Quantity, sign: int) -> Quantity:
        key = (id(total), id(amount), sign)
        found = self._quantities.get(key)
        if found is None or found[0] is not total or found[1] is not amount:
            if len(self._quantities) >= MAX_SUMS:
                self._quantities.clear()
            found = self._quantities[key] = (total, amount, total + amount if sign > 0 else total - amount)
        return found[2]

    def scoring(self, total: ScoringRequests, amount: ScoringRequests, sign: int) -> ScoringRequests:
        key = (id(total), id(amount), sign)
        found = self._scoring.get(key)
        if found is None or found[0] is not total or found[1] is not amount:
            if len(self._scoring) >= MAX_SUMS:
                self._scoring.clear()
            found = self._scoring[key] = (total, amount, ScoringRequests(
                total.milli_cpu + sign * amount.milli_cpu, total.memory + sign * amount.memory,
                total.nonzero_milli_cpu + sign * amount.nonzero_milli_cpu,
                total.nonzero_memory + sign * amount.nonzero_memory))
        return found[2]


@dataclass
class NodeUsage:
    """What pods bound to a node have requested; kept up to date as pods come and go."""

    requested: dict[str, Quantity] = field(default_factory=dict)
    pods: int = 0
    scoring: ScoringRequests = NO_REQUESTS  # the sum of the bound pods' ``scoring_requests``
    ports: dict[HostPort, int] = field(default_factory=dict)  # host ports in use, with how many pods hold each

    def take_ports(self, wanted: tuple[HostPort, ...], sign: int) -> None:
        """A pod with host ports is bound (+1) or leaves (-1)."""
        for port in wanted:
            held = self.ports.get(port, 0) + sign
            if held > 0:
                self.ports[port] = held
            else:
                self.ports.pop(port, None)

    def add(
        self, requests: Mapping[str, Quantity], scoring: ScoringRequests | None = None, sums: Sums | None = None
    ) -> None:
        """A pod bound here (``sums``: totals reached before, where the caller keeps them)."""
        self.pods += 1
        requested = self.requested
        if sums is not None:
            for name, amount in requests.items():
                requested[name] = sums.quantity(requested.get(name, ZERO), amount, 1)
            if scoring is not None:
                self.scoring = sums.scoring(self.scoring, scoring, 1)
            return
        for name, amount in requests.items():
            requested[name] = requested.get(name, ZERO) + amount
        if scoring is not None:
            mine = self.scoring
            self.scoring = ScoringRequests(mine.milli_cpu + scoring.milli_cpu, mine.memory + scoring.memory,
                                           mine.nonzero_milli_cpu + scoring.nonzero_milli_cpu,
                                           mine.nonzero_memory + scoring.nonzero_memory)

    def remove(
        self, requests: Mapping[str, Quantity], scoring: ScoringRequests | None = None, sums: Sums | None = None
    ) -> None:
        """A pod left (``sums`` as ``add``'s)."""
        self.pods -= 1
        if sums is not None:
            requested = self.requested
            for name, amount in requests.items():
                requested[name] = sums.quantity(requested.get(name, ZERO), amount, -1)
            if scoring is not None:
                self.scoring = sums.scoring(self.scoring, scoring, -1)
            return
        for name, amount in requests.items():
            self.requested[name] = self.requested.get(name, ZERO) - amount
        if scoring is not None:
            mine = self.scoring
            self.scoring = ScoringRequests(mine.milli_cpu - scoring.milli_cpu, mine.memory - scoring.memory,
                                           mine.nonzero_milli_cpu - scoring.nonzero_milli_cpu,
                                           mine.nonzero_memory - scoring.nonzero_memory)
