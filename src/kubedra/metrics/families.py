"""The DRA metric families kubedra exports (their names, help and labels, after kube-state-metrics' conventions)
and the Prometheus text format as prometheus-client writes it, byte for byte, so that an incremental exporter can
keep each object's lines as text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from prometheus_client import utils as _client_utils


@dataclass(frozen=True, eq=False)  # hashed by identity: looked up for every object on every scrape
class FamilySpec:
    name: str
    help: str
    labels: tuple[str, ...]
    type: str = "gauge"  # "untyped": a count that can go down but whose name ends in _total; or "counter"

    @cached_property
    def layout(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The label positions in name order (the order prometheus-client writes them) and each ``name="``."""
        order = tuple(sorted(range(len(self.labels)), key=self.labels.__getitem__))
        return order, tuple(f'{self.labels[i]}="' for i in order)


@dataclass
class Family:
    """One gauge family: its spec and rows of (label values, value)."""

    spec: FamilySpec
    rows: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


def _spec(name: str, text: str, *labels: str) -> FamilySpec:
    return FamilySpec(name, text, labels)


CLAIM_ALLOCATED = _spec(
    "kube_resourceclaim_allocated",
    "1 when the ResourceClaim has an allocation, else 0; one series per device class its requests use.",
    "namespace", "name", "resource_class",
)
CLAIM_PENDING = _spec(
    "kube_resourceclaim_pending",
    "1 when the ResourceClaim is wanted (reserved for, referenced by or generated for a pod that has not finished) "
    "and not allocated, else 0; one series per device class its requests use.",
    "namespace", "name", "resource_class",
)
NODE_AVAILABLE = _spec(
    "node_dra_resource_available",
    "What is still free on the node for the device class: attribute=devices counts devices one more request of the "
    "class could take now; other attributes are the consumable capacity left on free shareable devices.",
    "node", "resource_class", "attribute",
)
NODE_CAPACITY = _spec(
    "node_dra_resource_capacity",
    "What the node has for the device class, free or not: attribute=devices counts the devices the class selects; "
    "other attributes are the consumable capacity of its shareable devices (node_dra_resource_available's totals).",
    "node", "resource_class", "attribute",
)
CLAIM_INFO = _spec("kube_resourceclaim_info", "Information about the ResourceClaim.", "namespace", "resourceclaim",
                   "uid", "source")
CLAIM_STATUS_ALLOCATED = _spec(
    "kube_resourceclaim_status_allocated", "1 when the ResourceClaim is allocated, else 0.", "namespace",
    "resourceclaim",
)
CLAIM_RESERVED_FOR = _spec(
    "kube_resourceclaim_status_reserved_for", "One series per consumer the ResourceClaim is reserved for.",
    "namespace", "resourceclaim", "consumer_resource", "consumer_name",
)
CLAIM_DEVICE = _spec(
    "kube_resourceclaim_allocation_device_info",
    "One series per device result of the ResourceClaim's allocation (share_id set for a share of a device).",
    "namespace", "resourceclaim", "request", "driver", "pool", "device", "share_id",
)
SLICE_INFO = _spec("kube_resourceslice_info", "Information about the ResourceSlice.", "resourceslice", "driver",
                   "pool", "node", "generation")
# Untyped, not gauge: the name is kube-state-metrics' and promtool rejects a gauge whose name ends in _total.
SLICE_DEVICES = FamilySpec("kube_resourceslice_devices_total", "Devices the ResourceSlice publishes.",
                           ("resourceslice", "driver", "pool", "node"), "untyped")
CLASS_INFO = _spec("kube_deviceclass_info", "Information about the DeviceClass.", "deviceclass",
                   "extended_resource_name")
POD_CLAIM = _spec(
    "kube_pod_resourceclaim_info",
    "One series per resource claim of a pod (resourceclaim empty while the claim is not made yet).",
    "namespace", "pod", "pod_claim", "resourceclaim",
)
CLAIM_COUNTS = _spec(
    "dynamic_resource_allocation_resource_claims",
    "Number of ResourceClaims, categorized by allocation status, admin access, and source. Source can be "
    "'resource_claim_template' (created from a template), 'extended_resource' (extended resources), or empty "
    "(manually created by a user).",
    "allocated", "admin_access", "source",
)

CLAIM_FAMILIES = (CLAIM_ALLOCATED, CLAIM_PENDING, CLAIM_INFO, CLAIM_STATUS_ALLOCATED, CLAIM_RESERVED_FOR, CLAIM_DEVICE)
FAMILIES = (
    CLAIM_ALLOCATED,
    CLAIM_PENDING,
    NODE_AVAILABLE,
    NODE_CAPACITY,
    CLAIM_INFO,
    CLAIM_STATUS_ALLOCATED,
    CLAIM_RESERVED_FOR,
    CLAIM_DEVICE,
    SLICE_INFO,
    SLICE_DEVICES,
    CLASS_INFO,
    POD_CLAIM,
    CLAIM_COUNTS,
)

Rows = dict[FamilySpec, list[tuple[tuple[str, ...], float]]]


def go_float(value: float) -> str:
    """The value as prometheus-client writes it (Go's float formatting)."""
    text: str = _client_utils.floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


def _escape(value: str) -> str:
    if "\\" not in value and "\n" not in value and '"' not in value:
        return value
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def sample_line(spec: FamilySpec, labels: tuple[str, ...], value: float) -> str:
    """One line of the text format, as prometheus-client writes it (labels in name order)."""
    number = "1.0" if value == 1.0 else "0.0" if value == 0.0 and str(value) == "0.0" else go_float(value)
    if not spec.labels:
        return f"{spec.name} {number}\n"
    order, keys = spec.layout
    pairs = '",'.join([key + _escape(labels[i]) for key, i in zip(keys, order, strict=True)])
    return f'{spec.name}{{{pairs}"}} {number}\n'


def header(spec: FamilySpec) -> str:
    text = spec.help.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {spec.name} {text}\n# TYPE {spec.name} {spec.type}\n"


def render_families(families: Iterable[Family]) -> str:
    return "".join(header(f.spec) + "".join(sample_line(f.spec, lv, v) for lv, v in f.rows) for f in families)
