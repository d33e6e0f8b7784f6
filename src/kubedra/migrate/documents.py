"""Round-trip YAML for migration: the user's comments, key order, quoting and unrelated fields survive.

Parsing and printing are pure (text in, data out and back); the CLI reads the files. Keys kubedra adds to a user's
mapping go where ``kubectl get -o yaml`` would print them (alphabetical order, which Kubernetes' printers use), so a
diff shows only what changed; objects kubedra writes from scratch are ordered the same way.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarfloat import ScalarFloat

from kubedra.objects.errors import Location, Problem


@dataclass
class Source:
    """One input: a file name (``<stdin>`` for -) and its text."""

    name: str
    text: str


@dataclass
class ParsedDocument:
    """One document of a source: its 0-based index, its 1-based first line and its round-trip data (block style;
    ``positions`` is the data as parsed, which knows the line of every field)."""

    index: int
    line: int
    data: Any
    positions: Any = None


def _exact_float(representer: RoundTripRepresenter, data: ScalarFloat) -> ScalarNode:
    """ruamel writes a float back in its original width, and for some values that text is another number (each
    round trip of 3.590788311364812e+18 lost one in the last digit): then Python's shortest exact text is written."""
    node: ScalarNode = representer.represent_scalar_float(data)
    try:
        exact = float(str(node.value).replace("_", "")) == float(data)
    except ValueError:  # .inf, .nan
        exact = True
    return node if exact else representer.represent_scalar("tag:yaml.org,2002:float", repr(float(data)))


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.representer.add_representer(ScalarFloat, _exact_float)
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long CEL expression: a folded line is churn in a diff
    yaml.indent(mapping=2, sequence=2, offset=0)  # kubectl's layout: "- " at the parent key's indentation
    return yaml


def parse(source: Source) -> tuple[list[ParsedDocument], list[Problem]]:
    """Every document of ``source`` (empty ones dropped), or the parse error with its line and column."""
    try:
        loaded = list(_yaml().load_all(source.text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        message = f"{where}{exc.problem or exc.context or 'not valid YAML'}"
        return [], [Problem(Location(source.name), f"invalid YAML: {message}", unreadable=True)]
    except YAMLError as exc:
        return [], [Problem(Location(source.name), f"invalid YAML: {exc}", unreadable=True)]
    documents = []
    for index, parsed in enumerate(loaded):
        if parsed is None:
            continue
        data = _joined_surrogates(parsed)
        line = data.lc.line + 1 if isinstance(data, CommentedMap | CommentedSeq) else 1
        block = blockify(data) if isinstance(data, CommentedMap | CommentedSeq) and data.fa.flow_style() else data
        documents.append(ParsedDocument(index, line, block, data))
    return documents, []


def _joined(text: str) -> str:
    """A YAML reader keeps JSON's escaped surrogate pairs (``"\\ud800\\udc00"``) as two code points, which no
    YAML reader accepts back: joined into the one character they encode, as a JSON reader does."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    try:
        joined = text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:  # a lone surrogate: left as it is
        return text
    return type(text)(joined) if type(text) is not str else joined


def _joined_surrogates(data: Any) -> Any:
    """``_joined`` on every string of a parsed document, keys included, in place where the container allows."""
    if isinstance(data, str):
        return _joined(data)
    if isinstance(data, MutableMapping):
        for key in list(data):
            value = _joined_surrogates(data[key])
            fixed = _joined(key) if isinstance(key, str) else key
            if fixed is not key:
                data[fixed] = data.pop(key)
            data[fixed] = value
        return data
    if isinstance(data, MutableSequence):
        for i, item in enumerate(data):
            data[i] = _joined_surrogates(item)
    return data


def dump(documents: list[Any]) -> str:
    """A multi-document stream, ``---`` between documents, as ``kubectl convert`` prints it."""
    buffer = io.StringIO()
    yaml = _yaml()
    for i, document in enumerate(documents):
        if i:
            buffer.write("---\n")
        yaml.dump(document, buffer)
    return buffer.getvalue()


def plain(data: Any) -> Any:
    """The data as plain dicts, lists and scalars (for the loader, the validators and JSON output)."""
    if isinstance(data, Mapping):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    if isinstance(data, bool) or data is None:
        return data
    if isinstance(data, int):
        return int(data)
    if isinstance(data, float):
        return float(data)
    return str(data)


def blockify(data: Any) -> Any:
    """A flow-style (JSON) document as block YAML with the same key order, so output reads like kubectl's."""
    if isinstance(data, Mapping):
        out = CommentedMap()
        for key, value in data.items():
            out[str(key)] = blockify(value)
        return out
    if isinstance(data, list):
        return CommentedSeq([blockify(v) for v in data])
    return str(data) if isinstance(data, str) else data  # JSON's quotes dropped; the dumper quotes where YAML must


def build(data: Any) -> Any:
    """Round-trip data for an object kubedra writes: mappings with keys in Kubernetes' printed (sorted) order."""
    if isinstance(data, Mapping):
        out = CommentedMap()
        for key in sorted(data):
            out[key] = build(data[key])
        return out
    if isinstance(data, list):
        return CommentedSeq([build(v) for v in data])
    return data


def insert_sorted(mapping: Any, key: str, value: Any) -> None:
    """Set ``key`` in a user's mapping at the place a sorted printer would put it (or keep it where it is)."""
    if key in mapping:
        mapping[key] = value
        return
    keys = list(mapping)
    smaller = [i for i, k in enumerate(keys) if str(k) < key]
    position = smaller[-1] + 1 if smaller else 0
    if isinstance(mapping, CommentedMap):
        mapping.insert(position, key, value)
    else:
        mapping[key] = value


def field_parts(path: str) -> list[Any]:
    """``spec.containers[0].resources.limits[nvidia.com/gpu]`` → ``["spec", "containers", 0, "resources", "limits",
    "nvidia.com/gpu"]`` (an index in brackets is a list index, anything else in brackets a map key)."""
    parts: list[Any] = []
    for name, bracket in re.findall(r"([^.\[\]]+)|\[([^\]]*)\]", path):
        if name:
            parts.append(name)
        else:
            parts.append(int(bracket) if bracket.isascii() and bracket.isdigit() else bracket)
    return parts


def line_of(data: Any, path: Sequence[Any]) -> int | None:
    """The 1-based line of the field at ``path`` (keys and list indexes) in round-trip data, or of its nearest
    parent that has one; None for data that carries no positions."""
    line: int | None = data.lc.line + 1 if isinstance(data, CommentedMap | CommentedSeq) else None
    node = data
    for part in path:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
        else:
            return line
        node = node[part]
    return line


def keep_leading_comment(original: Any, replacement: Any) -> None:
    """The comment lines above a document's first key, carried over to the object that replaces it."""
    if isinstance(original, CommentedMap) and isinstance(replacement, CommentedMap) and original.ca.comment:
        replacement.ca.comment = original.ca.comment
