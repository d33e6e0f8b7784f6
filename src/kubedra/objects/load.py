"""Loading Kubernetes objects: files, directories and stdin → v1 model objects, raw objects and warnings.

Pipeline per document: safe parse (:mod:`.parse`) → dispatch on apiVersion/kind → beta → v1
(:mod:`.beta`) or the legacy dialect (:mod:`.legacy`, converted once every document is read because
its references cross documents) → decode into the model (:mod:`.decode`) → validation
(:mod:`.validate`). Every problem of every document is collected and raised together as one
:class:`InvalidInputError`; nothing else is ever raised for bad input.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

from kubedra.objects.builder import Builder, Loaded, add_text
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.parse import Document, ParseLimits, too_big

SUFFIXES = (".yaml", ".yml", ".json")


def load_text(
    text: str, *, source: str = "<string>", limits: ParseLimits | None = None, api_validation: bool = True
) -> Loaded:
    """Load one YAML (multi-document) or JSON text; raise InvalidInputError listing every problem.

    ``api_validation=False`` keeps the shape checks (unknown fields, wrong types, conversions) but skips the API
    server's rules on names, formats and limits — what the allocator itself accepts, as upstream's does.
    """
    builder = Builder(api_validation=api_validation)
    add_text(builder, text, source, None, limits)
    return builder.finish()


def _files(path: str, problems: list[Problem], recursive: bool = False, notes: list[str] | None = None) -> list[str]:
    """The files ``path`` stands for: itself, or a directory's files by name (its subdirectories' after its own
    when ``recursive``, each sorted the same way). Each entry of a directory that is not read gets a note."""
    try:
        if os.path.isdir(path):
            entries = sorted(os.listdir(path))
            files = [os.path.join(path, n) for n in entries
                     if n.lower().endswith(SUFFIXES) and os.path.isfile(os.path.join(path, n))]
            subdirs = [n for n in entries if os.path.isdir(os.path.join(path, n))]
            for name in entries:
                full = os.path.join(path, name)
                if notes is None or full in files or name.startswith("."):
                    continue
                if name in subdirs:
                    if not recursive:
                        notes.append(f"{full}: directory skipped (-R, --recursive reads subdirectories)")
                else:
                    notes.append(f"{full}: skipped: not a .yaml, .yml or .json file")
            if not recursive:
                subdirs = []
            if not files and not subdirs:
                problems.append(Problem(Location(path), "no .yaml, .yml or .json files in this directory"))
            for name in subdirs:
                files.extend(_files(os.path.join(path, name), problems, recursive, notes))
            return files
    except OSError as exc:
        problems.append(Problem(Location(path), f"cannot read: {exc.strerror or exc}", unreadable=True))
        return []
    except ValueError as exc:  # a path with a NUL byte
        problems.append(Problem(Location(path), f"cannot read: {exc}", unreadable=True))
        return []
    if not os.path.exists(path):
        problems.append(Problem(Location(path), "no such file or directory", unreadable=True))
        return []
    return [path]


def _decode_text(data: bytes, source: str, problems: list[Problem]) -> str | None:
    """UTF-8 text (a leading byte order mark dropped, as YAML readers drop it), or None with the problem noted."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(Problem(Location(source), f"not UTF-8 text: {exc.reason} at byte {exc.start}", unreadable=True))
        return None


def _read_stdin(stream: TextIO | BinaryIO, bounds: ParseLimits, problems: list[Problem]) -> str | None:
    """stdin as bytes where it has them (so bad UTF-8 is a problem, not a crash), at most the size limit."""
    source = "<stdin>"
    raw = getattr(stream, "buffer", stream)
    try:
        data = raw.read(bounds.max_bytes + 1)
    except UnicodeDecodeError as exc:
        problems.append(Problem(Location(source), f"not UTF-8 text: {exc.reason} at byte {exc.start}", unreadable=True))
        return None
    except OSError as exc:
        problems.append(Problem(Location(source), f"cannot read: {exc.strerror or exc}", unreadable=True))
        return None
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    refused = too_big(size, source, bounds)
    if refused is not None:
        problems.append(refused)
        return None
    return _decode_text(data, source, problems) if isinstance(data, bytes) else data


def read_stdin(stream: TextIO | BinaryIO | None = None, limits: ParseLimits | None = None) -> str:
    """stdin's text for callers that need it whole (and also load it): read as :func:`load_paths` reads ``-``, so
    bad UTF-8 or an oversized input raise :class:`InvalidInputError`, never a decoding error."""
    problems: list[Problem] = []
    text = _read_stdin(stream if stream is not None else sys.stdin, limits or ParseLimits(), problems)
    if text is None:
        raise InvalidInputError(problems)
    return text


@dataclass(frozen=True)
class Input:
    """One input as read: its name (the file, or ``<stdin>`` for -) and its text; ``json`` True when the file's
    name says JSON (None: YAML or JSON, by its text)."""

    name: str
    text: str
    json: bool | None = None


@dataclass
class Inputs:
    """What :func:`read_inputs` read, in input order, and the problems that kept any path from being read."""

    texts: list[Input] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # directory entries not read


_SURROGATE_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})")


def _joined_json_surrogates(text: str, json_file: bool = False) -> str:
    """JSON writes a character beyond U+FFFF as an escaped surrogate pair (``\\ud800\\udc00``); a JSON reader joins
    it, a YAML reader keeps two code points no YAML reader takes back. Every command reads the same text, so the pair
    is written as its character once, here, for JSON input (a backslash escaped itself is left alone)."""
    if "\\u" not in text or not (json_file or text.lstrip()[:1] == "{"):
        return text

    def join(match: re.Match[str]) -> str:
        high, low = int(match.group(2), 16), int(match.group(3), 16)
        return match.group(1) + chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))

    return _SURROGATE_PAIR.sub(join, text)


def read_inputs(
    paths: Sequence[str],
    *,
    stdin: TextIO | BinaryIO | None = None,
    limits: ParseLimits | None = None,
    recursive: bool = False,
) -> Inputs:
    """Read files, directories (their ``*.yaml``, ``*.yml``, ``*.json``, sorted by name; subdirectories too when
    ``recursive``) and ``-`` (stdin), each once: for callers that load the inputs (:func:`load_inputs`) and also
    need their texts (the lines of findings, migrate's round trip)."""
    bounds = limits or ParseLimits()
    read = Inputs()
    for path in paths:
        if path == "-":
            text = _read_stdin(stdin if stdin is not None else sys.stdin, bounds, read.problems)
            if text is not None:
                read.texts.append(Input("<stdin>", _joined_json_surrogates(text)))
            continue
        for file in _files(path, read.problems, recursive, read.notes):
            try:
                refused = too_big(os.path.getsize(file), file, bounds)
                if refused is not None:
                    read.problems.append(refused)
                    continue
                with open(file, "rb") as handle:
                    data = handle.read(bounds.max_bytes + 1)
            except OSError as exc:
                read.problems.append(Problem(Location(file), f"cannot read: {exc.strerror or exc}", unreadable=True))
                continue
            text = _decode_text(data, file, read.problems)
            if text is not None:
                json_file = file.lower().endswith(".json")
                read.texts.append(Input(file, _joined_json_surrogates(text, json_file), True if json_file else None))
    return read


def load_inputs(
    inputs: Inputs,
    *,
    limits: ParseLimits | None = None,
    api_validation: bool = True,
    documents: Sequence[tuple[str, Any]] = (),
    lenient_documents: bool = False,
    passthrough: Callable[[Any], bool] | None = None,
) -> Loaded:
    """Load what :func:`read_inputs` read, as :func:`load_paths` loads it (its problems reported with the rest).
    ``passthrough``: top-level documents for which it is true are not objects and are left to the caller (migrate's
    device-plugin configs), neither loaded nor refused."""
    bounds = limits or ParseLimits()
    builder = Builder(api_validation=False)
    builder.passthrough = passthrough
    builder.lenient = lenient_documents
    for index, (source, data) in enumerate(documents):
        builder.files.setdefault(source, len(builder.files))
        builder.add_document(Document(index, data), source)
    builder.api_validation = api_validation
    builder.lenient = False
    # A path that could not be read is in no file order, so its problem sorts after the others, as when reading
    # and loading were interleaved.
    builder.problems.extend(inputs.problems)
    empty = [read.name for read in inputs.texts if not add_text(builder, read.text, read.name, read.json, bounds)]
    loaded = builder.finish()
    loaded.notes = [*inputs.notes, *(f"{name}: no objects in this file (empty, or only comments)" for name in empty)]
    return loaded


def load_paths(
    paths: Sequence[str],
    *,
    stdin: TextIO | BinaryIO | None = None,
    limits: ParseLimits | None = None,
    api_validation: bool = True,
    documents: Sequence[tuple[str, Any]] = (),
    lenient_documents: bool = False,
    recursive: bool = False,
) -> Loaded:
    """Load files, directories (their ``*.yaml``, ``*.yml``, ``*.json``, sorted by name; subdirectories too when
    ``recursive``, as kubectl's ``-R``) and ``-`` (stdin).

    See :func:`load_text` for ``api_validation``. ``documents`` are (source, JSON value) pairs a caller already
    holds — objects an API server returned — read before the paths with the same dispatch, conversion and
    decoding but without the API validation (their server already applied it); ``source[i]`` locates them.
    ``lenient_documents``: fields of theirs the model does not know are ignored (a newer server's), as clients do.
    """
    return load_inputs(read_inputs(paths, stdin=stdin, limits=limits, recursive=recursive), limits=limits,
                       api_validation=api_validation, documents=documents, lenient_documents=lenient_documents)
