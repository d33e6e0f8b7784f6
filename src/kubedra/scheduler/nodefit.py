"""The node-level rules a GPU user writes, as kube-scheduler's plugins check them.

NodeUnschedulable, NodeName, NodeAffinity (``nodeSelector`` and required affinity), TaintToleration (NoSchedule and
NoExecute) and NodeResourcesFit (cpu, memory, pods, device-plugin extended resources). Each check returns ``None``
when the node fits or the reason in kube-scheduler's words, so pending pods explain themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubedra.objects.model import Container, Node, Pod, Taint
from kubedra.objects.quantity import Quantity
from kubedra.objects.selection import node_selector_matches, toleration_tolerates

ZERO = Quantity.parse("0")
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
# Resources every pod has and that are not extended resources.
NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


IMPLICIT_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_extended_resource(name: str) -> bool:
    """Fully qualified names outside ``kubernetes.io`` (``nvidia.com/gpu``), plus KEP-5004's implicit class names."""
    if name.startswith(IMPLICIT_DEVICE_CLASS_PREFIX):
        return True
    if name in NATIVE_RESOURCES or name.startswith(("hugepages-", "requests.")):
        return False
    domain = name.split("/", 1)[0] if "/" in name else ""
    return bool(domain) and not domain.endswith("kubernetes.io")


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


def pod_requests(pod: Pod) -> dict[str, Quantity]:
    """What the pod asks of a node: the larger of the containers' sum and any single init container."""
    total = _sum_containers(pod.spec.containers)
    for init in pod.spec.init_containers:
        for name, text in _effective_requests(init).items():
            want = Quantity.parse(text)
            if want > total.get(name, ZERO):
                total[name] = want
    return total


# kube-scheduler's defaults for a container that requests no cpu or memory (schedutil.DefaultMilliCPURequest and
# DefaultMemoryRequest), used where scoring counts "non-zero" requests.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScoringRequests:
    """A pod's cpu (milli) and memory (bytes) as kube-scheduler's scorers count them: as requested, and "non-zero"
    (each container that requests no cpu or memory counted at 100m / 200Mi), both the way ``resourcehelper.PodRequests``
    sums containers, sidecars, init containers and overhead."""

    milli_cpu: int = 0
    memory: int = 0
    nonzero_milli_cpu: int = 0
    nonzero_memory: int = 0

    def __add__(self, other: ScoringRequests) -> ScoringRequests:
        return ScoringRequests(
            self.milli_cpu + other.milli_cpu,
            self.memory + other.memory,
            self.nonzero_milli_cpu + other.nonzero_milli_cpu,
            self.nonzero_memory + other.nonzero_memory,
        )

    def __sub__(self, other: ScoringRequests) -> ScoringRequests:
        return ScoringRequests(
            self.milli_cpu - other.milli_cpu,
            self.memory - other.memory,
            self.nonzero_milli_cpu - other.nonzero_milli_cpu,
            self.nonzero_memory - other.nonzero_memory,
        )


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


def scoring_requests(pod: Pod) -> ScoringRequests:
    """See ``ScoringRequests``: containers summed; a sidecar (init container with restartPolicy Always) adds to the
    sum and to every later init container; the pod needs the larger of the sum and any init container's peak."""
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


@dataclass
class NodeUsage:
    """What pods bound to a node have requested; kept up to date as pods come and go."""

    requested: dict[str, Quantity] = field(default_factory=dict)
    pods: int = 0
    scoring: ScoringRequests = ScoringRequests()  # the sum of the bound pods' ``scoring_requests``

    def add(self, requests: Mapping[str, Quantity], scoring: ScoringRequests | None = None) -> None:
        self.pods += 1
        for name, amount in requests.items():
            self.requested[name] = self.requested.get(name, ZERO) + amount
        if scoring is not None:
            self.scoring = self.scoring + scoring

    def remove(self, requests: Mapping[str, Quantity], scoring: ScoringRequests | None = None) -> None:
        self.pods -= 1
        for name, amount in requests.items():
            self.requested[name] = self.requested.get(name, ZERO) - amount
        if scoring is not None:
            self.scoring = self.scoring - scoring


def taint_reason(pod: Pod, node: Node) -> str | None:
    """The first NoSchedule/NoExecute taint of the node that the pod does not tolerate."""
    taints = list(node.spec.taints)
    if node.spec.unschedulable:
        taints.append(UNSCHEDULABLE_TAINT)
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            toleration_tolerates(
                key=t.key,
                operator=t.operator,
                value=t.value,
                effect=t.effect,
                taint_key=taint.key,
                taint_value=taint.value,
                taint_effect=taint.effect,
            )
            for t in pod.spec.tolerations
        ):
            shown = f"{taint.key}: {taint.value}" if taint.value else taint.key
            return f"node(s) had untolerated taint {{{shown}}}"
    return None


def affinity_reason(pod: Pod, node: Node) -> str | None:
    """``nodeSelector`` and required node affinity, reported as kube-scheduler does."""
    labels = node.metadata.labels
    for key, value in pod.spec.node_selector.items():
        if labels.get(key) != value:
            return "node(s) didn't match Pod's node affinity/selector"
    affinity = pod.spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if (
        affinity and affinity.node_affinity
    ) else None
    if required is not None and not node_selector_matches(required, node.metadata.name, labels):
        return "node(s) didn't match Pod's node affinity/selector"
    return None


def resources_reason(
    requests: Mapping[str, Quantity],
    node: Node,
    usage: NodeUsage,
    dra_extended: frozenset[str] = frozenset(),
) -> str | None:
    """NodeResourcesFit: ``Insufficient cpu`` and friends; DRA-served extended resources are not counted here."""
    allocatable = node.status.allocatable
    pods_allowed = allocatable.get("pods")
    if pods_allowed is not None and usage.pods + 1 > Quantity.parse(pods_allowed).value():
        return "Too many pods"
    for name, want in requests.items():
        if want <= ZERO or name in dra_extended:
            continue
        have_text = allocatable.get(name)
        if have_text is None:
            # A Node written without status.allocatable (common in hand-written inventories) is treated as
            # having room for any cpu and memory; extended resources it does not advertise are never there.
            if is_extended_resource(name) or (allocatable and name in ("cpu", "memory", "ephemeral-storage")):
                return f"Insufficient {name}"
            continue
        if usage.requested.get(name, ZERO) + want > Quantity.parse(have_text):
            return f"Insufficient {name}"
    return None


def node_fit_reason(
    pod: Pod,
    requests: Mapping[str, Quantity],
    node: Node,
    usage: NodeUsage,
    dra_extended: frozenset[str] = frozenset(),
) -> str | None:
    """All node-level checks in kube-scheduler's filter order; the first failure is the reason."""
    if pod.spec.node_name and pod.spec.node_name != node.metadata.name:
        return "node(s) didn't match the requested node name"
    return (
        affinity_reason(pod, node)
        or taint_reason(pod, node)
        or resources_reason(requests, node, usage, dra_extended)
    )
