"""What is already allocated, built exactly as kube-scheduler builds ``structured.AllocatedState``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

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
        self.change(result, DeviceID(result.driver, result.pool, result.device), (result.driver, result.pool), +1)

    def remove_allocation(self, result: DeviceRequestAllocationResult) -> None:
        """Undo :meth:`add_allocation` for one result (when a claim is deallocated)."""
        self.change(result, DeviceID(result.driver, result.pool, result.device), (result.driver, result.pool), -1)

    def change(
        self, result: DeviceRequestAllocationResult, device: DeviceID, pool: tuple[str, str], sign: int
    ) -> None:
        """One result added (+1) or removed (-1); ``device`` and ``pool`` name the result's device and its (driver,
        pool), passed in by callers that keep them (the cluster's device table) so they are not built per call."""
        versions = self.pool_versions
        versions[pool] = versions.get(pool, 0) + 1
        if result.admin_access:
            return
        if self.consumable_capacity and result.share_id is not None:
            if sign > 0:
                self._add_share(result, device)
            else:
                self._remove_share(result, device)
        elif sign > 0:
            self.allocated_devices.add(device)
            self.dedicated_names[pool] = self.dedicated_names.get(pool, NO_NAMES) | {device.device}
        else:
            self.allocated_devices.discard(device)
            self.dedicated_names[pool] = self.dedicated_names.get(pool, NO_NAMES) - {device.device}

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
