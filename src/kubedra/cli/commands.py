"""The list of subcommands, in the order ``--help`` shows them."""

from __future__ import annotations

from collections.abc import Callable

import typer

from kubedra.cli import allocate, cel, convert, driver, explain, simulate, snapshot, validate

REGISTRARS: list[Callable[[typer.Typer], None]] = [
    simulate.register,
    explain.register,
    snapshot.register,
    allocate.register,
    cel.register,
    convert.register,
    validate.register,
    driver.register,
]
