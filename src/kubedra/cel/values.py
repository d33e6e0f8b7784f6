"""Quantity and semver values as CEL sees them: one-field protobuf messages with a value-unique key.

CEL compares messages field by field, and ``==`` cannot be overloaded in cel-expr-python. Kubernetes
compares quantities and semvers by value (``1Gi == 1024Mi``; build metadata is ignored), so each message
carries a key that is equal exactly when the values are. Parsed values are memoized per environment.
"""

from __future__ import annotations

from typing import Any

from kubedra.cel.protos import Protos
from kubedra.objects.quantity import Quantity
from kubedra.objects.semver import Semver

_MEMO_LIMIT = 4096


def quantity_key(q: Quantity) -> str:
    """The exact value in nano units (``"1073741824000000000n"``): equal exactly when the values are equal.

    It parses back to the same value; the memo keeps the parsed original, whose representation is what
    ``isInteger``/``asInteger`` look at (``"1000m"`` is not an integer in Kubernetes, ``"1"`` is). Two
    spellings of one value share a key, so the later one's representation wins — a documented corner.
    """
    return f"{q.nanos}n"


def semver_key(v: Semver) -> str:
    """The version without build metadata, which semver ordering and equality ignore."""
    return str(v).split("+", 1)[0]


class Values:
    """Converts between kubedra values and the messages CEL carries; owns the parse memo."""

    def __init__(self, protos: Protos) -> None:
        self._quantity_cls = protos.quantity
        self._semver_cls = protos.semver
        self._quantities: dict[str, Quantity] = {}
        self._semvers: dict[str, Semver] = {}

    def is_quantity(self, value: Any) -> bool:
        return isinstance(value, self._quantity_cls)

    def is_semver(self, value: Any) -> bool:
        return isinstance(value, self._semver_cls)

    def quantity_message(self, q: Quantity) -> Any:
        key = quantity_key(q)
        self._remember(self._quantities, key, q)
        return self._quantity_cls(value=key)

    def semver_message(self, v: Semver) -> Any:
        key = semver_key(v)
        self._remember(self._semvers, key, v)
        return self._semver_cls(value=key)

    def quantity(self, message: Any) -> Quantity:
        key: str = message.value
        q = self._quantities.get(key)
        if q is None:
            # The nano spelling would read as a fraction (isInteger false); the canonical one reads like an API value.
            q = Quantity.parse(Quantity.parse(key).canonical())
            self._remember(self._quantities, key, q)
        return q

    def remember_quantities(self, quantities: list[Quantity]) -> None:
        """Make a device's own capacities read back exactly as spelled, all of them at once (before each run)."""
        if len(self._quantities) + len(quantities) > _MEMO_LIMIT:
            self._quantities.clear()
        for q in quantities:
            self._quantities[quantity_key(q)] = q

    def semver(self, message: Any) -> Semver:
        key: str = message.value
        v = self._semvers.get(key)
        if v is None:
            v = Semver.parse(key)
            self._remember(self._semvers, key, v)
        return v

    @staticmethod
    def _remember(memo: dict[str, Any], key: str, value: Any) -> None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[key] = value
