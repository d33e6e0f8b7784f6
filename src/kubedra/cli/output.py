"""Printing shared by every subcommand: ``-o json|yaml|table``, errors on stderr, exit codes."""

from __future__ import annotations

import enum
import json
import sys
from typing import Any, NoReturn

import typer
import yaml
from rich.console import Console

from kubedra.objects.errors import ConversionWarning, InvalidInputError

EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_INVALID_INPUT = 2


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def default_format() -> OutputFormat:
    """``table`` on a terminal, ``json`` when piped (kubectl prints tables either way; scripts want JSON)."""
    return OutputFormat.table if sys.stdout.isatty() else OutputFormat.json


def stdout_console() -> Console:
    return Console(soft_wrap=True)


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True)


def print_data(data: Any, fmt: OutputFormat) -> None:
    """JSON (indented, stable) or YAML (block style, key order kept) on stdout."""
    if fmt is OutputFormat.yaml:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True))
    else:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_warnings(warnings: list[ConversionWarning]) -> None:
    """Conversion warnings go to stderr, one per line, so stdout stays machine-readable."""
    console = stderr_console()
    for warning in warnings:
        console.print(f"[yellow]Warning:[/yellow] {warning}", highlight=False, markup=True)


def fail_invalid(error: InvalidInputError) -> NoReturn:
    """Every problem on stderr, then exit 2: scripts can trust that 2 means the input was refused."""
    console = stderr_console()
    for problem in error.problems:
        console.print(f"error: {problem}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)
