"""Protobuf descriptors built in Python: the value types CEL sees, and the slice of ``cel.expr`` we read back.

cel-expr-python accepts custom types only as protobuf messages, so Kubernetes' ``Quantity`` and ``Semver``
objects travel as one-field messages. Compiled programs serialize to a ``cel.expr.CheckedExpr`` wrapped in
``google.protobuf.Any``; decoding it gives us the checked syntax tree for rewrites and the cost bound.
Fields we do not declare survive as unknown fields, so only what we read is described here.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_STRING, _BYTES, _INT64, _UINT64, _BOOL, _DOUBLE, _INT32, _MESSAGE, _ENUM = (
    _F.TYPE_STRING,
    _F.TYPE_BYTES,
    _F.TYPE_INT64,
    _F.TYPE_UINT64,
    _F.TYPE_BOOL,
    _F.TYPE_DOUBLE,
    _F.TYPE_INT32,
    _F.TYPE_MESSAGE,
    _F.TYPE_ENUM,
)
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"


def _field(
    msg: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    ftype: int,
    type_name: str = "",
    *,
    repeated: bool = False,
    oneof: int | None = None,
) -> None:
    f = msg.field.add(name=name, number=number, type=ftype, label=_REPEATED if repeated else _OPTIONAL)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof


def _map_entry(msg: descriptor_pb2.DescriptorProto, entry: str, key: int, value: int, value_type: str = "") -> None:
    nested = msg.nested_type.add(name=entry)
    nested.options.map_entry = True
    _field(nested, "key", 1, key)
    _field(nested, "value", 2, value, value_type)


def _kubernetes_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="kubedra/kubernetes_cel.proto", package="kubernetes", syntax="proto3")
    for name in ("Quantity", "Semver"):
        message = fd.message_type.add(name=name)
        _field(message, "value", 1, _STRING)
        if name == "Quantity":
            # How Go holds it (``Quantity.representation``): isInteger/asInteger read it, equality must not, so
            # ``==``/``!=``/``in`` on quantities are compiled to functions comparing ``value`` (cel/analysis.py).
            _field(message, "representation", 2, _STRING)
    return fd


def _cel_expr_file() -> descriptor_pb2.FileDescriptorProto:  # noqa: PLR0915 - one statement per proto field
    fd = descriptor_pb2.FileDescriptorProto(name="kubedra/cel_expr_subset.proto", package="cel.expr", syntax="proto3")
    any_msg = fd.message_type.add(name="AnyWrapper")
    _field(any_msg, "type_url", 1, _STRING)
    _field(any_msg, "value", 2, _BYTES)

    const = fd.message_type.add(name="Constant")
    const.oneof_decl.add(name="constant_kind")
    _field(const, "null_value", 1, _INT32, oneof=0)
    _field(const, "bool_value", 2, _BOOL, oneof=0)
    _field(const, "int64_value", 3, _INT64, oneof=0)
    _field(const, "uint64_value", 4, _UINT64, oneof=0)
    _field(const, "double_value", 5, _DOUBLE, oneof=0)
    _field(const, "string_value", 6, _STRING, oneof=0)
    _field(const, "bytes_value", 7, _BYTES, oneof=0)

    expr = fd.message_type.add(name="Expr")
    expr.oneof_decl.add(name="expr_kind")
    ident = expr.nested_type.add(name="Ident")
    _field(ident, "name", 1, _STRING)
    select = expr.nested_type.add(name="Select")
    _field(select, "operand", 1, _MESSAGE, ".cel.expr.Expr")
    _field(select, "field", 2, _STRING)
    _field(select, "test_only", 3, _BOOL)
    call = expr.nested_type.add(name="Call")
    _field(call, "target", 1, _MESSAGE, ".cel.expr.Expr")
    _field(call, "function", 2, _STRING)
    _field(call, "args", 3, _MESSAGE, ".cel.expr.Expr", repeated=True)
    create_list = expr.nested_type.add(name="CreateList")
    _field(create_list, "elements", 1, _MESSAGE, ".cel.expr.Expr", repeated=True)
    create_struct = expr.nested_type.add(name="CreateStruct")
    _field(create_struct, "message_name", 1, _STRING)
    entry = create_struct.nested_type.add(name="Entry")
    entry.oneof_decl.add(name="key_kind")
    _field(entry, "id", 1, _INT64)
    _field(entry, "field_key", 2, _STRING, oneof=0)
    _field(entry, "map_key", 3, _MESSAGE, ".cel.expr.Expr", oneof=0)
    _field(entry, "value", 4, _MESSAGE, ".cel.expr.Expr")
    _field(create_struct, "entries", 2, _MESSAGE, ".cel.expr.Expr.CreateStruct.Entry", repeated=True)
    compr = expr.nested_type.add(name="Comprehension")
    _field(compr, "iter_var", 1, _STRING)
    _field(compr, "iter_range", 2, _MESSAGE, ".cel.expr.Expr")
    _field(compr, "accu_var", 3, _STRING)
    _field(compr, "accu_init", 4, _MESSAGE, ".cel.expr.Expr")
    _field(compr, "loop_condition", 5, _MESSAGE, ".cel.expr.Expr")
    _field(compr, "loop_step", 6, _MESSAGE, ".cel.expr.Expr")
    _field(compr, "result", 7, _MESSAGE, ".cel.expr.Expr")
    _field(compr, "iter_var2", 8, _STRING)
    _field(expr, "id", 2, _INT64)
    _field(expr, "const_expr", 3, _MESSAGE, ".cel.expr.Constant", oneof=0)
    _field(expr, "ident_expr", 4, _MESSAGE, ".cel.expr.Expr.Ident", oneof=0)
    _field(expr, "select_expr", 5, _MESSAGE, ".cel.expr.Expr.Select", oneof=0)
    _field(expr, "call_expr", 6, _MESSAGE, ".cel.expr.Expr.Call", oneof=0)
    _field(expr, "list_expr", 7, _MESSAGE, ".cel.expr.Expr.CreateList", oneof=0)
    _field(expr, "struct_expr", 8, _MESSAGE, ".cel.expr.Expr.CreateStruct", oneof=0)
    _field(expr, "comprehension_expr", 9, _MESSAGE, ".cel.expr.Expr.Comprehension", oneof=0)

    ref = fd.message_type.add(name="Reference")
    _field(ref, "name", 1, _STRING)
    _field(ref, "overload_id", 3, _STRING, repeated=True)

    source = fd.message_type.add(name="SourceInfo")
    _map_entry(source, "PositionsEntry", _INT64, _INT32)
    _field(source, "positions", 4, _MESSAGE, ".cel.expr.SourceInfo.PositionsEntry", repeated=True)

    cel_type = fd.message_type.add(name="Type")
    list_type = cel_type.nested_type.add(name="ListType")
    _field(list_type, "elem_type", 1, _MESSAGE, ".cel.expr.Type")
    _field(cel_type, "list_type", 6, _MESSAGE, ".cel.expr.Type.ListType")
    _field(cel_type, "message_type", 9, _STRING)

    checked = fd.message_type.add(name="CheckedExpr")
    _map_entry(checked, "ReferenceMapEntry", _INT64, _MESSAGE, ".cel.expr.Reference")
    _field(checked, "reference_map", 2, _MESSAGE, ".cel.expr.CheckedExpr.ReferenceMapEntry", repeated=True)
    _map_entry(checked, "TypeMapEntry", _INT64, _MESSAGE, ".cel.expr.Type")
    _field(checked, "type_map", 3, _MESSAGE, ".cel.expr.CheckedExpr.TypeMapEntry", repeated=True)
    _field(checked, "expr", 4, _MESSAGE, ".cel.expr.Expr")
    _field(checked, "source_info", 5, _MESSAGE, ".cel.expr.SourceInfo")
    return fd


def _build() -> tuple[descriptor_pool.DescriptorPool, dict[str, Any]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_kubernetes_file())
    pool.Add(_cel_expr_file())
    classes = {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        for name in (QUANTITY_TYPE, SEMVER_TYPE, "cel.expr.AnyWrapper", "cel.expr.CheckedExpr")
    }
    return pool, classes


class Protos:
    """One descriptor pool and its message classes (immutable once built; see ``protos()``)."""

    def __init__(self) -> None:
        self.pool, classes = _build()
        self.quantity: Any = classes[QUANTITY_TYPE]
        self.semver: Any = classes[SEMVER_TYPE]
        self._any: Any = classes["cel.expr.AnyWrapper"]
        self._checked: Any = classes["cel.expr.CheckedExpr"]

    def checked_expr(self, serialized: bytes) -> Any:
        """Decode ``Expression.serialize()`` output into a ``cel.expr.CheckedExpr`` message."""
        wrapper = self._any()
        wrapper.ParseFromString(serialized)
        checked = self._checked()
        checked.ParseFromString(wrapper.value)
        return checked

    def serialized(self, checked: Any, like: bytes) -> bytes:
        """``checked`` (decoded by :meth:`checked_expr`, then edited) wrapped as ``like`` was, for
        ``Env.deserialize``; the fields this subset does not declare travel along as unknown fields."""
        wrapper = self._any()
        wrapper.ParseFromString(like)
        wrapper.value = checked.SerializeToString()
        result: bytes = wrapper.SerializeToString()
        return result


@functools.cache
def protos() -> Protos:
    """The process' one descriptor pool: immutable, so device values can be shared by every environment."""
    return Protos()
