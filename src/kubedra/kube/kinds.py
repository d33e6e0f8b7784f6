"""The kinds kubedra reads from a cluster: where each is served and whether it is namespaced.

Secrets, ConfigMaps and everything else are never read.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubedra.objects.beta import SERVED

DRA_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class Kind:
    """One kind: ``versions`` in order of preference (the first one the server serves is read)."""

    kind: str
    group: str
    plural: str
    namespaced: bool
    versions: tuple[str, ...]

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


def _dra(kind: str, plural: str, namespaced: bool) -> Kind:
    return Kind(kind, DRA_GROUP, plural, namespaced, SERVED[kind])


NODE = Kind("Node", "", "nodes", namespaced=False, versions=("v1",))
POD = Kind("Pod", "", "pods", namespaced=True, versions=("v1",))
DEVICE_CLASS = _dra("DeviceClass", "deviceclasses", namespaced=False)
RESOURCE_SLICE = _dra("ResourceSlice", "resourceslices", namespaced=False)
RESOURCE_CLAIM = _dra("ResourceClaim", "resourceclaims", namespaced=True)
RESOURCE_CLAIM_TEMPLATE = _dra("ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True)
DEVICE_TAINT_RULE = _dra("DeviceTaintRule", "devicetaintrules", namespaced=False)

# Inventory first, then what uses it: the order a snapshot is written in.
KINDS: tuple[Kind, ...] = (
    NODE,
    DEVICE_CLASS,
    RESOURCE_SLICE,
    DEVICE_TAINT_RULE,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_CLAIM,
    POD,
)
