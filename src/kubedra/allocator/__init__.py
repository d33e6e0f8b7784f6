"""The structured allocator: the device decisions kube-scheduler makes, as a pure library.

``Allocator(features, state, classes, slices, cel).allocate(node, claims)`` returns one ``AllocationResult`` per
claim, ``None`` when the claims do not fit on the node, or raises ``AllocationError`` (fatal input),
``NodeAllocationFailed`` (this node only) or ``SearchBudgetExceeded``.
"""

from kubedra.allocator.allocator import Allocator
from kubedra.allocator.decision import Decision, allocate_on_node
from kubedra.allocator.diagnosis import diagnose
from kubedra.allocator.errors import AllocationError, NodeAllocationFailed, SearchBudgetExceeded
from kubedra.allocator.features import FeatureGateError, Features, parse_gates
from kubedra.allocator.results import allocation_to_dict
from kubedra.allocator.state import AllocatedState, DeviceID, SharedDeviceID

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "Decision",
    "DeviceID",
    "FeatureGateError",
    "Features",
    "NodeAllocationFailed",
    "SearchBudgetExceeded",
    "SharedDeviceID",
    "allocate_on_node",
    "allocation_to_dict",
    "diagnose",
    "parse_gates",
]
