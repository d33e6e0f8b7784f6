from __future__ import annotations

import pytest

from kubedra.allocator import FeatureGateError, Features, parse_gates


def test_release_defaults() -> None:
    old, new = Features.for_release("1.34"), Features.for_release("1.37")
    assert old.admin_access
    assert old.prioritized_list
    assert not old.partitionable_devices
    assert not old.device_taints
    assert not old.consumable_capacity
    assert new.partitionable_devices
    assert new.device_taint_rules
    assert not new.list_type_attributes
    assert not Features.for_release("1.36").device_taint_rules


def test_gates_switch_features_and_unknown_gates_fail() -> None:
    f = Features.for_release("1.37").with_gates(parse_gates("DRADeviceTaints=false,DRAAdminAccess=false"))
    assert not f.device_taints
    assert not f.admin_access
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Nope"):
        Features().with_gates({"Nope": True})
    with pytest.raises(FeatureGateError):
        Features.for_release("1.30")
