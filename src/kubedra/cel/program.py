"""A compiled selector: evaluate it against devices, turning cel-cpp's error values into exceptions."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kubedra.cel.cost import COST_LIMIT, COST_LIMIT_MESSAGE, estimate_cost
from kubedra.cel.errors import CelRuntimeError

if TYPE_CHECKING:
    from kubedra.cel.analysis import Reads
    from kubedra.cel.device import DeviceView
    from kubedra.cel.environment import Environment

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_NO_SUCH_KEY = re.compile(r'^Key not found in map ?: ?"?(.*?)"?$', re.DOTALL)
_NO_OVERLOAD = re.compile(r"^No matching overloads found ?: ?(.*)$", re.DOTALL)


def runtime_message(text: str) -> str:
    """cel-cpp's runtime error text, reworded the way cel-go (and so Kubernetes) words it."""
    text = _STATUS_PREFIX.sub("", str(text).strip())
    if m := _NO_SUCH_KEY.match(text):
        return f"no such key: {m.group(1)}"
    if m := _NO_OVERLOAD.match(text):
        return f"no such overload: {m.group(1)}"
    if text == "divide by zero":
        return "division by zero"
    if text == "modulus by zero":
        return "modulus by zero"
    return text


class SelectorProgram:
    """One expression compiled against one environment; safe to share, evaluate against any number of devices."""

    def __init__(
        self,
        expression: str,
        environment: Environment,
        compiled: Any,
        guarded_ast: Any | None,
        reads: Reads | None = None,
    ) -> None:
        self.expression = expression
        self.reads = reads
        """The device attributes it can read (``analysis.attribute_reads``); None: any."""
        self._environment = environment
        self._compiled = compiled
        self._guarded_ast = guarded_ast
        """Set only when the worst case exceeds the cost limit: each device is then checked before running."""

    @property
    def cost_guarded(self) -> bool:
        """True when this program's worst case exceeds the cost limit, so each evaluation is checked first."""
        return self._guarded_ast is not None

    def evaluate(self, device: DeviceView) -> bool:
        """Whether ``device`` matches; raises ``CelRuntimeError`` exactly where Kubernetes reports an error."""
        if self._guarded_ast is not None and estimate_cost(self._guarded_ast, device.bounds()) > COST_LIMIT:
            raise CelRuntimeError(COST_LIMIT_MESSAGE)
        activation = device.activation(self._environment)
        try:
            result = self._compiled.eval(activation)
        except RuntimeError as exc:  # cel-cpp reports some failures by raising, not as error values
            raise CelRuntimeError(runtime_message(str(exc))) from None
        value = result.value()
        if value is True or value is False:
            return bool(value)
        from cel_expr_python import cel

        kind = result.type()
        if kind == cel.Type.ERROR:
            raise CelRuntimeError(runtime_message(str(value)))
        from kubedra.cel.environment import type_name

        raise CelRuntimeError(f"CEL result of type {type_name(kind)} could not be converted to bool")
