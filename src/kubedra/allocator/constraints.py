"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``, added and removed as the search backtracks.

Upstream's semantics, quirks included: a constraint without ``requests`` covers every request, ``"req"`` covers
all its subrequests and ``"req/sub"`` only that one; match keeps the first device's value and a count; distinct
remembers every device since 1.37 (one value per *request name* in 1.36). Versions are compared as
strings (semver's minimal form makes that exact). With list-type attributes on, match means a non-empty common
intersection and distinct means pairwise-disjoint sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kubedra.allocator.devices import DeviceEntry
from kubedra.objects.model import DeviceAttribute

Scalar = tuple[str, object]


def scalar(attr: DeviceAttribute) -> Scalar | None:
    """The typed value of a scalar attribute, or ``None`` for a list (or empty) attribute."""
    if attr.string is not None:
        return ("string", attr.string)
    if attr.int is not None:
        return ("int", attr.int)
    if attr.bool is not None:
        return ("bool", attr.bool)
    if attr.version is not None:
        return ("version", attr.version)
    return None


def as_set(attr: DeviceAttribute) -> frozenset[Scalar] | None:
    """A scalar or list attribute as a set of typed values (list-type attributes on)."""
    one = scalar(attr)
    if one is not None:
        return frozenset((one,))
    for kind, values in (
        ("int", attr.ints),
        ("bool", attr.bools),
        ("string", attr.strings),
        ("version", attr.versions),
    ):
        if values is not None:
            return frozenset((kind, v) for v in values)
    return None


class Constraint(Protocol):
    def covers(self, request: str, subrequest: str) -> bool: ...
    def add(self, request: str, entry: DeviceEntry) -> bool: ...
    def remove(self, request: str, entry: DeviceEntry) -> None: ...


class _Scoped:
    __slots__ = ("attribute", "requests")

    def __init__(self, attribute: str, requests: list[str]) -> None:
        self.attribute = attribute
        self.requests = frozenset(requests)

    def covers(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return bool(subrequest) and f"{request}/{subrequest}" in self.requests


class MatchAttribute(_Scoped):
    """All covered devices share one value of the attribute."""

    __slots__ = ("count", "lists", "stack", "value")

    def __init__(self, attribute: str, requests: list[str], *, lists: bool = False) -> None:
        super().__init__(attribute, requests)
        self.lists = lists
        self.count = 0
        self.value: Scalar | None = None
        self.stack: list[frozenset[Scalar]] = []

    def add(self, request: str, entry: DeviceEntry) -> bool:  # noqa: ARG002
        attr = entry.attribute(self.attribute)
        if attr is None:
            return False
        if self.lists:
            values = as_set(attr)
            if values is None:
                return False
            if self.count:
                common = self.stack[-1] & values
                if not common:
                    return False
                values = common
            self.stack.append(values)
            self.count += 1
            return True
        value = scalar(attr)
        if self.count == 0:
            self.value = value
            self.count = 1
            return True
        if value is None or value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, entry: DeviceEntry) -> None:  # noqa: ARG002
        self.count -= 1
        if self.lists and self.stack:
            self.stack.pop()


class DistinctAttribute(_Scoped):
    """Every covered device has the attribute, with a value no other remembered device has.

    v0.37.2 (``incubating/constraint.go``) remembers every added device and checks the new one against all of
    them. v0.36.6 (``per_request``) remembers one value per request name: a later device of the same request
    replaces it, a removal forgets the request's value, and the first device is always accepted.
    """

    __slots__ = ("count", "lists", "per_request", "stack", "values")

    def __init__(self, attribute: str, requests: list[str], *, lists: bool = False, per_request: bool = False) -> None:
        super().__init__(attribute, requests)
        self.lists = lists
        self.per_request = per_request
        self.count = 0
        self.values: dict[str, DeviceAttribute] = {}
        self.stack: list[DeviceAttribute] = []

    def add(self, request: str, entry: DeviceEntry) -> bool:
        attr = entry.attribute(self.attribute)
        if attr is None:
            return False
        if self.per_request:
            if self.count and not self._distinct(attr, self.values.values()):
                return False
            self.values[request] = attr
        else:
            if not self._distinct(attr, self.stack):
                return False
            self.stack.append(attr)
        self.count += 1
        return True

    def _distinct(self, attr: DeviceAttribute, others: Iterable[DeviceAttribute]) -> bool:
        if self.lists:
            mine = as_set(attr)
            if mine is None:
                return False
            for other in others:
                theirs = as_set(other)
                if theirs is None or mine & theirs:
                    return False
            return True
        value = scalar(attr)
        if value is None:
            return not any(True for _ in others)
        return all(scalar(other) != value for other in others)

    def remove(self, request: str, entry: DeviceEntry) -> None:  # noqa: ARG002
        if self.per_request:
            self.values.pop(request, None)
        elif self.stack:
            self.stack.pop()
        self.count -= 1
