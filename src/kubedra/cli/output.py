"""Printing shared by every subcommand: ``-o table|wide|name|json|yaml``, errors on stderr, exit codes.

Tables follow kubectl's printers, on a terminal or not: upper-case headers, columns padded as Go's tabwriter pads
them for kubectl (cells at least 6 wide, 3 spaces between columns), whole values on one line, no trailing spaces,
``<none>`` for an empty cell; ``-o wide`` adds columns, ``--no-headers`` drops the header row, ``-o name`` prints
``kind/name`` per row, as kubectl does (``pod/trainer-0``, ``resourceclaim.resource.k8s.io/gpu-claim``; the namespace
is never part of it). Columns that may hold spaces come last, so ``awk`` can split the others on blanks.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import msgspec
import typer
import yaml
from rich.console import Console

from kubedra.objects.errors import ConversionWarning, InvalidInputError

EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_INVALID_INPUT = 2

NONE = "<none>"
MIN_WIDTH = 6  # kubectl's tabwriter: minwidth 6, padding 3 (printers.GetNewTabWriter)
PADDING = 3

# kubectl's -o name is "<resource>.<group>/<name>" (the core group has no suffix).
RESOURCE_NAMES = {
    "Pod": "pod",
    "Node": "node",
    "ResourceClaim": "resourceclaim.resource.k8s.io",
    "ResourceClaimTemplate": "resourceclaimtemplate.resource.k8s.io",
    "ResourceSlice": "resourceslice.resource.k8s.io",
    "DeviceClass": "deviceclass.resource.k8s.io",
    "DeviceTaintRule": "devicetaintrule.resource.k8s.io",
}


class OutputFormat(enum.StrEnum):
    table = "table"
    wide = "wide"
    name = "name"
    json = "json"
    yaml = "yaml"


TABLE_FORMATS = (OutputFormat.table, OutputFormat.wide)


def default_format() -> OutputFormat:
    """Always ``table``, on a terminal or piped, as kubectl, helm and docker do; machines ask with ``-o json``."""
    return OutputFormat.table


def resource_name(kind: str, name: str) -> str:
    """kubectl's ``-o name`` for an object: ``pod/trainer-0``; a bare ``namespace/name`` key loses its namespace."""
    return f"{RESOURCE_NAMES.get(kind, kind.lower())}/{name.rsplit('/', 1)[-1]}"


@dataclass(frozen=True)
class Column:
    """A table column; ``wide`` ones appear only with ``-o wide``."""

    header: str
    wide: bool = False


@dataclass
class Table:
    """Rows of cells (strings) under upper-case headers, printed the kubectl way by ``print_table``."""

    columns: Sequence[Column]
    rows: list[Sequence[str]] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(cells)

    def lines(self, *, wide: bool = False, headers: bool = True) -> list[str]:
        """The table as text lines: the wide columns only if ``wide``, the header row unless ``headers`` is false."""
        keep = [i for i, column in enumerate(self.columns) if wide or not column.wide]
        rows = [[self.columns[i].header.upper() for i in keep]] if headers else []
        rows.extend([cell_text(row[i]) for i in keep] for row in self.rows)
        return tabulate(rows)


def cell_text(value: str) -> str:
    """One line, never empty: newlines and tabs become spaces, an empty cell ``<none>``."""
    text = " ".join(value.split())
    return text or NONE


def tabulate(rows: Sequence[Sequence[str]]) -> list[str]:
    """Aligned columns as kubectl's tabwriter makes them: every column but the last padded to its widest cell plus
    3 spaces (at least 6 in all), the last cell as is, trailing spaces removed."""
    if not rows:
        return []
    count = max(len(row) for row in rows)
    widths = [max(MIN_WIDTH, max(len(row[i]) for row in rows if i < len(row)) + PADDING) for i in range(count - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("".join(cells).rstrip())
    return lines


def print_lines(lines: Iterable[str]) -> None:
    """Plain text on stdout, exactly as given (no markup, no wrapping, no colour)."""
    for line in lines:
        sys.stdout.write(line + "\n")


def print_table(table: Table, fmt: OutputFormat, *, headers: bool = True) -> None:
    """A ``Table`` for ``-o table`` or ``-o wide``."""
    print_lines(table.lines(wide=fmt is OutputFormat.wide, headers=headers))


def print_names(names: Iterable[str]) -> None:
    """``-o name``: one ``kind/name`` per line (see ``resource_name``)."""
    print_lines(names)


def require_format(fmt: OutputFormat, allowed: Sequence[OutputFormat], command: str) -> None:
    """Refuse, with exit 2, an ``-o`` value a command has no use for (``-o name`` where there are no objects)."""
    if fmt not in allowed:
        choices = ", ".join(f.value for f in allowed)
        stderr_console().print(
            f"error: kubedra {command} does not support -o {fmt.value} (use one of: {choices})",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(EXIT_INVALID_INPUT)


def stdout_console() -> Console:
    return Console(soft_wrap=True)


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True)


def print_data(data: Any, fmt: OutputFormat) -> None:
    """JSON (indented, stable) or YAML (block style, key order kept) on stdout. JSON is encoded by msgspec: the
    standard library's encoder runs in Python once it indents, the slowest part of a large report's output."""
    if fmt is OutputFormat.yaml:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True))
    else:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")


WARNINGS_LISTED_UP_TO = 3  # more conversion warnings than this are summarized before a report


def print_warnings(
    warnings: Sequence[ConversionWarning | str], *, quiet: bool = False, label: str = "Warning",
    summarize: bool = False,
) -> None:
    """Conversion warnings (or notes) on stderr, one per line, so stdout stays machine-readable; ``-q`` drops them.
    With ``summarize`` (before a report), more than a few conversion warnings become one line counting them per
    file and naming the commands that list them, so the report is not pushed off the screen."""
    if quiet:
        return
    console = stderr_console()
    conversions = [w for w in warnings if isinstance(w, ConversionWarning)]
    if summarize and len(conversions) > WARNINGS_LISTED_UP_TO:
        per_file: dict[str, int] = {}
        for converted in conversions:
            per_file[converted.location.file] = per_file.get(converted.location.file, 0) + 1
        short = {name: name.rsplit("/", 1)[-1] for name in per_file}
        if len(set(short.values())) < len(short):
            short = {name: name for name in per_file}  # two files of one name: the paths tell them apart
        files = ", ".join(f"{short[name]} {count}" for name, count in per_file.items())
        console.print(f"[yellow]{label}:[/yellow] ", end="", highlight=False, markup=True)
        console.print(f"{len(conversions)} legacy or beta constructs converted to resource.k8s.io/v1 ({files}); "
                      "kubedra convert -f FILE shows each (-q drops this line)", highlight=False, markup=False)
        warnings = [w for w in warnings if not isinstance(w, ConversionWarning)]
    for warning in warnings:
        console.print(f"[yellow]{label}:[/yellow] ", end="", highlight=False, markup=True)
        console.print(str(warning), highlight=False, markup=False)


def fail(message: str) -> NoReturn:
    """One problem on stderr, then exit 2."""
    stderr_console().print(f"error: {message}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)


def fail_invalid(error: InvalidInputError) -> NoReturn:
    """Every problem on stderr, then exit 2: scripts can trust that 2 means the input was refused."""
    console = stderr_console()
    for problem in error.problems:
        console.print(f"error: {problem}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)
