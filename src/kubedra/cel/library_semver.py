"""Kubernetes' CEL semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go) and the shared comparisons.

``semver(s)``, ``semver(s, normalize)``, ``isSemver`` (both forms), ``major``, ``minor``, ``patch``; and
``compareTo``, ``isGreaterThan``, ``isLessThan`` for both quantities and semvers. Both types are protobuf
messages, which cel-expr-python's runtime cannot tell apart by kind, so only the first overload of each
comparison carries an implementation and it dispatches on the message's Python type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from kubedra.cel.library_quantity import QUANTITY
from kubedra.cel.protos import SEMVER_TYPE
from kubedra.cel.values import Values
from kubedra.objects.semver import Semver, is_semver

SEMVER = cel.Type(SEMVER_TYPE)


def semver_functions(values: Values) -> list[cel.FunctionDecl]:
    """The declarations of the semver library, bound to one environment's ``values``."""
    v = values.semver

    def parse(text: str, normalize: bool = False) -> Any:
        return values.semver_message(Semver.parse(text, normalize=normalize))

    def member(name: str, getter: Callable[[Semver], int]) -> cel.FunctionDecl:
        return cel.FunctionDecl(
            name,
            [cel.Overload(f"semver_{name}", cel.Type.INT, [SEMVER], is_member=True, impl=lambda m: getter(v(m)))],
        )

    return [
        cel.FunctionDecl(
            "semver",
            [
                cel.Overload("string_to_semver", SEMVER, [cel.Type.STRING], impl=parse),
                cel.Overload("string_bool_to_semver", SEMVER, [cel.Type.STRING, cel.Type.BOOL], impl=parse),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                cel.Overload("is_semver_string", cel.Type.BOOL, [cel.Type.STRING], impl=is_semver),
                cel.Overload(
                    "is_semver_string_bool",
                    cel.Type.BOOL,
                    [cel.Type.STRING, cel.Type.BOOL],
                    impl=lambda s, n: is_semver(s, normalize=n),
                ),
            ],
        ),
        member("major", lambda s: s.major),
        member("minor", lambda s: s.minor),
        member("patch", lambda s: s.patch),
    ]


def compare_functions(values: Values) -> list[cel.FunctionDecl]:
    """``compareTo``, ``isGreaterThan``, ``isLessThan`` on quantity and semver, one implementation each."""

    def compare(a: Any, b: Any) -> int:
        if values.is_quantity(a) and values.is_quantity(b):
            x, y = values.quantity(a), values.quantity(b)
            return (x > y) - (x < y)
        if values.is_semver(a) and values.is_semver(b):
            s, t = values.semver(a), values.semver(b)
            return (s > t) - (s < t)
        raise TypeError("no such overload")

    impls: dict[str, Callable[[Any, Any], Any]] = {
        "compareTo": compare,
        "isGreaterThan": lambda a, b: compare(a, b) > 0,
        "isLessThan": lambda a, b: compare(a, b) < 0,
    }
    snake = {"compareTo": "compare_to", "isGreaterThan": "is_greater_than", "isLessThan": "is_less_than"}
    decls = []
    for name, impl in impls.items():
        result = cel.Type.INT if name == "compareTo" else cel.Type.BOOL
        decls.append(
            cel.FunctionDecl(
                name,
                [
                    cel.Overload(f"quantity_{snake[name]}", result, [QUANTITY, QUANTITY], is_member=True, impl=impl),
                    cel.Overload(f"semver_{snake[name]}", result, [SEMVER, SEMVER], is_member=True),
                ],
            )
        )
    return decls
