"""Shared counters of partitionable devices: what is left per pool, and what this attempt consumes.

Available = ``sharedCounters`` minus what already-allocated devices of the pool consume (including devices that
do not target this node); it is computed once per pool and allocated state. During one search, a device fits if
after adding its consumption no counter of the pool has ``available < consumed``. A count of violated counters
per pool keeps each check proportional to the device's own consumption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubedra.allocator.compatibility import CounterSetGroups
from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.pools import Pool
from kubedra.allocator.state import DeviceID

Cell = tuple[str, str]


def available_counters(
    pool: Pool, entries: Iterable[DeviceEntry], is_allocated: Callable[[DeviceID], bool]
) -> dict[Cell, int]:
    """Counters left (in nanos) once the pool's already-allocated devices are subtracted (may go negative)."""
    available: dict[Cell, int] = {
        (set_name, name): value.nanos
        for set_name, counters in pool.counter_sets.items()
        for name, value in counters.items()
    }
    for entry in entries:
        if not entry.consumes or not is_allocated(entry.id):
            continue
        for set_name, counters in entry.consumes:
            for name, amount in counters:
                cell = (set_name, name)
                if cell in available:
                    available[cell] = available[cell] - amount
    return available


class PoolCounters:
    """The counters of one pool during one search, and who shares its counter sets (``groups``, with
    DRADeviceCompatibilityGroups on: checked before the counters, as upstream does)."""

    __slots__ = ("available", "consumed", "groups", "violations")

    def __init__(self, available: dict[Cell, int], groups: CounterSetGroups | None = None) -> None:
        self.available = available
        self.groups = groups
        self.consumed: dict[Cell, int] = dict.fromkeys(available, 0)
        self.violations = sum(1 for value in available.values() if value < 0)

    def _shift(self, entry: DeviceEntry, sign: int) -> None:
        available, consumed = self.available, self.consumed
        for set_name, counters in entry.consumes:
            for name, amount in counters:
                cell = (set_name, name)
                if cell not in available:
                    continue
                before = available[cell] < consumed[cell]
                now = consumed[cell] + sign * amount
                consumed[cell] = now
                after = available[cell] < now
                if before != after:
                    self.violations += 1 if after else -1

    def reserve(self, entry: DeviceEntry) -> bool:
        """Take the device's counters if every counter of the pool stays within what is available (and, with
        compatibility groups, if it may share each counter set with the devices already on it)."""
        groups = self.groups
        if groups is not None and not groups.join(entry):
            return False
        self._shift(entry, 1)
        if self.violations:
            self._shift(entry, -1)
            if groups is not None:
                groups.leave()
            return False
        return True

    def release(self, entry: DeviceEntry) -> None:
        """Give back what :meth:`reserve` took."""
        self._shift(entry, -1)
        if self.groups is not None:
            self.groups.leave()
