"""Field paths of CEL rule failures, as kube-apiserver's ``field.Path`` prints them.

A property is a child (``spec.limits``), a list item an index (``items[1]``) and a map's entry (a schema with
``additionalProperties``) a key in brackets, unquoted (``limits[gpu]``). A rule's ``fieldPath`` is resolved against
its schema node as ``ValidFieldPath`` resolves it (``.name`` and ``['name']`` are a property where the node has
properties, else a key of its map) and appended to the rule's path as one child named by the resolved path's
string: where that string begins with a key, the key follows a dot (``spec.labels.[blocked]``).

The parts stay ``str`` and ``int``, to find a problem's line in the document; ``MapKey`` only changes how one prints.
"""

from __future__ import annotations

import re
from typing import Any

_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]]+")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


class MapKey(str):
    """A map's key in a path: printed ``[key]``."""

    __slots__ = ()


class LeadingKey(MapKey):
    """A map's key that begins a rule's ``fieldPath``: printed ``.[key]`` below a parent."""

    __slots__ = ()


def printed(parts: Any) -> str:
    """``spec.items[0].limits[gpu]``; ``""`` for the root."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, LeadingKey):
            out += f".[{part}]" if out else f"[{part}]"
        elif isinstance(part, MapKey):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _unescaped(quoted: str) -> str | None:
    if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
        return None
    failed = False

    def one(match: re.Match[str]) -> str:
        nonlocal failed
        if match.group(1) not in _ESCAPES:
            failed = True
            return ""
        return _ESCAPES[match.group(1)]

    text = re.sub(r"\\(.)", one, quoted[1:-1], flags=re.DOTALL)
    return None if failed else text


def field_path(path: str, schema: Any) -> tuple[str, ...]:
    """A rule's ``fieldPath`` as parts below its node ``schema``; () where it does not resolve (the failure is
    then reported at the node, as upstream reports it)."""
    tokens = _TOKENS.findall(path)
    parts: list[str] = []
    node, at = schema, 0
    while at < len(tokens):
        if tokens[at] == "[" and at + 2 < len(tokens) and tokens[at + 2] == "]":
            name, at = _unescaped(tokens[at + 1]), at + 3
        elif tokens[at] == "." and at + 1 < len(tokens):
            name, at = tokens[at + 1], at + 2
        else:
            return ()
        properties = node.get("properties") if isinstance(node, dict) else None
        extra = node.get("additionalProperties") if isinstance(node, dict) else None
        if name is None:
            return ()
        if isinstance(properties, dict):
            if name not in properties:
                return ()
            parts.append(name)
            node = properties[name]
        elif isinstance(extra, dict):
            parts.append(MapKey(name) if parts else LeadingKey(name))
            node = extra
        else:
            return ()
    return tuple(parts)
