"""The list of subcommands, in the order ``--help`` shows them."""

from __future__ import annotations

from collections.abc import Callable

import typer

REGISTRARS: list[Callable[[typer.Typer], None]] = []
