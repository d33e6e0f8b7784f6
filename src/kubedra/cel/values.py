"""Quantity and semver values as CEL sees them: protobuf messages with a value-unique key.

CEL compares messages field by field, and ``==`` cannot be overloaded in cel-expr-python. Kubernetes
compares quantities and semvers by value (``1Gi == 1024Mi``; build metadata is ignored), so each message
carries a key that is equal exactly when the values are. A quantity also carries its representation, which
``isInteger``/``asInteger`` read (``"1000m"`` is not an integer in Kubernetes, ``"1"`` is); since field-by-field
equality would then tell ``"1"`` from ``"1000m"``, the compiler turns ``==``, ``!=`` and ``in`` on quantities into
functions that compare the key alone (``cel/analysis.py``). Parsed values are memoized per environment.
"""

from __future__ import annotations

from typing import Any

from kubedra.cel.protos import Protos
from kubedra.objects.quantity import Quantity
from kubedra.objects.semver import Semver

_MEMO_LIMIT = 4096


def quantity_key(q: Quantity) -> str:
    """The exact value in nano units (``"1073741824000000000n"``): equal exactly when the values are equal."""
    return f"{q.nanos}n"


def quantity_fields(q: Quantity) -> dict[str, str]:
    """The message fields of ``q``: its value key and its representation."""
    return {"value": quantity_key(q), "representation": q.representation()}


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
        return self._quantity_cls(**quantity_fields(q))

    def semver_message(self, v: Semver) -> Any:
        key = semver_key(v)
        self._remember(self._semvers, key, v)
        return self._semver_cls(value=key)

    def quantity(self, message: Any) -> Quantity:
        representation: str = message.representation
        q = self._quantities.get(representation)
        if q is None:
            if representation:
                q = Quantity.from_representation(representation)
            else:  # a message built without one reads like an API value of its value
                q = Quantity.parse(Quantity.parse(message.value).canonical())
            self._remember(self._quantities, representation, q)
        return q

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
