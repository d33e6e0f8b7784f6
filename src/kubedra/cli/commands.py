"""The list of subcommands, in the order ``--help`` shows them."""

from __future__ import annotations

from collections.abc import Callable

import typer

from kubedra.cli import (
    allocate,
    cel,
    convert,
    driver,
    explain,
    exporter,
    migrate,
    plan,
    simulate,
    snapshot,
    trace,
    validate,
)

REGISTRARS: list[Callable[[typer.Typer], None]] = [
    simulate.register,
    plan.register,
    explain.register,
    snapshot.register,
    exporter.register,
    allocate.register,
    cel.register,
    convert.register,
    trace.register,
    migrate.register,
    validate.register,
    driver.register,
]
