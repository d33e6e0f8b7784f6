"""Kubernetes' CEL quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go).

``quantity``, ``isQuantity``, ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``, ``add``, ``sub``
and the comparisons. ``compareTo``/``isGreaterThan``/``isLessThan`` are shared with semver; cel-expr-python
keys member overloads by argument kind (both are messages), so the quantity overload carries the one
implementation and dispatches on the message type (see ``library_semver.compare_overloads``).
"""

from __future__ import annotations

from typing import Any

from cel_expr_python import cel

from kubedra.cel.analysis import (
    QUANTITY_EQUALS,
    QUANTITY_IN,
    QUANTITY_LIST_EQUALS,
    QUANTITY_LIST_NOT_EQUALS,
    QUANTITY_NOT_EQUALS,
)
from kubedra.cel.protos import QUANTITY_TYPE
from kubedra.cel.values import Values
from kubedra.objects.quantity import Quantity, QuantityError

QUANTITY = cel.Type(QUANTITY_TYPE)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _member(name: str, overload_id: str, result: cel.Type, params: list[cel.Type], impl: Any) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, [cel.Overload(overload_id, result, params, is_member=True, impl=impl)])


def quantity_functions(values: Values) -> list[cel.FunctionDecl]:
    """The declarations of the quantity library, bound to one environment's ``values``."""
    q = values.quantity

    def parse(text: str) -> Any:
        return values.quantity_message(Quantity.parse(text))

    def is_quantity(text: str) -> bool:
        try:
            Quantity.parse(text)
        except QuantityError:
            return False
        return True

    def as_integer(m: Any) -> int:
        return q(m).cel_as_integer()

    def add_int(m: Any, n: int) -> Any:
        return values.quantity_message(q(m) + Quantity.from_int(n))

    def sub_int(m: Any, n: int) -> Any:
        return values.quantity_message(q(m) - Quantity.from_int(n))

    def list_equals(xs: list[Any], ys: list[Any]) -> bool:
        return len(xs) == len(ys) and all(x.value == y.value for x, y in zip(xs, ys, strict=True))

    quantities = cel.Type.List(QUANTITY)
    by_value = [
        (QUANTITY_EQUALS, [QUANTITY, QUANTITY], lambda a, b: a.value == b.value),
        (QUANTITY_NOT_EQUALS, [QUANTITY, QUANTITY], lambda a, b: a.value != b.value),
        (QUANTITY_LIST_EQUALS, [quantities, quantities], list_equals),
        (QUANTITY_LIST_NOT_EQUALS, [quantities, quantities], lambda xs, ys: not list_equals(xs, ys)),
        (QUANTITY_IN, [QUANTITY, quantities], lambda a, xs: any(x.value == a.value for x in xs)),
    ]
    return [
        *(cel.FunctionDecl(name, [cel.Overload(name[1:], cel.Type.BOOL, params, impl=impl)])
          for name, params, impl in by_value),
        cel.FunctionDecl("quantity", [cel.Overload("string_to_quantity", QUANTITY, [cel.Type.STRING], impl=parse)]),
        cel.FunctionDecl(
            "isQuantity", [cel.Overload("is_quantity_string", cel.Type.BOOL, [cel.Type.STRING], impl=is_quantity)]
        ),
        # A global function in upstream (cel.Overload, not MemberOverload), whatever its doc comment says:
        # ``sign(q)`` compiles, ``q.sign()`` does not (checked against k8s.io/apiserver's CEL, test_upstream_cel).
        cel.FunctionDecl("sign", [cel.Overload("quantity_sign", cel.Type.INT, [QUANTITY], impl=lambda m: q(m).sign())]),
        _member("isInteger", "quantity_is_integer", cel.Type.BOOL, [QUANTITY], lambda m: q(m).cel_is_integer()),
        _member("asInteger", "quantity_as_integer", cel.Type.INT, [QUANTITY], as_integer),
        _member(
            "asApproximateFloat",
            "quantity_as_approximate_float",
            cel.Type.DOUBLE,
            [QUANTITY],
            lambda m: q(m).as_approximate_float(),
        ),
        cel.FunctionDecl(
            "add",
            [
                cel.Overload(
                    "quantity_add",
                    QUANTITY,
                    [QUANTITY, QUANTITY],
                    is_member=True,
                    impl=lambda a, b: values.quantity_message(q(a) + q(b)),
                ),
                cel.Overload("quantity_add_int", QUANTITY, [QUANTITY, cel.Type.INT], is_member=True, impl=add_int),
            ],
        ),
        cel.FunctionDecl(
            "sub",
            [
                cel.Overload(
                    "quantity_sub",
                    QUANTITY,
                    [QUANTITY, QUANTITY],
                    is_member=True,
                    impl=lambda a, b: values.quantity_message(q(a) - q(b)),
                ),
                cel.Overload("quantity_sub_int", QUANTITY, [QUANTITY, cel.Type.INT], is_member=True, impl=sub_int),
            ],
        ),
    ]
