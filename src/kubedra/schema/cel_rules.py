"""A CustomResourceDefinition's ``x-kubernetes-validations`` (CEL rules), evaluated on a new object as kube-apiserver
evaluates them on create (``apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go``, ``Validate``).

Each rule of a schema node runs with ``self`` bound to the object's value there, wherever that value is present
(a rule on an optional field that is absent does not run). Transition rules, those that read ``oldSelf``, have no old
object on create and are skipped, as upstream skips them, but for those with ``optionalOldSelf``: they run with
``oldSelf`` an empty optional (``CRDValidationRatcheting``). A rule that is false fails at its node (or at its
``fieldPath`` below it) with its ``messageExpression``'s result, trimmed (unless it errs, is empty or spans lines),
else its ``message``, trimmed, else ``failed rule: <rule>`` (trimmed),
worded as v1.37's ``field.Invalid`` (``Invalid value: <message>`` for an object or a list, ``Invalid value:
"<value>": <message>`` for a scalar), or as the ``reason`` asks (``FieldValueForbidden``, ``FieldValueRequired``,
``FieldValueDuplicate``); a rule at the root fails at ``<nil>``, one in a list's item or a map's entry at its
index or key (``spec.limits[gpu].max``, ``schema.rule_paths``). A rule whose evaluation errs fails at its node
whatever its fieldPath and reason, ``Invalid value: "<the schema's type>": <error> evaluating rule: <its message, else
its text>``. Wording checked against the real kube-apiserver
(``tests/schema/test_cel_rules_controlplane.py``).

A declared property whose name is no CEL identifier is read under its escaped name, as the API server's object
type declares it (``apiserver/pkg/cel/escaping.go``): ``__`` as ``__underscores__``, ``.`` ``-`` ``/`` as ``__dot__``
``__dash__`` ``__slash__``, a reserved word as ``__<word>__`` or as itself (``self.__namespace__``,
``self.namespace``: v1.37 recognises keywords as field names); one with another character (or starting with a digit)
cannot be read at all. A map's keys (``additionalProperties``) are never escaped.

The environment is kubedra's CEL (cel-cpp) with ``self`` declared dynamic and the Kubernetes libraries the DRA
environment has (strings, lists, regex, quantity, semver, optional types, ``cel.bind``); a rule this environment
cannot compile (a library kubedra does not have: urls, ip/cidr, format, sets) is left unevaluated and counted in
``CelRules.unevaluated``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kubedra.schema.rule_paths import MapKey, field_path

_OLD_SELF = re.compile(r"\boldSelf\b")
MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
_REASONS = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required value"}


@dataclass(frozen=True)
class Rule:
    """One compiled rule of one schema node."""

    rule: str
    program: Any
    message: str
    message_program: Any | None
    field_path: tuple[str, ...]  # resolved against the rule's node (``rule_paths.field_path``)
    reason: str
    given_message: str  # ``message``, trimmed ("" where none)


@dataclass
class Node:
    """The rules of one schema node and the nodes below it."""

    type: str = ""
    rules: list[Rule] = field(default_factory=list)
    properties: dict[str, Node] = field(default_factory=dict)
    known: frozenset[str] = frozenset()  # every declared property (``additional`` is for the others)
    additional: Node | None = None
    items: Node | None = None
    # declared properties CEL reads under other names (none: not at all), and whether a node below has some
    renamed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    renamed_below: bool = False

    def empty(self) -> bool:
        return (not self.rules and not self.properties and self.additional is None and self.items is None
                and not self.renamed_below)


@cache
def _environment() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    from kubedra.cel.library_lists import list_functions, regex_functions
    from kubedra.cel.library_quantity import quantity_functions
    from kubedra.cel.library_semver import compare_functions, semver_functions
    from kubedra.cel.protos import protos
    from kubedra.cel.values import Values

    values = Values(protos())
    return cel.NewEnv(
        descriptor_pool=protos().pool,
        variables={"self": cel.Type.DYN},
        extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
        functions=[*quantity_functions(values), *semver_functions(values), *compare_functions(values),
                   *list_functions(), *regex_functions()],
    )


class CelRules:
    """The create-time rules of one version's ``openAPIV3Schema``, compiled once."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.unevaluated: list[str] = []
        self.root = self._node(schema)

    def _node(self, schema: Any) -> Node:
        node = Node()
        if not isinstance(schema, dict):
            return node
        node.type = str(schema.get("type") or "")
        for raw in schema.get("x-kubernetes-validations") or []:
            rule = self._rule(raw, schema)
            if rule is not None:
                node.rules.append(rule)
        node.known = frozenset(schema.get("properties") or {})
        for name, child in (schema.get("properties") or {}).items():
            names = cel_names(name)
            if names != (name,):
                node.renamed[name] = names
            below = self._node(child)
            if not below.empty():
                node.properties[name] = below
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            below = self._node(extra)
            node.additional = None if below.empty() else below
        items = schema.get("items")
        if isinstance(items, dict):
            below = self._node(items)
            node.items = None if below.empty() else below
        node.renamed_below = bool(node.renamed) or any(
            child.renamed_below for child in (*node.properties.values(), node.additional, node.items) if child)
        return node

    def _rule(self, raw: Any, schema: dict[str, Any]) -> Rule | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("rule"), str):
            return None
        text = raw["rule"]
        program = _compiled(text)
        if program is None and _OLD_SELF.search(text):  # a transition rule: it reads oldSelf
            if raw.get("optionalOldSelf") is not True:
                return None  # no old object on create: skipped
            # CRDValidationRatcheting: with optionalOldSelf it runs on create, oldSelf an empty optional
            program = _compiled(f"cel.bind(oldSelf, optional.none(), {text}\n)")
        if program is None:
            self.unevaluated.append(text)
            return None
        env = _environment()
        message_program = None
        if isinstance(raw.get("messageExpression"), str):
            try:
                message_program = env.compile(raw["messageExpression"])
            except RuntimeError:
                message_program = None
        given = raw["message"] if isinstance(raw.get("message"), str) else ""
        message = given.strip() if given else f"failed rule: {text.strip()}"
        return Rule(text, program, message, message_program, field_path(str(raw.get("fieldPath") or ""), schema),
                    str(raw.get("reason") or ""), given.strip())

    def problems(self, document: Any) -> list[tuple[tuple[Any, ...], str]]:
        """(path as keys and indexes, message) for each rule ``document`` fails."""
        out: list[tuple[tuple[Any, ...], str]] = []
        self._check(self.root, document, (), out)
        return out

    def _check(self, node: Node, value: Any, path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], str]]) -> None:
        if value is None:
            return
        seen = _as_cel_reads(node, value) if node.rules and node.renamed_below else value
        for rule in node.rules:
            failed = _evaluate(rule, seen)
            if isinstance(failed, _Erred):  # at the node, whatever the fieldPath and reason
                out.append((path, f'Invalid value: "{node.type}": {_erred(rule, failed.text)}'))
            elif failed is not None:
                out.append(((*path, *rule.field_path), _worded(rule, value, failed)))
        if isinstance(value, dict):
            for key, child in value.items():
                if key in node.known:
                    below, part = node.properties.get(key), key
                else:
                    below, part = node.additional, MapKey(key)
                if below is not None:
                    self._check(below, child, (*path, part), out)
        elif isinstance(value, list) and node.items is not None:
            for index, child in enumerate(value):
                self._check(node.items, child, (*path, index), out)


# CEL's reserved words (``celReservedSymbols``): a property so named is read as ``__<word>__``
RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                      "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"})
_ESCAPABLE = re.compile(r"[a-zA-Z_./-][a-zA-Z0-9_./-]*")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape(name: str) -> str | None:
    """``cel.Escape``: the name CEL reads a declared property by; None where it cannot be read."""
    if name in RESERVED:
        return f"__{name}__"
    if not _ESCAPABLE.fullmatch(name):
        return None
    return re.sub(r"__|[./-]", lambda m: _ESCAPES[m.group()], name)


def cel_names(name: str) -> tuple[str, ...]:
    """The names a rule may read a declared property by: its escaped name, and a reserved word as itself as well
    (``DeclTypeProvider.recognizeKeywordAsFieldName``)."""
    escaped = escape(name)
    if escaped is None:
        return ()
    return (escaped, name) if name in RESERVED else (escaped,)


def _as_cel_reads(node: Node, value: Any) -> Any:
    """``value`` with its declared properties under their escaped names (those CEL cannot read left out), down to
    where nothing below is renamed."""
    if not node.renamed_below:
        return value
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            below = node.properties.get(key) if key in node.known else node.additional
            seen = _as_cel_reads(below, child) if below is not None else child
            for name in node.renamed.get(key, (key,)) if key in node.known else (key,):
                out[name] = seen
        return out
    if isinstance(value, list) and node.items is not None:
        return [_as_cel_reads(node.items, child) for child in value]
    return value


def _compiled(text: str) -> Any | None:
    try:
        return _environment().compile(text)
    except RuntimeError:
        return None


@dataclass(frozen=True)
class _Erred:
    """A rule whose evaluation failed: cel-go's words for the error."""

    text: str


def _erred(rule: Rule, error: str) -> str:
    """A runtime error as ``validateExpressions`` words it, naming the rule by its message, else its text."""
    name = rule.given_message or rule.rule.strip()
    if error.startswith("no such overload"):  # cel-go's operators name no overload: "no such overload"
        return ("'no such overload': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {name}")
    return f"{error} evaluating rule: {name}"


def _evaluate(rule: Rule, value: Any) -> str | _Erred | None:
    """None where the rule holds; else the failure's message, or the runtime error where it errs."""
    from kubedra.cel.program import runtime_message

    if not _representable(value):
        return None  # a value no API server holds (an integer past int64): the schema's checks speak for it
    env = _environment()
    activation = env.Activation({"self": value})
    try:
        result = rule.program.eval(activation)
    except RuntimeError as exc:
        return _Erred(runtime_message(str(exc)))
    if result.value() is True:
        return None
    if result.value() is not False:
        return _Erred(runtime_message(str(result.value())))
    if rule.message_program is not None:
        return _message(rule, rule.message_program, activation)
    return rule.message


def _message(rule: Rule, program: Any, activation: Any) -> str:
    """The ``messageExpression``'s string, trimmed; the rule's message where it errs, is no string, is empty, is
    too long or spans lines (``evalMessageExpression``)."""
    from cel_expr_python import cel

    try:
        result = program.eval(activation)
    except RuntimeError:
        return rule.message
    text = result.value().strip() if result.type() == cel.Type.STRING else ""
    if not text or "\n" in text or len(text.encode()) > MAX_MESSAGE_BYTES:
        return rule.message
    return str(text)


def _representable(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _representable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_representable(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return True
    return isinstance(value, int) and -(2**63) <= value < 2**63


def _worded(rule: Rule, value: Any, message: str) -> str:
    """``field.Invalid`` as v1.37 prints it: an object's or a list's value left out, a scalar's shown."""
    if rule.reason in _REASONS:
        return f"{_REASONS[rule.reason]}: {message}"
    if isinstance(value, (dict, list)):
        return f"Invalid value: {message}" if rule.reason != "FieldValueDuplicate" else "Duplicate value"
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    if rule.reason == "FieldValueDuplicate":
        return f"Duplicate value: {shown}"
    return f"Invalid value: {shown}: {message}"
