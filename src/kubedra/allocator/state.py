"""What is already allocated, built exactly as kube-scheduler builds ``structured.AllocatedState``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from kubedra.objects.model import DeviceRequestAllocationResult, ResourceClaim
from kubedra.objects.quantity import Quantity


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class SharedDeviceID(NamedTuple):
    driver: str
    pool: str
    device: str
    share_id: str

    @property
    def device_id(self) -> DeviceID:
        return DeviceID(self.driver, self.pool, self.device)

    def __str__(self) -> str:
        base = f"{self.driver}/{self.pool}/{self.device}"
        return f"{base}/{self.share_id}" if self.share_id else base


NO_NAMES: frozenset[str] = frozenset()


class Delta(msgspec.Struct, frozen=True, gc=False):
    """See :meth:`AllocatedState.delta`. Not tracked by the garbage collector (it holds no cycle): a run keeps a
    few hundred, and tracked ones would bring its full collections sooner."""

    pools: tuple[tuple[str, str], ...]  # every (driver, pool) the results touch
    dedicated: tuple[DeviceID, ...]  # devices the results hold whole
    names: tuple[tuple[tuple[str, str], frozenset[str]], ...]  # their names, per (driver, pool)
    shared: tuple[tuple[DeviceRequestAllocationResult, DeviceID], ...]  # shares (consumable capacity on)


@dataclass
class AllocatedState:
    """Devices in use, shares in use and the capacity those shares consume.

    Results with ``adminAccess: true`` are skipped (they do not make a device busy); with consumable capacity on,
    a result with a ``shareID`` is a share and adds its ``consumedCapacity`` to the device's total.
    """

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared: set[SharedDeviceID] = field(default_factory=set)
    shares: dict[DeviceID, int] = field(default_factory=dict)
    """How many entries of :attr:`allocated_shared` each device has, kept with it, so that "is any share of this
    device allocated" is one lookup instead of a walk over every share in the cluster."""
    aggregated_capacity: dict[DeviceID, dict[str, Quantity]] = field(default_factory=dict)
    consumable_capacity: bool = True
    pool_versions: dict[tuple[str, str], int] = field(default_factory=dict)
    """Bumped on every change of a device of the (driver, pool): caches of one pool survive changes elsewhere."""
    _holds: dict[DeviceID, int] = field(default_factory=dict)
    """Allocations holding each device of :attr:`allocated_devices`: two claims may hold one device (input written
    that way), and it stays allocated until both let go, as a state gathered from the claims would say."""
    dedicated_names: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    """Per (driver, pool), the names of its devices in :attr:`allocated_devices`: what the search sees of a pool
    without shares, named so that pools alike on nodes alike compare equal."""

    @classmethod
    def from_claims(cls, claims: Iterable[ResourceClaim], *, consumable_capacity: bool = True) -> AllocatedState:
        """The state of every allocated claim (claims without ``status.allocation`` are ignored)."""
        state = cls(consumable_capacity=consumable_capacity)
        for claim in claims:
            allocation = claim.status.allocation
            if allocation is None:
                continue
            for result in allocation.devices.results:
                state.add_allocation(result)
        return state

    def add_allocation(self, result: DeviceRequestAllocationResult) -> None:
        """Count one result of an allocation as in use."""
        self.apply(self._delta_of(result), +1)

    def remove_allocation(self, result: DeviceRequestAllocationResult) -> None:
        """Undo :meth:`add_allocation` for one result (when a claim is deallocated)."""
        self.apply(self._delta_of(result), -1)

    def _delta_of(self, result: DeviceRequestAllocationResult) -> Delta:
        """``delta([result])``, without the general case's grouping (one result is added per call here)."""
        device = DeviceID(result.driver, result.pool, result.device)
        pool = (result.driver, result.pool)
        if result.admin_access:
            return Delta((pool,), (), (), ())
        if self.consumable_capacity and result.share_id is not None:
            return Delta((pool,), (), (), ((result, device),))
        return Delta((pool,), (device,), ((pool, frozenset((result.device,))),), ())

    def delta(
        self,
        results: Sequence[DeviceRequestAllocationResult],
        ids: Sequence[tuple[DeviceID, tuple[str, str]]] | None = None,
    ) -> Delta:
        """What adding these results changes, worked out once: an allocation is added and removed, and the
        allocator hands the same results to nodes alike, so callers that keep the delta (the cluster's device
        table) apply it without looking at the results again. ``ids``: each result's device and (driver, pool),
        when the caller has them."""
        if ids is None:
            ids = [(DeviceID(r.driver, r.pool, r.device), (r.driver, r.pool)) for r in results]
        pools: dict[tuple[str, str], list[str]] = {}
        dedicated: list[DeviceID] = []
        shared: list[tuple[DeviceRequestAllocationResult, DeviceID]] = []
        for result, (device, pool) in zip(results, ids, strict=True):
            names = pools.setdefault(pool, [])
            if result.admin_access:
                continue
            if self.consumable_capacity and result.share_id is not None:
                shared.append((result, device))
            else:
                dedicated.append(device)
                names.append(device.device)
        return Delta(
            tuple(pools), tuple(dedicated), tuple((p, frozenset(n)) for p, n in pools.items() if n), tuple(shared)
        )

    def apply(self, delta: Delta, sign: int) -> Sequence[DeviceID]:
        """Add (+1) or remove (-1) the results a delta was worked out from; returns the devices that became held
        or free (``delta.dedicated`` itself when all of them did, as usual)."""
        versions = self.pool_versions
        for pool in delta.pools:
            versions[pool] = versions.get(pool, 0) + 1
        changed: Sequence[DeviceID] = ()
        if delta.dedicated:
            changed = self._count_holds(delta.dedicated, sign)
            if changed:
                whole = len(changed) == len(delta.dedicated)
                moved = delta.names if whole else _names_by_pool(changed)
                names = self.dedicated_names
                if sign > 0:
                    self.allocated_devices.update(changed)
                    for pool, added in moved:
                        names[pool] = names.get(pool, NO_NAMES) | added
                else:
                    self.allocated_devices.difference_update(changed)
                    for pool, removed in moved:
                        names[pool] = names.get(pool, NO_NAMES) - removed
                if whole:
                    changed = delta.dedicated
        for result, device in delta.shared:
            if sign > 0:
                self._add_share(result, device)
            else:
                self._remove_share(result, device)
        return changed

    def _count_holds(self, devices: Sequence[DeviceID], sign: int) -> list[DeviceID]:
        """One more (+1) or one less (-1) hold on each device; returns those that became held or free."""
        holds = self._holds
        changed: list[DeviceID] = []
        for device in devices:
            count = holds.get(device, 0)
            if sign > 0:
                holds[device] = count + 1
                if not count:
                    changed.append(device)
            elif count > 1:
                holds[device] = count - 1
            elif count:
                del holds[device]
                changed.append(device)
        return changed

    def _add_share(self, result: DeviceRequestAllocationResult, device: DeviceID) -> None:
        assert result.share_id is not None
        shared = SharedDeviceID(*device, result.share_id)
        if shared not in self.allocated_shared:
            self.allocated_shared.add(shared)
            self.shares[device] = self.shares.get(device, 0) + 1
        if result.consumed_capacity:
            totals = self.aggregated_capacity.setdefault(device, {})
            for name, text in result.consumed_capacity.items():
                amount = Quantity.parse(text)
                totals[name] = totals[name] + amount if name in totals else amount

    def _remove_share(self, result: DeviceRequestAllocationResult, device: DeviceID) -> None:
        assert result.share_id is not None
        shared = SharedDeviceID(*device, result.share_id)
        if shared in self.allocated_shared:
            self.allocated_shared.remove(shared)
            left = self.shares[device] - 1
            if left:
                self.shares[device] = left
            else:
                del self.shares[device]
        totals = self.aggregated_capacity.get(device)
        if totals is not None and result.consumed_capacity:
            for name, text in result.consumed_capacity.items():
                if name in totals:
                    totals[name] = totals[name] - Quantity.parse(text)
            if all(q.is_zero() for q in totals.values()):
                del self.aggregated_capacity[device]

    def is_allocated(self, device: DeviceID) -> bool:
        """Upstream's ``IsDeviceAllocated``: dedicated, shared or with consumed capacity."""
        return device in self.allocated_devices or device in self.aggregated_capacity or device in self.shares

    def pool_version(self, driver: str, pool: str) -> int:
        """Changes so far to the devices of one pool (for caches of that pool)."""
        return self.pool_versions.get((driver, pool), 0)


def _names_by_pool(devices: Sequence[DeviceID]) -> list[tuple[tuple[str, str], frozenset[str]]]:
    grouped: dict[tuple[str, str], set[str]] = {}
    for device in devices:
        grouped.setdefault((device.driver, device.pool), set()).add(device.device)
    return [(pool, frozenset(names)) for pool, names in grouped.items()]
