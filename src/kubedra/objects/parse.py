"""Text → documents, safely: ``yaml.safe_load`` semantics, bounded size, depth and alias expansion.

Only plain YAML (maps, lists, scalars) is accepted: a tag that would construct an object is refused.
A document is composed to a node graph first and measured before anything is constructed, so an
alias bomb ("billion laughs") or a recursive alias is refused in time proportional to the *text*,
never to its expansion. Timestamps stay strings (as in Kubernetes' YAML → JSON step), and a key
that appears twice in one mapping is an error (as in ``kubectl --validate=strict``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml

from kubedra.objects import limits
from kubedra.objects.errors import Location, Problem

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """The safe loader (libyaml when available) without the implicit timestamp type."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class ParseLimits:
    """kubedra's safety limits for one input (a file or stdin)."""

    max_bytes: int = limits.MaxFileBytes
    max_depth: int = limits.MaxNestingDepth
    max_nodes: int = limits.MaxExpandedNodes


@dataclass(frozen=True)
class Document:
    """One document of a stream; ``data`` is None for an empty document."""

    index: int
    data: Any


class _NodeProblemError(Exception):
    """Raised inside the node walk; frames add their path segment while it unwinds."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.segments: list[str] = []


def _field_path(segments: list[str]) -> str:
    path = ""
    ordered = list(reversed(segments))
    if len(ordered) > 12:
        ordered = [*ordered[:12], "[...]"]
    for segment in ordered:
        if segment.startswith("["):
            path += segment
        else:
            path += f".{segment}" if path else segment
    return path


def _key_segment(key: yaml.Node) -> str:
    value = key.value if isinstance(key, yaml.ScalarNode) else "?"
    text = str(value)
    if text.replace("_", "").replace("-", "").isalnum():
        return text
    return f"[{text!r}]"


class _Measure:
    """Expanded size and depth of a node graph, memoised per node so aliases cost nothing extra."""

    def __init__(self, bounds: ParseLimits) -> None:
        self.bounds = bounds
        self.sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, height)

    def visit(self, node: yaml.Node, depth: int) -> tuple[int, int]:
        if depth > self.bounds.max_depth:
            raise _NodeProblemError(
                f"nested deeper than {self.bounds.max_depth} levels (line {node.start_mark.line + 1});"
                " a recursive YAML alias also causes this"
            )
        known = self.sizes.get(id(node))
        if known is not None:
            size, height = known
            if depth + height - 1 > self.bounds.max_depth:
                raise _NodeProblemError(f"nested deeper than {self.bounds.max_depth} levels (through a YAML alias)")
        elif isinstance(node, yaml.ScalarNode):
            size, height = 1, 1
        elif isinstance(node, yaml.SequenceNode):
            size, height = 1, 1
            for i, child in enumerate(node.value):
                try:
                    child_size, child_height = self.visit(child, depth + 1)
                except _NodeProblemError as problem:
                    problem.segments.append(f"[{i}]")
                    raise
                size += child_size
                height = max(height, child_height + 1)
        else:
            assert isinstance(node, yaml.MappingNode)
            size, height = self._mapping(node, depth)
        self.sizes[id(node)] = (size, height)
        if size > self.bounds.max_nodes:
            raise _NodeProblemError(
                f"expands to more than {self.bounds.max_nodes} values through YAML aliases (an alias bomb?)"
            )
        return size, height

    def _mapping(self, node: yaml.MappingNode, depth: int) -> tuple[int, int]:
        size, height = 1, 1
        seen: set[object] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    problem = _NodeProblemError(f'duplicate key "{key.value}" (line {key.start_mark.line + 1})')
                    problem.segments.append(_key_segment(key))
                    raise problem
                seen.add(key.value)
            for child in (key, value):
                try:
                    child_size, child_height = self.visit(child, depth + 1)
                except _NodeProblemError as problem:
                    problem.segments.append(_key_segment(key))
                    raise
                size += child_size
                height = max(height, child_height + 1)
        return size, height


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


class _SlowPathError(Exception):
    """The document uses a YAML feature the fast builder leaves to PyYAML (merge keys, !!set, !!omap, complex keys)."""


class _FastBuild(_Measure):
    """Measure and construct in one walk: plain maps, lists and scalars, as ``construct_document`` would build them.

    Strings (nearly every scalar in a manifest) are taken as they are; other scalars go through the loader's own
    constructor, so ints, floats, booleans and nulls read exactly as PyYAML reads them and unknown tags are refused
    the same way. Aliases are built once and shared, and their sizes are memoised, as in :class:`_Measure`.
    """

    def __init__(self, bounds: ParseLimits, loader: Any) -> None:
        super().__init__(bounds)
        self.loader = loader
        self.objects: dict[int, Any] = {}

    def build(self, node: yaml.Node, depth: int) -> Any:
        if depth > self.bounds.max_depth:
            raise _NodeProblemError(
                f"nested deeper than {self.bounds.max_depth} levels (line {node.start_mark.line + 1});"
                " a recursive YAML alias also causes this"
            )
        key = id(node)
        if key in self.objects:
            height = self.sizes[key][1]
            if depth + height - 1 > self.bounds.max_depth:
                raise _NodeProblemError(f"nested deeper than {self.bounds.max_depth} levels (through a YAML alias)")
            return self.objects[key]
        size, height = 1, 1
        if isinstance(node, yaml.ScalarNode):
            obj: Any = node.value if node.tag == _STR else self.loader.construct_object(node)
        elif isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise _SlowPathError
            obj = []
            for i, child in enumerate(node.value):
                try:
                    obj.append(self.build(child, depth + 1))
                except _NodeProblemError as problem:
                    problem.segments.append(f"[{i}]")
                    raise
                child_size, child_height = self.sizes[id(child)]
                size += child_size
                height = max(height, child_height + 1)
        else:
            obj, size, height = self._build_mapping(node, depth)
        self.sizes[key] = (size, height)
        if size > self.bounds.max_nodes:
            raise _NodeProblemError(
                f"expands to more than {self.bounds.max_nodes} values through YAML aliases (an alias bomb?)"
            )
        self.objects[key] = obj
        return obj

    def _build_mapping(self, node: yaml.Node, depth: int) -> tuple[dict[Any, Any], int, int]:
        if node.tag != _MAP:
            raise _SlowPathError
        obj: dict[Any, Any] = {}
        size, height = 1, 1
        seen: set[object] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                raise _SlowPathError
            if key_node.value in seen:
                problem = _NodeProblemError(f'duplicate key "{key_node.value}" (line {key_node.start_mark.line + 1})')
                problem.segments.append(_key_segment(key_node))
                raise problem
            seen.add(key_node.value)
            try:
                key = self.build(key_node, depth + 1)
                value = self.build(value_node, depth + 1)
            except _NodeProblemError as problem:
                problem.segments.append(_key_segment(key_node))
                raise
            obj[key] = value
            for child in (key_node, value_node):
                child_size, child_height = self.sizes[id(child)]
                size += child_size
                height = max(height, child_height + 1)
        return obj, size, height


def _construct(loader: Any, node: yaml.Node, bounds: ParseLimits) -> Any:
    """The document's data: the fast builder, or PyYAML's constructor after a measuring pass for rarer YAML."""
    try:
        return _FastBuild(bounds, loader).build(node, 1)
    except _SlowPathError:
        _Measure(bounds).visit(node, 1)
        return loader.construct_document(node)


def _unreadable(location: Location, message: str) -> Problem:
    """Text that does not parse: nothing in it can be checked."""
    return Problem(location, message, unreadable=True)


def _yaml_documents(text: str, source: str, bounds: ParseLimits) -> tuple[list[Document], list[Problem]]:
    documents: list[Document] = []
    problems: list[Problem] = []
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            try:
                data = _construct(loader, node, bounds)
            except _NodeProblemError as problem:
                where = Location(source, index, "", _field_path(problem.segments))
                problems.append(_unreadable(where, f"document refused: {problem.message}"))
                index += 1
                continue
            documents.append(Document(index, data))
            index += 1
    except yaml.constructor.ConstructorError as exc:
        problems.append(_unreadable(Location(source, index), _constructor_message(exc)))
    except yaml.MarkedYAMLError as exc:
        problems.append(_unreadable(Location(source, index), f"invalid YAML: {_mark_message(exc)}"))
    except yaml.YAMLError as exc:
        problems.append(_unreadable(Location(source, index), f"invalid YAML: {exc}"))
    except RecursionError:
        problems.append(_unreadable(Location(source, index), "document refused: nested too deeply"))
    except (ValueError, TypeError, OverflowError) as exc:
        problems.append(_unreadable(Location(source, index), f"invalid YAML value: {exc}"))
    finally:
        loader.dispose()
    return documents, problems


def _mark_message(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    mark = exc.problem_mark or exc.context_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return "; ".join(parts) + where


def _constructor_message(exc: yaml.constructor.ConstructorError) -> str:
    problem = exc.problem or ""
    mark = exc.problem_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    if "constructor for the tag" in problem:
        tag = problem.split("tag", 1)[1].strip().strip("'").replace("tag:yaml.org,2002:", "!!")
        return (
            f"YAML tag {tag} is not allowed{where}: only plain YAML is accepted "
            "(mappings, lists, strings, numbers, booleans, null)"
        )
    return f"invalid YAML: {'; '.join(p for p in (exc.context, problem) if p)}{where}"


def _measure_json(data: Any, max_depth: int) -> tuple[bool, int]:
    """(depth within ``max_depth``, number of keys in all objects): one iterative walk (JSON has no aliases)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    keys = 0
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return False, keys
        if isinstance(item, dict):
            keys += len(item)
            children = item.values()
        else:
            children = item
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return True, keys


# Each key of a JSON object ends with '"', optional whitespace and ':'; so does no other place outside a
# string. The count of matches is thus at least the number of keys written, and equal to the number of keys
# decoded only when no object repeats a key (msgspec, like Go's encoding/json, keeps the last one silently).
_KEY_END = re.compile(r'"[ \t\r\n]*:')


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKeyError(key)
        seen[key] = value
    return seen


def _json_duplicate(text: str, source: str) -> Problem | None:
    """The repeated key of a JSON text, located by the YAML reader (which names the path and line) when it can."""
    try:
        json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKeyError as duplicate:
        _, problems = _yaml_documents(text, source, ParseLimits())
        located = next((p for p in problems if "duplicate key" in p.message), None)
        return located or _unreadable(Location(source, 0), f'document refused: duplicate key "{duplicate.key}"')
    except (ValueError, RecursionError):
        return None
    return None


def _too_deep(source: str, bounds: ParseLimits) -> Problem:
    return _unreadable(Location(source, 0), f"document refused: nested deeper than {bounds.max_depth} levels")


def _json_documents(text: str, source: str, bounds: ParseLimits) -> tuple[list[Document], list[Problem]]:
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        return [], [_unreadable(Location(source, 0), f"invalid JSON: {exc}")]
    except RecursionError:
        return [], [_too_deep(source, bounds)]
    depth_ok, keys = _measure_json(data, bounds.max_depth)
    if not depth_ok:
        return [], [_too_deep(source, bounds)]
    if keys != len(_KEY_END.findall(text)):
        duplicate = _json_duplicate(text, source)
        if duplicate is not None:
            return [], [duplicate]
    return [Document(0, data)], []


def too_big(size: int, source: str, bounds: ParseLimits) -> Problem | None:
    """The problem for an input of ``size`` bytes, if it is over the limit."""
    if size <= bounds.max_bytes:
        return None
    message = (f"input refused: {size} bytes is more than the limit of {bounds.max_bytes} bytes "
               "(--max-file-size raises it)")
    return _unreadable(Location(source), message)


def parse_text(
    text: str, source: str, *, json: bool | None = None, bounds: ParseLimits | None = None
) -> tuple[list[Document], list[Problem]]:
    """The documents of ``text`` (YAML multi-document or JSON) and the problems that stopped any of them.

    ``json=None`` sniffs: text starting with ``{`` is tried as JSON first, falling back to YAML.
    """
    bounds = bounds or ParseLimits()
    size = len(text) if len(text) * 4 <= bounds.max_bytes else len(text.encode("utf-8", "surrogatepass"))
    refused = too_big(size, source, bounds)
    if refused is not None:
        return [], [refused]
    if json is None:
        json = text.lstrip()[:1] == "{"
        if json:
            documents, problems = _json_documents(text, source, bounds)
            if not problems or "refused" in problems[0].message:
                return documents, problems
            return _yaml_documents(text, source, bounds)
    if json:
        return _json_documents(text, source, bounds)
    return _yaml_documents(text, source, bounds)
