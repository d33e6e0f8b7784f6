"""The internal resource.k8s.io/v1 model: msgspec structs shaped exactly like the Kubernetes JSON.

Field names follow the v1 JSON names (camelCase, with Kubernetes' own spellings such as ``shareID``),
so ``msgspec.convert(document, ResourceSlice)`` reads a v1 object and ``to_builtins`` writes it back.
Quantities stay strings here (as on the wire; fields typed ``QuantityText`` so the decoder reads a number
written there as Kubernetes does); :mod:`kubedra.objects.quantity` parses them where arithmetic is needed.
Integers are typed ``Int32``/``Int64`` after their Go fields. Beta and legacy shapes are converted to these
structs before decoding.

Unknown fields are refused in the DRA kinds (a typo such as ``expresion`` is an error, as in
``kubectl --validate=strict``); metadata, Node and Pod keep only what kubedra reads.
"""

from __future__ import annotations

import builtins
from typing import Annotated, Any, ClassVar

import msgspec

# --------------------------------------------------------------------------------------------------
# Wire types: what the Go field is, so every reader (the loader, NodePools, workloads) decodes it alike

QUANTITY_MARK = "kubedra.quantity"
QuantityText = Annotated[str, msgspec.Meta(extra={QUANTITY_MARK: True})]
"""A ``resource.Quantity``: a string on the wire, but a JSON/YAML number is read as its text, as Go's
``Quantity.UnmarshalJSON`` does (``cpu: 2``, ``nvidia.com/gpu: 1``, ``cpu: 0.5``)."""
Int32 = Annotated[builtins.int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
"""A Go ``int32`` field: a number outside its range is refused, as ``encoding/json`` refuses it."""
Int64 = Annotated[builtins.int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
"""A Go ``int64`` field."""

# --------------------------------------------------------------------------------------------------
# Base classes


class Spec(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """A strict part of a DRA object: unknown fields are errors."""


class Loose(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    """A part of a core object where kubedra reads a subset and ignores the rest."""


# --------------------------------------------------------------------------------------------------
# meta/v1 and core/v1 parts


class OwnerReference(Loose):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Loose):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: Int64 | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []


class NodeSelectorRequirement(Spec):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(Spec):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(Spec):
    node_selector_terms: list[NodeSelectorTerm] = []


class Condition(Loose):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: Int64 | None = None


# --------------------------------------------------------------------------------------------------
# DeviceClass


class CELDeviceSelector(Spec):
    expression: str


class DeviceSelector(Spec):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(Spec):
    driver: str
    parameters: Any = None


class DeviceClassConfiguration(Spec):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(Spec):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(Spec):
    KIND: ClassVar[str] = "DeviceClass"
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --------------------------------------------------------------------------------------------------
# ResourceSlice


class DeviceAttribute(Spec):
    """Exactly one of the typed values is set (``version`` is a semver string)."""

    int: Int64 | None = None
    bool: builtins.bool | None = None
    string: str | None = None
    version: str | None = None
    # DRAListTypeAttributes (1.36 alpha)
    ints: list[Int64] | None = None
    bools: list[builtins.bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None


class CapacityRequestPolicyRange(Spec):
    min: QuantityText
    max: QuantityText | None = None
    step: QuantityText | None = None


class CapacityRequestPolicy(Spec):
    default: QuantityText | None = None
    valid_values: list[QuantityText] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(Spec):
    value: QuantityText
    request_policy: CapacityRequestPolicy | None = None


class Counter(Spec):
    value: QuantityText


class CounterSet(Spec):
    name: str
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(Spec):
    counter_set: str
    counters: dict[str, Counter] = {}
    compatibility_groups: list[str] = []  # DRADeviceCompatibilityGroups (1.37 alpha): read, not acted on


class DeviceTaint(Spec):
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Device(Spec):
    name: str
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None
    node_allocatable_resources: dict[str, Any] | None = None  # DRANodeAllocatableResources (alpha): read only


class ResourcePool(Spec):
    name: str
    generation: Int64 = 0
    resource_slice_count: Int64 = 0


class ResourceSliceSpec(Spec):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []
    # 1.37 alphas (DRAPartitionableDevicesType, DRAOptionalNodeOperations): read, not acted on
    partition_type_attribute: str | None = None
    skip_node_operations: list[str] = []


class ResourceSlice(Spec, kw_only=True):
    KIND: ClassVar[str] = "ResourceSlice"
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec


# --------------------------------------------------------------------------------------------------
# ResourceClaim and ResourceClaimTemplate


class DeviceToleration(Spec):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class CapacityRequirements(Spec):
    requests: dict[str, QuantityText] = {}


class ExactDeviceRequest(Spec):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: Int64 | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None
    derived_attributes: Any = None  # DRADerivedAttributes (1.37 alpha): read, not acted on


class DeviceSubRequest(Spec):
    name: str
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: Int64 | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None
    derived_attributes: Any = None


class DeviceRequest(Spec):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(Spec):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(Spec):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(Spec):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(Spec):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(Spec):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, QuantityText] = {}
    skip_node_operations: list[str] = []


class DeviceAllocationConfiguration(Spec):
    source: str
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(Spec):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(Spec):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(Spec):
    resource: str
    name: str
    uid: str
    api_group: str = ""


class NetworkDeviceData(Spec):
    interface_name: str = ""
    ips: list[str] = []
    hardware_address: str = ""


class AllocatedDeviceStatus(Spec):
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[Condition] = []
    data: Any = None
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(Spec):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(Spec):
    KIND: ClassVar[str] = "ResourceClaim"
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(Spec):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(Spec):
    KIND: ClassVar[str] = "ResourceClaimTemplate"
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# --------------------------------------------------------------------------------------------------
# DeviceTaintRule


class DeviceTaintSelector(Spec):
    device_class_name: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    selectors: list[DeviceSelector] = []


class DeviceTaintRuleSpec(Spec):
    taint: DeviceTaint
    device_selector: DeviceTaintSelector | None = None


class DeviceTaintRuleStatus(Spec):
    conditions: list[Condition] = []


class DeviceTaintRule(Spec, kw_only=True):
    KIND: ClassVar[str] = "DeviceTaintRule"
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec
    status: DeviceTaintRuleStatus | None = None


# --------------------------------------------------------------------------------------------------
# core/v1 Node and Pod: the subset that scheduling reads


class Taint(Loose):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Toleration(Loose):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class NodeSpec(Loose):
    taints: list[Taint] = []
    unschedulable: bool | None = None


class NodeStatus(Loose):
    capacity: dict[str, QuantityText] = {}
    allocatable: dict[str, QuantityText] = {}


class Node(Loose):
    KIND: ClassVar[str] = "Node"
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class ResourceClaimRef(Loose):
    """``containers[].resources.claims[]``: a pod claim by name, optionally one request of it."""

    name: str
    request: str = ""


class ResourceRequirements(Loose):
    limits: dict[str, QuantityText] = {}
    requests: dict[str, QuantityText] = {}
    claims: list[ResourceClaimRef] = []


class ContainerPort(Loose):
    container_port: Int32 = 0
    host_port: Int32 = 0
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = ""


class Container(Loose):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = []
    restart_policy: str = ""  # "Always" on an init container: a sidecar (its requests add to the pod's)


class PodResourceClaim(Loose):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PreferredSchedulingTerm(Loose):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(Loose):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class LabelSelectorRequirement(Loose):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(Loose):
    """``metav1.LabelSelector``: every ``matchLabels`` pair and ``matchExpressions`` requirement must hold; an empty
    selector selects everything, an absent one (None where it is used) nothing."""

    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class PodAffinityTerm(Loose):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(Loose):
    weight: Int32 = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(Loose):
    """``podAffinity`` and ``podAntiAffinity`` alike."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(Loose):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(Loose):
    """``spec.topologySpreadConstraints[]``: None where the API leaves a field unset (the scheduler's defaults:
    minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore)."""

    max_skew: Int32 = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PodSchedulingGate(Loose):
    name: str


class PodSchedulingGroup(Loose):
    """``spec.schedulingGroup`` (1.36+): the PodGroup the pod belongs to."""

    pod_group_name: str | None = None


class PodWorkloadReference(Loose):
    """1.35's ``spec.workloadRef`` (replaced by ``schedulingGroup`` in 1.36): a Workload and one of its groups."""

    name: str = ""
    pod_group: str = ""
    pod_group_replica_key: str = ""


class PersistentVolumeClaimVolumeSource(Loose):
    claim_name: str = ""
    read_only: bool = False


class VolumeResourceRequirements(Loose):
    limits: dict[str, QuantityText] = {}
    requests: dict[str, QuantityText] = {}


class PersistentVolumeClaimSpec(Loose):
    """The parts of a claim's spec an ephemeral volume's template needs to stay a valid template when written back."""

    access_modes: list[str] = []
    storage_class_name: str | None = None
    volume_mode: str | None = None
    resources: VolumeResourceRequirements | None = None


class PersistentVolumeClaimTemplate(Loose):
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class EphemeralVolumeSource(Loose):
    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class Volume(Loose):
    """``spec.volumes[]``, only as a ``persistentVolumeClaim`` or an ``ephemeral`` (generic ephemeral, a claim made
    per pod) volume: the volumes kube-scheduler's volume plugins filter on. A pod's other volumes (configMap, secret,
    projected, emptyDir, ...) are dropped when it is read (``PodSpec.__post_init__``)."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None

    def claims(self) -> bool:
        """Whether the volume is a claim's: one of the two sources kept."""
        return self.persistent_volume_claim is not None or self.ephemeral is not None


class PodSpec(Loose):
    containers: list[Container] = []
    init_containers: list[Container] = []
    resource_claims: list[PodResourceClaim] = []
    node_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    scheduler_name: str = ""
    priority: Int32 | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    scheduling_group: PodSchedulingGroup | None = None
    workload_ref: PodWorkloadReference | None = None
    termination_grace_period_seconds: Int64 | None = None
    restart_policy: str = ""
    overhead: dict[str, str] = {}
    resources: ResourceRequirements | None = None  # pod-level resources (PodLevelResources, on since 1.34)
    scheduling_gates: list[PodSchedulingGate] = []
    # PodTopologySpread's explicit constraints (``scheduler/podtopologyspread``).
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    # Only the persistentVolumeClaim and ephemeral volumes, None without any (most pods: nothing kept per pod); they
    # are not simulated, only said (``sim/unmodelled.py``).
    volumes: list[Volume] | None = None

    def __post_init__(self) -> None:
        volumes = self.volumes
        if volumes is not None and not all(v.claims() for v in volumes):
            self.volumes = [v for v in volumes if v.claims()] or None


class PodResourceClaimStatus(Loose):
    name: str
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(Loose):
    container_name: str
    resource_name: str
    request_name: str


class PodExtendedResourceClaimStatus(Loose):
    resource_claim_name: str
    request_mappings: list[ContainerExtendedResourceRequest] = []


class PodStatus(Loose):
    phase: str = ""
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None
    nominated_node_name: str = ""


class Pod(Loose):
    KIND: ClassVar[str] = "Pod"
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


DRA_KINDS: tuple[type[Spec], ...] = (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule)
CORE_KINDS: tuple[type[Loose], ...] = (Node, Pod)

KubeObject = DeviceClass | ResourceSlice | ResourceClaim | ResourceClaimTemplate | DeviceTaintRule | Node | Pod


def to_dict(obj: msgspec.Struct) -> dict[str, Any]:
    """The object as Kubernetes JSON: ``apiVersion`` and ``kind`` first, empty fields omitted."""
    body = msgspec.to_builtins(obj)
    assert isinstance(body, dict)
    api_version = getattr(obj, "api_version", None)
    kind = getattr(obj, "kind", None)
    if api_version is None or kind is None:
        return body
    body.pop("apiVersion", None)
    body.pop("kind", None)
    # An empty status is omitted, as the API server omits it; so is the empty spec of a core object.
    if body.get("status") == {}:
        del body["status"]
    if kind in ("Node", "Pod") and body.get("spec") == {}:
        del body["spec"]
    return {"apiVersion": api_version, "kind": kind, **body}
