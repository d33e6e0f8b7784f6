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


@pytest.mark.parametrize(
    ("release", "gates", "implementation"),
    [
        ("1.37", "", "incubating"),
        ("1.36", "", "incubating"),
        ("1.34", "", "stable"),
        ("1.35", "", "stable"),
        # DRAConsumableCapacity off alone still leaves DeviceBindingAndStatus (binding conditions + device status).
        ("1.37", "DRAConsumableCapacity=false", "incubating"),
        ("1.37", "DRAConsumableCapacity=false,DRAResourceClaimDeviceStatus=false", "stable"),
        ("1.36", "DRAConsumableCapacity=false,DRADeviceBindingConditions=false", "stable"),
        # FractionalCapacityRange is in incubating's SupportedFeatures since 1.37.
        ("1.37", "DRAFractionalCapacityRange=true", "incubating"),
        ("1.37", "DRAListTypeAttributes=true", "experimental"),
        ("1.37", "DRAOptionalNodeOperations=true", "experimental"),
        # 1.36's scheduler does not pass DRAListTypeAttributes to the allocator (only to CEL).
        ("1.36", "DRAListTypeAttributes=true", "incubating"),
        ("1.34", "DRAConsumableCapacity=true", "incubating"),
    ],
)
def test_implementation_is_upstream_first_covering_variant(release: str, gates: str, implementation: str) -> None:
    f = Features.for_release(release).with_gates(parse_gates(gates))
    assert f.implementation == implementation
    assert f.stable == (implementation == "stable")
    assert f.list_constraints == (implementation == "experimental" and f.list_type_attributes)


def test_release_code_switches() -> None:
    new, old = Features.for_release("1.37"), Features.for_release("1.36")
    assert (new.code, old.code, Features.for_release("1.34").code) == ("1.37", "1.36", "1.36")
    for switch in ("distinct_per_request", "config_per_request", "lenient_capacity", "counter_slices_everywhere"):
        assert not getattr(new, switch)
        assert getattr(old, switch)
    assert new.cel_error_names_device
    assert not old.cel_error_names_device
    # The stable variant gathers counter slices for every node in every release.
    assert new.with_gates(parse_gates("DRAConsumableCapacity=false,DRADeviceBindingConditions=false")).counter_slices_everywhere


def test_stable_pool_order_hook_replays_another_go_map_order() -> None:
    """Upstream's stable variant walks pools in Go map order; ``pool_order`` lets a test take any order."""
    import msgspec

    from kubedra.allocator import AllocatedState, Allocator
    from kubedra.cel import CompileCache
    from kubedra.objects.model import DeviceClass, Node, ObjectMeta, ResourceClaim, ResourceSlice

    def pool(name: str) -> ResourceSlice:
        spec = {"driver": "d", "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "nodeName": "n"}
        return msgspec.convert({"metadata": {"name": name}, "spec": {**spec, "devices": [{"name": "dev"}]}}, ResourceSlice)

    features = Features.for_release("1.37").with_gates(parse_gates("DRAConsumableCapacity=false,DRAResourceClaimDeviceStatus=false"))
    claim = msgspec.convert(
        {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "k"}}]}}},
        ResourceClaim,
    )
    classes = {"k": msgspec.convert({"metadata": {"name": "k"}}, DeviceClass)}
    picked = []
    for order in (None, lambda pools: pools[::-1]):
        allocator = Allocator(
            features, AllocatedState(), classes, [pool("p-b"), pool("p-a")], CompileCache(features.cel_options()),
            pool_order=order,
        )
        result = allocator.allocate(Node(metadata=ObjectMeta(name="n")), [claim])
        assert result is not None
        picked.append(result[0].devices.results[0].pool)
    assert picked == ["p-a", "p-b"]
