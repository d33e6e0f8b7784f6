"""Device compatibility groups (``DRADeviceCompatibilityGroups``, 1.37 alpha): who may share a counter set.

A device that consumes a counter set names, per consumption, the ``compatibilityGroups`` it may be co-allocated in.
Devices drawing from one counter set (already allocated ones and those of the current attempt) must all share at
least one group; a device naming none shares its counter set only with devices naming none. The state of one
counter set is therefore ``None`` (nobody yet), ``_NONE`` (every member named none) or the intersection of the
members' groups. Facts from v0.37.2's experimental allocator (``compatibility_groups.go``): allocated peers seed the
state in the order of the pool's slices; folding in a peer that disagrees leaves the state as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.state import DeviceID

Groups = frozenset[str]


class _NoGroups:
    """"Every member named no group": not the same as an intersection that became empty (which admits nobody)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_GROUPS"


_NONE = _NoGroups()
CompatibilityState = Groups | _NoGroups | None
State = CompatibilityState


def admits(state: State, groups: Groups) -> bool:
    """Whether a device naming ``groups`` may join a counter set in ``state``."""
    if state is None:
        return True
    if not groups:
        return state is _NONE
    if state is _NONE:
        return False
    assert isinstance(state, frozenset)
    return not state.isdisjoint(groups)


def joined(state: State, groups: Groups) -> State:
    """The state once a device naming ``groups`` is placed (unchanged where either side names none)."""
    if state is None:
        return groups if groups else _NONE
    if state is _NONE or not groups:
        return state
    assert isinstance(state, frozenset)
    return state & groups


def allocated_groups(entries: Iterable[DeviceEntry], is_allocated: Callable[[DeviceID], bool]) -> dict[str, State]:
    """Per counter set, the state the pool's already-allocated devices leave."""
    baseline: dict[str, State] = {}
    for entry in entries:
        if not entry.groups or not is_allocated(entry.id):
            continue
        for set_name, groups in entry.groups:
            baseline[set_name] = joined(baseline.get(set_name), groups)
    return baseline


class CounterSetGroups:
    """The compatibility-group states of one pool's counter sets during one search (undone last in, first out)."""

    __slots__ = ("_undo", "states")

    def __init__(self, baseline: dict[str, State]) -> None:
        self.states = dict(baseline)
        self._undo: list[list[tuple[str, State, bool]]] = []

    def join(self, entry: DeviceEntry) -> bool:
        """Place the device on each counter set it consumes, if every one admits it."""
        states = self.states
        for set_name, groups in entry.groups:
            if not admits(states.get(set_name), groups):
                return False
        saved: list[tuple[str, State, bool]] = []
        for set_name, groups in entry.groups:
            saved.append((set_name, states.get(set_name), set_name in states))
            states[set_name] = joined(states.get(set_name), groups)
        self._undo.append(saved)
        return True

    def leave(self) -> None:
        """Undo the latest :meth:`join`."""
        states = self.states
        for set_name, previous, existed in reversed(self._undo.pop()):
            if existed:
                states[set_name] = previous
            else:
                del states[set_name]
