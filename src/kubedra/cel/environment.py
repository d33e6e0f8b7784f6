"""The DRA CEL environment: the ``device`` variable and the libraries selectors use, compiled with cel-cpp.

Mirrors ``k8s.io/dynamic-resource-allocation/cel/compile.go``: the Kubernetes base libraries (quantity,
semver, lists, regex, strings, optional types), ``cel.bind``, and ``device`` with ``driver``,
``attributes[domain][id]``, ``capacity[domain][id]`` and, with consumable capacity, ``allowMultipleAllocations``.
``device``'s fields are declared as qualified variables (``device.driver`` …), which gives cel-cpp's checker
their exact types; an unknown field is reported as upstream reports it (``undefined field 'x'``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kubedra.cel.analysis import apply_edits, attribute_reads, compare_quantities_by_value, domain_lookup_edits
from kubedra.cel.cost import COST_LIMIT, estimate_cost
from kubedra.cel.errors import CelCompileError
from kubedra.cel.library_lists import list_functions, regex_functions
from kubedra.cel.library_quantity import QUANTITY, quantity_functions
from kubedra.cel.library_semver import compare_functions, semver_functions
from kubedra.cel.program import SelectorProgram
from kubedra.cel.protos import protos
from kubedra.cel.values import Values
from kubedra.objects import limits

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_DEVICE_FIELD = re.compile(r"undeclared reference to 'device\.([A-Za-z_][A-Za-z0-9_]*)[^']*' \(in container '[^']*'\)")
_TYPE_NAMES = {
    "BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string", "BYTES": "bytes",
    "NULL": "null_type", "DYN": "dyn", "TYPE": "type", "LIST": "list", "MAP": "map",
    "TIMESTAMP": "google.protobuf.Timestamp", "DURATION": "google.protobuf.Duration", "ERROR": "*error*",
}  # fmt: skip


@dataclass(frozen=True)
class CelOptions:
    """Which optional parts of the environment exist (Kubernetes feature gates)."""

    consumable_capacity: bool = True
    """DRAConsumableCapacity: declares ``device.allowMultipleAllocations``."""
    list_type_attributes: bool = False
    """DRAListTypeAttributes: list-valued attributes reach CEL as lists (``includes()`` is not provided)."""
    lists_without_gate: bool = True
    """v0.37.2 ``getAttributeValue`` hands list values to CEL whatever the gate; v0.36.6 only with it and
    otherwise fails the evaluation ("attribute X: unsupported attribute value")."""

    @property
    def list_values(self) -> bool:
        """Whether list-valued attributes reach CEL as lists (else evaluating on such a device is an error)."""
        return self.list_type_attributes or self.lists_without_gate


def type_name(t: cel.Type) -> str:
    """cel-cpp's ``LIST<INT>`` spelled the way cel-go prints it: ``list(int)``."""
    text = t.name()
    out = re.sub(r"\b[A-Z_]+\b", lambda m: _TYPE_NAMES.get(m.group(0), m.group(0)), text)
    return out.replace("<", "(").replace(">", ")")


def clean_message(text: str) -> str:
    """Drop cel-cpp's status decorations, keeping the cel-go-shaped ``ERROR: <input>:l:c: ...`` body."""
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip()))
    return _DEVICE_FIELD.sub(lambda m: f"undefined field '{m.group(1)}'", text)


class Environment:
    """One compiled-in set of declarations; compiles selector expressions into programs."""

    def __init__(self, options: CelOptions = CelOptions()) -> None:
        self.options = options
        self.values = Values(protos())
        string = cel.Type.STRING
        variables: dict[str, cel.Type] = {
            "device.driver": string,
            "device.attributes": cel.Type.Map(string, cel.Type.Map(string, cel.Type.DYN)),
            "device.capacity": cel.Type.Map(string, cel.Type.Map(string, QUANTITY)),
        }
        if options.consumable_capacity:
            variables["device.allowMultipleAllocations"] = cel.Type.BOOL
        functions = [
            *quantity_functions(self.values),
            *semver_functions(self.values),
            *compare_functions(self.values),
            *list_functions(),
            *regex_functions(),
        ]
        self.env = cel.NewEnv(
            descriptor_pool=protos().pool,
            variables=variables,
            extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
            functions=functions,
        )

    def compile(self, expression: str) -> SelectorProgram:
        """Compile like Kubernetes does; raise ``CelCompileError`` with upstream's wording."""
        if len(expression.encode()) > limits.CELSelectorExpressionMaxLength:
            raise CelCompileError(f"Too long: may not be more than {limits.CELSelectorExpressionMaxLength} bytes")
        checked_expr = self._compile(expression, "compilation failed: ")
        result = checked_expr.return_type()
        if result not in (cel.Type.BOOL, cel.Type.DYN):
            raise CelCompileError(f"must evaluate to bool or the unknown type, not {type_name(result)}")
        checked = protos().checked_expr(checked_expr.serialize())
        reads = attribute_reads(checked)
        edits = domain_lookup_edits(checked, expression)
        runnable = checked_expr
        if edits:
            runnable = self._compile(apply_edits(expression, edits), "unexpected compilation error: ")
            checked = protos().checked_expr(runnable.serialize())
        guarded = estimate_cost(checked.expr) > COST_LIMIT
        by_value = protos().checked_expr(runnable.serialize())
        if compare_quantities_by_value(by_value):
            runnable = self.env.deserialize(protos().serialized(by_value, runnable.serialize()))
        return SelectorProgram(expression, self, runnable, checked.expr if guarded else None, reads)

    def checked(self, expression: str) -> Any:
        """The checked syntax tree (a ``CheckedExpr`` message, with source positions) of an expression that
        compiles; raises ``CelCompileError``. For tools that read an expression's structure (``sim.whatif``)."""
        return protos().checked_expr(self._compile(expression, "compilation failed: ").serialize())

    def _compile(self, source: str, prefix: str) -> Any:
        try:
            return self.env.compile(source)
        except RuntimeError as exc:
            raise CelCompileError(prefix + clean_message(str(exc))) from None
