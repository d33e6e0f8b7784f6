"""The device table: one pass per allocation keeps every reader's view equal to one built from scratch.

After any sequence of allocations and releases (dedicated devices, shares with consumed capacity, admin access,
devices of network-attached slices, results naming no published device, the same allocation object applied again),
the table must say what a table built from the allocations still held says: the allocator's ``AllocatedState``
(as ``from_claims`` builds it), devices in use per node, their local names, and the free counts per signature.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.allocator import AllocatedState
from kubedra.cluster.devices import DeviceTable
from kubedra.objects.model import (
    AllocationResult,
    Device,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

DRIVER = "gpu.example.com"
NODES = ("node-a", "node-b", "node-c")
SIGNATURES = (("gpu", ()), ("gpu", ("even",)), ("gpu", ("late",)))  # the last tracked midway (see the test)


def _slices() -> list[ResourceSlice]:
    out = []
    for node in (*NODES, None):  # None: a network-attached slice
        pool = node or "fabric"
        devices = [Device(name=f"gpu-{i}") for i in range(3)]
        spec = ResourceSliceSpec(driver=DRIVER, pool=ResourcePool(name=pool, resource_slice_count=1),
                                 node_name=node, all_nodes=None if node else True, devices=devices)
        out.append(ResourceSlice(metadata=ObjectMeta(name=f"{pool}-slice"), spec=spec))
    return out


def _matches(signature: tuple[str, tuple[str, ...]], device: str) -> bool:
    return not signature[1] or int(device.rsplit("-", 1)[1]) % 2 == 0


def _result(draw: st.DrawFn, number: int) -> DeviceRequestAllocationResult:
    """A result of allocation ``number``. Its shares are its own: the same share added twice counts once (the
    set upstream keeps; ``tests/allocator/test_shared_scaling.py``), which a state built afresh cannot know."""
    pool = draw(st.sampled_from((*NODES, "fabric", "unpublished")))
    kind = draw(st.sampled_from(("dedicated", "dedicated", "share", "admin")))
    return DeviceRequestAllocationResult(
        request="req",
        driver=DRIVER,
        pool=pool,
        device=f"gpu-{draw(st.integers(0, 2))}",
        admin_access=True if kind == "admin" else None,
        share_id=f"share-{number}-{draw(st.integers(0, 2))}" if kind == "share" else None,
        consumed_capacity={"memory": "1Gi"} if kind == "share" and draw(st.booleans()) else {},
    )


@st.composite
def _steps(draw: st.DrawFn, with_shares: set[int]) -> list[tuple[int, int]]:
    """(allocation number, +1 add / -1 release): a release only of an allocation held now; an allocation with
    shares is not held twice at once (its shares would count once)."""
    held: list[int] = []
    steps: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(1, 30))):
        if held and draw(st.booleans()):
            number = held.pop(draw(st.integers(0, len(held) - 1)))
            steps.append((number, -1))
        else:
            number = draw(st.integers(0, 5))
            if number in with_shares and number in held:
                continue
            held.append(number)
            steps.append((number, +1))
    return steps


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[list[AllocationResult], list[tuple[int, int]], bool]:
    allocations = [
        AllocationResult(devices=DeviceAllocationResult(
            results=[_result(draw, number) for _ in range(draw(st.integers(1, 3)))]))
        for number in range(6)
    ]
    with_shares = {i for i, a in enumerate(allocations) if any(r.share_id for r in a.devices.results)}
    return allocations, draw(_steps(with_shares)), draw(st.booleans())


def _table(held: list[AllocationResult], consumable: bool) -> DeviceTable:
    """A table built from scratch over the allocations held now."""
    table = DeviceTable(_slices(), consumable_capacity=consumable)
    _track(table)
    for allocation in held:
        table.mark(allocation, +1)
    return table


def _track(table: DeviceTable, signatures: tuple[tuple[str, tuple[str, ...]], ...] = SIGNATURES) -> None:
    for signature in signatures:
        table.track(signature, [r for r in table.by_key.values() if r.node and _matches(signature, r.device.name)])


@settings(max_examples=depth.examples(150, 1500), deadline=None)
@given(_scenario())
def test_marks_keep_every_view_equal_to_a_fresh_table(scenario: tuple[list[AllocationResult], list[tuple[int, int]],
                                                                      bool]) -> None:
    allocations, steps, consumable = scenario
    table = DeviceTable(_slices(), consumable_capacity=consumable)
    _track(table, SIGNATURES[:-1])
    touched: list[tuple[str, int]] = []
    table.watchers.append(lambda node, sign, _devices: touched.append((node, sign)))
    held: list[AllocationResult] = []
    signs: list[int] = []
    for step, (number, sign) in enumerate(steps):
        if step == len(steps) // 2:  # a signature first asked for while allocations are remembered
            _track(table, SIGNATURES[-1:])
        allocation = allocations[number]
        before = len(touched)
        table.mark(allocation, sign)
        signs += [sign] * (len(touched) - before)
        if sign > 0:
            held.append(allocation)
        else:
            held.remove(allocation)
    fresh = _table(held, consumable)
    claims = [ResourceClaim(metadata=ObjectMeta(name=f"c{i}"), status=ResourceClaimStatus(allocation=a))
              for i, a in enumerate(held)]
    reference = AllocatedState.from_claims(claims, consumable_capacity=consumable)
    state = table.allocated
    assert state.allocated_devices == reference.allocated_devices
    assert state.allocated_shared == reference.allocated_shared
    assert state.shares == reference.shares
    assert state.aggregated_capacity == reference.aggregated_capacity
    assert {p: n for p, n in state.dedicated_names.items() if n} == {
        p: n for p, n in reference.dedicated_names.items() if n
    }
    assert {p: {d.device for d in state.allocated_devices if (d.driver, d.pool) == p} for p in state.dedicated_names
            if state.dedicated_names[p]} == {p: set(n) for p, n in state.dedicated_names.items() if n}
    for node in NODES:
        assert table.in_use.get(node, 0) == fresh.in_use.get(node, 0), node
        assert table.in_use_on(node) == fresh.in_use_on(node), node
        for signature in SIGNATURES:
            assert table.free[signature].get(node, 0) == fresh.free[signature].get(node, 0), (node, signature)
    assert {node for node, _ in touched} <= set(NODES)  # only nodes with node-local devices are reported changed
    assert all(sign == marked for (_, sign), marked in zip(touched, signs, strict=True))  # the scheduler's
    # node sets keep monotone verdicts by this sign


def test_held_names_the_devices_an_allocation_occupies() -> None:
    table = DeviceTable(_slices())
    results = [
        DeviceRequestAllocationResult(request="a", driver=DRIVER, pool="node-a", device="gpu-0"),
        DeviceRequestAllocationResult(request="b", driver=DRIVER, pool="node-a", device="gpu-1", admin_access=True),
        DeviceRequestAllocationResult(request="c", driver=DRIVER, pool="gone", device="gpu-9"),
    ]
    allocation = AllocationResult(devices=DeviceAllocationResult(results=results))
    assert table.held(allocation) == (f"{DRIVER}/node-a/gpu-0", f"{DRIVER}/gone/gpu-9")
    assert table.node_of(f"{DRIVER}/node-a/gpu-0") == "node-a"
    assert table.node_of(f"{DRIVER}/fabric/gpu-0") is None  # network-attached
    assert table.total == dict.fromkeys(NODES, 3)


def test_a_device_published_in_two_generations_is_the_newest_ones() -> None:
    newer, older = (
        ResourceSlice(metadata=ObjectMeta(name=f"s{g}"), spec=ResourceSliceSpec(
            driver=DRIVER, pool=ResourcePool(name="p", generation=g, resource_slice_count=1), node_name=node,
            devices=[Device(name="gpu-0")]))
        for g, node in ((2, "node-b"), (1, "node-a"))
    )
    table = DeviceTable([newer, older])  # the newer generation first: a later, older slice does not replace it
    assert table.node_of(f"{DRIVER}/p/gpu-0") == "node-b"
